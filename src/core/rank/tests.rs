//! The ranker's unit tests.

use super::values::answer_type_expansion;
use super::*;
use crate::core::budget::BudgetRow;
use crate::core::catalog::{Pack, PackMetadata, RoutingGuide, Schema};
use crate::core::text;

fn pack(name: &str, description: &str) -> Pack {
    Pack {
        name: name.into(),
        description: description.into(),
        metadata: PackMetadata::default(),
    }
}

fn guide() -> RoutingGuide {
    RoutingGuide {
        packs: vec![
            pack("get_weather", "Get the current weather for a city."),
            pack(
                "get_weather_forecast",
                "Get a multi-day weather forecast for a city.",
            ),
            pack("todoAdd", "Add an item to the todo list."),
            pack(
                "browser.screenshot",
                "Capture a screenshot of the current page.",
            ),
            pack("memory.store", "Remember a note for later recall."),
        ],
        pipelines: vec![],
    }
}

#[test]
fn identifiers_match_prose() {
    let g = guide();
    let idx = RankIndex::new(&g);
    let r = idx.rank("please add buy milk to my todo", None);
    assert_eq!(idx.name(r.order[0].index), "todoAdd");
    let r = idx.rank("take a screenshot of this page", None);
    assert_eq!(idx.name(r.order[0].index), "browser.screenshot");
    let r = idx.rank("what's the weather forecast in Paris for the week", None);
    assert_eq!(idx.name(r.order[0].index), "get_weather_forecast");
    let r = idx.rank("what's the weather in Paris right now", None);
    assert_eq!(idx.name(r.order[0].index), "get_weather");
}

#[test]
fn enum_values_of_array_items_are_indexed() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"features": {
            "type": "array",
            "items": {"type": "string", "enum": ["timings", "accessibility"]},
        }},
    });
    let mut museum = pack("museum_info", "Information about a museum.");
    museum.metadata.input_schema = Some(Schema::Full(schema));
    let g = RoutingGuide {
        packs: vec![pack("museum_hours", "Information about a museum."), museum],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    let r = idx.rank("museum information including accessibility", None);
    assert_eq!(idx.name(r.order[0].index), "museum_info");
    let why = idx.explain(&r, r.order[0].index, None);
    assert!(
        why.one_line().contains("accessibiliti·parameters"),
        "{}",
        why.one_line()
    );
}

#[test]
fn every_score_explains_itself_and_adds_up() {
    let g = guide();
    let idx = RankIndex::new(&g);
    let r = idx.rank("remember this note", None);
    let top = r.order[0];
    let e = idx.explain(&r, top.index, None);
    assert_eq!(e.name, "memory.store");
    assert!((e.total() - top.score).abs() < 1e-9, "{e:?} vs {top:?}");
    assert!(e.matches.iter().any(|m| m.field == Field::Description));
    assert!(e.one_line().starts_with("memory.store"));
    // Every entry of a ranking explains exactly its score, prior included.
    let prior = HistoryPrior::new(&[PastPlan {
        intent: "remember this note for later".into(),
        tools: vec!["memory.store".into(), "todoAdd".into()],
        outcome: 1.0,
    }]);
    let r = idx.rank(
        "please remember adding the note to my todo list",
        Some(&prior),
    );
    for s in &r.order {
        let e = idx.explain(&r, s.index, Some(&prior));
        assert!((e.total() - s.score).abs() < 1e-9, "{}", e.one_line());
    }
    // With words a value implies weighing less ("how many" → count, 1970 → year), the
    // explanation reads the same shares the ranking did.
    let idx = RankIndex::with_params(
        &g,
        RankParams {
            inferred: 0.5,
            ..RankParams::default()
        },
    );
    let q = "how many notes did I store in 1970? then remember this one";
    let full = RankIndex::new(&g).rank(q, None);
    let r = idx.rank(q, None);
    assert!(
        r.term_sources.contains(&TermSource::Implied),
        "{:?}",
        r.terms
    );
    let moved = r
        .order
        .iter()
        .zip(&full.order)
        .any(|(a, b)| a.score != b.score);
    assert!(moved, "the share changed no score");
    for s in &r.order {
        let e = idx.explain(&r, s.index, None);
        assert!((e.total() - s.score).abs() < 1e-9, "{}", e.one_line());
    }
}

#[test]
fn related_words_values_and_actions_reach_the_right_entry() {
    let g = RoutingGuide {
        packs: vec![
            pack("lawyer.search", "Find lawyers by specialty."),
            pack("geodistance.find", "Distance between two cities."),
            pack(
                "historical_contrib.get_contrib",
                "A scientist's contributions.",
            ),
            pack(
                "create_player_profile",
                "Create a new profile for a player.",
            ),
            pack("sports_db.find_athlete", "A player's profile, by name."),
            pack(
                "currency.convert",
                "Convert an amount into another currency.",
            ),
            pack("population.by_year", "Population of a country in a year."),
            pack("weather.on_date", "Weather on a date."),
        ],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    let first = |q: &str| idx.name(idx.rank(q, None).order[0].index).to_string();
    assert_eq!(first("divorce law specialists"), "lawyer.search");
    assert_eq!(
        first("how far: the distance from Paris to Rome"),
        "geodistance.find"
    );
    assert_eq!(
        first("Einstein's contribution to physics"),
        "historical_contrib.get_contrib"
    );
    assert_eq!(
        first("find me the profile of player Lebron James"),
        "sports_db.find_athlete"
    );
    assert_eq!(
        first("I have 100 euros, what is that in yen"),
        "currency.convert"
    );
    assert_eq!(
        first("how many people lived in France in 1954"),
        "population.by_year"
    );
    assert_eq!(
        first("what was it like in Paris on March 3"),
        "weather.on_date"
    );
    // The explanation names the word a related match went through.
    let r = idx.rank("divorce law specialists", None);
    let e = idx.explain(&r, 0, None);
    assert!(e.one_line().contains("law→lawyer"), "{}", e.one_line());
    // An action conflict shows as a factor (in this eight-entry catalog every word is
    // rare, so without the floor: it would otherwise be what the score is).
    let no_floor = RankIndex::with_params(
        &g,
        RankParams {
            rare_floor: 0.0,
            ..RankParams::default()
        },
    );
    let r = no_floor.rank("find me the profile of player Lebron James", None);
    let e = no_floor.explain(&r, 3, None);
    assert!(
        e.action < 1.0 && e.one_line().contains("other action"),
        "{}",
        e.one_line()
    );
}

fn names_of(idx: &RankIndex, r: &Ranking, k: usize) -> Vec<String> {
    r.order
        .iter()
        .take(k)
        .map(|s| idx.name(s.index).to_string())
        .collect()
}

/// A question of three requests: each request's best entry comes before any tool that
/// brushes all three, and before any request's second.
#[test]
fn every_request_of_a_question_has_its_tool_near_the_top() {
    let g = RoutingGuide {
        packs: vec![
            pack(
                "airport.lookup",
                "Airport code of a city, for flight searches.",
            ),
            pack("hotel.search", "Hotels in a city with prices per night."),
            pack(
                "currency.convert",
                "Convert an amount into another currency.",
            ),
            pack(
                "trip.planner",
                "Plan a trip: a flight to a city, a hotel and the price of the trip in euros.",
            ),
            pack("flight.status", "Status of a flight by number."),
            pack("hotel.reviews", "Reviews of a hotel by guests."),
            pack(
                "travel.bundle",
                "Airport transfers, a hotel near the station and the price in euros.",
            ),
            pack(
                "city.guide",
                "A city guide: its airport, hotels near the station, prices in euros.",
            ),
        ],
        pipelines: vec![],
    };
    let q = "Look up the airport code for Rome, search hotels and convert the price to euros";
    let idx = RankIndex::new(&g);
    let r = idx.rank(q, None);
    assert_eq!(r.requests.len(), 3, "{:?}", r.requests);
    let top3 = names_of(&idx, &r, 3);
    for want in ["airport.lookup", "hotel.search", "currency.convert"] {
        assert!(top3.contains(&want.to_string()), "{want} not in {top3:?}");
    }
    // Every explanation still adds up, and a placed entry says which request it answers.
    for s in &r.order {
        let e = idx.explain(&r, s.index, None);
        assert!((e.total() - s.score).abs() < 1e-9, "{}", e.one_line());
        if let Some(request) = s.best_for_request {
            // Which round placed it, so a second pick never reads "the best" (tester 10
            // T10-20).
            let nth = if e.request_round == Some(1) {
                "first"
            } else {
                "second"
            };
            assert!(
                e.one_line()
                    .contains(&format!("placed {nth} for request {}", request + 1)),
                "{}",
                e.one_line()
            );
        }
    }
    // Read whole, the airport tool answers a third of the question and its coverage says
    // so; read by request it answers all of the first.
    let airport = 0;
    let by_request = idx.explain(&r, airport, None);
    assert!(by_request.coverage_request.is_some());
    let whole = RankIndex::with_params(
        &g,
        RankParams {
            requests: false,
            ..RankParams::default()
        },
    );
    let w = whole.rank(q, None);
    let read_whole = whole.explain(&w, airport, None);
    assert!(
        read_whole.coverage < by_request.coverage - 0.2,
        "{} vs {}",
        read_whole.one_line(),
        by_request.one_line()
    );
    assert!(w.requests.is_empty());
}

/// Coverage and action factors cannot bury the one entry that says the question's rarest
/// word: its score is at least the floor's share of its plain BM25 points for that word.
#[test]
fn an_entry_with_a_rare_query_word_never_falls_below_its_plain_bm25_share() {
    let mut population = pack("get_population", "Population of a country.");
    population.metadata.input_schema = Some(Schema::Full(serde_json::json!({
        "properties": {"group": {"type": "string", "description": "Which people, e.g. veterans"}}
    })));
    let mut packs: Vec<Pack> = (0..27)
        .map(|i| pack(&format!("tool_{i}"), "Weather in a city."))
        .collect();
    for i in 0..3 {
        packs.push(pack(
            &format!("count_items_{i}"),
            "Count the number of items in a year.",
        ));
    }
    packs.push(population);
    let g = RoutingGuide {
        packs,
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    let q = "How many veterans were there in 1954";
    let r = idx.rank(q, None);
    let at = r
        .order
        .iter()
        .find(|s| idx.name(s.index) == "get_population")
        .unwrap();
    let plain = Bm25::new(&g).scores("veterans")[at.index];
    assert!(plain > 0.0);
    let share = idx.params().rare_floor;
    assert!(
        at.lexical >= share * plain - 1e-9,
        "{} < {share} × {plain}",
        at.lexical
    );
    let e = idx.explain(&r, at.index, None);
    assert!((e.total() - at.score).abs() < 1e-9, "{}", e.one_line());
    assert!(e.one_line().contains("rare-word floor"), "{}", e.one_line());
    // Without the floor the examples-only match sinks further.
    let off = RankIndex::with_params(
        &g,
        RankParams {
            rare_floor: 0.0,
            ..RankParams::default()
        },
    );
    let without = off.rank(q, None);
    let lexical_without = without
        .order
        .iter()
        .find(|s| s.index == at.index)
        .unwrap()
        .lexical;
    assert!(
        lexical_without < at.lexical,
        "{lexical_without} vs {}",
        at.lexical
    );
}

#[test]
fn the_catalog_teaches_related_words_and_the_history_teaches_intents() {
    let mut packs = vec![
        pack("artist_overview", "An artist's biography and albums."),
        pack("album_overview", "An album's biography, label and tracks."),
        pack("song_overview", "Facts about a song."),
        pack("song_lyrics", "Lyrics of a song."),
        pack("news.search", "Search news articles by keyword."),
        pack("weather.now", "Current weather in a city."),
    ];
    // A catalog large enough that three entries named `overview` still tell things apart.
    packs.extend((0..40).map(|i| pack(&format!("unit_{i}"), "Convert between units.")));
    let g = RoutingGuide {
        packs,
        pipelines: vec![],
    };
    let mined = RankIndex::with_params(
        &g,
        RankParams {
            mined: 0.5,
            ..RankParams::default()
        },
    );
    // "biography" keeps company with `overview` in names: a song's biography is its overview.
    let r = mined.rank("the biography of the song Yesterday", None);
    assert_eq!(mined.name(r.order[0].index), "song_overview");
    let e = mined.explain(&r, r.order[0].index, None);
    assert!(
        e.one_line().contains("biographi→overview·name"),
        "{}",
        e.one_line()
    );
    // Followed plans teach a tool the words people used for it.
    let learned = LearnedWords::from_plans(&[
        PastPlan {
            intent: "latest updates on the election".into(),
            tools: vec!["news.search".into()],
            outcome: 1.0,
        },
        PastPlan {
            intent: "latest updates about the match".into(),
            tools: vec!["news.search".into()],
            outcome: 1.0,
        },
        PastPlan {
            intent: "latest updates on the storm".into(),
            tools: vec!["weather.now".into()],
            outcome: -1.0,
        },
    ]);
    assert!(
        learned.words_for("weather.now").is_none(),
        "a failed plan teaches nothing"
    );
    let idx = RankIndex::build(&g, RankParams::default(), Some(&learned));
    let r = idx.rank("any latest updates on the strike", None);
    assert_eq!(idx.name(r.order[0].index), "news.search");
    let e = idx.explain(&r, r.order[0].index, None);
    assert!(
        e.matches.iter().any(|m| m.field == Field::Learned),
        "{}",
        e.one_line()
    );
    assert_eq!(
        RankIndex::new(&g)
            .rank("any latest updates on the strike", None)
            .order[0]
            .score,
        0.0
    );
}

#[test]
fn a_word_said_before_every_kind_of_work_teaches_no_tool() {
    let plan = |intent: &str, tools: &[&str]| PastPlan {
        intent: intent.into(),
        tools: tools.iter().map(|t| t.to_string()).collect(),
        outcome: 1.0,
    };
    // "pricing" comes before a comparison three times and, once each, before posts, messages
    // and images; "render" only ever before an image.
    let learned = LearnedWords::from_plans(&[
        plan("compare cloud pricing", &["research.compare"]),
        plan("compare pricing of phones", &["research.compare"]),
        plan("pricing of two plans side by side", &["research.compare"]),
        plan("a post about our pricing", &["blog.write"]),
        plan("tell the team the new pricing", &["message.send"]),
        plan("a banner for the pricing page", &["image.generate"]),
        plan("render a banner", &["image.generate"]),
        plan("render a logo", &["image.generate"]),
    ]);
    let words = |tool: &str| learned.words_for(tool).unwrap_or_default().to_vec();
    assert!(
        words("research.compare").contains(&"pric".to_string()),
        "{:?}",
        words("research.compare")
    );
    for tool in ["blog.write", "message.send", "image.generate"] {
        assert!(
            !words(tool).contains(&"pric".to_string()),
            "{tool} learned {:?}",
            words(tool)
        );
    }
    assert!(words("image.generate").contains(&"render".to_string()));
    // A tool left with no word it owns is not listed at all.
    assert!(learned.words_for("message.send").is_none());
    // One request sent again and again is one intent: it teaches nothing, and a word for a
    // kind of action ("get") is never learned, however often and specifically it was said.
    let learned = LearnedWords::from_plans(&[
        plan("is the box ok?", &["sys.health"]),
        plan("is the box ok?", &["sys.health"]),
        plan("is the box ok?", &["sys.health"]),
        plan("get me the standup notes", &["meeting.notes"]),
        plan("get me the retro notes", &["meeting.notes"]),
    ]);
    assert!(
        learned.words_for("sys.health").is_none(),
        "{:?}",
        learned.words_for("sys.health")
    );
    let notes = learned
        .words_for("meeting.notes")
        .unwrap_or_default()
        .to_vec();
    assert!(notes.contains(&"note".to_string()), "{notes:?}");
    assert!(!notes.contains(&"get".to_string()), "{notes:?}");
    // A request verb says what is done as much as "get" does: "open" and "send" teach nothing.
    let learned = LearnedWords::from_plans(&[
        plan("open the installer", &["gui.check"]),
        plan("open the settings window", &["gui.check"]),
        plan("send sigma", &["crypto.wallet"]),
        plan("sends tau", &["crypto.wallet"]),
    ]);
    for (tool, verb) in [("gui.check", "open"), ("crypto.wallet", "send")] {
        let words = learned.words_for(tool).unwrap_or_default().to_vec();
        assert!(
            !words.contains(&verb.to_string()),
            "{tool} learned {words:?}"
        );
    }
    // A request sent again word for word is one intent on both sides of the share: ten copies
    // of "web" before a wallet do not outvote two different intents that taught web.search.
    let mut plans = vec![
        plan("search the web for rust news", &["web.search"]),
        plan("web results on llama.cpp", &["web.search"]),
    ];
    plans.extend((0..10).map(|_| plan("web", &["crypto.wallet"])));
    let learned = LearnedWords::from_plans(&plans);
    let web = learned.words_for("web.search").unwrap_or_default().to_vec();
    assert!(web.contains(&"web".to_string()), "{web:?}");
    assert!(learned.words_for("crypto.wallet").is_none());
}

#[test]
fn bm25_baseline_scores_by_the_same_words() {
    let g = guide();
    let bm25 = Bm25::new(&g);
    let order = bm25.rank("add buy milk to my todo");
    assert_eq!(order[0], 2);
    let s = bm25.scores("zebra");
    assert!(s.iter().all(|&x| x == 0.0));
    // Identifier splitting and stemming are the ranker's: `todoAdd` meets "adding todos".
    assert!(bm25.scores("adding todos")[2] > 0.0);
}

#[test]
fn same_kind_of_action_and_operator_symbols_reach_their_tool() {
    let mut query_tool = pack("records.query", "Rows of a table.");
    query_tool.metadata.input_schema = Some(Schema::Full(serde_json::json!({
        "properties": {
            "operation": {"type": "string", "enum": ["<", ">", "="]}
        }
    })));
    let g = RoutingGuide {
        packs: vec![
            pack("measure_driving_distance", "Driving distance by road."),
            pack("get_driving_distance", "Driving distance by road."),
            pack("records.fetch", "Rows of a table."),
            query_tool,
        ],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    // Same description: "find" reaches `get`, a read like itself, and nothing else.
    let r = idx.rank("find the driving distance", None);
    assert_eq!(idx.name(r.order[0].index), "get_driving_distance");
    let e = idx.explain(&r, r.order[0].index, None);
    assert!(e.one_line().contains("find→get·name"), "{}", e.one_line());
    let off = RankIndex::with_params(
        &g,
        RankParams {
            action_synonym: 0.0,
            ..RankParams::default()
        },
    );
    let r = off.rank("find the driving distance", None);
    assert_eq!(r.order[0].score, r.order[1].score, "a tie without synonyms");
    // `>` among enum values is "greater than".
    let r = idx.rank("rows of the table where age is greater than 25", None);
    assert_eq!(idx.name(r.order[0].index), "records.query");
}

#[test]
fn values_name_their_kind() {
    let kinds = |q: &str| answer_type_expansion(q);
    assert_eq!(kinds("population in 1970"), vec!["year"]);
    assert_eq!(kinds("on 2023-05-21"), vec!["date"]);
    assert_eq!(kinds("on 09/09/2023 please"), vec!["date"]);
    // The year of a written date is part of the date, not a year of its own.
    assert_eq!(kinds("on March 7th 2023"), vec!["date"]);
    assert_eq!(kinds("the 10th march 2023"), vec!["date"]);
    assert_eq!(kinds("100 euros in USD"), vec![text::stem("currency"); 2]);
    assert_eq!(kinds("height of 180 cm"), vec![text::stem("centimeter")]);
    assert_eq!(kinds("may I march on"), Vec::<String>::new());
    assert_eq!(kinds("route 66"), Vec::<String>::new());
    // "How high" asks for a height or an elevation, as "how far" asks for a distance
    // (mcp159 tune: `maps_elevation` had been 98th for "How high above sea level is …").
    assert_eq!(
        kinds("How high above sea level is Ben Nevis?"),
        vec![text::stem("height"), text::stem("elevation")]
    );
    assert_eq!(kinds("how old is the tree"), vec![text::stem("age")]);
    assert_eq!(kinds("how big is the file"), vec![text::stem("size")]);
    assert_eq!(
        kinds("tell me how high it is above sea level"),
        vec![text::stem("height"), text::stem("elevation")]
    );
    assert_eq!(kinds("How tall?"), vec![text::stem("height")]);
    // Review 45 M3: before a noun they make a compound, and ask for no measure.
    for compound in [
        "how large language models work",
        "explain how deep learning works",
        "how fast-forward merges work",
        "how high-priority incidents are routed",
        "how old versions get pruned",
    ] {
        assert_eq!(kinds(compound), Vec::<String>::new(), "{compound}");
    }
    // A value's shape names it: a web address, a file's path, an email address.
    let stems = |ws: &[&str]| ws.iter().map(|w| text::stem(w)).collect::<Vec<_>>();
    assert_eq!(
        kinds("fetch 'https://api.example.com/v1/data'"),
        stems(&["url"])
    );
    assert_eq!(
        kinds("Save /home/sam/notes/todo.txt now"),
        stems(&["path", "file"])
    );
    assert_eq!(kinds("run d:/playground/test.py"), stems(&["path", "file"]));
    assert_eq!(kinds(r"list C:\Users\sam"), stems(&["path", "file"]));
    assert_eq!(kinds("open docs/notes.md"), stems(&["path", "file"]));
    assert_eq!(kinds("write to andy@gorilla.ai."), stems(&["email"]));
    // Not paths: a written escape, a choice between words, a command's switch.
    assert_eq!(kinds(r"question:\n\nThe text"), Vec::<String>::new());
    assert_eq!(kinds("and/or/both"), Vec::<String>::new());
    assert_eq!(kinds("tasklist /FI"), Vec::<String>::new());
    assert_eq!(kinds("@mention"), Vec::<String>::new());
    // Review 43 M2: a link inside other text is a URL, and so is a git remote; numbers,
    // versions and a one-letter label before a written "\n" are none of them.
    assert_eq!(kinds("see [docs](https://example.com)"), stems(&["url"]));
    assert_eq!(kinds("set url=https://example.com"), stems(&["url"]));
    assert_eq!(kinds("What is 7/3.5?"), Vec::<String>::new());
    assert_eq!(kinds("from v1.2/v1.3"), Vec::<String>::new());
    assert_eq!(kinds("install lodash@4.17.21"), Vec::<String>::new());
    assert_eq!(kinds("clone git@github.com:org/repo.git"), stems(&["url"]));
    assert_eq!(kinds(r"q:\nwhat"), Vec::<String>::new());
    // A long option is a command line's: "docker --version" asks for a command to be run
    // (BFCL live_simple tune: the command tool had been 71st, below a version API).
    assert_eq!(kinds("check docker --version"), stems(&["command"]));
    assert_eq!(
        kinds("is it installed (docker --version)?"),
        stems(&["command"])
    );
    assert_eq!(kinds("run `ls --all` in the folder"), stems(&["command"]));
    assert_eq!(
        kinds("run git log --stat --format=short"),
        stems(&["command"; 2])
    );
    // Review 44 M4: a dash typed as "--" in prose, and options no command line has.
    for prose in [
        "Book a table for two --preferably by the window",
        "SELECT * FROM t --list all rows",
        "wait -- no, -- 2 --",
        "check --5 and --x",
        "a --b!c option",
    ] {
        assert_eq!(kinds(prose), Vec::<String>::new(), "{prose}");
    }
}

#[test]
fn confidence_is_low_when_nothing_matches_and_high_on_a_clear_winner() {
    let g = guide();
    let idx = RankIndex::new(&g);
    let none = idx.rank("zebra quantum", None);
    assert_eq!(none.confidence.value, 0.0);
    // No match keeps catalog order.
    assert_eq!(none.indices(), vec![0, 1, 2, 3, 4]);
    let clear = idx.rank("screenshot", None);
    assert!(clear.confidence.value > 0.5, "{:?}", clear.confidence);
    let mut row = BudgetRow::fallback();
    assert!(should_escalate(&row, &none.confidence));
    assert!(!should_escalate(&row, &clear.confidence));
    row.allows_llm_filter = false;
    assert!(!should_escalate(&row, &none.confidence));
}

#[test]
fn history_prior_lifts_followed_tools_and_sinks_failed_ones() {
    let g = guide();
    let idx = RankIndex::new(&g);
    let intent = "capture what is on the page";
    let before = idx.rank(intent, None);
    let followed = HistoryPrior::new(&[
        PastPlan {
            intent: "capture the page as a note".into(),
            tools: vec!["memory.store".into()],
            outcome: 1.0,
        },
        PastPlan {
            intent: "capture this page".into(),
            tools: vec!["memory.store".into()],
            outcome: 1.0,
        },
    ]);
    let after = idx.rank(intent, Some(&followed));
    let pos = |r: &Ranking| r.position_of(&idx, "memory.store").unwrap();
    assert!(
        pos(&after) < pos(&before),
        "{} vs {}",
        pos(&after),
        pos(&before)
    );
    let e = idx.explain(&after, 4, Some(&followed));
    assert_eq!(e.prior.as_ref().map(|p| p.plans), Some(2));

    let failed = HistoryPrior::new(&[PastPlan {
        intent: "capture what is on the page".into(),
        tools: vec!["browser.screenshot".into()],
        outcome: -1.0,
    }]);
    let sunk = idx.rank(intent, Some(&failed));
    let shot = |r: &Ranking| r.order.iter().find(|s| s.index == 3).unwrap().score;
    assert!(shot(&sunk) < shot(&before));
    // Dissimilar intents do nothing.
    let unrelated = HistoryPrior::new(&[PastPlan {
        intent: "book a flight to Rome".into(),
        tools: vec!["todoAdd".into()],
        outcome: 1.0,
    }]);
    assert_eq!(idx.rank(intent, Some(&unrelated)), before);
}

/// A catalog name or an intent of one 1 MB word (a run of one letter, a repeated word, a
/// camelCase run): indexing and ranking read it once and still rank the rest.
#[test]
fn megabyte_words_index_and_rank_in_one_pass() {
    const MB: usize = 1_000_000;
    let runs = [
        "a".repeat(MB),
        "contribution".repeat(MB / 12),
        "aB".repeat(MB / 2),
    ];
    let mut g = guide();
    g.packs.extend(runs.iter().map(|r| pack(r, "A tool.")));
    let idx = RankIndex::new(&g);
    let r = idx.rank("what's the weather forecast in Paris for the week", None);
    assert_eq!(idx.name(r.order[0].index), "get_weather_forecast");
    // An intent is read to its opening (QUERY_MAX_BYTES), as every caller's is.
    for run in runs.iter().take(2) {
        let r = idx.rank(run, None);
        let opening = crate::core::text::opening(run, super::QUERY_MAX_BYTES);
        assert_eq!(r.indices(), idx.rank(opening, None).indices());
        let e = idx.explain(&r, r.order[0].index, None);
        assert!((e.total() - r.order[0].score).abs() < 1e-9);
    }
}

#[test]
fn words_past_the_length_limit_reach_no_related_words() {
    let long = "a".repeat(MAX_RELATED_LEN + 6);
    let g = RoutingGuide {
        packs: vec![pack("get_weather", "Weather."), pack(&long, "A tool.")],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    // A word within the limit reaches the longer word it begins...
    let r = idx.rank(&"a".repeat(MAX_RELATED_LEN), None);
    assert_eq!(r.order[0].index, 1);
    assert!(r.order[0].score > 0.0);
    // ...one past it reaches nothing but itself.
    let r = idx.rank(&"a".repeat(MAX_RELATED_LEN + 1), None);
    assert_eq!(r.order[0].score, 0.0);
}

#[test]
fn word_overlap_baseline_counts_shared_words() {
    let g = guide();
    let order = WordOverlap::new(&g).rank("add to the todo list");
    assert_eq!(order[0], 2);
}

#[test]
fn the_sort_key_orders_by_score_then_catalog_order() {
    let mut scores = [3.5, -1.0, 0.25, 3.5, 1e-300, -0.0, 7.0, -2.5];
    let mut keyed: Vec<(u128, usize)> = scores
        .iter()
        .enumerate()
        .map(|(i, &s)| (super::score::order_key(s, i as u32), i))
        .collect();
    keyed.sort_unstable();
    let by_key: Vec<usize> = keyed.iter().map(|k| k.1).collect();
    let mut by_cmp: Vec<usize> = (0..scores.len()).collect();
    by_cmp.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    assert_eq!(by_key, by_cmp);
    scores.sort_by(f64::total_cmp);
    assert_eq!(scores[0], -2.5);
}

#[test]
fn the_prior_reads_the_opening_of_a_long_intent_up_to_a_whole_word() {
    assert_eq!(
        prior_intent("latest updates on the election"),
        "latest updates on the election"
    );
    let long = format!("latest updates {}", "électionné ".repeat(500));
    let read = prior_intent(&long);
    assert!(read.len() <= PRIOR_INTENT_BYTES, "{}", read.len());
    assert!(read.len() > PRIOR_INTENT_BYTES - "électionné ".len());
    assert!(read.ends_with("électionné"), "{read:?}");
    // Exactly at the bound on a word's end: kept whole.
    let exact = format!("{} tail", "a".repeat(PRIOR_INTENT_BYTES));
    assert_eq!(prior_intent(&exact).len(), PRIOR_INTENT_BYTES);
    // One word longer than the bound: its opening, not nothing.
    let word = "x".repeat(PRIOR_INTENT_BYTES * 2);
    assert_eq!(prior_intent(&word).len(), PRIOR_INTENT_BYTES);
}

/// A stored intent may hold 1 MiB; the prior and the learned words read its opening, so the
/// words past it change neither (and the cost of a preview does not grow with them).
#[test]
fn words_past_an_intents_opening_change_neither_the_prior_nor_the_learned_words() {
    let filler = "about the weekly ".repeat(PRIOR_INTENT_BYTES / 17 + 1);
    let long = |ask: &str| format!("{ask} {filler} zebra crossing budget");
    let plans = |intent: &dyn Fn(&str) -> String| {
        vec![
            PastPlan {
                intent: intent("latest updates on the election"),
                tools: vec!["news.search".into()],
                outcome: 1.0,
            },
            PastPlan {
                intent: intent("latest updates about the match"),
                tools: vec!["news.search".into()],
                outcome: 1.0,
            },
        ]
    };
    let whole = plans(&long);
    let opening = plans(&|ask| prior_intent(&long(ask)).to_string());
    assert!(whole[0].intent.len() > opening[0].intent.len());
    let learned = LearnedWords::from_plans(&whole);
    assert_eq!(learned, LearnedWords::from_plans(&opening));
    let news = learned.words_for("news.search").unwrap_or_default();
    assert!(news.contains(&"latest".to_string()), "{news:?}");
    assert!(!news.contains(&"zebra".to_string()), "{news:?}");
    let query: std::collections::HashSet<&str> = ["zebra", "cross", "budget"].into_iter().collect();
    assert!(HistoryPrior::new(&whole).boosts(&query).is_empty());
    let query: std::collections::HashSet<&str> = ["latest", "updat", "elect"].into_iter().collect();
    let (whole, opening) = (HistoryPrior::new(&whole), HistoryPrior::new(&opening));
    let boosts = whole.boosts(&query);
    assert!(!boosts.is_empty());
    assert_eq!(boosts, opening.boosts(&query));
}

/// A parameter named only through a `$ref` or `allOf` is indexed as the trimmer sends it
/// ([`Schema::field_names`]); before, the ranker read `properties` alone.
#[test]
fn parameter_names_behind_refs_and_combinators_are_indexed() {
    let mut by_ref = pack("lookup", "Look something up.");
    by_ref.metadata.input_schema = Some(Schema::Full(serde_json::json!({
        "$ref": "#/$defs/A",
        "$defs": {"A": {"type": "object", "properties": {"isbn": {"type": "string"}}}},
    })));
    let mut by_all_of = pack("fetch", "Fetch something.");
    by_all_of.metadata.input_schema = Some(Schema::Full(serde_json::json!({
        "allOf": [{"properties": {"barcode": {}}}, {"type": "object", "required": ["sku"]}],
    })));
    let g = RoutingGuide {
        packs: vec![pack("search", "Search for something."), by_ref, by_all_of],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    let r = idx.rank("which book has isbn 978-0", None);
    assert_eq!(idx.name(r.order[0].index), "lookup");
    let r = idx.rank("scan this barcode", None);
    assert_eq!(idx.name(r.order[0].index), "fetch");
    let r = idx.rank("what is sku 44", None);
    assert_eq!(
        idx.name(r.order[0].index),
        "fetch",
        "a name only `required` lists"
    );
}

/// "help me find a psychologist" asks to find one: `help` there is filler, as "please" is,
/// and a tool named `help` no longer outranks the provider search (BFCL live_multiple tune
/// questions: the provider search at rank 7 and 8 → 1). "Help me." alone still asks for help.
#[test]
fn help_me_before_a_request_is_filler_and_alone_it_asks_for_help() {
    let g = RoutingGuide {
        packs: vec![
            pack("help", "Show the help text of the command line."),
            pack(
                "Services_4_FindProvider",
                "Find a therapist or psychologist in a city.",
            ),
        ],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    for intent in [
        "Please help me find a psychologist practicing in Campbell.",
        "Would you help us locate a psychologist?",
    ] {
        let r = idx.rank(intent, None);
        assert_eq!(
            idx.name(r.order[0].index),
            "Services_4_FindProvider",
            "{intent}"
        );
    }
    assert!(!text::terms("can you help me find a salon").contains(&"help".to_string()));
    for asks in [
        "I can't use the tool. Help me.",
        "show the help",
        "help me? psychologist",
    ] {
        assert!(
            text::terms(asks).contains(&"help".to_string()),
            "{asks}: {:?}",
            text::terms(asks)
        );
    }
}

/// "right now" says when, not which right: an ACL tool whose description speaks of access
/// rights had been the first pick for "I feel like listening to some tunes right now"
/// (BFCL live_multiple tune). "Turn right" and "access rights" keep the word.
#[test]
fn right_now_is_no_right() {
    let g = RoutingGuide {
        packs: vec![
            pack(
                "acl_api.delete_mapping",
                "Remove the access rights of a user.",
            ),
            pack("Music_3_PlayMedia", "Play a music track on a device."),
        ],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    let r = idx.rank("Play me some music right now.", None);
    assert_eq!(idx.name(r.order[0].index), "Music_3_PlayMedia");
    let acl = r
        .order
        .iter()
        .find(|e| idx.name(e.index) == "acl_api.delete_mapping");
    assert!(
        acl.is_none_or(|e| e.lexical == 0.0),
        "no word of the question is about rights: {acl:?}"
    );
    for (text, has) in [
        ("right now", false),
        ("RIGHT away", false),
        ("turn right", true),
        ("access rights", true),
        ("right", true),
        // Review 44 M3: within a sentence only, and "now" however it is written.
        ("Turn right. Now play some jazz.", true),
        ("right ｎｏｗ", false),
        // Review 44 L8: a title's word, capitalised mid-sentence, is kept; a sentence's
        // first word and one shouted are not titles.
        ("Play Right Now by Rihanna", true),
        ("Right now, play some jazz", false),
        ("Done. Right now I want jazz", false),
        ("play some jazz RIGHT NOW", false),
        ("\"Right now\" please", false),
    ] {
        assert_eq!(
            text::terms(text).contains(&"right".to_string()),
            has,
            "{text}: {:?}",
            text::terms(text)
        );
    }
}

/// Everyday words for one thing meet (`thesaurus`): "taxi" finds the entry that says "cab",
/// "songs" the one that says "music", and the explanation names the word it went through.
/// Without the thesaurus no word of those questions is in the catalog but the shared ones.
#[test]
fn the_thesaurus_bridges_everyday_words_for_one_thing() {
    let g = RoutingGuide {
        packs: vec![
            pack("rides.request", "Request a cab to a destination."),
            pack("media.play", "Play music by an artist."),
            pack("travel.destination_guide", "A guide to a destination."),
            pack("strings.concatenate", "Concatenate a list of strings."),
            pack("strings.count", "Count the strings in a list."),
        ],
        pipelines: vec![],
    };
    let on = RankIndex::new(&g);
    let first = |idx: &RankIndex, q: &str| idx.name(idx.rank(q, None).order[0].index).to_string();
    assert_eq!(
        first(&on, "get me a taxi to this destination"),
        "rides.request"
    );
    assert_eq!(first(&on, "put on some songs"), "media.play");
    assert_eq!(first(&on, "combine these strings"), "strings.concatenate");
    let r = on.rank("get me a taxi to this destination", None);
    let line = on.explain(&r, 0, None).one_line();
    assert!(line.contains("taxi→cab"), "{line}");
    let off = RankIndex::with_params(
        &g,
        RankParams {
            thesaurus: 0.0,
            ..RankParams::default()
        },
    );
    assert_eq!(
        first(&off, "get me a taxi to this destination"),
        "travel.destination_guide"
    );
}

/// Tester F1: a line break in a catalog tool name (an MCP server's `tools/list` names it)
/// forged whole lines in `preview`'s RANKING and `eval rank --misses`: the explanation's
/// line shows the name as every line of text shows a name, escaped and quoted.
#[test]
fn an_explanation_keeps_a_name_with_a_line_break_on_its_line() {
    let g = RoutingGuide {
        packs: vec![
            pack(
                "evil\nmiss b (test): expected web_search at 1",
                "Current weather for a city.",
            ),
            pack("web_search", "Search the web for pages."),
        ],
        pipelines: vec![],
    };
    let idx = RankIndex::new(&g);
    let r = idx.rank("weather in paris", None);
    for s in &r.order {
        let line = idx.explain(&r, s.index, None).one_line();
        assert!(!line.contains(['\n', '\r']), "{line:?}");
    }
    let first = idx.explain(&r, r.order[0].index, None).one_line();
    assert!(
        first.starts_with("'evil\\nmiss b (test): expected web_search at 1' "),
        "{first}"
    );
}

#[test]
fn a_winner_is_marked_where_any_later_entry_scores_more() {
    // 15, 14 placed first, 6.9 first for a third request, 17 a second pick; the rest from 8.
    assert_eq!(
        placed_ahead_of_higher(&[15.0, 14.0, 6.9, 17.0], 8.0),
        [true, true, true, false]
    );
    assert_eq!(placed_ahead_of_higher(&[9.0, 8.5], 8.0), [false, false]);
    assert!(placed_ahead_of_higher(&[], 1.0).is_empty());
}

/// Tools of one service go together (see `family`): the gyms' service lends its reviews
/// tool a share of its score, which a product search's reviews tool, matching the words
/// alike, does not get; the points are said, and the explanation adds up.
#[test]
fn a_service_mate_of_a_scored_entry_gets_a_share_of_its_score() {
    let g = RoutingGuide {
        packs: vec![
            pack(
                "Real-Time_Product_Search_Product_Reviews",
                "Get all product reviews. Infinite pagination/scrolling is supported.",
            ),
            pack(
                "LocalBusinessData",
                "Search local businesses such as gyms and shops in a city.",
            ),
            pack(
                "LocalBusinessDataBusinessReviews",
                "Get all business reviews. Infinite pagination/scrolling is supported.",
            ),
            pack("get_weather", "Get the current weather for a city."),
        ],
        pipelines: vec![],
    };
    let q = "Locate gyms in London and show me the reviews";
    let idx = RankIndex::new(&g);
    let r = idx.rank(q, None);
    let at = |name: &str| *r.order.iter().find(|s| idx.name(s.index) == name).unwrap();
    let (data, reviews) = (
        at("LocalBusinessData"),
        at("LocalBusinessDataBusinessReviews"),
    );
    let share = idx.params().family;
    assert!(share > 0.0);
    assert_eq!(reviews.family, share * data.lexical);
    assert_eq!(data.family, share * reviews.lexical);
    assert_eq!(reviews.score, reviews.lexical + reviews.family);
    // Alone in its family, or with no family: nothing lent.
    assert_eq!(at("Real-Time_Product_Search_Product_Reviews").family, 0.0);
    assert_eq!(at("get_weather").family, 0.0);
    let e = idx.explain(&r, reviews.index, None);
    assert!((e.total() - reviews.score).abs() < 1e-9, "{}", e.one_line());
    assert!(
        e.one_line().contains(&format!(
            "family {:.2} (beside LocalBusinessData)",
            reviews.family
        )),
        "{}",
        e.one_line()
    );
    // Points that round to 0.00 are left out of the line (tester 49 F9), kept in the total.
    let mut faint = e.clone();
    if let Some(f) = faint.family.as_mut() {
        f.points = 0.004;
    }
    assert!(!faint.one_line().contains("family"), "{}", faint.one_line());
    let off = RankIndex::with_params(
        &g,
        RankParams {
            family: 0.0,
            ..RankParams::default()
        },
    );
    let r = off.rank(q, None);
    assert!(
        r.order
            .iter()
            .all(|s| s.family == 0.0 && s.family_from.is_none())
    );
}

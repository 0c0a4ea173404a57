//! The ranker's unit tests.

use super::*;
use super::values::answer_type_expansion;
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
    // An action conflict shows as a factor.
    let r = idx.rank("find me the profile of player Lebron James", None);
    let e = idx.explain(&r, 3, None);
    assert!(
        e.action < 1.0 && e.one_line().contains("other action"),
        "{}",
        e.one_line()
    );
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
    for (k, run) in runs.iter().take(2).enumerate() {
        let r = idx.rank(run, None);
        assert_eq!(r.order[0].index, 5 + k, "run {k}");
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

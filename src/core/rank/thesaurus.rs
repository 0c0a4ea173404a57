//! Everyday words for one thing: a person asks for a "taxi" where the catalog says "cab",
//! for "songs" where it says "music", to "combine" strings where it says "concatenate". No
//! catalog word bridges such a gap (the related words the catalog teaches need both words in
//! it), so a small general thesaurus does, each word reaching the others of its group at
//! [`RankParams::thesaurus`](super::RankParams) of a match.
//!
//! The groups are general English, written for the kinds of tools agent catalogs hold
//! (travel, media, maths, files, the web, the home, work), not for any one question: a word
//! with several everyday senses ("book", "order", "show", "share", "case") is left out, since
//! it would reach the wrong group as often as the right one — and so is one with a second
//! sense in the work these tools do ("run" a command or a race, "train" a model, "track" a
//! parcel, "join" a meeting, "launch" a product, what a word "means", "fine-tune").

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::core::text::stem;

/// Groups of words that name one thing in requests and tool descriptions. Plain words: they
/// are stemmed as the ranker stems, once, when first read.
const GROUPS: &[&[&str]] = &[
    // Travel.
    &["taxi", "cab", "rideshare", "uber", "lyft", "chauffeur"],
    &["car", "vehicle", "automobile"],
    &["flight", "airline", "airfare", "plane"],
    &["rail", "railway"],
    &["hotel", "lodging", "accommodation", "inn", "motel"],
    &["holiday", "vacation", "trip", "journey", "tour"],
    &["route", "directions", "itinerary"],
    &["distance", "far", "mileage"],
    &["nearby", "near", "nearest", "closest"],
    &["usa", "american"],
    // Weather.
    // A forecast is one kind of weather report, not another word for weather: "the
    // weather now" must not reach the forecast tool through its name.
    &[
        "weather",
        "rain",
        "rainy",
        "snow",
        "precipitation",
        "sunny",
        "cloudy",
    ],
    &["temperature", "hot", "warm"],
    &["sunrise", "sunset", "dawn", "dusk"],
    // Media.
    &["music", "song", "melody"],
    &["artist", "singer", "musician", "performer"],
    &["movie", "film", "cinema", "flick"],
    &["cartoon", "animation", "animated", "anime"],
    &["actor", "actress"],
    &["concert", "gig"],
    &["tv", "television"],
    &["video", "clip", "footage"],
    &[
        "image",
        "picture",
        "photo",
        "photograph",
        "pic",
        "screenshot",
    ],
    &["painting", "drawing", "illustration", "artwork"],
    &["draw", "paint", "sketch", "illustrate"],
    &["volume", "loud", "louder", "quiet", "quieter"],
    &["news", "headline"],
    &["biography", "bio", "profile"],
    &["definition", "define", "dictionary"],
    &["translate", "translation", "translator"],
    // Maths and data.
    &["sum", "add", "addition", "plus"],
    &["subtract", "subtraction", "minus"],
    &["multiply", "multiplication"],
    &["divide", "division", "quotient"],
    &["sort", "arrange", "ascending", "descending", "reorder"],
    &["concatenate", "concat", "combine"],
    &["probability", "chance", "odds", "likelihood"],
    &["percentage", "percent", "proportion"],
    &["predict", "prediction", "forecast", "projection"],
    &["statistic", "stat", "metric"],
    &["speed", "velocity"],
    &["height", "tall", "elevation", "altitude"],
    // Computers, files and the web.
    &["execute", "invoke"],
    &["file", "document", "doc"],
    &["folder", "directory", "dir"],
    &["website", "site", "webpage", "url"],
    &["navigate", "visit", "browse"],
    &["click", "tap"],
    &["repository", "repo"],
    &["bug", "defect"],
    &["database", "db"],
    &["error", "failure", "exception", "crash", "fault"],
    &["password", "passphrase"],
    &["permission", "privilege"],
    &["notification", "notify", "alert"],
    &["alarm", "wake", "wakeup"],
    &["timer", "countdown", "stopwatch"],
    // Messages, people and work.
    &["email", "mail", "inbox"],
    &["message", "sms", "dm", "chat"],
    &["phone", "telephone", "dial"],
    &["todo", "reminder", "remind", "remember", "chore"],
    &["calendar", "agenda", "appointment", "meeting"],
    &["company", "business", "corporation", "enterprise"],
    &["employee", "staff", "worker", "personnel"],
    &["salary", "wage", "income", "earnings"],
    &["job", "career", "vacancy", "employment"],
    &["advice", "guidance", "tip"],
    &["recommend", "recommendation", "suggest", "suggestion"],
    &["lawyer", "attorney", "solicitor"],
    &["lawsuit", "litigation"],
    &["doctor", "physician"],
    &[
        "therapist",
        "psychologist",
        "psychiatrist",
        "counselor",
        "counsellor",
    ],
    &["medicine", "drug", "medication", "prescription"],
    &["hospital", "clinic"],
    &["exercise", "workout", "fitness"],
    &["calorie", "kcal"],
    &["leader", "ruler", "monarch", "king", "queen", "emperor"],
    &["war", "battle"],
    &["religion", "faith", "christianity", "islam", "buddhism"],
    &["country", "nation"],
    &["city", "town"],
    &["history", "historical", "historic"],
    // Home and shopping.
    &["house", "residence", "apartment"],
    &["rent", "rental", "lease"],
    &["buy", "purchase", "shop"],
    &["price", "cost", "fare", "fee"],
    &["pay", "payment", "remit"],
    &["restaurant", "eatery", "diner", "bistro", "dining"],
    &["meal", "lunch", "dinner", "breakfast", "brunch"],
    &["recipe", "cook", "cuisine"],
    &["grocery", "supermarket"],
    &["clothes", "apparel", "garment"],
    &["cleaning", "housekeeping", "housekeeper", "maid", "cleaner"],
    &["shipment", "shipping", "delivery", "parcel"],
    &["light", "lamp", "bulb"],
    &["thermostat", "heating", "hvac"],
];

/// Stem → the stems its groups hold besides itself.
static THESAURUS: LazyLock<HashMap<String, Vec<String>>> = LazyLock::new(|| {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for group in GROUPS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        for s in &stems {
            let others = map.entry(s.clone()).or_default();
            others.extend(stems.iter().filter(|o| *o != s).cloned());
        }
    }
    for others in map.values_mut() {
        others.sort();
        others.dedup();
    }
    map
});

/// The words a stemmed query word names the same thing as (empty for most words).
pub(super) fn same_thing_as(term: &str) -> &'static [String] {
    THESAURUS.get(term).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::is_stop_word;

    #[test]
    fn a_word_reaches_the_others_of_its_groups_and_not_itself() {
        let taxi = same_thing_as(&stem("taxi"));
        assert!(taxi.contains(&stem("cab")), "{taxi:?}");
        assert!(!taxi.contains(&stem("taxi")));
        // A word in two groups reaches both.
        let height = same_thing_as(&stem("altitude"));
        assert!(height.contains(&stem("elevation")) && height.contains(&stem("tall")));
        assert!(same_thing_as("zzz").is_empty());
    }

    /// A word with a second sense in agent work reaches nothing: "what does it mean" is no
    /// average, "train a model" no railway, "track my parcel" no song.
    #[test]
    fn words_with_another_sense_in_agent_work_reach_nothing() {
        for w in [
            "mean", "run", "train", "track", "join", "launch", "tune", "book", "order", "show",
            "share", "case", "home", "access",
        ] {
            assert!(
                same_thing_as(&stem(w)).is_empty(),
                "{w}: {:?}",
                same_thing_as(&stem(w))
            );
        }
    }

    /// Every word can be a query word: none is a stop word (it would never be read), and no
    /// two words of a group stem alike (one of them would be dead weight).
    #[test]
    fn every_word_is_one_the_ranker_reads() {
        let mut problems = Vec::new();
        for group in GROUPS {
            problems.extend(
                group
                    .iter()
                    .filter(|w| is_stop_word(w))
                    .map(|w| format!("{w} is a stop word")),
            );
            let mut stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            stems.sort();
            let n = stems.len();
            stems.dedup();
            if stems.len() != n {
                problems.push(format!("{group:?} has words that stem alike"));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }
}

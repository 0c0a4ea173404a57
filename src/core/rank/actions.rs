//! Kinds of action: an entry named for one kind is a poor pick for an intent that asks only
//! for another, and another word for the same kind reaches it at a small share.

/// What an action word does. An entry named for one kind is a poor pick for an intent that
/// asks only for another: "find the player's profile" is not `create_player_profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Read = 1,
    Create = 2,
    Change = 4,
    Delete = 8,
}

/// Stemmed action words by kind. Ambiguous ones ("book", "set", "post") are left out, but
/// for two the tune halves measured worth their second sense: "save" (money, as well as a
/// file) and "forget" (see below).
pub(super) const ACTION_WORDS: &[(&str, Action)] = &[
    ("get", Action::Read),
    ("find", Action::Read),
    ("search", Action::Read),
    ("look", Action::Read),
    ("lookup", Action::Read),
    ("list", Action::Read),
    ("show", Action::Read),
    ("fetch", Action::Read),
    ("retriev", Action::Read),
    ("queri", Action::Read),
    ("view", Action::Read),
    ("display", Action::Read),
    ("read", Action::Read),
    ("locat", Action::Read),
    ("creat", Action::Create),
    ("add", Action::Create),
    ("make", Action::Create),
    ("insert", Action::Create),
    ("register", Action::Create),
    ("reserv", Action::Create),
    ("submit", Action::Create),
    ("upload", Action::Create),
    ("save", Action::Create),
    ("updat", Action::Change),
    ("edit", Action::Change),
    ("modifi", Action::Change),
    ("chang", Action::Change),
    ("renam", Action::Change),
    ("delet", Action::Delete),
    ("remov", Action::Delete),
    ("cancel", Action::Delete),
    ("eras", Action::Delete),
    // "Forget the entity"; a "don't forget" asking to keep is read as a delete too (no
    // word here reads its negation), and on the tune halves leaving it out measured worse.
    ("forget", Action::Delete),
    ("discard", Action::Delete),
];

/// The kind of action a stemmed word names, if it is an action word.
pub(super) fn action_of(term: &str) -> Option<Action> {
    ACTION_WORDS
        .iter()
        .find(|(w, _)| *w == term)
        .map(|&(_, a)| a)
}

pub(super) fn actions_of(terms: &[String]) -> u8 {
    terms
        .iter()
        .filter_map(|t| action_of(t))
        .fold(0, |bits, a| bits | a as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::stem;

    /// Entries are stems; one the stemmer no longer makes ("regist") never matches.
    #[test]
    fn every_action_word_is_one_the_stemmer_makes() {
        let words = [
            "get", "find", "search", "look", "lookup", "list", "show", "fetch", "retrieve",
            "query", "view", "display", "read", "locate", "create", "add", "make", "insert",
            "register", "reserve", "submit", "upload", "save", "update", "edit", "modify",
            "change", "rename", "delete", "remove", "cancel", "erase", "forget", "discard",
        ];
        for w in words {
            assert!(action_of(&stem(w)).is_some(), "{w} (stem {})", stem(w));
        }
        assert_eq!(words.len(), ACTION_WORDS.len());
    }
}

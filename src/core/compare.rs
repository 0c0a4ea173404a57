//! A/B arms (issue 18 item 2): the same intent sent as the request ctxconsole builds
//! (`compacted`) and as a variant with one kind of help taken away, so an operator can see
//! whether compaction, the planner's narrowing, the past-plans prior or the hint helps a
//! model. Every arm is built by the same `plan_request`; the arm only says what it leaves
//! out.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// The request as `preview` shows it: planner narrowing, compaction, prior, hint.
    #[default]
    Compacted,
    /// The whole catalog as written: no planner narrowing, no trimming, no cuts (prior and
    /// hint as in `compacted`).
    Full,
    /// Every entry allowed (no planner narrowing), compacted to the same allowance.
    NoPlanner,
    /// Without the past-plans part.
    NoPrior,
    /// Without the planner's hint line.
    NoHint,
}

impl Arm {
    pub const ALL: [Arm; 5] = [
        Arm::Compacted,
        Arm::Full,
        Arm::NoPlanner,
        Arm::NoPrior,
        Arm::NoHint,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Arm::Compacted => "compacted",
            Arm::Full => "full",
            Arm::NoPlanner => "no-planner",
            Arm::NoPrior => "no-prior",
            Arm::NoHint => "no-hint",
        }
    }

    pub fn parse(s: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// What the arm leaves out, for tables and help.
    pub fn what(self) -> &'static str {
        match self {
            Arm::Compacted => "the request as previewed",
            Arm::Full => "the whole catalog: no planner narrowing, no compaction",
            Arm::NoPlanner => "no planner narrowing, compacted to the same allowance",
            Arm::NoPrior => "without the past-plans part",
            Arm::NoHint => "without the planner's hint",
        }
    }

    /// Whether the planner's allowlist narrows the catalog in this arm.
    pub fn narrows(self) -> bool {
        !matches!(self, Arm::Full | Arm::NoPlanner)
    }
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for a in Arm::ALL {
            assert_eq!(Arm::parse(a.as_str()), Some(a));
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{a}\""));
            assert_eq!(serde_json::from_str::<Arm>(&json).unwrap(), a);
        }
        assert_eq!(Arm::parse("no_prior"), None);
        assert!(!Arm::Full.narrows() && !Arm::NoPlanner.narrows() && Arm::NoHint.narrows());
    }
}

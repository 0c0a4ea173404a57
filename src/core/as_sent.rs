//! What a sent plan carried beside its instruction — the attachments (their text is never
//! stored with a plan), the tier override, the defaults block — kept in its trim record as
//! `sent_with`, and what a live replay says about it: the replay is rebuilt from the stored
//! instruction, so it sends an attachment again only when the output cache still holds its
//! text, and it is never shown beside the original as the same request without saying
//! how it differs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::budget::Tier;
use crate::core::gate::{Admission, content_ref};
use crate::core::history::PlanRecord;
use crate::core::request::{Attachment, AttachmentView, Fate, PlannedRequest};
use crate::core::terminal_text::quoted;

/// The trim record's key for [`SentWith`].
pub const SENT_WITH_KEY: &str = "sent_with";
/// The trim record's key marking a baseline plan (`send --baseline`).
pub const BASELINE_KEY: &str = "baseline";

/// One attachment as sent: its name, size and the output cache's key for its text (the
/// text itself is not stored with the plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentAttachment {
    pub name: String,
    pub bytes: usize,
    /// 16 hex digits of the text's SHA-256 ([`content_ref`]).
    pub content_ref: String,
    /// How it went: raw, tight (both whole) or as a briefing (`None`: stored before this
    /// was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// Whether the output cache holds its text under `content_ref` (only a briefed part is
    /// kept there; `None`: stored before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
}

impl SentAttachment {
    /// `big.log (2,607,639 bytes, briefing, cache f7769097767e8d6b)`, or for a part sent
    /// whole `ctrl.txt (12 bytes, raw, not cached: a raw attachment is not kept)`: what
    /// `history show` and the console's History plan view say it was sent with.
    pub fn line(&self) -> String {
        let how = self.admission.map_or("sent", |a| a.label());
        let kept = match self.cached {
            Some(true) => format!("cache {}", self.content_ref),
            Some(false) if self.admission == Some(Admission::Briefing) => {
                format!("ref {}, not kept: only its map was sent", self.content_ref)
            }
            Some(false) => format!(
                "ref {}, not cached: an attachment sent whole is not kept",
                self.content_ref
            ),
            None => format!("ref {}", self.content_ref),
        };
        format!(
            "{} ({} bytes, {how}, {kept})",
            quoted(&self.name),
            crate::core::text::thousands(self.bytes)
        )
    }
}

/// What a plan was sent with beyond its instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentWith {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<SentAttachment>,
    /// The tier chosen over the row's (`--tier`, the console's tier key); `None`: the row's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_override: Option<Tier>,
    /// The caller's defaults block sent with the intent (`--defaults`): short text the
    /// operator wrote, kept whole so a replay sends it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<String>,
    /// The A/B arm a replay was rebuilt as, when not `compacted`: a replay is stored in no
    /// comparison, so its own record says which arm it sent, and a replay of it sends the
    /// same (tester 9 T9-15: a replay of a `full` arm's replay sent the compacted request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<crate::core::compare::Arm>,
}

impl SentWith {
    /// What a request was sent with: its attachments under the names it sent them by
    /// ([`crate::core::request::sent_names`]), and from its `views` (the request's
    /// attachments) how each went and whether the cache holds it.
    pub fn of(
        attachments: &[Attachment],
        views: &[AttachmentView],
        tier_override: Option<Tier>,
        defaults: &str,
    ) -> SentWith {
        let names = crate::core::request::sent_names(attachments);
        SentWith {
            attachments: attachments
                .iter()
                .zip(names)
                .enumerate()
                .map(|(i, (a, name))| SentAttachment {
                    name,
                    bytes: a.text.len(),
                    content_ref: content_ref(a.text.as_bytes()),
                    admission: views.get(i).map(|v| v.gate.admission),
                    cached: views.get(i).map(|v| v.gate.cached),
                })
                .collect(),
            tier_override,
            defaults: Some(defaults.to_string()).filter(|d| !d.is_empty()),
            arm: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.attachments.is_empty()
            && self.tier_override.is_none()
            && self.defaults.is_none()
            && self.arm.is_none()
    }

    /// As a trim record holds it; nothing recorded (rows from before it, imported plans,
    /// a value that does not read) is an empty [`SentWith`].
    pub fn from_trim(trim: Option<&Value>) -> SentWith {
        trim.and_then(|t| t.get(SENT_WITH_KEY))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Keep it in `trim` (an object), when there is anything to keep.
    pub fn keep_in(&self, trim: &mut Option<Value>) {
        if self.is_empty() {
            return;
        }
        if let (Some(Value::Object(t)), Ok(v)) = (trim.as_mut(), serde_json::to_value(self)) {
            t.insert(SENT_WITH_KEY.into(), v);
        }
    }
}

/// Whether a trim record marks its plan as a baseline (`send --baseline`).
pub fn is_baseline(trim: Option<&Value>) -> bool {
    trim.and_then(|t| t.get(BASELINE_KEY)).is_some()
}

/// Mark `record` as a baseline plan in its trim record (what `replay` rebuilds it as), with
/// the catalog entries its own window cut from `request`.
pub fn mark_baseline(record: &mut PlanRecord, request: &PlannedRequest) {
    let cut = request.compaction.count(|f| matches!(f, Fate::CutByBudget));
    if let Some(Value::Object(t)) = &mut record.trim_record {
        t.insert(
            BASELINE_KEY.into(),
            serde_json::json!({"planner": "off", "prior": "off", "catalog_cut": cut}),
        );
    }
}

/// How a live replay was rebuilt from a stored plan, against how the plan was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt<'a> {
    pub sent: &'a SentWith,
    /// The original is a baseline plan, and so was the replay built.
    pub baseline: bool,
    /// The A/B arm the original was sent as (`send --compare`), and so was the replay built.
    pub arm: Option<crate::core::compare::Arm>,
    /// The tier the replay was built at.
    pub tier: Tier,
    /// The `content_ref`s of the attachments sent again: the output cache still held their
    /// text (a part sent as a briefing is kept there).
    pub resent: &'a [&'a str],
    /// Why the output cache could not be read, if it could not.
    pub cache_error: Option<&'a str>,
}

/// `'a.json', 2 bytes; 'b.log', 9 bytes`
fn named(attachments: &[&SentAttachment]) -> String {
    attachments
        .iter()
        .map(|a| format!("{}, {} bytes", quoted(&a.name), a.bytes))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `1 attachment`, `2 attachments`, `1 of 2 attachments`.
fn counted(n: usize, of: usize) -> String {
    let noun = if of == 1 { "attachment" } else { "attachments" };
    if n == of {
        format!("{n} {noun}")
    } else {
        format!("{n} of {of} {noun}")
    }
}

/// What a replay says about the request it re-asked, one line each: every way it differs
/// from what the original sent, and what it did about it. Empty: the same kind of request.
pub fn replay_notes(r: &Rebuilt) -> Vec<String> {
    let mut notes = Vec::new();
    if r.baseline {
        notes.push(
            "a baseline plan: replayed as a baseline request (whole catalog, no planner, no prior, no two-pass)"
                .to_string(),
        );
    }
    if let Some(arm) = r.arm.filter(|a| *a != crate::core::compare::Arm::Compacted) {
        notes.push(format!(
            "the A/B arm '{}' of a comparison ({}): replayed as that arm, in one pass",
            arm.as_str(),
            arm.what()
        ));
    }
    let all = r.sent.attachments.len();
    let (again, missing): (Vec<&SentAttachment>, Vec<&SentAttachment>) = r
        .sent
        .attachments
        .iter()
        .partition(|a| r.resent.contains(&a.content_ref.as_str()));
    if !again.is_empty() {
        let them = if again.len() == 1 { "it" } else { "them" };
        notes.push(format!(
            "sent with {} ({}); the output cache still holds the text by its content_ref: replayed with {them}",
            counted(again.len(), all),
            named(&again)
        ));
    }
    if !missing.is_empty() {
        let (verb, them) = if missing.len() == 1 {
            ("is", "it")
        } else {
            ("are", "them")
        };
        let why = r.cache_error.map_or(String::new(), |e| {
            format!(" (the output cache could not be read: {e})")
        });
        notes.push(format!(
            "sent with {} ({}) that {verb} not stored; replayed without {them}{why}",
            counted(missing.len(), all),
            named(&missing)
        ));
    }
    if let Some(tier) = r.sent.tier_override {
        if tier == r.tier {
            notes.push(format!(
                "sent under a tier {tier} override; replayed at tier {tier} (the override kept)"
            ));
        } else {
            notes.push(format!(
                "sent under a tier {tier} override; replayed at tier {}",
                r.tier
            ));
        }
    }
    if let Some(d) = &r.sent.defaults {
        notes.push(format!(
            "sent with a defaults block ({} bytes); replayed with it (kept)",
            d.len()
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sent_with_round_trips_through_a_trim_record_and_nothing_is_kept_when_empty() {
        let sent = SentWith::of(
            &[Attachment {
                name: "data.json".into(),
                text: "{\"a\":1}".into(),
            }],
            &[],
            Some(Tier::A),
            "",
        );
        assert_eq!(sent.attachments[0].bytes, 7);
        assert_eq!(sent.defaults, None);
        assert_eq!(sent.attachments[0].content_ref, content_ref(b"{\"a\":1}"));
        let mut trim = Some(json!({"trim": []}));
        sent.keep_in(&mut trim);
        assert_eq!(SentWith::from_trim(trim.as_ref()), sent);
        assert_eq!(trim.as_ref().unwrap()["sent_with"]["tier_override"], "A");

        let mut untouched = Some(json!({"trim": []}));
        SentWith::default().keep_in(&mut untouched);
        assert_eq!(untouched, Some(json!({"trim": []})));
        assert!(SentWith::from_trim(None).is_empty());
        assert!(SentWith::from_trim(Some(&json!({"sent_with": 3}))).is_empty());
    }

    #[test]
    fn replay_notes_say_what_was_not_sent_again_and_quote_names_on_one_line() {
        let sent = SentWith::of(
            &[
                Attachment {
                    name: "a.json".into(),
                    text: "xx".into(),
                },
                Attachment {
                    name: "b\nvs baseline: agree".into(),
                    text: "y".into(),
                },
            ],
            &[],
            Some(Tier::A),
            "",
        );
        let notes = replay_notes(&Rebuilt {
            sent: &sent,
            baseline: false,
            arm: None,
            tier: Tier::C,
            resent: &[],
            cache_error: None,
        });
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("sent with 2 attachments ('a.json', 2 bytes; 'b\\nvs baseline")
                && notes[0].ends_with("that are not stored; replayed without them"),
            "{notes:?}"
        );
        assert!(!notes[0].contains('\n'));
        assert_eq!(notes[1], "sent under a tier A override; replayed at tier C");
        let kept = replay_notes(&Rebuilt {
            sent: &SentWith::of(&[], &[], Some(Tier::A), "locale: en-GB"),
            baseline: true,
            arm: None,
            tier: Tier::A,
            resent: &[],
            cache_error: None,
        });
        assert!(kept[0].starts_with("a baseline plan: replayed as a baseline request"));
        assert!(kept[1].ends_with("replayed at tier A (the override kept)"));
        assert_eq!(
            kept[2],
            "sent with a defaults block (13 bytes); replayed with it (kept)"
        );
        assert!(
            replay_notes(&Rebuilt {
                sent: &SentWith::default(),
                baseline: false,
                arm: Some(crate::core::compare::Arm::Compacted),
                tier: Tier::C,
                resent: &[],
                cache_error: None,
            })
            .is_empty()
        );
        // One of two read back from the output cache, the other not held.
        let held = sent.attachments[0].content_ref.clone();
        let notes = replay_notes(&Rebuilt {
            sent: &sent,
            baseline: false,
            arm: None,
            tier: Tier::A,
            resent: &[held.as_str()],
            cache_error: Some("cache.sqlite: locked"),
        });
        assert_eq!(
            notes[0],
            "sent with 1 of 2 attachments ('a.json', 2 bytes); the output cache still holds the text by its content_ref: replayed with it"
        );
        assert!(
            notes[1].starts_with("sent with 1 of 2 attachments ('b\\nvs baseline")
                && notes[1].ends_with(
                    "that is not stored; replayed without it (the output cache could not be read: cache.sqlite: locked)"
                ),
            "{notes:?}"
        );
    }
}

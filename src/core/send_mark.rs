//! Which send a sent plan is one answer of, kept in its trim record (`send`): what links a
//! model's plan and its send's baseline when either reaches the store only later.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::terminal_text::quoted_value;

/// The trim record's key for the send a sent plan is one answer of ([`SendMark`]).
pub const SEND_KEY: &str = "send";

/// Which send a sent plan is one answer of, kept in its trim record: what links a model's
/// plan and its send's baseline when either reaches the store only later, from the plan
/// lines a process that had to end wrote out (tester 37 T37-2: imported, the models' plans
/// were never linked to their baseline, and had no gap signal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendMark {
    /// The send's own id: its start and a hash (`1764300000-1a2b3c4d`).
    pub id: String,
    /// When the send began (seconds): every answer of it is at or after this.
    pub started: i64,
    /// Whether the send asked a baseline too (without one, nothing is to be linked).
    pub with_baseline: bool,
}

impl SendMark {
    /// As a trim record holds it; `None` for a plan sent before marks were kept, or a value
    /// that does not read.
    pub fn from_trim(trim: Option<&Value>) -> Option<SendMark> {
        trim.and_then(|t| t.get(SEND_KEY))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Keep it in `trim` (an object).
    pub fn keep_in(&self, trim: &mut Option<Value>) {
        if let (Some(Value::Object(t)), Ok(v)) = (trim.as_mut(), serde_json::to_value(self)) {
            t.insert(SEND_KEY.into(), v);
        }
    }

    /// Why the mark a trim record holds is not one a send keeps, with its field
    /// (`trim_record.send.started`), or `None`: no mark, or one that reads. A plan line is
    /// refused for it, as for any field (tester 38 F5: a list, an id of 100k characters with
    /// control characters, or a start of 1e30 was imported without a word, and linked to
    /// nothing).
    pub fn problem(trim: Option<&Value>) -> Option<(String, String)> {
        let mark = trim?.get(SEND_KEY)?;
        let field = |name: &str| format!("trim_record.{SEND_KEY}{name}");
        let Value::Object(fields) = mark else {
            return Some((
                field(""),
                format!(
                    "is {}; expected the mark of its send: an object of id, started and \
                     with_baseline",
                    quoted_value(mark)
                ),
            ));
        };
        if let Some(other) = fields
            .keys()
            .find(|k| !["id", "started", "with_baseline"].contains(&k.as_str()))
        {
            return Some((
                field(&format!(".{other}")),
                "is not a field of a send's mark (id, started, with_baseline)".into(),
            ));
        }
        let expected = |name: &str, what: &str| {
            let problem = match fields.get(name) {
                None => "is missing".to_string(),
                Some(v) => format!("is {}; expected {what}", quoted_value(v)),
            };
            Some((field(&format!(".{name}")), problem))
        };
        let Some(id) = fields.get("id").and_then(Value::as_str) else {
            return expected("id", "the send's id");
        };
        if let Some(problem) = crate::core::budget::name_problem(id) {
            return Some((field(".id"), problem.to_string()));
        }
        let range = &crate::core::bounds::TIMESTAMP;
        let Some(started) = fields.get("started") else {
            return expected("started", "when the send began, in seconds");
        };
        if !started.as_i64().is_some_and(|at| range.contains(&at)) {
            let found = quoted_value(started);
            let problem = crate::core::bounds::not_a_whole_number_in(&found, range);
            return Some((field(".started"), problem));
        }
        if !fields.get("with_baseline").is_some_and(Value::is_boolean) {
            return expected("with_baseline", "true or false");
        }
        None
    }
}

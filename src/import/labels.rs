//! Labelled intents for `eval rank`: BFCL questions with their ground truth, or the
//! operator's own JSONL of `{"intent": "...", "expected": ["tool", …]}`.

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

use crate::core::catalog::RoutingGuide;
use crate::core::error::CoreError;
use crate::import::catalog::parse_catalog;
use crate::import::read_text;

/// One intent and the tools that should rank first for it.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledIntent {
    pub id: String,
    pub intent: String,
    pub expected: Vec<String>,
}

/// A pooled catalog and its labelled questions.
#[derive(Debug)]
pub struct RankSet {
    pub guide: RoutingGuide,
    pub cases: Vec<LabelledIntent>,
}

#[derive(Deserialize)]
struct BfclQuestion {
    id: String,
    question: Vec<Vec<Message>>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct BfclAnswer {
    id: String,
    ground_truth: Vec<HashMap<String, Value>>,
}

#[derive(Deserialize)]
struct OperatorLabel {
    intent: String,
    expected: Vec<String>,
}

/// Parse JSON Lines (blank lines skipped), naming the line of the first bad one.
pub fn jsonl<T: for<'de> Deserialize<'de>>(text: &str, origin: &str) -> Result<Vec<T>, CoreError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let item =
            serde_json::from_str::<T>(line).map_err(|e| CoreError::json_line(origin, n + 1, &e))?;
        out.push(item);
    }
    Ok(out)
}

/// `DIR/BFCL_v4_{category}.json` and `DIR/possible_answer/BFCL_v4_{category}.json`: every
/// distinct function pooled into one catalog; each question's user turns are the intent.
pub fn load_bfcl(dir: &Path, category: &str) -> anyhow::Result<RankSet> {
    let questions_path = dir.join(format!("BFCL_v4_{category}.json"));
    let answers_path = dir
        .join("possible_answer")
        .join(format!("BFCL_v4_{category}.json"));
    let questions_text = read_text(&questions_path)?;
    let answers_text = read_text(&answers_path)?;
    let q_origin = questions_path.display().to_string();
    let guide = parse_catalog(&questions_text, &q_origin)?.guide;
    let questions: Vec<BfclQuestion> = jsonl(&questions_text, &q_origin)?;
    let answers: Vec<BfclAnswer> = jsonl(&answers_text, &answers_path.display().to_string())?;
    let expected: HashMap<String, Vec<String>> = answers
        .into_iter()
        .map(|a| {
            let tools = a
                .ground_truth
                .iter()
                .flat_map(|call| call.keys().cloned())
                .collect();
            (a.id, tools)
        })
        .collect();
    let mut cases = Vec::with_capacity(questions.len());
    for q in questions {
        let Some(tools) = expected.get(&q.id).filter(|t| !t.is_empty()) else {
            continue;
        };
        let intent = q
            .question
            .iter()
            .flatten()
            .filter(|m| m.role == "user")
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let mut expected = tools.clone();
        expected.dedup();
        cases.push(LabelledIntent {
            id: q.id,
            intent,
            expected,
        });
    }
    if cases.is_empty() {
        return Err(CoreError::Content {
            origin: q_origin,
            message: "no question has a ground-truth answer".into(),
        }
        .into());
    }
    Ok(RankSet { guide, cases })
}

/// The operator's own labels, one `{"intent": …, "expected": […]}` per line.
pub fn parse_labels(text: &str, origin: &str) -> Result<Vec<LabelledIntent>, CoreError> {
    let labels: Vec<OperatorLabel> = jsonl(text, origin)?;
    if labels.is_empty() {
        return Err(CoreError::Content {
            origin: origin.into(),
            message:
                "has no labelled intents (expected one {\"intent\": …, \"expected\": […]} per line)"
                    .into(),
        });
    }
    Ok(labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| LabelledIntent {
            id: format!("line {}", i + 1),
            intent: l.intent,
            expected: l.expected,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_labels_parse_and_a_bad_line_is_named() {
        let ok = parse_labels(
            "{\"intent\":\"take a screenshot\",\"expected\":[\"browser.screenshot\"]}\n\n",
            "labels.jsonl",
        )
        .unwrap();
        assert_eq!(ok[0].expected, vec!["browser.screenshot"]);
        let err = parse_labels(
            "{\"intent\":\"a\",\"expected\":[]}\n{\"intent\":3}\n",
            "labels.jsonl",
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("labels.jsonl: line 2"), "{msg}");
        assert!(parse_labels("\n", "x").is_err());
    }
}

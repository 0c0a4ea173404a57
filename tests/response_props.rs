//! Properties of response handling: stripping is idempotent, decoding never panics on any
//! bytes, and a decoded answer survives being wrapped in reasoning, fences or prose.

use ctxconsole::core::response::{decode_answer, strip_reasoning};
use proptest::prelude::*;

fn tagged() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<think>".to_string()),
        Just("</THINK>".to_string()),
        Just("<reasoning>".to_string()),
        Just("</reasoning>".to_string()),
        Just("[REASONING]".to_string()),
        Just("[/reasoning]".to_string()),
        Just("{\"a\":[1,\"}\"]}".to_string()),
        Just("```json\n".to_string()),
        "\\PC{0,12}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn stripping_is_idempotent(text in tagged()) {
        let once = strip_reasoning(&text);
        if let Some(answer) = &once.answer {
            let twice = strip_reasoning(answer);
            prop_assert_eq!(twice.answer.as_deref(), Some(answer.as_str()));
        }
    }

    #[test]
    fn decoding_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let stripped = strip_reasoning(&text);
        if let Some(a) = stripped.answer {
            let _ = decode_answer(&a);
        }
    }

    #[test]
    fn a_plan_survives_reasoning_fences_and_prose(
        tool in "[a-z]{1,8}\\.[a-z_]{1,10}",
        prose in "[A-Za-z ,.]{0,40}",
        wrap in 0..4u8,
    ) {
        let plan = serde_json::json!({"steps": [{"order": 1, "tool": tool}]});
        let body = plan.to_string();
        let text = match wrap {
            0 => format!("<think>{prose}</think>{body}"),
            1 => format!("{prose}\n```json\n{body}\n```"),
            2 => format!("{body}\n\n{prose}"),
            _ => format!("{prose}</think> Answer: {body} {prose}"),
        };
        let answer = strip_reasoning(&text).answer.expect("closed reasoning leaves an answer");
        let decoded = decode_answer(&answer).expect("decodes");
        prop_assert_eq!(decoded.value, plan);
    }
}

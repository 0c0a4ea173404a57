//! A seeded random-bytes fuzz harness for everything that reads what an endpoint sent:
//! reasoning stripping, the decode pipeline, the reply classifier with the plan guard, the
//! chat-completion body reader and the event-stream reader fed in random splits.
//!
//! `cargo fuzz` needs a nightly toolchain and libFuzzer; this harness runs on the stable
//! toolchain CI has, for a bounded number of cases (`CTXCONSOLE_FUZZ_CASES`, default
//! 150,000), from a fixed seed (`CTXCONSOLE_FUZZ_SEED`) so a failure replays exactly. Inputs
//! are mutations of real responses — the sample history's raw responses for every failure
//! class — and plain random bytes.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ctxconsole::core::failure::{Reply, read_reply};
use ctxconsole::core::history::{Outcome, PlanRecord, PlanSource, parse_plan_line};
use ctxconsole::core::plan::{PLANNER_SELF_NAMES, PlanGuard, steps_from};
use ctxconsole::core::response::{decode_answer, strip_reasoning};
use ctxconsole::llm::wire::{EventStream, reply_from_body};
use ctxconsole::sample::SAMPLE_PLANS;

mod common;
use common::Rng;

/// Fragments that steer inputs into the decoder's corners.
const TOKENS: [&str; 24] = [
    "<think>",
    "</think>",
    "<THINK>",
    "</Reasoning>",
    "<reasoning>",
    "[REASONING]",
    "[/REASONING]",
    "```",
    "```json\n",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\\"",
    ",",
    ":",
    "\n",
    "{\"steps\":[",
    "{\"order\":1,\"tool\":\"blog.draft\"}",
    "data: ",
    "data: [DONE]\n\n",
    "é",
];

fn corpus() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = SAMPLE_PLANS
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["raw_response"].as_str().map(|s| s.as_bytes().to_vec()))
        .collect();
    seeds.sort();
    seeds.dedup();
    seeds.push(
        br#"{"choices":[{"message":{"content":"{\"steps\":[]}","reasoning":"hm"},"finish_reason":"stop"}]}"#
            .to_vec(),
    );
    seeds.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"{}\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_vec());
    seeds
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if rng.below(8) == 0 {
        return (0..rng.below(256)).map(|_| rng.next() as u8).collect();
    }
    let mut out = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(6) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                out.splice(at..at, t.iter().copied());
            }
            1 if !out.is_empty() => {
                let end = (at + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            2 => out.insert(at, rng.next() as u8),
            3 => out.truncate(at),
            _ => {
                let copy = out.clone();
                let from = rng.below(copy.len() + 1);
                let end = (from + rng.below(64)).min(copy.len());
                out.splice(at..at, copy[from..end].iter().copied());
            }
        }
    }
    out
}

fn check(input: &[u8], split: usize, guard: &PlanGuard) {
    let text = String::from_utf8_lossy(input);
    let stripped = strip_reasoning(&text);
    if let Some(answer) = &stripped.answer {
        assert_eq!(
            strip_reasoning(answer).answer.as_deref(),
            Some(answer.as_str()),
            "stripping is idempotent"
        );
        if let Some(d) = decode_answer(answer) {
            assert!(serde_json::to_string(&d.value).is_ok());
        }
    }
    let reply = Reply {
        content: Some(text.to_string()),
        finish_reason: ["stop", "length", "content_filter", "weird"]
            .get(split % 5)
            .map(|s| s.to_string()),
        ..Reply::default()
    };
    let reading = read_reply(&reply, |v| steps_from(v).map(|s| guard.check(s)));
    assert!(
        reading.value.is_some() != reading.failure.is_some(),
        "a reading is a plan or a classified failure, never both or neither"
    );
    if let Some(plan) = &reading.value {
        assert!(
            plan.steps
                .iter()
                .all(|s| s.tool == "unknown" || guard.registered.contains(&s.tool))
        );
    }
    // What `send` stores of this answer, plan or failure, imports back from the store's
    // export as itself.
    let stored = PlanRecord {
        id: "send-1".into(),
        at: 1_790_000_000,
        at_nanos: 0,
        caller: "c".into(),
        model: "m".into(),
        intent: "x".into(),
        steps: reading
            .value
            .as_ref()
            .map(|p| p.steps.clone())
            .unwrap_or_default(),
        outcome: reading
            .value
            .as_ref()
            .map_or(Outcome::Failed, |p| p.outcome),
        failure_class: reading
            .failure
            .as_ref()
            .map(|f| f.class.as_str().to_string()),
        finish_reason: reply.finish_reason.clone(),
        raw_response: Some(text.to_string()),
        trim_record: None,
        duration_ms: Some(5),
        replay_of: None,
        answer: None,
        arm: None,
        compare_group: None,
        source: PlanSource::Sent,
        expert_baseline: None,
    };
    let line = stored.import_line();
    match parse_plan_line("export", 1, &line) {
        Ok(back) => assert!(
            back.import_line() == line,
            "changed on its way back: {line}"
        ),
        Err(e) => panic!("a stored answer does not import back: {e}\n{line}"),
    }
    let _ = reply_from_body(input);
    let mut stream = EventStream::default();
    let at = split.min(input.len());
    if stream.feed(&input[..at]).is_ok() {
        let _ = stream.feed(&input[at..]);
    }
    let _ = stream.reply();
}

#[test]
fn nothing_an_endpoint_sends_panics_the_readers() {
    let cases: usize = std::env::var("CTXCONSOLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150_000);
    let seed: u64 = std::env::var("CTXCONSOLE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_c0ff_ee00_0451);
    let seeds = corpus();
    assert!(
        seeds.len() > 100,
        "the sample's raw responses seed the corpus"
    );
    let registered: HashSet<String> = ["blog.draft", "image.generate", "fs.write", "web.search"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let pipelines = HashSet::new();
    let self_names: Vec<String> = PLANNER_SELF_NAMES.iter().map(|s| s.to_string()).collect();
    let guard = PlanGuard {
        registered: &registered,
        pipelines: &pipelines,
        self_names: &self_names,
        read_cached: true,
    };
    let mut rng = Rng(seed);
    for case in 0..cases {
        let input = mutate(&mut rng, &seeds);
        let split = rng.below(input.len() + 1);
        let result = catch_unwind(AssertUnwindSafe(|| check(&input, split, &guard)));
        if let Err(e) = result {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "case {case} (seed {seed}, split {split}) failed: {why}\ninput: {:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }
}

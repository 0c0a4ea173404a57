//! What `import traces` holds while it reads, measured by an allocator that counts the
//! bytes live on the reading thread (tester 7 T7-7): one OTLP JSON line (the Collector's
//! file exporter writes one per export batch, and nothing bounds it) cost 13× its size when
//! it was parsed whole into a `serde_json::Value` tree, and every `execute_tool` span kept
//! its own copy of its tool name, trace id and caller until the last line — and the drift
//! pass after the import held a copy of every run's tool name once more. (SQLite's own
//! memory is its allocator's, not counted here.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ctxconsole::core::error::CoreError;
use ctxconsole::core::traffic::{OtelReader, TrafficSource};
use ctxconsole::store::history::{HistoryStore, OnConflict};
use serde_json::{Value, json};

/// The system allocator, counting the bytes live on each thread and their peak.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn counted(delta: isize) {
    // `try_with`: a thread being torn down has no counters left; it is not measured.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is passed to `System` unchanged; the counters are thread-local cells
// that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            counted(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        counted(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            counted(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The most bytes live on this thread at once while `f` ran, beyond those live before it,
/// and the bytes still live after it (beyond those before), with what `f` returned.
fn measured<T>(f: impl FnOnce() -> T) -> (usize, isize, T) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get) - before;
    let after = LIVE.with(Cell::get) - before;
    (peak.max(0) as usize, after, out)
}

fn attr(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

/// A chat span (a plan of two steps), as `scripts/otel-traces.py` writes one.
fn chat(trace: &str, span: &str, t: u64, intent: &str) -> Value {
    let out = json!([{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": "c0", "name": "fs.search", "arguments": {}},
        {"type": "tool_call", "id": "c1", "name": "fs.read", "arguments": {}}]}]);
    let input = json!([{"role": "user", "parts": [{"type": "text", "content": intent}]}]);
    json!({"traceId": trace, "spanId": span, "name": "chat", "kind": 3,
        "startTimeUnixNano": t.to_string(), "endTimeUnixNano": (t + 1_000_000_000).to_string(),
        "attributes": [attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.request.model", "gpt-4o"),
            attr("gen_ai.input.messages", &input.to_string()),
            attr("gen_ai.output.messages", &out.to_string())],
        "status": {}})
}

fn execute(trace: &str, span: &str, t: u64, tool: &str) -> Value {
    json!({"traceId": trace, "spanId": span, "name": "execute_tool", "kind": 3,
        "startTimeUnixNano": t.to_string(), "endTimeUnixNano": (t + 100_000_000).to_string(),
        "attributes": [attr("gen_ai.operation.name", "execute_tool"),
            attr("gen_ai.tool.name", tool)],
        "status": {"code": 1}})
}

fn line(spans: Vec<Value>) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", "trace-agent")]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
    .to_string()
}

const T0: u64 = 1_795_168_800_000_000_000;

/// One line of 4,000 traces, each a chat and a tool span (about 5 MB): reading it holds
/// about the line's own size at most (the plans handed on one at a time, as the store takes
/// them), where the tree it used to be parsed into holds many times it.
#[test]
fn one_long_line_costs_about_its_own_size() {
    let spans = (0..4_000u64)
        .flat_map(|i| {
            let trace = format!("{:032x}", i + 1);
            [
                chat(
                    &trace,
                    &format!("{:016x}", 2 * i + 1),
                    T0 + i * 1_000_000_000,
                    &format!("search the notes {i}"),
                ),
                execute(
                    &trace,
                    &format!("{:016x}", 2 * i + 2),
                    T0 + i * 1_000_000_000 + 500_000_000,
                    "fs.search",
                ),
            ]
        })
        .collect();
    let text = line(spans);
    // The measure itself: the tree the line was read into (the cause of T7-7).
    let (tree, _, _) = measured(|| serde_json::from_str::<Value>(&text).unwrap());
    assert!(tree > 5 * text.len(), "{tree} for {} bytes", text.len());

    let mut reader = OtelReader::default();
    let (peak, _, plans) = measured(|| {
        let mut plans = 0;
        reader
            .read_line("f", 1, &text, &mut |p| {
                assert_eq!(p.steps.len(), 2);
                plans += 1;
                Ok::<(), CoreError>(())
            })
            .unwrap();
        plans
    });
    assert_eq!(plans, 4_000);
    assert!(
        peak < text.len(),
        "{peak} bytes held reading a {}-byte line (the tree: {tree})",
        text.len()
    );
    let read = reader.finish();
    assert_eq!(read.records, 8_000);
    // Each run comes with its trace, for the store to link to the chat it holds.
    assert_eq!(read.executions.len(), 4_000);
}

/// 20,000 tool spans whose 500-byte tool name is the same (tester 7's `tools` file): what
/// waits for the last line is a few small fields each, the name held once, not the name
/// copied 20,000 times (10 MB); and the executions are built one at a time as the store
/// takes them.
#[test]
fn tool_spans_waiting_for_their_chats_share_their_names() {
    let name = "t".repeat(500);
    let lines: Vec<String> = (0..20u64)
        .map(|l| {
            line(
                (0..1_000u64)
                    .map(|i| {
                        let n = l * 1_000 + i;
                        execute(
                            &format!("{:032x}", n % 2 + 1),
                            &format!("{:016x}", n + 1),
                            T0 + n,
                            &name,
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    let bytes: usize = lines.iter().map(String::len).sum();
    let mut reader = OtelReader::default();
    let (_, held, ()) = measured(|| {
        for (i, text) in lines.iter().enumerate() {
            reader
                .read_line("f", i + 1, text, &mut |_| Ok::<(), CoreError>(()))
                .unwrap();
        }
    });
    assert!(
        held < (bytes / 4) as isize,
        "{held} bytes held for 20,000 tool spans ({bytes} bytes read)"
    );
    let read = reader.finish();
    assert_eq!(read.executions.len(), 20_000);
    let (peak, _, n) = measured(|| {
        read.executions
            .map(|e| e.execution.tool.len())
            .sum::<usize>()
    });
    assert_eq!(n, 20_000 * 500);
    assert!(peak < 100_000, "{peak} bytes to hand on the executions");
}

/// The whole import of 20,000 runs of one 2,000-byte tool across 20 traces, each with its
/// chat — the reader, the store's inserts and the drift pass that judges the 20 plans on
/// their 1,000 runs each — holds a fraction of the 40 MB of names it reads: the name once,
/// not a copy a run (the drift pass held 300,000 copies for tester 7's `tools` file).
#[test]
fn importing_many_runs_of_one_tool_holds_its_name_once() {
    let name = "t".repeat(2_000);
    let trace = |t: u64| format!("{:032x}", t + 1);
    let mut lines: Vec<String> = (0..20u64)
        .map(|t| {
            line(vec![chat(
                &trace(t),
                &format!("{:016x}", 1_000_000 + t),
                T0,
                "search the notes",
            )])
        })
        .collect();
    lines.extend((0..20u64).map(|l| {
        line(
            (0..1_000u64)
                .map(|i| {
                    let n = l * 1_000 + i;
                    execute(
                        &trace(n % 20),
                        &format!("{:016x}", n + 1),
                        T0 + 1 + n,
                        &name,
                    )
                })
                .collect(),
        )
    }));
    let bytes: usize = lines.iter().map(String::len).sum();
    let dir = tempfile::tempdir().unwrap();
    let mut store = HistoryStore::open(&dir.path().join("h.sqlite")).unwrap();
    let (peak, _, report) = measured(|| {
        store
            .import_traffic(
                "f",
                TrafficSource::Otel,
                &Default::default(),
                OnConflict::Refuse,
                |plan| {
                    let mut reader = OtelReader::default();
                    for (i, text) in lines.iter().enumerate() {
                        reader.read_line("f", i + 1, text, &mut *plan)?;
                    }
                    Ok(reader.finish())
                },
            )
            .unwrap()
    });
    assert_eq!(report.added, 20_020);
    assert_eq!(report.drift_updated, 20);
    assert!(
        peak < bytes / 4,
        "{peak} bytes held importing {bytes} bytes of 20,000 runs of one tool"
    );
}

/// A chat span whose messages attributes are `input` and `output` (JSON text, as
/// instrumentations record them).
fn chat_with(input: &Value, output: &Value) -> Value {
    json!({"traceId": format!("{:032x}", 1), "spanId": format!("{:016x}", 1), "name": "chat",
        "kind": 3, "startTimeUnixNano": T0.to_string(),
        "endTimeUnixNano": (T0 + 1_000_000_000).to_string(),
        "attributes": [attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.request.model", "gpt-4o"),
            attr("gen_ai.input.messages", &input.to_string()),
            attr("gen_ai.output.messages", &output.to_string())],
        "status": {}})
}

/// The peak bytes held reading one line into its plan, and the plan.
fn read_one(text: &str) -> (usize, ctxconsole::core::history::PlanRecord) {
    let mut reader = OtelReader::default();
    let (peak, _, plan) = measured(|| {
        let mut plan = None;
        reader
            .read_line("f", 1, text, &mut |p| {
                plan = Some(p);
                Ok::<(), CoreError>(())
            })
            .unwrap();
        plan.unwrap()
    });
    (peak, plan)
}

/// Tester 9 T9-14 (`inparts`): one chat span whose input messages hold 120,000 tiny text
/// parts. The messages text was parsed whole into a tree (22× the line); read typed, only the
/// user's text is kept, and the line costs about its own size.
#[test]
fn a_message_list_of_many_parts_costs_about_its_own_size() {
    let parts = vec![json!({"type": "text", "content": "a"}); 120_000];
    let input = json!([{"role": "user", "parts": parts}]);
    let output = json!([{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": "c0", "name": "fs.search", "arguments": {}}]}]);
    let text = line(vec![chat_with(&input, &output)]);
    let (peak, plan) = read_one(&text);
    // The parts of one message, joined as an answer's are (`content_part`): nothing between.
    assert_eq!(plan.intent, "a".repeat(120_000));
    assert_eq!(plan.steps.len(), 1);
    assert!(
        peak < 2 * text.len(),
        "{peak} bytes held reading a {}-byte line",
        text.len()
    );
}

/// Tester 9 T9-14 (`outcalls`): one chat span answering 60,000 tool calls. Every call was
/// built (and kept in the stored answer) before the plan was refused for its length; now
/// the calls past the bound of steps are counted and read past, the answer keeps the first
/// 10,000 and says how many more there were, and the plan is refused as before.
#[test]
fn tool_calls_past_the_bound_of_steps_are_counted_not_built() {
    let input = json!([{"role": "user", "parts": [{"type": "text", "content": "search"}]}]);
    let calls: Vec<Value> = (0..60_000)
        .map(|i| {
            json!({"type": "tool_call", "id": format!("c{i}"), "name": "fs.search",
            "arguments": {}})
        })
        .collect();
    let output = json!([{"role": "assistant", "finish_reason": "tool_call", "parts": calls}]);
    let text = line(vec![chat_with(&input, &output)]);
    let (peak, plan) = read_one(&text);
    assert_eq!(plan.failure_class.as_deref(), Some("no_plan"));
    let answer = plan.answer.unwrap();
    let bound = ctxconsole::core::bounds::PLAN_STEPS;
    assert_eq!(answer["tool_calls"].as_array().unwrap().len(), bound);
    assert_eq!(
        answer["tool_calls"][bound - 1]["id"],
        format!("c{}", bound - 1)
    );
    assert_eq!(answer["tool_calls_not_kept"], 60_000 - bound);
    assert!(
        peak < 4 * text.len(),
        "{peak} bytes held reading a {}-byte line",
        text.len()
    );
}

/// Tester 9 T9-14 (`deepargs`): 200 tool calls whose arguments are each a 50×50 list of
/// zeros. The args are stored, so the plan holds them as values (many times their text);
/// reading holds them once beside that, not as a tree of the messages, then the steps' tree,
/// then a copy of it (the decoded steps were copied into a new tree twice).
#[test]
fn wide_tool_call_arguments_are_held_once() {
    let input = json!([{"role": "user", "parts": [{"type": "text", "content": "search"}]}]);
    let calls: Vec<Value> = (0..200)
        .map(|i| {
            json!({"type": "tool_call", "id": format!("c{i}"), "name": "fs.search",
            "arguments": {"a": vec![vec![0; 50]; 50]}})
        })
        .collect();
    let output = json!([{"role": "assistant", "finish_reason": "tool_call", "parts": calls}]);
    let text = line(vec![chat_with(&input, &output)]);
    let (peak, plan) = read_one(&text);
    assert_eq!(plan.steps.len(), 200);
    assert_eq!(plan.steps[199].args["a"][49][49], 0);
    // What the plan itself holds: its copy's size.
    let (held, _, _) = measured(|| plan.clone());
    assert!(
        2 * peak < 3 * held,
        "{peak} bytes held reading a {}-byte line into a plan of {held} bytes",
        text.len()
    );
}

/// Tester 9 T9-14, through `import litellm`: a spend log row whose `messages` column is a
/// value (not text) of 120,000 tiny parts and whose response answers 60,000 tool calls. The
/// row was parsed whole into a tree; it is read typed as the parser reaches it, through the
/// reader the spans' messages go through, and costs about its own size.
#[test]
fn a_spend_log_row_of_many_parts_and_calls_costs_about_its_own_size() {
    let parts = vec![json!({"type": "text", "text": "a"}); 120_000];
    let calls: Vec<Value> = (0..60_000)
        .map(|i| {
            json!({"id": format!("c{i}"), "type": "function",
            "function": {"name": "fs.search", "arguments": "{}"}})
        })
        .collect();
    let row = json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00",
        "messages": [{"role": "user", "content": parts}],
        "response": {"choices": [{"finish_reason": "tool_calls",
            "message": {"content": null, "tool_calls": calls}}]}});
    let text = format!("{row}\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spend.jsonl");
    std::fs::write(&file, &text).unwrap();
    let (peak, _, plan) = measured(|| {
        let mut plan = None;
        ctxconsole::import::traffic::read_spend_logs(
            &file,
            |_| {},
            |p| {
                plan = Some(p);
                Ok(())
            },
        )
        .unwrap();
        plan.unwrap()
    });
    assert_eq!(plan.intent.len(), 120_000);
    assert_eq!(plan.failure_class.as_deref(), Some("no_plan"));
    assert_eq!(plan.answer.unwrap()["tool_calls_not_kept"], 50_000);
    assert!(
        peak < 4 * text.len(),
        "{peak} bytes held reading a {}-byte row",
        text.len()
    );
}

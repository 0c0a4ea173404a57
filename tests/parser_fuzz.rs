//! A seeded fuzz harness for every parser of outside input that `tests/decoder_fuzz.rs`
//! does not already cover (that one takes what an endpoint sends: SSE, chat bodies,
//! reasoning, decoding): catalog formats (routing guide, MCP tools/list, OpenAI tools, BFCL
//! functions and questions), the LiteLLM registry, JSON Lines (plans, executions, operator
//! and planner labels) both parsed and imported into a real store, every TOML file
//! (budgets, planner, config, keymap, theme), timestamps, durations, `--since`, the
//! `--mcp` command line, and a gateway's traffic files (OTLP spans, LiteLLM spend logs).
//!
//! Each parser gets mutations of real inputs — the embedded sample files and small fixtures
//! shaped like the real third-party ones — with extreme numbers (`nan`, `inf`, `-1`,
//! `1e400`, 2⁶⁴), multi-byte characters and syntax fragments spliced in, plus plain random
//! bytes. It must not panic, must finish each case (a case taking `HANG_SECS` is reported as
//! a hang), and a refusal must be an error whose text names the input's origin. What
//! parses must respect the bounds the parser promises (finite prices, windows in range,
//! timestamps inside 1970..9999, durations inside the caller's range).
//!
//! Bounded in `cargo test` (`DEFAULT_TOTAL` cases across all parsers, from a fixed seed);
//! `CTXCONSOLE_FUZZ_CASES=N` runs N in all (each parser keeps its share) and
//! `CTXCONSOLE_FUZZ_SEED=S` another sequence, so a failure replays exactly:
//!
//! ```sh
//! CTXCONSOLE_FUZZ_CASES=1560000 CTXCONSOLE_FUZZ_SEED=20261123 cargo test --test parser_fuzz -- --nocapture
//! ```
//!
//! (ten times the default: 1,560,000 cases, clean, in 186 s in a debug build on the
//! project's shared two-core machine; `--nocapture` prints each parser's count and time.)

use std::collections::hash_map::DefaultHasher;
use std::fmt::Display;
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ctxconsole::cli::eval_planner::parse_messages;
use ctxconsole::cli::history::since_secs;
use ctxconsole::core::bounds;
use ctxconsole::core::budget::{Layer, parse_budgets_toml};
use ctxconsole::core::config::Config;
use ctxconsole::core::duration::{self, parse_duration};
use ctxconsole::core::history::{parse_execution_line, parse_plan_line};
use ctxconsole::core::planner::{Planner, RulesFile};
use ctxconsole::core::time::{format_minute, format_timestamp, parse_rfc3339, parse_timestamp};
use ctxconsole::import::catalog::parse_catalog;
use ctxconsole::import::labels::parse_labels;
use ctxconsole::import::litellm::parse_registry;
use ctxconsole::import::mcp::split_command;
use ctxconsole::import::text_from_bytes;
use ctxconsole::import::traffic::{read_spend_logs, read_traces};
use ctxconsole::llm::provider::Providers;
use ctxconsole::sample::{
    SAMPLE_BUDGETS, SAMPLE_CATALOG, SAMPLE_CONFIG, SAMPLE_EXECUTIONS, SAMPLE_PLANNER,
    SAMPLE_PLANNER_EVAL, SAMPLE_PLANS,
};
use ctxconsole::store::history::{HistoryStore, OnConflict};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::theme::Theme;

/// Each parser's cases in a plain `cargo test`, set by cost so the whole run stays near
/// ten seconds in a debug build on two cores.
mod share {
    pub const CATALOG: usize = 6_000;
    pub const REGISTRY: usize = 20_000;
    pub const RECORDS: usize = 30_000;
    pub const LABELS: usize = 20_000;
    pub const BUDGETS: usize = 5_000;
    pub const PLANNER: usize = 1_000;
    pub const CONFIG: usize = 20_000;
    pub const KEYMAP_THEME: usize = 10_000;
    pub const TIME: usize = 40_000;
    pub const STORE_IMPORT: usize = 4_000;
    pub const TRAFFIC: usize = 6_000;
}

/// Cases across all parsers in a plain `cargo test`.
const DEFAULT_TOTAL: usize = share::CATALOG
    + share::REGISTRY
    + share::RECORDS
    + share::LABELS
    + share::BUDGETS
    + share::PLANNER
    + share::CONFIG
    + share::KEYMAP_THEME
    + share::TIME
    + share::STORE_IMPORT
    + share::TRAFFIC;
/// A case still running after this long is a hang.
const HANG_SECS: u64 = 30;

mod common;
use common::Rng;

/// Numbers at the edges: what TOML and JSON can say that a parser must refuse or bound.
const NUMBERS: &[&str] = &[
    "nan",
    "+nan",
    "-nan",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    "-1",
    "-0",
    "0",
    "1e400",
    "-1e400",
    "1e-400",
    "1e308",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "\"128000\"",
    "\"lots\"",
    "\"nan\"",
    "0.5",
    "1_000",
    "0x10",
];

/// Fragments of the syntaxes being parsed, and text that is not ASCII.
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    "\\",
    "\\u0000",
    ",",
    ":",
    "=",
    "\n",
    "\r\n",
    "#",
    "[[",
    "]]",
    ".",
    "é",
    "€",
    "𝟘",
    "\u{feff}",
    "\u{0}",
    "\u{1b}[2J",
    "T",
    "Z",
    "+",
    "-",
    "ms",
    "d",
    "w",
    "\"\"\"",
    "'''",
    "true",
    "null",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], tokens: &[&str]) -> Vec<u8> {
    if rng.below(8) == 0 {
        return (0..rng.below(256)).map(|_| rng.next() as u8).collect();
    }
    let mut out = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(6) {
        let at = rng.below(out.len() + 1);
        match rng.below(8) {
            0 => {
                let t = tokens[rng.below(tokens.len())].as_bytes();
                out.splice(at..at, t.iter().copied());
            }
            1 => {
                let t = FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes();
                out.splice(at..at, t.iter().copied());
            }
            2 => {
                // Replace the next number with one at the edges.
                let start = out[at..]
                    .iter()
                    .position(u8::is_ascii_digit)
                    .map(|i| at + i);
                if let Some(start) = start {
                    let len = out[start..]
                        .iter()
                        .take_while(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'-'))
                        .count();
                    let n = NUMBERS[rng.below(NUMBERS.len())].as_bytes();
                    out.splice(start..start + len, n.iter().copied());
                }
            }
            3 if !out.is_empty() => {
                let end = (at + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 => out.insert(at, rng.next() as u8),
            5 => out.truncate(at),
            6 if rng.below(4) == 0 => {
                // Deep nesting: the JSON and TOML readers must stop at a depth, not
                // overflow the stack.
                let open: &[u8] = [b"[".as_slice(), b"{\"a\":", b"{a=", b"a=["][rng.below(4)];
                let deep = open.repeat(100 + rng.below(3000));
                out.splice(at..at, deep);
            }
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

fn seed_for(name: &str) -> u64 {
    let base: u64 = std::env::var("CTXCONSOLE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_0016_0015_2026);
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    // Never 0: xorshift would stay there.
    (base ^ h.finish()) | 1
}

/// This parser's share of the run: `share` of `DEFAULT_TOTAL` by default, scaled to
/// `CTXCONSOLE_FUZZ_CASES` when it is set.
fn cases(share: usize) -> usize {
    match std::env::var("CTXCONSOLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(total) => (total as u128 * share as u128 / DEFAULT_TOTAL as u128).max(1) as usize,
        None => share,
    }
}

fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

enum Report {
    Started(usize),
    Failed(String),
    Done,
}

/// Run `check` on `n` mutated inputs on a worker thread; this thread watches for a case
/// that does not finish. The inputs are a function of the seed, so a hang's input is made
/// again here to show it.
fn fuzz(
    name: &'static str,
    n: usize,
    seeds: Vec<Vec<u8>>,
    tokens: &'static [&'static str],
    check: impl Fn(&[u8]) + Send + 'static,
) {
    assert!(!seeds.is_empty(), "{name}: no seeds");
    let seed = seed_for(name);
    let (tx, rx) = mpsc::channel();
    let worker_seeds = seeds.clone();
    std::thread::spawn(move || {
        let mut rng = Rng(seed);
        for case in 0..n {
            let input = mutate(&mut rng, &worker_seeds, tokens);
            let _ = tx.send(Report::Started(case));
            if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(&input))) {
                let _ = tx.send(Report::Failed(format!(
                    "{name}: case {case} (seed {seed}) failed: {}\ninput: {:?}",
                    panic_text(&*e),
                    String::from_utf8_lossy(&input)
                )));
                return;
            }
        }
        let _ = tx.send(Report::Done);
    });
    let started = Instant::now();
    let mut current = None;
    loop {
        match rx.recv_timeout(Duration::from_secs(HANG_SECS)) {
            Ok(Report::Started(case)) => current = Some(case),
            Ok(Report::Failed(why)) => panic!("{why}"),
            Ok(Report::Done) => {
                eprintln!("{name}: {n} cases in {:.2?}", started.elapsed());
                return;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{name}: the worker died"),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let case = current.unwrap_or(0);
                let mut rng = Rng(seed);
                let mut input = Vec::new();
                for _ in 0..=case {
                    input = mutate(&mut rng, &seeds, tokens);
                }
                panic!(
                    "{name}: case {case} (seed {seed}) still running after {HANG_SECS}s\ninput: {:?}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
    }
}

/// A refusal names where the input came from.
fn names_origin(err: &dyn Display, origin: &str) {
    let text = format!("{err:#}");
    assert!(
        text.contains(origin),
        "the error does not name {origin}: {text}"
    );
}

/// The bytes as the workspace reads them: invalid UTF-8 is itself a named error.
fn text(origin: &str, bytes: &[u8]) -> Option<String> {
    match text_from_bytes(origin, bytes.to_vec()) {
        Ok(t) => Some(t),
        Err(e) => {
            names_origin(&e, origin);
            None
        }
    }
}

fn lines(text: &str, n: usize) -> Vec<Vec<u8>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(|l| l.as_bytes().to_vec())
        .collect()
}

/// Small fixtures shaped like the real third-party files in tests/data: small, so each
/// mutation is cheap.
const MCP_TOOLS: &str = r#"{"tools":[{"name":"read_file","title":"Read File","description":"Read the complete contents of a file. Handles text encodings.","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number","description":"last N lines"}},"required":["path"]},"annotations":{"readOnlyHint":true}},{"name":"create_entities","description":"Create multiple new entities in the knowledge graph","inputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"observations":{"type":"array","items":{"type":"string"}}}}}}},"outputSchema":{"type":"object"}}]}"#;
const MCP_RESPONSE: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"maps_geocode","description":"Convert an address into geographic coordinates","inputSchema":{"type":"object","properties":{"address":{"type":"string"}}}}]}}"#;
const OPENAI_TOOLS: &str = r#"[{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city. Uses metric units.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"e.g. Paris"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}},{"type":"function","function":{"name":"send_email","description":"Send an email","parameters":{"type":"object","properties":{"to":{"type":"string"}}}}}]"#;
const BFCL_FUNCTIONS: &str = r#"[{"name":"calculate_triangle_area","description":"Calculate the area of a triangle given its base and height.","parameters":{"type":"dict","properties":{"base":{"type":"integer","description":"The base of the triangle."},"height":{"type":"float"}},"required":["base","height"]}}]"#;
const BFCL_QUESTIONS: &str = "{\"id\":\"multiple_0\",\"question\":[[{\"role\":\"user\",\"content\":\"Find the area of a triangle with base 10 and height 5\"}]],\"function\":[{\"name\":\"triangle_properties.get\",\"description\":\"Retrieve the dimensions.\",\"parameters\":{\"type\":\"dict\",\"properties\":{\"side1\":{\"type\":\"integer\"}},\"required\":[\"side1\"]}},{\"name\":\"circle_properties.get\",\"description\":\"Retrieve the radius.\",\"parameters\":{\"type\":\"dict\",\"properties\":{\"radius\":{\"type\":\"float\"}}}}]}\n{\"id\":\"multiple_1\",\"question\":[[{\"role\":\"user\",\"content\":\"Distance from Paris to Rome?\"}]],\"function\":[{\"name\":\"geo_distance.calculate\",\"description\":\"Distance between two places.\",\"parameters\":{\"type\":\"dict\",\"properties\":{\"start\":{\"type\":\"string\"}}}}]}";
const REGISTRY: &str = r#"{
    "sample_spec": {"max_tokens": "LEGACY parameter. set to max_output_tokens if provider specifies it.", "max_input_tokens": "max input tokens, if the provider specifies it.", "input_cost_per_token": 0.0, "mode": "one of: chat, embedding, completion, image_generation", "supports_function_calling": true},
    "gemini/gemini-2.5-pro": {"max_input_tokens": 1048576, "max_output_tokens": 65535, "max_tokens": 65535, "input_cost_per_token": 1.25e-06, "input_cost_per_token_above_200k_tokens": 2.5e-06, "output_cost_per_token": 1e-05, "cache_read_input_token_cost": 3.125e-07, "litellm_provider": "gemini", "mode": "chat", "supports_function_calling": true, "supports_reasoning": true, "supports_prompt_caching": true, "supports_response_schema": true},
    "openrouter/meta-llama/llama-3.3-70b-instruct:free": {"max_input_tokens": 131072, "max_output_tokens": 4096, "input_cost_per_token": 0, "output_cost_per_token": 0, "mode": "chat"},
    "gpt-3.5-turbo-instruct": {"max_tokens": 4096, "input_cost_per_token": 1.5e-06, "output_cost_per_token": 2e-06, "mode": "completion"},
    "text-embedding-3-small": {"max_input_tokens": 8191, "input_cost_per_token": 2e-08, "mode": "embedding"},
    "azure/o3-mini": {"max_input_tokens": "200000", "max_output_tokens": 100000, "input_cost_per_token": 1.1e-06, "output_cost_per_token": 4.4e-06, "supports_function_calling": true, "mode": "responses"}
}"#;
const PLANNER_RULES: &str = r#"
always_include = ["message.send"]
complex_threshold = 300
short_chars = 20
default_memory = { max_facts = 15, max_tokens = 500 }
[categories.casual]
patterns = [{ pattern = '^\s*(hi|hey|hello)\b', weight = 3 }, { pattern = '\b(search|find)\b', weight = -3 }]
signals = { short = 1, emoji_only = 3 }
threshold = 3
tools = ["message.send"]
thinking = "off"
memory = { max_facts = 0, max_tokens = 0 }
[categories.research]
patterns = [{ pattern = '\b(search|look up)\b', weight = 2.5 }]
extra_patterns = [{ pattern = 'sources?', weight = 2 }]
signals = { url = 2, question = 0.5 }
threshold = 2
tools = ["web.*"]
extra_tools = ["fs.read"]
thinking = "low"
[categories.complex]
signals = { long = 3 }
full_set = true
thinking = "high"
disabled = false
"#;
const KEYMAP: &str = "[keys]\n\"x\" = \"cycle_tier\"\n\"ctrl+f\" = \"filter\"\n\"G\" = \"bottom\"\n\"pagedown\" = \"page_down\"\n\"f2\" = \"toggle_help\"\n\"t\" = \"none\"\n";
const THEME: &str = "name = \"light\"\n[roles]\naccent = { fg = \"#ff8800\", modifiers = [\"bold\", \"underlined\"] }\nselected = { fg = \"black\", bg = \"lightcyan\" }\nwarn = { fg = \"reset\" }\n";

fn seeds(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

#[test]
fn catalog_formats() {
    fuzz(
        "catalog",
        cases(share::CATALOG),
        seeds(&[
            SAMPLE_CATALOG,
            MCP_TOOLS,
            MCP_RESPONSE,
            OPENAI_TOOLS,
            BFCL_FUNCTIONS,
            BFCL_QUESTIONS,
        ]),
        &[
            "\"packs\":[",
            "\"pipelines\":[",
            "\"tools\":[",
            "{\"name\":\"\"}",
            "{\"name\":\"x\",\"inputSchema\":{}}",
            "\"function\":",
            "\"type\":\"function\",",
            "\"inputSchema\":null,",
            "\"supersedes\":[\"x\"],",
            "\"steps\":[{\"id\":\"s\",\"pack\":\"nope\"}],",
        ],
        |bytes| {
            let origin = "fuzz/catalog.json";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            match parse_catalog(&text, origin) {
                Ok(c) => {
                    serde_json::to_string(&c.guide).unwrap();
                    for w in &c.warnings {
                        assert!(w.contains(origin), "{w}");
                    }
                }
                Err(e) => names_origin(&e, origin),
            }
        },
    );
}

#[test]
fn litellm_registry() {
    fuzz(
        "registry",
        cases(share::REGISTRY),
        seeds(&[REGISTRY]),
        &[
            "\"max_input_tokens\": ",
            "\"max_output_tokens\": ",
            "\"max_tokens\": ",
            "\"input_cost_per_token\": ",
            "\"cache_read_input_token_cost\": ",
            "\"input_cost_per_token_above_99999999999999999k_tokens\": 1e-6,",
            "\"input_cost_per_token_above_0k_tokens\": 1e-6,",
            "\"mode\": \"chat\",",
            "\"mode\": 3,",
            "\"x/y:free\": {},",
        ],
        |bytes| {
            let origin = "fuzz/registry.json";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            match parse_registry(&text, origin) {
                Ok(imp) => {
                    for r in &imp.rows {
                        for p in [r.prices.input, r.prices.cached_input, r.prices.output] {
                            assert!(
                                p.is_finite() && bounds::PRICE_PER_MILLION.contains(&p),
                                "{}: price {p}",
                                r.id
                            );
                        }
                        assert!(bounds::TOKENS.contains(&r.input_tokens), "{}", r.id);
                        assert!(bounds::TOKENS.contains(&r.output_tokens), "{}", r.id);
                    }
                    for n in &imp.notes {
                        assert!(n.contains(origin), "{n}");
                    }
                }
                Err(e) => names_origin(&e, origin),
            }
        },
    );
}

const JSONL_TOKENS: &[&str] = &[
    "\"duration_ms\":",
    "\"at\":",
    "\"at\":\"1969-12-31T23:59:59Z\",",
    "\"at\":\"2026-11-01T00:00:00+0é00\",",
    "\"order\":",
    "\"outcome\":\"failed\",",
    "\"steps\":[],",
    "\"id\":\"\",",
    "\"plan_id\":",
    "\"ok\":",
];

#[test]
fn plan_and_execution_lines() {
    let mut seeds = lines(SAMPLE_PLANS, 60);
    seeds.extend(lines(SAMPLE_EXECUTIONS, 30));
    fuzz(
        "jsonl-records",
        cases(share::RECORDS),
        seeds,
        JSONL_TOKENS,
        |bytes| {
            let origin = "fuzz/records.jsonl";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            match parse_plan_line(origin, 3, &text) {
                Ok(p) => {
                    assert!(bounds::TIMESTAMP.contains(&p.at), "at {}", p.at);
                    if let Some(ms) = p.duration_ms {
                        assert!(bounds::DURATION_MS.contains(&ms), "duration_ms {ms}");
                    }
                    assert!(p.steps.windows(2).all(|w| w[0].order <= w[1].order));
                    assert_eq!(parse_timestamp(&format_timestamp(p.at)), Ok(p.at));
                }
                Err(e) => names_origin(&e, &format!("{origin}: line 3")),
            }
            match parse_execution_line(origin, 5, &text) {
                Ok(e) => assert!(bounds::TIMESTAMP.contains(&e.at), "at {}", e.at),
                Err(e) => names_origin(&e, &format!("{origin}: line 5")),
            }
        },
    );
}

#[test]
fn labels_jsonl() {
    let mut seeds = lines(SAMPLE_PLANNER_EVAL, 40);
    seeds.push(
        b"{\"intent\":\"take a screenshot\",\"expected\":[\"browser.screenshot\"]}\n\n{\"intent\":\"find the file\",\"expected\":[\"fs.search\",\"fs.read\"]}\n"
            .to_vec(),
    );
    seeds.push(
        SAMPLE_PLANNER_EVAL
            .lines()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
    );
    fuzz(
        "labels",
        cases(share::LABELS),
        seeds,
        &[
            "\"expected\":",
            "\"intent\":",
            "\"message\":",
            "\"trap\":",
            "\n",
        ],
        |bytes| {
            let origin = "fuzz/labels.jsonl";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            if let Err(e) = parse_labels(&text, origin) {
                names_origin(&e, origin);
            }
            if let Err(e) = parse_messages(&text, origin) {
                names_origin(&e, origin);
            }
        },
    );
}

#[test]
fn budgets_toml() {
    fuzz(
        "budgets",
        cases(share::BUDGETS),
        seeds(&[SAMPLE_BUDGETS]),
        &[
            "[[model]]\nid = \"m\"\ninput_tokens = 1\noutput_tokens = 1\ntier = \"C\"\n",
            "prices = { input = ",
            "max_catalog_bytes = ",
            "input_tokens = ",
            "tier = \"D\"\n",
            "match = \"prefix\"\n",
            "tokenizer = \"o200k\"\n",
        ],
        |bytes| {
            let origin = "fuzz/budgets.toml";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            match parse_budgets_toml(&text, origin, Layer::User) {
                Ok(rows) => {
                    for r in rows {
                        for p in [r.prices.input, r.prices.cached_input, r.prices.output] {
                            assert!(p.is_finite() && p >= 0.0, "{}: price {p}", r.id);
                        }
                    }
                }
                Err(e) => names_origin(&e, origin),
            }
        },
    );
}

#[test]
fn planner_toml() {
    fuzz(
        "planner",
        cases(share::PLANNER),
        seeds(&[
            PLANNER_RULES,
            PLANNER_RULES,
            &PLANNER_RULES.replace("\"fs.read\"]", "\"*a*a*a*a*a*a*a*a*a*a*a*a*b\"]"),
            SAMPLE_PLANNER,
        ]),
        &[
            "threshold = ",
            "weight = ",
            "signals = { long = ",
            "{ pattern = '(', weight = 1 }",
            "{ pattern = '\\\\p{Greek}{1000}', weight = 1 }",
            "{ pattern = '(a*)*b', weight = 1 }",
            "complex_threshold = ",
            "[categories.new]\n",
            "disabled = true\n",
            "tools = [\"*\"]\n",
        ],
        |bytes| {
            let origin = "fuzz/planner.toml";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            let rules = match RulesFile::parse(&text, origin) {
                Ok(r) => r,
                Err(e) => return names_origin(&e, origin),
            };
            match Planner::new(&rules, origin) {
                Ok(p) => {
                    // A long name: tool globs are matched against every catalog name.
                    let long = "a".repeat(200);
                    let plan = p.plan(
                        "hi! search the sources for https://x.io, step by step?",
                        &["message.send", "web.search", "fs.read", &long],
                    );
                    assert!(plan.scores.iter().all(|s| s.score.is_finite()));
                }
                Err(e) => names_origin(&e, origin),
            }
        },
    );
}

#[test]
fn config_toml() {
    fuzz(
        "config",
        cases(share::CONFIG),
        seeds(&[SAMPLE_CONFIG]),
        &[
            "drift_window = \"",
            "timeout = \"",
            "retry_base = \"",
            "retries = ",
            "[providers.x]\nprefix = \"\"\nbase_url = \"ftp://x\"\n",
            "default_provider = \"nope\"\n",
            "self_names = []\n",
        ],
        |bytes| {
            let origin = "fuzz/config.toml";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            let config = match Config::parse(&text, origin) {
                Ok(c) => c,
                Err(e) => return names_origin(&e, origin),
            };
            match Providers::from_config(&config, origin) {
                Ok(p) => {
                    let s = &p.settings;
                    assert!(duration::CONNECT_TIMEOUT.contains(&s.connect_timeout));
                    assert!(duration::REQUEST_TIMEOUT.contains(&s.timeout));
                    assert!(duration::RETRY_BASE.contains(&s.retry_base));
                    assert!(duration::RETRY_MAX_WAIT.contains(&s.retry_max_wait));
                    assert!(bounds::RETRIES.contains(&s.retries));
                    let _ = p.resolve("openrouter/x");
                    let _ = p.resolve("é/x");
                }
                Err(e) => names_origin(&e, origin),
            }
        },
    );
}

#[test]
fn keymap_and_theme_toml() {
    let mut all = seeds(&[KEYMAP, THEME]);
    all.extend(
        ctxconsole::tui::theme::BUILTIN
            .iter()
            .map(|(_, t)| t.as_bytes().to_vec()),
    );
    fuzz(
        "keymap-theme",
        cases(share::KEYMAP_THEME),
        all,
        &[
            "\"ctrl+",
            "\"alt+shift+f99\" = \"quit\"\n",
            "\"\" = \"quit\"\n",
            "= \"none\"\n",
            "fg = \"#",
            "bg = \"",
            "modifiers = [\"",
            "name = \"",
            "[roles]\n",
            "[keys]\n",
        ],
        |bytes| {
            let origin = "fuzz/keymap-or-theme.toml";
            let Some(text) = text(origin, bytes) else {
                return;
            };
            if let Err(e) = Keymap::with_overlay(&text, origin) {
                names_origin(&e, origin);
            }
            if let Err(e) = Theme::from_user_file(&text, origin) {
                names_origin(&e, origin);
            }
        },
    );
}

#[test]
fn timestamps_durations_since_and_commands() {
    fuzz(
        "time",
        cases(share::TIME),
        seeds(&[
            "2026-10-03T12:00:00Z",
            "2026-10-03T14:00:00.250+02:00",
            "2016-12-31T23:59:60z",
            "1791028800",
            "9999-12-31T23:59:59-23:59",
            "0000-01-01 00:00:00Z",
            "90m",
            "36h",
            "7d",
            "2w",
            "500ms",
            "npx -y @modelcontextprotocol/server-memory",
            "sh -c 'echo \"a b\"' \\\n x",
        ]),
        &[
            "é",
            "+0é:00",
            "60",
            "99",
            "00",
            ".",
            "999999999999",
            "T",
            "t",
            " ",
        ],
        |bytes| {
            let s = String::from_utf8_lossy(bytes);
            if let Ok(secs) = parse_timestamp(&s) {
                let _ = (format_timestamp(secs), format_minute(secs));
            }
            if let Ok(secs) = parse_rfc3339(&s)
                && bounds::TIMESTAMP.contains(&secs)
            {
                assert_eq!(parse_rfc3339(&format_timestamp(secs)), Ok(secs));
            }
            let n = i64::from_le_bytes(
                bytes
                    .iter()
                    .copied()
                    .chain([0; 8])
                    .take(8)
                    .collect::<Vec<u8>>()
                    .try_into()
                    .unwrap(),
            );
            let _ = (format_timestamp(n), format_minute(n));
            for range in [
                duration::AGE,
                duration::DRIFT_WINDOW,
                duration::CONNECT_TIMEOUT,
                duration::RETRY_BASE,
            ] {
                if let Ok(d) = parse_duration(&s, range.clone()) {
                    assert!(range.contains(&d), "{d:?}");
                }
            }
            match since_secs(&s, 1_791_028_800) {
                Ok(t) => assert!(t <= 1_791_028_800 || parse_rfc3339(&s).is_ok()),
                Err(e) => names_origin(&e, "--since"),
            }
            if let Ok(words) = split_command(&s) {
                assert!(!words.is_empty());
            }
        },
    );
}

/// The import as the binary runs it: bytes through the line reader into a real store, one
/// transaction. A refused file names itself and leaves the store as it was.
#[test]
fn imports_into_a_real_store() {
    let mut seeds: Vec<Vec<u8>> = (0..6)
        .map(|i| {
            SAMPLE_PLANS
                .lines()
                .skip(i * 7)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        })
        .collect();
    seeds.push(
        SAMPLE_EXECUTIONS
            .lines()
            .take(8)
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
    );
    // One store for the run (on tmpfs where there is one: every import commits), so
    // earlier cases' rows are there too, as in a store in use.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let store = std::sync::Mutex::new(HistoryStore::open(&dir.path().join("h.sqlite")).unwrap());
    fuzz(
        "store-import",
        cases(share::STORE_IMPORT),
        seeds,
        JSONL_TOKENS,
        move |bytes| {
            let mut store = store.lock().unwrap();
            let origin = "fuzz/import.jsonl";
            let pipelines = Default::default();
            for plans in [true, false] {
                let before = store.counts().unwrap();
                let result = if plans {
                    store.import_plans(origin, bytes, &pipelines, OnConflict::Refuse, |_| {})
                } else {
                    store.import_executions(origin, bytes, OnConflict::Refuse, |_| {})
                };
                match result {
                    Ok(report) => assert_eq!(report.source, origin),
                    Err(e) => {
                        names_origin(&e, origin);
                        let after = store.counts().unwrap();
                        assert_eq!(
                            (after.plans, after.executions),
                            (before.plans, before.executions),
                            "a refused import kept rows"
                        );
                    }
                }
            }
        },
    );
}

/// What a gateway's traffic files become: OTLP JSON spans (`import traces`) and LiteLLM
/// spend logs (`import litellm`), read from a real file as the commands read them. Every
/// plan they give obeys the bounds a stored plan obeys and reads back through `import
/// plans` as the same plan (the store's export must always import back).
#[test]
fn traffic_files() {
    const OTEL: &str = include_str!("data/otel/genai-spans.jsonl");
    const SPEND_LINES: &str = include_str!("data/litellm-logs/spend-logs.jsonl");
    const SPEND_ARRAY: &str = include_str!("data/litellm-logs/spend-logs.json");
    const TOKENS: &[&str] = &[
        "{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"x\\\"}",
        "\\\"tool_calls\\\":[",
        "\\\"arguments\\\":",
        "\\\"parts\\\":[",
        "\"stringValue\":",
        "\"intValue\":\"",
        "\"startTimeUnixNano\":\"",
        "\"traceId\":\"",
        "\"gen_ai.operation.name\"",
        "\"execute_tool\"",
        "\"status\":{\"code\":2},",
        "\"messages\":[",
        "\"tool_calls\":[",
        "\"function\":{\"name\":",
        "\"startTime\":",
        "\"response\":",
    ];
    let mut seeds = lines(OTEL, 40);
    seeds.extend(lines(SPEND_LINES, 20));
    seeds.push(SPEND_ARRAY.as_bytes().to_vec());
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let path = dir.path().join("traffic.jsonl");
    fuzz(
        "traffic",
        cases(share::TRAFFIC),
        seeds,
        TOKENS,
        move |bytes| {
            std::fs::write(&path, bytes).unwrap();
            let origin = path.display().to_string();
            let check = |plan: ctxconsole::core::history::PlanRecord| -> anyhow::Result<()> {
                assert!(bounds::TIMESTAMP.contains(&plan.at), "at {}", plan.at);
                assert!(
                    plan.steps.len() <= bounds::PLAN_STEPS,
                    "{} steps",
                    plan.steps.len()
                );
                let line = plan.import_line();
                let back = parse_plan_line("export", 1, &line)
                    .unwrap_or_else(|e| panic!("a read plan does not import back: {e:#}\n{line}"));
                let again = back.import_line();
                if again != line {
                    let at = again
                        .bytes()
                        .zip(line.bytes())
                        .position(|(a, b)| a != b)
                        .unwrap_or(again.len().min(line.len()));
                    let from = at.saturating_sub(80);
                    panic!(
                        "the plan changed on its way back, at byte {at}:\n read: {}\n back: {}",
                        line.get(from..(at + 120).min(line.len())).unwrap_or("?"),
                        again.get(from..(at + 120).min(again.len())).unwrap_or("?"),
                    );
                }
                Ok(())
            };
            if let Err(e) = read_traces(&path, |_| {}, check) {
                names_origin(&e, &origin);
            }
            if let Err(e) = read_spend_logs(&path, |_| {}, check) {
                names_origin(&e, &origin);
            }
        },
    );
}

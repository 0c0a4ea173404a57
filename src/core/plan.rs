//! A model's answer turned into a plan (DESIGN §2.9): the steps read from the decoded value,
//! the guard that demotes names no catalog holds (and the planner calling itself), the
//! complexity, and the `rewritten_prompt` derived from the steps in code — never by the LLM.
//! Also the two-pass filter's pass-1 reply, `{"ids":[…]}`.

use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;

use crate::core::history::{Complexity, Outcome, Step, UNKNOWN_TOOL};
use crate::core::terminal_text::{for_terminal_line, name, quoted, quoted_with};

/// Names a planner answers to: a plan that calls one of them would recurse.
pub const PLANNER_SELF_NAMES: [&str; 6] = [
    "plan",
    "planner",
    "gateway.plan",
    "gateway.route",
    "helmdeck.plan",
    "helmdeck.route",
];

/// A plan's steps from a decoded answer: `{"steps":[…]}`, `{"plan":{"steps":[…]}}` or a bare
/// array of steps. A step needs a `tool` (or `name`); `order` defaults to its position. The
/// steps come back sorted by `order` (ties as written), as `import plans` reads a stored
/// plan, so a plan sent or imported from traffic is the plan its export imports back.
pub fn steps_from(value: &Value) -> Result<Vec<Step>, String> {
    steps_of(value.clone())
}

/// [`steps_from`] taking the answer itself: each step's args are moved into the step, not
/// copied (an imported answer's args are most of it).
pub fn steps_of(value: Value) -> Result<Vec<Step>, String> {
    let list = match value {
        Value::Array(a) => a,
        Value::Object(mut o) => {
            let steps = match o.remove("steps") {
                Some(steps) => Some(steps),
                None => match o.remove("plan") {
                    Some(Value::Object(mut plan)) => plan.remove("steps"),
                    _ => None,
                },
            };
            match steps {
                Some(Value::Array(a)) => a,
                Some(other) => return Err(format!("'steps' is {}, not a list", kind(&other))),
                None => return Err("it has no 'steps'".into()),
            }
        }
        other => return Err(format!("it is {}, not a plan", kind(&other))),
    };
    if list.is_empty() {
        return Err("its 'steps' list is empty".into());
    }
    if list.len() > crate::core::bounds::PLAN_STEPS {
        return Err(format!(
            "its 'steps' list has {} steps; a plan holds at most {}",
            list.len(),
            crate::core::bounds::PLAN_STEPS
        ));
    }
    let mut steps = list
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            let tool = s
                .get("tool")
                .or_else(|| s.get("name"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| format!("step {} names no tool", i + 1))?
                .to_string();
            let order = s
                .get("order")
                .and_then(|o| {
                    o.as_u64()
                        .or_else(|| o.as_str().and_then(|t| t.parse().ok()))
                })
                .and_then(|o| u32::try_from(o).ok())
                .unwrap_or(i as u32 + 1);
            let rationale = s
                .get("rationale")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let args = s
                .as_object_mut()
                .and_then(|o| o.remove("args"))
                .unwrap_or(Value::Null);
            if let Some(problem) = crate::core::bounds::step_args_too_deep(&args) {
                return Err(format!("step {}'s args nest {problem}", i + 1));
            }
            Ok(Step {
                order,
                tool,
                args,
                rationale,
            })
        })
        .collect::<Result<Vec<Step>, String>>()?;
    steps.sort_by_key(|s| s.order);
    Ok(steps)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// One step the guard demoted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Demoted {
    pub order: u32,
    /// What the model named.
    pub named: String,
    pub reason: String,
}

/// A plan after the guard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardedPlan {
    pub steps: Vec<Step>,
    pub demoted: Vec<Demoted>,
    pub outcome: Outcome,
    pub complexity: Complexity,
    pub rewritten_prompt: String,
}

/// What the guard checks names against.
pub struct PlanGuard<'a> {
    pub registered: &'a HashSet<String>,
    pub pipelines: &'a HashSet<String>,
    /// The planner's own names (see [`PLANNER_SELF_NAMES`]).
    pub self_names: &'a [String],
    /// The request offered `read_cached`: a briefing it sent names a part the cache holds.
    /// A request whose briefings said the rest is not kept offered none, so a step calling
    /// it is a gap like any tool not offered. A stored plan replayed offline is read as its
    /// request offered it (what it was sent with is not always stored).
    pub read_cached: bool,
}

impl PlanGuard<'_> {
    /// Steps naming no registered pack or pipeline (nor ctxconsole's own `read_cached`), or
    /// the planner itself, become
    /// `tool: "unknown"` with a `gap:` rationale; the rest pass unchanged.
    pub fn check(&self, steps: Vec<Step>) -> GuardedPlan {
        let mut demoted = Vec::new();
        let steps: Vec<Step> = steps
            .into_iter()
            .map(|s| {
                let reason = if self
                    .self_names
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(&s.tool))
                {
                    Some(demotion(
                        &s.tool,
                        "the planner itself; a plan must not call its planner",
                    ))
                } else if s.tool == UNKNOWN_TOOL {
                    // The model said so itself: keep its own rationale.
                    None
                } else if s.tool == crate::core::gate::READ_CACHED_TOOL {
                    // ctxconsole's own tool, named by every briefing of a kept part and
                    // served by its MCP server, which the agent running the plan uses: no
                    // gap (tester 19 F8: an obedient step was demoted) — unless this
                    // request offered it nowhere.
                    (!self.read_cached).then(|| {
                        demotion(
                            &s.tool,
                            "which this request did not offer: no part it briefed is kept",
                        )
                    })
                } else if !self.registered.contains(&s.tool) {
                    Some(match self.printed_like(&s.tool) {
                        Some(registered) => spelled_apart_demotion(&s.tool, registered),
                        None => demotion(&s.tool, "which is not a registered pack or pipeline"),
                    })
                } else if let Some(problem) = crate::core::budget::name_problem(&s.tool) {
                    // A catalog may list such a name (shown escaped), but a plan naming it
                    // could not be imported back from the store's own export: no stored
                    // step holds a name the one name rule refuses.
                    Some(demotion(&s.tool, &format!("a name that {problem}")))
                } else {
                    None
                };
                match reason {
                    Some(reason) => {
                        demoted.push(Demoted {
                            order: s.order,
                            named: s.tool.clone(),
                            reason: reason.clone(),
                        });
                        Step {
                            order: s.order,
                            tool: UNKNOWN_TOOL.to_string(),
                            args: Value::Null,
                            rationale: reason,
                        }
                    }
                    None => s,
                }
            })
            .collect();
        let outcome = if steps.iter().any(|s| s.tool == UNKNOWN_TOOL) {
            Outcome::Guarded
        } else {
            Outcome::Ok
        };
        let complexity = Complexity::of(&steps, |t| self.pipelines.contains(t));
        let rewritten_prompt = rewritten_prompt(&steps);
        GuardedPlan {
            steps,
            demoted,
            outcome,
            complexity,
            rewritten_prompt,
        }
    }

    /// A registered name that prints like `named` (which is not registered as written).
    fn printed_like(&self, named: &str) -> Option<&str> {
        let key = crate::core::text::printed_alike(named);
        self.registered
            .iter()
            .filter(|r| crate::core::text::printed_alike(r) == key)
            .min()
            .map(String::as_str)
    }
}

/// The `gap:` rationale of a step naming a tool spelled unlike the registered one it prints
/// like: both spelled out, so the message never reads "the model named 'café', which is not
/// registered" beside a catalog listing `café` (tester 38 F2). A plan names a tool exactly.
fn spelled_apart_demotion(named: &str, registered: &str) -> String {
    let spelled = |t: &str| {
        format!(
            "'{}'",
            crate::core::text::clip(&crate::core::text::spelled_out(t), QUOTE_WIDTH)
        )
    };
    format!(
        "gap: the model named {}, which prints like the registered {} but is spelled \
         otherwise: a plan names a tool exactly",
        spelled(named),
        spelled(registered)
    )
}

/// How much of a spelled-out name a demotion shows.
const QUOTE_WIDTH: usize = 160;

/// The `gap:` rationale of a step the guard demoted: the name the model wrote, quoted on one
/// line ([`quoted`]: escaped, bounded), and why it is no tool. The one place a demoted name
/// is put into words, so a line break in it never starts a line of its own.
fn demotion(named: &str, why: &str) -> String {
    format!("gap: the model named {}, {why}", quoted(named))
}

/// The plan restated as an instruction for the agent, from the steps alone: "Run X with
/// query=…, then Y." Demoted steps say what is missing.
pub fn rewritten_prompt(steps: &[Step]) -> String {
    let mut ordered: Vec<&Step> = steps.iter().collect();
    ordered.sort_by_key(|s| s.order);
    let parts: Vec<String> = ordered
        .iter()
        .map(|s| {
            if s.tool == UNKNOWN_TOOL {
                let gap = s
                    .rationale
                    .strip_prefix("gap:")
                    .unwrap_or(&s.rationale)
                    .trim();
                // The model's own rationale when it said `unknown` itself: one line.
                return format!(
                    "report that no tool covers this part ({})",
                    for_terminal_line(gap)
                );
            }
            let args = args_phrase(&s.args);
            if args.is_empty() {
                format!("run {}", s.tool)
            } else {
                format!("run {} with {args}", s.tool)
            }
        })
        .collect();
    let mut text = match parts.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{}, then {last}", rest.join(", then ")),
    };
    if let Some(first) = text.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    if !text.is_empty() {
        text.push('.');
    }
    text
}

/// `key=value` pairs of an args object on one line: a key as a [`name`], a string value
/// [`quoted_with`] `"` (escaped, bounded), any other value as JSON (one line), clipped.
fn args_phrase(args: &Value) -> String {
    let Value::Object(map) = args else {
        return String::new();
    };
    map.iter()
        .map(|(k, v)| {
            let shown = match v {
                Value::String(s) => quoted_with(s, '"'),
                other => crate::core::text::clip(&other.to_string(), 60),
            };
            format!("{}={shown}", name(k))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Pass 1 of the two-pass filter: the ids the model picked, in its order, keeping only
/// names the catalog lists (a made-up id cannot widen the catalog).
pub fn filter_ids(value: &Value, known: &HashSet<String>) -> Result<Vec<String>, String> {
    let list = match value {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("ids") {
            Some(Value::Array(a)) => a,
            Some(other) => return Err(format!("'ids' is {}, not a list", kind(other))),
            None => return Err("it has no 'ids'".into()),
        },
        other => return Err(format!("it is {}, not an id list", kind(other))),
    };
    let mut out: Vec<String> = Vec::new();
    for id in list.iter().filter_map(Value::as_str).map(str::trim) {
        if known.contains(id) && !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    if out.is_empty() {
        return Err(format!("none of its {} ids is in the catalog", list.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(names: &[&str]) -> HashSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn steps_are_read_from_every_shape_models_send() {
        let one = json!({"steps":[{"order":1,"tool":"blog.draft","args":{"topic":"x"}}]});
        assert_eq!(steps_from(&one).unwrap()[0].tool, "blog.draft");
        let bare = json!([{"name":"web.search"},{"tool":"blog.draft","order":"2"}]);
        let s = steps_from(&bare).unwrap();
        assert_eq!((s[0].order, s[1].order), (1, 2));
        let nested = json!({"plan":{"steps":[{"tool":"a"}]}});
        assert_eq!(steps_from(&nested).unwrap().len(), 1);
        // In `order`, whatever order the answer wrote them in (ties as written): the plan
        // an export imports back.
        let shuffled = json!({"steps": [
            {"order": 2, "tool": "b"}, {"order": 1, "tool": "a"}, {"order": 2, "tool": "c"}
        ]});
        let tools: Vec<String> = steps_from(&shuffled)
            .unwrap()
            .into_iter()
            .map(|s| s.tool)
            .collect();
        assert_eq!(tools, ["a", "b", "c"]);
        assert!(
            steps_from(&json!({"answer": 1}))
                .unwrap_err()
                .contains("no 'steps'")
        );
        assert!(
            steps_from(&json!({"steps": []}))
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            steps_from(&json!({"steps": [{"order": 1}]}))
                .unwrap_err()
                .contains("step 1")
        );
        assert!(steps_from(&json!("plan")).is_err());
    }

    /// Args nested past [`STEP_ARGS_DEPTH`](crate::core::bounds::STEP_ARGS_DEPTH) make no
    /// plan: stored, their export line would nest past what `import plans` reads (tester 7
    /// T7-4: a backup that could not be restored). Within it, the export line reads back.
    #[test]
    fn args_nested_past_the_bound_are_no_plan_and_within_it_export_reads_back() {
        let bound = crate::core::bounds::STEP_ARGS_DEPTH;
        let nested = |depth: usize| {
            let mut v = json!(1);
            for _ in 0..depth {
                v = json!([v]);
            }
            json!({"steps": [{"tool": "fs.search", "args": {"x": v}}]})
        };
        let steps = steps_from(&nested(bound - 1)).unwrap();
        // The line an export writes holds the args three levels in; it parses whole.
        let line =
            json!({"id": "p", "steps": [{"order": 1, "tool": "fs.search", "args": steps[0].args}]});
        assert!(serde_json::from_str::<Value>(&line.to_string()).is_ok());
        let err = steps_from(&nested(bound)).unwrap_err();
        assert!(
            err.contains(&format!("step 1's args nest {} levels deep", bound + 1)),
            "{err}"
        );
    }

    /// A model's answer is held to the bound an import is (outside tester F12), so every
    /// plan a send stores imports back: past [`PLAN_STEPS`](crate::core::bounds::PLAN_STEPS)
    /// steps it is no plan, and says why.
    #[test]
    fn an_answer_with_more_steps_than_a_plan_holds_is_no_plan() {
        let bound = crate::core::bounds::PLAN_STEPS;
        let steps = |n: usize| json!({"steps": vec![json!({"tool": "a"}); n]});
        assert_eq!(steps_from(&steps(bound)).map(|s| s.len()), Ok(bound));
        let err = steps_from(&steps(bound + 1)).unwrap_err();
        assert!(
            err.contains(&format!(
                "{} steps; a plan holds at most {bound}",
                bound + 1
            )),
            "{err}"
        );
    }

    /// Tester 19 F8: a model that reads a briefed paste as the briefing says, with
    /// `read_cached`, is no gap: ctxconsole's MCP server serves that tool.
    #[test]
    fn a_read_cached_step_is_no_gap() {
        let registered = set(&["research.summarize"]);
        let guard = PlanGuard {
            registered: &registered,
            pipelines: &set(&[]),
            self_names: &[],
            read_cached: true,
        };
        let g = guard.check(
            steps_from(&json!({"steps":[
                {"tool":"read_cached","args":{"ref":"f7769097767e8d6b","lines":"2:42"}},
                {"tool":"research.summarize","args":{"documents":["$1"]}}
            ]}))
            .unwrap(),
        );
        assert_eq!(g.outcome, Outcome::Ok, "{:?}", g.demoted);
        assert!(g.demoted.is_empty());
        assert_eq!(g.steps[0].tool, "read_cached");
        // A request whose briefings said the rest is not kept offered no read_cached: the
        // step is a gap (last session's leftover: it was accepted all the same).
        let not_offered = PlanGuard {
            read_cached: false,
            ..guard
        };
        let g = not_offered.check(
            steps_from(&json!({"steps":[
                {"tool":"read_cached","args":{"ref":"f7769097767e8d6b","lines":"2:42"}},
                {"tool":"research.summarize","args":{"documents":["$1"]}}
            ]}))
            .unwrap(),
        );
        assert_eq!(g.outcome, Outcome::Guarded);
        assert_eq!(g.steps[0].tool, UNKNOWN_TOOL);
        assert!(
            g.steps[0].rationale.contains("'read_cached'")
                && g.steps[0]
                    .rationale
                    .contains("which this request did not offer: no part it briefed is kept"),
            "{}",
            g.steps[0].rationale
        );
        assert_eq!(g.steps[1].tool, "research.summarize");
    }

    #[test]
    fn the_guard_demotes_made_up_names_and_self_calls_with_a_gap() {
        let registered = set(&["blog.draft", "image.generate", "builtin.remember-and-blog"]);
        let pipelines = set(&["builtin.remember-and-blog"]);
        let self_names: Vec<String> = PLANNER_SELF_NAMES.iter().map(|s| s.to_string()).collect();
        let guard = PlanGuard {
            registered: &registered,
            pipelines: &pipelines,
            self_names: &self_names,
            read_cached: true,
        };
        let steps = steps_from(&json!({"steps":[
            {"order":1,"tool":"blog.write","args":{"topic":"launch"}},
            {"order":2,"tool":"image.generate","args":{"prompt":"a rocket"}},
            {"order":3,"tool":"helmdeck.plan"}
        ]}))
        .unwrap();
        let g = guard.check(steps);
        assert_eq!(g.outcome, Outcome::Guarded);
        assert_eq!(g.complexity, Complexity::PackChain);
        assert_eq!(g.demoted.len(), 2);
        assert_eq!(g.steps[0].tool, UNKNOWN_TOOL);
        assert!(
            g.steps[0]
                .rationale
                .starts_with("gap: the model named 'blog.write'")
        );
        assert!(g.steps[2].rationale.contains("planner itself"));
        assert_eq!(g.steps[1].tool, "image.generate");
        assert!(
            g.rewritten_prompt
                .starts_with("Report that no tool covers this part")
        );
        assert!(
            g.rewritten_prompt
                .contains("then run image.generate with prompt=\"a rocket\"")
        );

        let direct = guard.check(vec![Step {
            order: 1,
            tool: "builtin.remember-and-blog".into(),
            args: json!({"input": "note"}),
            rationale: String::new(),
        }]);
        assert_eq!(direct.outcome, Outcome::Ok);
        assert_eq!(direct.complexity, Complexity::PipelineDirect);
        assert_eq!(
            direct.rewritten_prompt,
            "Run builtin.remember-and-blog with input=\"note\"."
        );
    }

    /// Tester 38 F2: a step naming `cafe\u{301}` while the catalog registers `caf\u{e9}` read
    /// "the model named 'café', which is not a registered pack or pipeline". Both are spelled
    /// out, and the message says they only print alike.
    #[test]
    fn a_name_that_prints_like_a_registered_one_is_demoted_spelled_apart() {
        let registered = set(&["caf\u{e9}", "file_read"]);
        let none = set(&[]);
        let guard = PlanGuard {
            registered: &registered,
            pipelines: &none,
            self_names: &[],
            read_cached: true,
        };
        let g = guard.check(
            ["cafe\u{301}", "\u{FB01}le_read", "made_up"]
                .iter()
                .enumerate()
                .map(|(i, t)| Step {
                    order: i as u32 + 1,
                    tool: (*t).into(),
                    args: Value::Null,
                    rationale: String::new(),
                })
                .collect(),
        );
        assert_eq!(
            g.steps[0].rationale,
            "gap: the model named 'cafe\\u{301}', which prints like the registered \
             'caf\\u{e9}' but is spelled otherwise: a plan names a tool exactly"
        );
        assert!(
            g.steps[1]
                .rationale
                .starts_with("gap: the model named '\\u{fb01}le_read', which prints like the registered 'file_read'"),
            "{}",
            g.steps[1].rationale
        );
        assert!(
            g.steps[2]
                .rationale
                .ends_with("which is not a registered pack or pipeline")
        );
    }

    /// Tester 5 F1: a line break in a name, an argument (key or value) or a rationale the
    /// model wrote is one line in the guard's rationale and in the rewritten prompt, shown
    /// escaped; the step keeps the model's arguments exact.
    #[test]
    fn what_the_model_wrote_stays_on_one_line() {
        let registered = set(&["memory.store"]);
        let guard = PlanGuard {
            registered: &registered,
            pipelines: &HashSet::new(),
            self_names: &["plan\nner".to_string()],
            read_cached: true,
        };
        let g = guard.check(
            steps_from(&json!({"steps":[
                {"tool":"memory.store","args":{"k\nFORGED KEY":"v\nFORGED VALUE","n":"x"}},
                {"tool":"zz\nFORGED NAME"},
                {"tool":"PLAN\nNER"},
                {"tool":"unknown","rationale":"gap: none\nFORGED RATIONALE"}
            ]}))
            .unwrap(),
        );
        for d in &g.demoted {
            assert!(!d.reason.contains('\n'), "{}", d.reason);
        }
        assert_eq!(g.demoted[0].named, "zz\nFORGED NAME", "kept exact");
        assert!(
            g.steps[1]
                .rationale
                .starts_with(r"gap: the model named 'zz\nFORGED NAME', which"),
            "{}",
            g.steps[1].rationale
        );
        assert!(!g.rewritten_prompt.contains('\n'), "{}", g.rewritten_prompt);
        assert!(
            g.rewritten_prompt
                .starts_with(r#"Run memory.store with 'k\nFORGED KEY'="v\nFORGED VALUE", n="x""#),
            "{}",
            g.rewritten_prompt
        );
        assert!(g.rewritten_prompt.contains(r"none\nFORGED RATIONALE"));
        assert_eq!(g.steps[0].args["k\nFORGED KEY"], "v\nFORGED VALUE");
    }

    /// A catalog tool named with an invisible or control character is listed (escaped), but
    /// a step naming it is demoted: stored, it would make the store's export unimportable.
    #[test]
    fn a_step_naming_a_tool_the_name_rule_refuses_is_demoted_even_when_registered() {
        let registered = set(&["web\u{200b}.search", "memory.store"]);
        let guard = PlanGuard {
            registered: &registered,
            pipelines: &HashSet::new(),
            self_names: &[],
            read_cached: true,
        };
        let g = guard.check(
            steps_from(&json!({"steps":[
                {"tool":"web\u{200b}.search"},
                {"tool":"memory.store"}
            ]}))
            .unwrap(),
        );
        assert_eq!(g.steps[0].tool, UNKNOWN_TOOL);
        assert!(
            g.steps[0].rationale.contains("invisible character"),
            "{}",
            g.steps[0].rationale
        );
        assert_eq!(g.steps[1].tool, "memory.store");
        assert_eq!(g.outcome, Outcome::Guarded);
    }

    #[test]
    fn filter_ids_keep_only_catalog_names_in_the_models_order() {
        let known = set(&["a", "b", "c"]);
        assert_eq!(
            filter_ids(&json!({"ids":["c","zzz","a","c"]}), &known).unwrap(),
            vec!["c", "a"]
        );
        assert!(filter_ids(&json!({"ids":["zzz"]}), &known).is_err());
        assert!(filter_ids(&json!({"tools":[]}), &known).is_err());
    }
}

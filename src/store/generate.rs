//! Large history stores for benchmarks and scale tests, generated deterministically from
//! the sample history: same seed and size, same rows.

use crate::core::terminal_text::ShownPath;
use anyhow::Context;
use std::collections::HashSet;
use std::path::Path;

use crate::core::history::{ExecutionRecord, Outcome, PlanRecord, parse_plan_line};
use crate::sample::SAMPLE_PLANS;
use crate::store::history::HistoryStore;

/// Plans per write transaction.
const BATCH: usize = 20_000;
const CALLERS: usize = 50;
/// Seconds between consecutive plans; with 50 callers each caller's plans are 25 minutes
/// apart, longer than the drift window, as in a real gateway.
const STEP_SECS: i64 = 30;
const START: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// A small xorshift generator: deterministic across platforms, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

/// Write `plans` generated plans (and their executions) into a new store at `path`.
/// Returns (plans, executions) written. Refuses to add to an existing store.
pub fn generate_store(
    path: &Path,
    plans: usize,
    seed: u64,
    pipelines: &HashSet<String>,
    mut progress: impl FnMut(usize),
) -> anyhow::Result<(usize, usize)> {
    if path.exists() {
        return Err(crate::exit::bad_input(format!(
            "{}: already exists; the generator writes new stores only",
            path.shown()
        )));
    }
    let templates: Vec<PlanRecord> = SAMPLE_PLANS
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_plan_line("sample plans", i + 1, l))
        .collect::<Result<_, _>>()
        .context("reading the sample plans")?;
    let mut store = HistoryStore::open(path)?;
    let mut rng = Rng(seed.max(1));
    let mut executions_total = 0;
    let mut done = 0;
    while done < plans {
        let n = BATCH.min(plans - done);
        let mut batch = Vec::with_capacity(n);
        let mut execs = Vec::with_capacity(n * 2);
        for i in done..done + n {
            let t = &templates[rng.below(templates.len())];
            let caller = format!("caller-{:02}", i % CALLERS);
            let at = START + i as i64 * STEP_SECS;
            // A qualifier word multiplies the sample's intents into many groups.
            let intent = format!("{} ({})", t.intent, word(rng.below(3000)));
            let id = format!("g{seed}-{i:08}");
            let plan = PlanRecord {
                id: id.clone(),
                at,
                caller: caller.clone(),
                intent,
                ..t.clone()
            };
            if plan.outcome != Outcome::Failed {
                let planned = plan.planned_tools();
                let ran: Vec<&str> = match rng.below(10) {
                    0..=5 => planned.clone(),
                    6 if planned.len() > 1 => planned[..1].to_vec(),
                    7 => vec!["image.generate"],
                    _ => Vec::new(),
                };
                let link = rng.chance(0.5);
                for (k, tool) in ran.into_iter().enumerate() {
                    execs.push(ExecutionRecord {
                        id: format!("{id}-e{k}"),
                        at: at + 20 + 30 * k as i64,
                        at_nanos: 0,
                        caller: caller.clone(),
                        session: None,
                        plan_id: link.then(|| id.clone()),
                        tool: tool.to_string(),
                        ok: true,
                    });
                }
            }
            batch.push(plan);
        }
        executions_total += execs.len();
        store.insert_records_bulk(&batch, &execs, pipelines)?;
        done += n;
        progress(done);
    }
    store.recompute_all_drift()?;
    Ok((done, executions_total))
}

/// A pronounceable made-up word for index `i`.
fn word(i: usize) -> String {
    const C: &[u8] = b"bdfgklmnprstvz";
    const V: &[u8] = b"aeiou";
    let mut s = String::new();
    let mut x = i + 1;
    while x > 0 {
        s.push(C[x % C.len()] as char);
        x /= C.len();
        s.push(V[x % V.len()] as char);
        x /= V.len();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::history::PlanFilter;

    #[test]
    fn generates_the_same_store_for_the_same_seed() {
        let dir = tempfile::tempdir().unwrap();
        let p = HashSet::new();
        let a = dir.path().join("a.sqlite");
        let b = dir.path().join("b.sqlite");
        let (n, e) = generate_store(&a, 1_000, 7, &p, |_| {}).unwrap();
        assert_eq!(n, 1_000);
        assert!(e > 500);
        generate_store(&b, 1_000, 7, &p, |_| {}).unwrap();
        let (sa, sb) = (
            HistoryStore::open(&a).unwrap(),
            HistoryStore::open(&b).unwrap(),
        );
        assert_eq!(sa.counts().unwrap(), sb.counts().unwrap());
        let f = PlanFilter::default();
        assert_eq!(sa.plans(&f, 0, 50).unwrap(), sb.plans(&f, 0, 50).unwrap());
        let drift = sa.drift(&f, 0).unwrap();
        assert!(
            drift.counts.iter().all(|(_, n)| *n > 0),
            "{:?}",
            drift.counts
        );
        assert!(generate_store(&a, 10, 7, &p, |_| {}).is_err());
    }
}

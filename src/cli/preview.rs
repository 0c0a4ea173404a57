//! `ctxconsole preview`: what every stage before the model does with one prompt.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use crate::cli::table::render;
use crate::cli::{emit, parse_tier, print_json};
use crate::core::assemble::PartTotals;
use crate::core::budget::{Tier, effective_row};
use crate::core::chart::{WindowBar, window_bar};
use crate::core::compare::Arm;
use crate::core::gate::Admission;
use crate::core::past_steps::LeftOutWhy;
use crate::exit::bad_input;
use crate::format::{percent, thousands};
use crate::import::{read_attachment, text_from_bytes};
use crate::preview::{Ask, Attachment, Fate, GateView, Preview, PreviewContext, plan_and_keep};
use crate::workspace::DEFAULT_MODEL;
use crate::workspace::{StoreChoice, Workspace, WorkspaceOptions};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub request: RequestArgs,
    #[arg(long, value_name = "ID", default_value = DEFAULT_MODEL, value_parser = crate::cli::parse_model_id)]
    pub model: String,
    /// Show an A/B arm of the request instead: full (the whole catalog, no planner
    /// narrowing, no compaction), no-planner, no-prior or no-hint — what `send --compare
    /// ARM` sends beside the request as built.
    #[arg(long, value_name = "ARM", value_parser = parse_arm, default_value = "compacted")]
    pub arm: Arm,
    /// Show the request `send --baseline MODEL` (or `llm.baseline_model`) sends when this
    /// --model is the baseline: the whole catalog, no planner help, no hint, no prior,
    /// cut only by the model's own window.
    #[arg(long, conflicts_with = "arm")]
    pub baseline: bool,
    #[arg(long)]
    pub json: bool,
}

/// An A/B arm by name.
pub fn parse_arm(s: &str) -> Result<Arm, String> {
    Arm::parse(s).ok_or_else(|| {
        format!(
            "'{s}' is not an arm: {}",
            Arm::ALL.map(Arm::as_str).join(", ")
        )
    })
}

/// What a request is planned from, the same for `preview` and `send` (so both plan the
/// same request for the same words).
#[derive(Debug, clap::Args)]
pub struct RequestArgs {
    /// The instruction; `-` reads it from stdin (a paste of any size).
    #[arg(value_name = "INSTRUCTION | -")]
    pub prompt: String,
    /// A file sent beside the instruction (repeatable; `-` reads stdin). Each goes through
    /// the gate on its own; the ranker reads only its outline, the planner not at all.
    #[arg(long, value_name = "FILE")]
    pub attach: Vec<PathBuf>,
    /// Override the model's tier (A, B or C).
    #[arg(long, value_name = "A|B|C", value_parser = parse_tier)]
    pub tier: Option<Tier>,
    /// The caller's defaults block sent with the intent.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub defaults: String,
    /// A LiteLLM registry to layer over the sample budgets.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Do not write a briefed paste to the output cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Read nothing from the history store: rank without the history prior and the
    /// tools' learned words, and send no past plans (implies --no-prior).
    #[arg(long)]
    pub no_history: bool,
    /// Send no past-plans part (the steps followed plans produced for intents of the same
    /// shape; on by default where the store has the evidence).
    #[arg(long)]
    pub no_prior: bool,
    #[command(flatten)]
    pub semantic: crate::cli::semantic::SemanticArgs,
}

impl RequestArgs {
    /// The request inputs for these arguments: [`request_context`], without the past-plans
    /// part under `--no-prior`.
    pub fn context(&self, ws: &Workspace, store: &StoreChoice) -> anyhow::Result<PreviewContext> {
        let mut ctx = request_context(ws, store, !self.no_cache, self.no_history)?;
        if self.no_prior {
            ctx.past_steps = None;
        }
        ctx.semantic = self.semantic.layer(ws, ws.catalog.guide())?;
        Ok(ctx)
    }

    /// The instruction and the attachments, read (stdin at most once); an empty ask is bad
    /// input.
    pub fn read(&self) -> anyhow::Result<(String, Vec<Attachment>)> {
        let prompt = read_prompt(&self.prompt)?;
        let attachments = read_attachments(&self.attach, self.prompt == "-")?;
        if prompt.trim().is_empty() && attachments.is_empty() {
            return Err(bad_input("the prompt is empty"));
        }
        // What `send` stores as the intent, too.
        let prompt = crate::preview::unless_blank(&prompt).to_string();
        Ok((prompt, attachments))
    }

    /// The workspace with `--registry` laid over its budgets.
    pub fn workspace(&self, dir: Option<PathBuf>) -> anyhow::Result<Workspace> {
        Workspace::open(&WorkspaceOptions {
            dir,
            registry: self.registry.clone(),
        })
    }
}

fn read_stdin(what: &str) -> anyhow::Result<String> {
    let bytes = crate::fsio::read_whole(std::io::stdin().lock(), &format!("{what} on stdin"))?;
    text_from_bytes("stdin", bytes)
}

/// The instruction argument, or stdin for `-`.
pub fn read_prompt(arg: &str) -> anyhow::Result<String> {
    if arg != "-" {
        return Ok(arg.to_string());
    }
    read_stdin("the prompt")
}

/// The `--attach` files, read whole (`-` is stdin, which can be read only once: not when the
/// instruction came from it too).
pub fn read_attachments(paths: &[PathBuf], stdin_taken: bool) -> anyhow::Result<Vec<Attachment>> {
    let mut stdin_taken = stdin_taken;
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        if path.as_os_str() == "-" {
            if stdin_taken {
                return Err(bad_input(
                    "stdin can be read only once: give at most one `-`",
                ));
            }
            stdin_taken = true;
            let bytes = crate::fsio::read_whole(std::io::stdin().lock(), "an attachment on stdin")?;
            out.push(Attachment::new(
                "stdin".into(),
                crate::import::text_as_given("stdin", bytes)?,
            ));
            continue;
        }
        out.push(read_attachment(path, crate::fsio::READ_WHOLE_MAX_BYTES)?);
    }
    Ok(out)
}

/// The workspace's request inputs with the history's part in ranking (the prior, and the
/// tools' learned words) and the followed plans' steps (unless `no_history`). A store that cannot be read costs the prior, not the request; a
/// broken `config.toml` (a workspace file: not a file, not TOML, a value out of bounds) is
/// an error, as for every command.
pub fn request_context(
    ws: &Workspace,
    store: &StoreChoice,
    store_briefings: bool,
    no_history: bool,
) -> anyhow::Result<PreviewContext> {
    ws.config()?;
    let mut ctx = ws.preview_context(store_briefings);
    if no_history {
        return Ok(ctx);
    }
    let said = |what: &str, e: &anyhow::Error| {
        crate::cli::out::eprint_line(&format!("ctxconsole: {what}: {}", crate::exit::Said(e)));
    };
    match ws.open_history(store) {
        Ok(h) => {
            match ws.history_ranking(&h) {
                Ok(ranking) => ranking.apply(&mut ctx),
                Err(e) => said("ranking without the history prior", &e),
            }
            match ws.past_steps(&h) {
                Ok(steps) => ctx.past_steps = Some(Arc::new(steps)),
                Err(e) => said("sending no past plans", &e),
            }
        }
        Err(e) => said("ranking without the history prior", &e),
    }
    Ok(ctx)
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let r = &args.request;
    let (prompt, attachments) = r.read()?;
    let ws = r.workspace(workspace)?;
    let ctx = r.context(&ws, &store)?;
    let effective = effective_row(&ctx.budgets, &args.model, r.tier);
    // The baseline's request is planned where a send plans it (tester 19 F9: the most
    // expensive call of a send was the only one no preview showed).
    let p = if args.baseline {
        crate::preview::plan_unaided(&ctx, &args.model, &prompt, &attachments, &r.defaults)?
    } else {
        plan_and_keep(
            &ctx,
            &Ask {
                effective: &effective,
                instruction: &prompt,
                attachments: &attachments,
                defaults: &r.defaults,
                only: None,
                arm: args.arm,
            },
        )?
    };
    if args.json {
        return print_json(&p);
    }
    if args.baseline {
        emit(
            "baseline request (what a send asks this model as its baseline): the whole catalog, no planner help, no hint, no prior\n",
        )?;
    }
    emit(&describe(&p))
}

/// `kept K/N (planner removed P, cut C)`, counted from the entries' fates.
pub fn fate_counts(p: &Preview) -> String {
    let c = &p.compaction;
    let filtered = c.count(|f| *f == Fate::RemovedByFilter);
    format!(
        "kept {}/{} (planner removed {}{}, cut {})",
        c.count(|f| matches!(f, Fate::Kept { .. })),
        c.entries.len(),
        c.count(|f| *f == Fate::RemovedByPlanner),
        if filtered > 0 {
            format!(", two-pass filter removed {filtered}")
        } else {
            String::new()
        },
        c.count(|f| *f == Fate::CutByBudget),
    )
}

/// What the `kept:` line says: the names kept, or that nothing was and why, from what
/// `--json` holds (`kept: []`, each entry's fate, the allowance) — tester 48 nit: a row whose
/// allowance was 0 tokens printed an empty `kept: `.
fn kept_words(p: &Preview, names: &[std::borrow::Cow<str>]) -> String {
    if !names.is_empty() {
        return names.join(", ");
    }
    let c = &p.compaction;
    let cut = c.count(|f| *f == Fate::CutByBudget);
    let why = if c.entries.is_empty() {
        "the catalog is empty".to_string()
    } else if cut == 0 {
        if c.count(|f| *f == Fate::RemovedByFilter) > 0 {
            "the planner and the two-pass filter removed every entry".to_string()
        } else {
            "the planner removed every entry".to_string()
        }
    } else if c.allowance.tokens == 0 {
        "the allowance is 0 tokens: every entry the planner left was cut".to_string()
    } else {
        format!(
            "every entry the planner left was cut: none fits the allowance of {} tokens",
            thousands(c.allowance.tokens)
        )
    };
    format!("nothing ({why})")
}

/// Cells in the text window bar: readable in an 80-column log line's head.
pub const WINDOW_CELLS: usize = 40;

/// The window as one line of plain text, each part a letter in the bar and named with its
/// tokens and share after it:
/// `window 17,500 = input 16,000 + output 1,500 [sccccccc....oooo] s system 85 0.5%, …`.
pub fn window_line(bar: &WindowBar, cells: usize) -> String {
    let picture: String = bar
        .cells(cells)
        .iter()
        .map(|(part, n)| part.letter().to_string().repeat(*n))
        .collect();
    let legend: Vec<String> = bar
        .segments
        .iter()
        .map(|(part, tokens)| {
            format!(
                "{} {} {} {}",
                part.letter(),
                part.label(),
                thousands(*tokens),
                percent(bar.percent(*part))
            )
        })
        .collect();
    let over = match bar.over_by() {
        0 => String::new(),
        n => format!("; OVER the input ceiling by {}", thousands(n)),
    };
    format!(
        "window {} = input {} + output {} [{picture}] {}{over}",
        thousands(bar.window()),
        thousands(bar.input_tokens),
        thousands(bar.output_tokens),
        legend.join(", ")
    )
}

/// The request's input by part, as one line: `input 2,882 = system 78 + catalog 2,761 +
/// prompt 33 + attachments 0 + framing 10`. `preview` and `compact` print it.
pub fn parts_line(t: &PartTotals) -> String {
    format!(
        "input {} = system {} + catalog {} + prompt {} + attachments {} + framing {}",
        thousands(t.total),
        thousands(t.system),
        thousands(t.catalog),
        thousands(t.prompt),
        thousands(t.attachments),
        thousands(t.framing)
    )
}

fn money(usd: f64) -> String {
    format!("${usd:.6}")
}

/// The row a request was sized by, as every view names it ([`crate::core::budget::shown_row_id`]),
/// on one line ([`crate::core::terminal_text::name`]).
pub fn shown_row(p: &Preview) -> String {
    use crate::core::budget::{MatchKind, MatchedBy, shown_row_id};
    let kind = match p.matched_by {
        MatchedBy::Prefix => MatchKind::Prefix,
        MatchedBy::Exact | MatchedBy::Fallback => MatchKind::Exact,
    };
    crate::core::terminal_text::name(&shown_row_id(&p.row_id, kind)).into_owned()
}

pub fn describe(p: &Preview) -> String {
    let mut o = String::new();
    let est = |exact: bool| if exact { "" } else { " (estimated)" };
    let _ = writeln!(
        o,
        "{} → row {} (Tier {}{}, {} tokenizer)",
        crate::core::terminal_text::name(&p.model),
        shown_row(p),
        p.tier,
        if p.tier_overridden {
            ", overridden"
        } else {
            ""
        },
        p.tokenizer
    );
    // Beside the row it explains (why the model's own entry has none); the catalog's
    // warnings follow the catalog.
    let row_notes = &p.effective.notes;
    for n in row_notes {
        let _ = writeln!(o, "  note: {n}");
    }
    for l in p.route.iter().flat_map(|r| r.lines()) {
        let _ = writeln!(o, "{l}");
    }
    if p.arm != Arm::Compacted {
        let _ = writeln!(o, "A/B arm {}: {}", p.arm, p.arm.what());
    }
    let _ = writeln!(
        o,
        "prompt: {} bytes, {} lines, {} tokens{}\n",
        thousands(p.prompt.bytes),
        thousands(p.prompt.lines),
        thousands(p.prompt.tokens),
        est(p.prompt.exact)
    );

    for a in &p.attachments {
        let _ = writeln!(
            o,
            "attachment {}: {} bytes, {} lines, {} tokens{} → {}{}; the ranker read {} outline lines",
            // One line, as the request's header writes it (tester 12 T12-15).
            crate::core::terminal_text::for_terminal_line(&a.name),
            thousands(a.size.bytes),
            thousands(a.size.lines),
            thousands(a.size.tokens),
            est(a.size.exact),
            a.gate.verdict(),
            if a.gate.briefing.is_some() {
                format!(" ({} tokens sent)", thousands(a.sent_tokens))
            } else {
                String::new()
            },
            a.outline.len()
        );
        // Its ref and map, as the instruction's are (tester 48 F3: only `--json` and the
        // console named the ref `cache get` needs).
        write_briefing(&mut o, &a.gate);
    }
    if !p.attachments.is_empty() {
        o.push('\n');
    }

    let pl = &p.planner;
    let _ = writeln!(o, "PLANNER");
    if let Some(h) = &pl.hint {
        let _ = writeln!(o, "  {h}");
    }
    let _ = writeln!(
        o,
        "  tools {}/{}{}; memory {} facts / {} tokens; thinking {}",
        pl.kept,
        pl.total,
        pl.full_set_reason
            .as_deref()
            .map(|r| format!(" (all: {r})"))
            .unwrap_or_default(),
        pl.memory.max_facts,
        pl.memory.max_tokens,
        pl.thinking
    );
    if let Some(line) = pl.ranked_in_line() {
        let _ = writeln!(o, "  {line}");
    }
    for s in pl.scores.iter().filter(|s| s.score != 0.0) {
        let _ = writeln!(
            o,
            "  {} {:<11} {:>5.1} / {:<4}  {}",
            if s.fired { "●" } else { "○" },
            s.category,
            s.score,
            s.threshold,
            s.reasons.join(", ")
        );
    }

    let r = &p.ranking;
    let _ = writeln!(
        o,
        "\nRANKING  confidence {:.2} (margin {:.2} × coverage {:.2}){}",
        r.confidence.value,
        r.confidence.margin,
        r.confidence.coverage,
        if r.escalate {
            " → the two-pass filter would escalate"
        } else {
            ""
        }
    );
    // Names that print alike are spelled apart, as in every list of them (tester 35 F10).
    let names = p.names_shown();
    for (i, e) in r.top.iter().enumerate() {
        let _ = writeln!(o, "  {:>2}. {}", i + 1, e.one_line_among(names));
    }

    let g = &p.gate;
    let _ = writeln!(
        o,
        "\nGATE  {}: {} tokens against {} available ({} input ceiling, 20% reserved for output, {} used)",
        g.verdict(),
        thousands(p.prompt.tokens),
        thousands(g.budget.available()),
        thousands(g.budget.max_tokens),
        thousands(g.budget.used_tokens)
    );
    if g.briefing.is_some() {
        write_briefing(&mut o, g);
    } else if g.admission == Admission::Tight {
        let _ = writeln!(o, "  fits, but leaves under 20% of the window free");
    } else if g.admission == Admission::Over && p.prompt.tokens == 0 {
        let _ = writeln!(
            o,
            "  the window is over before the instruction, which is empty"
        );
    } else if g.admission == Admission::Over {
        let _ = writeln!(
            o,
            "  does not fit, and a briefing of it would be no smaller: sent as it is"
        );
    }

    if let Some(prior) = &p.past_steps {
        let _ = writeln!(
            o,
            "\nPRIOR  {} tokens: steps of {} followed plan{} of this intent's shape (--no-prior leaves them out)",
            thousands(prior.tokens),
            prior.followed,
            if prior.followed == 1 { "" } else { "s" }
        );
        for d in &prior.sent {
            let _ = writeln!(
                o,
                "  {} — {} plans: {}{}",
                d.tools.join(" → "),
                d.plans,
                d.plan_ids.join(", "),
                if d.plans > d.plan_ids.len() {
                    ", …"
                } else {
                    ""
                }
            );
        }
        for l in &prior.left_out {
            let _ = writeln!(
                o,
                "  left out: {} ({} plans) — {}",
                l.tools.join(" → "),
                l.plans,
                match l.why {
                    LeftOutWhy::UnknownTool => "a tool not in today's catalog",
                    LeftOutWhy::OverCount => "over the count",
                    LeftOutWhy::OverTokens => "over the token bound",
                }
            );
        }
    }

    let c = &p.compaction;
    let t = &c.trim;
    let ct = p.catalog_tokens();
    let _ = writeln!(
        o,
        "\nCATALOG  allowance {} tokens{} ({})",
        thousands(c.allowance.tokens),
        c.allowance
            .bytes
            .map(|b| format!(", ≤ {} B", thousands(b)))
            .unwrap_or_default(),
        c.allowance.terms()
    );
    let _ = writeln!(
        o,
        "  {} → {} B, {} → {} tokens with its header line{}; {}; trim steps applied {}; {}",
        thousands(t.before_bytes),
        thousands(t.after_bytes),
        thousands(ct.full),
        thousands(ct.sent),
        est(t.exact_tokens),
        fate_counts(p),
        // The steps that changed what is sent, as `compact` lists them (tester 30 F3: this
        // printed the level reached, `steps 6` with nothing kept).
        t.steps_applied,
        if t.fits { "fits" } else { "DOES NOT FIT" }
    );
    // Catalog names, each on this line as every line of text shows a name (tester F1).
    // Names that print alike are spelled apart, as `compact` spells them (tester 35 F5).
    let names = p.names_shown();
    let name = |n| names.name(n);
    let kept: Vec<_> = c.kept.iter().map(|k| name(k)).collect();
    let _ = writeln!(o, "  kept: {}", kept_words(p, &kept));
    let alone: Vec<_> = t
        .cut
        .iter()
        .filter(|e| e.alone_over)
        .map(|e| name(&e.name))
        .collect();
    if !alone.is_empty() {
        let _ = writeln!(
            o,
            "  cut by itself, over the allowance alone even fully trimmed: {}",
            alone.join(", ")
        );
    }
    for e in t.cut.iter().filter(|e| e.crowds_out.is_some()) {
        let _ = writeln!(
            o,
            "  cut {}: {}",
            name(&e.name),
            e.reason().unwrap_or_default()
        );
    }
    for w in p.warnings.iter().filter(|w| !row_notes.contains(w)) {
        let _ = writeln!(o, "  note: {w}");
    }

    let q = &p.request;
    let _ = writeln!(
        o,
        "\nREQUEST  {} input tokens{}, max_tokens {}, response_format {}",
        thousands(q.input_tokens),
        est(q.exact),
        thousands(q.max_tokens),
        q.response_format.unwrap_or("none")
    );
    let _ = writeln!(o, "  {}", window_line(&window_bar(p), WINDOW_CELLS));
    let _ = writeln!(o, "  {}", parts_line(&q.totals));
    let rows: Vec<Vec<String>> = q
        .parts
        .iter()
        .map(|part| {
            vec![
                part.part.to_string(),
                part.role.to_string(),
                thousands(part.bytes),
                thousands(part.tokens),
            ]
        })
        .collect();
    for l in render(&["part", "message", ">bytes", ">tokens"], &rows).lines() {
        let _ = writeln!(o, "  {l}");
    }
    let _ = writeln!(o, "  sampling: {}", q.sampling.label());
    let _ = writeln!(o, "  cache: {}", q.cache_note);
    let _ = writeln!(
        o,
        "  cost: input {} uncached, {} with the cached prefix; output up to {}",
        money(q.cost.input_uncached),
        money(q.cost.input_cached),
        money(q.cost.output_max)
    );
    o
}

/// A briefed part's briefing, as `preview` writes it under the part: its size, where the
/// full text is kept (the `cache get` line to read it back) or that it is not, and the map
/// the model is sent (its first 30 lines). Nothing for a part sent as it is.
fn write_briefing(o: &mut String, g: &GateView) {
    let Some(b) = &g.briefing else {
        return;
    };
    let _ = writeln!(
        o,
        "  briefing ({} tokens){}",
        thousands(g.admitted_tokens),
        if g.cached {
            format!(
                " — full paste in the output cache; read it back: {}",
                b.hint
            )
        } else {
            " — not kept: the model sees only the map".to_string()
        },
    );
    for l in b.text.lines().take(30) {
        let _ = writeln!(o, "  | {l}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::assemble::RequestPart;

    fn part(part: &'static str, tokens: usize) -> RequestPart {
        RequestPart {
            part,
            role: "user",
            bytes: tokens * 3,
            tokens,
            name: None,
        }
    }

    #[test]
    fn the_window_line_is_one_plain_line_naming_every_part() {
        let parts = [
            part("system prompt", 80),
            part("catalog", 4_000),
            part("intent", 20),
        ];
        let bar = WindowBar::from_totals(16_000, 1_500, &PartTotals::of(&parts, 4_107));
        let line = window_line(&bar, 40);
        assert_eq!(
            line,
            "window 17,500 = input 16,000 + output 1,500 \
             [scccccccccioooo.........................] \
             s system+framing 87 0.5%, c catalog 4,000 22.9%, i instruction 20 0.1%, \
             a attachments 0 0%, o output reserve 1,500 8.6%, . free 11,893 68.0%"
        );
        assert!(!line.contains('\n'));
        // Over the ceiling: said, with by how much.
        let big = [part("system prompt", 80), part("attachment", 17_000)];
        let over = window_line(
            &WindowBar::from_totals(16_000, 1_500, &PartTotals::of(&big, 17_090)),
            40,
        );
        assert!(
            over.ends_with("; OVER the input ceiling by 1,090"),
            "{over}"
        );
        assert!(over.contains(". free 0 0%"), "{over}");
    }
}

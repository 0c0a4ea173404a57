//! The pre-flight planner (DESIGN §2.6, seed 004): a deterministic, rule-based classifier
//! that decides, before any model is called, which tools a message needs, how much memory
//! to recall, how hard the model should think, and the hint line that says so.
//!
//! Everything comes from a TOML rules file: categories with weighted patterns and
//! structural signals, thresholds, tool sets (names or globs), memory and thinking per
//! category, toggles and per-category overrides.

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

use crate::core::bounds::{self, finite_in, int_in};
use crate::core::error::CoreError;
use crate::core::terminal_text::{key_segment, quoted};

/// How hard the model is asked to think. Ordered: the highest of the fired categories wins.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    Off,
    #[default]
    Low,
    Medium,
    High,
}

impl fmt::Display for Thinking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Thinking::Off => "off",
            Thinking::Low => "low",
            Thinking::Medium => "medium",
            Thinking::High => "high",
        })
    }
}

/// Memory recall parameters. With several categories the max of each wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryParams {
    pub max_facts: u32,
    pub max_tokens: u32,
}

/// A structural property of a message, independent of its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// Under `short_chars` characters.
    Short,
    /// One word.
    SingleWord,
    /// Only emoji, punctuation and white space.
    EmojiOnly,
    /// Over `complex_threshold` characters.
    Long,
    CodeFence,
    Url,
    FilePath,
    /// Two or more lines starting `1.` / `2)` / `- `.
    List,
    Question,
    /// Three or more question marks.
    ManyQuestions,
    /// Three or more sentences.
    ManySentences,
}

impl Signal {
    pub fn label(self) -> &'static str {
        match self {
            Signal::Short => "short",
            Signal::SingleWord => "single_word",
            Signal::EmojiOnly => "emoji_only",
            Signal::Long => "long",
            Signal::CodeFence => "code_fence",
            Signal::Url => "url",
            Signal::FilePath => "file_path",
            Signal::List => "list",
            Signal::Question => "question",
            Signal::ManyQuestions => "many_questions",
            Signal::ManySentences => "many_sentences",
        }
    }
}

/// One weighted pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternRule {
    pub pattern: String,
    pub weight: f64,
}

/// A category as written in the rules file. In a user overlay every field is optional:
/// what is given replaces (thresholds, thinking, memory, `tools`) or extends
/// (`extra_patterns`, `extra_tools`) the shipped category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CategoryRules {
    #[serde(default)]
    pub patterns: Vec<PatternRule>,
    #[serde(default)]
    pub extra_patterns: Vec<PatternRule>,
    /// Structural signals and their weights.
    #[serde(default)]
    pub signals: BTreeMap<Signal, f64>,
    pub threshold: Option<f64>,
    /// Catalog entries by name or glob (`memory.*`).
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub extra_tools: Vec<String>,
    /// When this category fires the full tool set passes (`complex`).
    pub full_set: Option<bool>,
    pub thinking: Option<Thinking>,
    pub memory: Option<MemoryParams>,
    pub disabled: Option<bool>,
}

/// A whole rules file (the shipped one, or a user overlay on top of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    pub enabled: Option<bool>,
    pub tool_filtering: Option<bool>,
    pub memory_tuning: Option<bool>,
    pub thinking_tuning: Option<bool>,
    pub prompt_annotation: Option<bool>,
    pub fallback_to_full: Option<bool>,
    pub always_include: Option<Vec<String>>,
    pub complex_threshold: Option<usize>,
    pub short_chars: Option<usize>,
    pub keep_ranked_top: Option<usize>,
    pub default_thinking: Option<Thinking>,
    pub default_memory: Option<MemoryParams>,
    #[serde(default)]
    pub categories: BTreeMap<String, CategoryRules>,
}

impl RulesFile {
    /// Parse a rules file and check its numbers: weights and thresholds finite, thresholds
    /// not negative, each in its range ([`crate::core::bounds`]), named by field.
    pub fn parse(text: &str, origin: &str) -> Result<RulesFile, CoreError> {
        let rules: RulesFile =
            toml::from_str(text).map_err(|e| CoreError::toml(origin, text, &e))?;
        rules.check(origin)?;
        Ok(rules)
    }

    fn check(&self, origin: &str) -> Result<(), CoreError> {
        if let Some(n) = self.complex_threshold {
            int_in(n, &bounds::CHARS, origin, "complex_threshold")?;
        }
        if let Some(n) = self.short_chars {
            int_in(n, &bounds::CHARS, origin, "short_chars")?;
        }
        if let Some(n) = self.keep_ranked_top {
            int_in(n, &bounds::RANKED_KEPT, origin, "keep_ranked_top")?;
        }
        for (name, c) in &self.categories {
            let field = |f: String| format!("categories.{}.{f}", key_segment(name));
            if let Some(t) = c.threshold {
                finite_in(t, &bounds::THRESHOLD, origin, &field("threshold".into()))?;
            }
            for (list, patterns) in [
                ("patterns", &c.patterns),
                ("extra_patterns", &c.extra_patterns),
            ] {
                for (i, p) in patterns.iter().enumerate() {
                    finite_in(
                        p.weight,
                        &bounds::WEIGHT,
                        origin,
                        &field(format!("{list}[{i}].weight")),
                    )?;
                }
            }
            for (signal, w) in &c.signals {
                finite_in(
                    *w,
                    &bounds::WEIGHT,
                    origin,
                    &field(format!("signals.{}", signal.label())),
                )?;
            }
        }
        Ok(())
    }

    /// Lay `over` on top of `self`.
    pub fn overlay(mut self, over: RulesFile) -> RulesFile {
        macro_rules! take {
            ($($f:ident),*) => { $( if over.$f.is_some() { self.$f = over.$f; } )* };
        }
        take!(
            enabled,
            tool_filtering,
            memory_tuning,
            thinking_tuning,
            prompt_annotation,
            fallback_to_full,
            always_include,
            complex_threshold,
            short_chars,
            keep_ranked_top,
            default_thinking,
            default_memory
        );
        for (name, o) in over.categories {
            let c = self.categories.entry(name).or_default();
            if !o.patterns.is_empty() {
                c.patterns = o.patterns;
            }
            c.extra_patterns.extend(o.extra_patterns);
            c.signals.extend(o.signals);
            c.extra_tools.extend(o.extra_tools);
            macro_rules! take_cat {
                ($($f:ident),*) => { $( if o.$f.is_some() { c.$f = o.$f; } )* };
            }
            take_cat!(threshold, tools, full_set, thinking, memory, disabled);
        }
        self
    }
}

/// Why a pattern does not compile, without the pattern itself (the regex crate's message
/// repeats it in full; the error quotes it through [`quoted`]).
fn pattern_problem(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or("a syntax error")
            .to_string(),
        other => other.to_string(),
    }
}

struct Category {
    name: String,
    patterns: Vec<(Regex, f64, String)>,
    signals: Vec<(Signal, f64)>,
    threshold: f64,
    tools: Vec<String>,
    full_set: bool,
    thinking: Thinking,
    memory: MemoryParams,
}

/// A compiled rules file.
pub struct Planner {
    categories: Vec<Category>,
    enabled: bool,
    tool_filtering: bool,
    memory_tuning: bool,
    thinking_tuning: bool,
    prompt_annotation: bool,
    fallback_to_full: bool,
    always_include: Vec<String>,
    complex_threshold: usize,
    short_chars: usize,
    keep_ranked_top: usize,
    default_thinking: Thinking,
    default_memory: MemoryParams,
}

/// One category's score for one message, with what made it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryScore {
    pub category: String,
    pub score: f64,
    pub threshold: f64,
    pub fired: bool,
    /// `pattern \bremember\b +3` / `signal short +1`.
    pub reasons: Vec<String>,
}

/// The planner's decision for one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextPlan {
    pub enabled: bool,
    /// Fired categories, highest score first.
    pub categories: Vec<String>,
    /// Every enabled category's score, highest first.
    pub scores: Vec<CategoryScore>,
    pub signals: Vec<Signal>,
    /// Why every tool passes, when it does: `complex`, `no category matched`, a toggle.
    pub full_set_reason: Option<String>,
    /// Catalog entries kept, in catalog order.
    pub allowlist: Vec<String>,
    /// Entries of the allowlist no fired category names, kept as the ranker's top
    /// ([`Planner::keep_ranked`]), best first.
    pub ranked_in: Vec<String>,
    pub kept: usize,
    pub total: usize,
    pub memory: MemoryParams,
    pub thinking: Thinking,
    pub hint: Option<String>,
}

impl ContextPlan {
    pub fn keeps(&self, tool: &str) -> bool {
        self.allowlist.iter().any(|t| t == tool)
    }

    /// The hint line (when there is one) saying `kept` tools of the catalog's.
    pub fn recount_hint(&mut self, kept: usize) {
        if self.hint.is_some() {
            self.hint = Some(hint_line(&self.categories, kept, self.total, self.thinking));
        }
    }

    /// `kept as the ranker's best, outside research: fs.write`, as every screen says it;
    /// `None` when the categories' tools were all that was kept.
    pub fn ranked_in_line(&self) -> Option<String> {
        if self.ranked_in.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .ranked_in
            .iter()
            .map(|n| crate::core::terminal_text::name(n).into_owned())
            .collect();
        let outside = if self.categories.is_empty() {
            "the always-included tools".to_string()
        } else {
            self.categories.join(" + ")
        };
        Some(format!(
            "kept as the ranker's best, outside {outside}: {}",
            names.join(", ")
        ))
    }
}

/// `memory.*` matches `memory.store`; `*` matches everything; otherwise the exact name.
///
/// One pass with a single backtrack point (the last `*`): at most pattern × name steps,
/// however many stars a rules file writes (`*a*a*a…b` against a long name took minutes
/// when every star was tried recursively).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    // `*` is ASCII, so comparing bytes compares UTF-8 text exactly.
    let (p, s) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut si) = (0, 0);
    // Where the last star was, and the name position it now stands for the end of.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if p.get(pi) == Some(&b'*') {
            star = Some((pi, si));
            pi += 1;
        } else if p.get(pi) == Some(&s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((star_pi, star_si)) = star {
            // Let the last star take one more byte and try again after it.
            pi = star_pi + 1;
            si = star_si + 1;
            star = Some((star_pi, star_si + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

impl Planner {
    /// Compile a rules file. A bad regex is named with its category.
    pub fn new(rules: &RulesFile, origin: &str) -> Result<Planner, CoreError> {
        let mut categories = Vec::new();
        for (name, c) in &rules.categories {
            if c.disabled == Some(true) {
                continue;
            }
            let mut patterns = Vec::new();
            // Each list counts its own entries, as the file writes them.
            let listed = [
                ("patterns", &c.patterns),
                ("extra_patterns", &c.extra_patterns),
            ];
            for (list, rules) in listed {
                for (i, p) in rules.iter().enumerate() {
                    let re = RegexBuilder::new(&p.pattern)
                        .case_insensitive(true)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| CoreError::Field {
                            origin: origin.into(),
                            field: format!("categories.{}.{list}[{i}]", key_segment(name)),
                            problem: format!(
                                "{} is not a valid pattern: {}",
                                quoted(&p.pattern),
                                pattern_problem(&e)
                            ),
                        })?;
                    patterns.push((re, p.weight, p.pattern.clone()));
                }
            }
            let mut tools = c.tools.clone().unwrap_or_default();
            tools.extend(c.extra_tools.iter().cloned());
            categories.push(Category {
                name: name.clone(),
                patterns,
                signals: c.signals.iter().map(|(s, w)| (*s, *w)).collect(),
                threshold: c.threshold.unwrap_or(2.0),
                tools,
                full_set: c.full_set.unwrap_or(false),
                thinking: c.thinking.unwrap_or_default(),
                memory: c.memory.unwrap_or(MemoryParams {
                    max_facts: 15,
                    max_tokens: 500,
                }),
            });
        }
        Ok(Planner {
            categories,
            enabled: rules.enabled.unwrap_or(true),
            tool_filtering: rules.tool_filtering.unwrap_or(true),
            memory_tuning: rules.memory_tuning.unwrap_or(true),
            thinking_tuning: rules.thinking_tuning.unwrap_or(true),
            prompt_annotation: rules.prompt_annotation.unwrap_or(true),
            fallback_to_full: rules.fallback_to_full.unwrap_or(true),
            always_include: rules.always_include.clone().unwrap_or_default(),
            complex_threshold: rules.complex_threshold.unwrap_or(300),
            short_chars: rules.short_chars.unwrap_or(20),
            keep_ranked_top: rules.keep_ranked_top.unwrap_or(KEEP_RANKED_TOP),
            default_thinking: rules.default_thinking.unwrap_or(Thinking::Low),
            default_memory: rules.default_memory.unwrap_or(MemoryParams {
                max_facts: 15,
                max_tokens: 500,
            }),
        })
    }

    pub fn category_names(&self) -> impl Iterator<Item = &str> {
        self.categories.iter().map(|c| c.name.as_str())
    }

    /// The structural signals present in a message.
    pub fn signals(&self, message: &str) -> Vec<Signal> {
        let text = message.trim();
        let chars = text.chars().count();
        let mut out = Vec::new();
        if chars < self.short_chars {
            out.push(Signal::Short);
        }
        if !text.is_empty() && !text.contains(char::is_whitespace) {
            out.push(Signal::SingleWord);
        }
        if !text.is_empty()
            && text
                .chars()
                .all(|c| !c.is_alphanumeric() && (c as u32 > 0x2000 || !c.is_ascii_graphic()))
        {
            out.push(Signal::EmojiOnly);
        }
        if chars > self.complex_threshold {
            out.push(Signal::Long);
        }
        if text.contains("```") {
            out.push(Signal::CodeFence);
        }
        if text.contains("http://") || text.contains("https://") || text.contains("www.") {
            out.push(Signal::Url);
        }
        if has_file_path(text) {
            out.push(Signal::FilePath);
        }
        let list_lines = text.lines().filter(|l| is_list_line(l)).count();
        if list_lines >= 2 {
            out.push(Signal::List);
        }
        let questions = text.matches('?').count();
        if questions >= 1 {
            out.push(Signal::Question);
        }
        if questions >= 3 {
            out.push(Signal::ManyQuestions);
        }
        if sentence_count(text) >= 3 {
            out.push(Signal::ManySentences);
        }
        out
    }

    /// Classify a message against `catalog` (entry names, in catalog order).
    pub fn plan(&self, message: &str, catalog: &[&str]) -> ContextPlan {
        let total = catalog.len();
        let all = || catalog.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        if !self.enabled {
            return ContextPlan {
                enabled: false,
                categories: vec![],
                scores: vec![],
                signals: vec![],
                full_set_reason: Some("planner disabled".into()),
                allowlist: all(),
                ranked_in: vec![],
                kept: total,
                total,
                memory: self.default_memory,
                thinking: self.default_thinking,
                hint: None,
            };
        }
        let signals = self.signals(message);
        let mut scores: Vec<CategoryScore> = self
            .categories
            .iter()
            .map(|c| {
                let mut score = 0.0;
                let mut reasons = Vec::new();
                for (re, w, src) in &c.patterns {
                    if re.is_match(message) {
                        score += w;
                        reasons.push(format!("pattern {src} {w:+}"));
                    }
                }
                for (s, w) in &c.signals {
                    if signals.contains(s) {
                        score += w;
                        reasons.push(format!("signal {} {w:+}", s.label()));
                    }
                }
                CategoryScore {
                    category: c.name.clone(),
                    score,
                    threshold: c.threshold,
                    fired: score >= c.threshold && score > 0.0,
                    reasons,
                }
            })
            .collect();
        scores.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.category.cmp(&b.category))
        });
        let fired: Vec<&Category> = scores
            .iter()
            .filter(|s| s.fired)
            .filter_map(|s| self.categories.iter().find(|c| c.name == s.category))
            .collect();

        let full_set_reason = if !self.tool_filtering {
            Some("tool filtering is off".to_string())
        } else if let Some(c) = fired.iter().find(|c| c.full_set) {
            Some(format!("{} passes the full set", c.name))
        } else if fired.is_empty() && self.fallback_to_full {
            Some("no category matched".to_string())
        } else {
            None
        };
        let allowlist = if full_set_reason.is_some() {
            all()
        } else {
            let wanted = |name: &str| {
                fired.iter().any(|c| c.tools.iter().any(|t| glob_match(t, name)))
                    || self.always_include.iter().any(|t| glob_match(t, name))
                    // Tools no category knows are not the planner's to remove.
                    || !self
                        .categories
                        .iter()
                        .any(|c| c.tools.iter().any(|t| glob_match(t, name)))
            };
            catalog
                .iter()
                .filter(|n| wanted(n))
                .map(|s| s.to_string())
                .collect()
        };
        let memory = if !self.memory_tuning || fired.is_empty() {
            self.default_memory
        } else {
            MemoryParams {
                max_facts: fired.iter().map(|c| c.memory.max_facts).max().unwrap_or(0),
                max_tokens: fired.iter().map(|c| c.memory.max_tokens).max().unwrap_or(0),
            }
        };
        let thinking = if !self.thinking_tuning || fired.is_empty() {
            self.default_thinking
        } else {
            fired
                .iter()
                .map(|c| c.thinking)
                .max()
                .unwrap_or(self.default_thinking)
        };
        let categories: Vec<String> = fired.iter().map(|c| c.name.clone()).collect();
        let kept = allowlist.len();
        let hint = self
            .prompt_annotation
            .then(|| hint_line(&categories, kept, total, thinking));
        ContextPlan {
            enabled: true,
            categories,
            scores,
            signals,
            full_set_reason,
            allowlist,
            ranked_in: vec![],
            kept,
            total,
            memory,
            thinking,
            hint,
        }
    }
}

impl Planner {
    /// Keep the ranker's best entries that the fired categories left out: of `ranked` (best
    /// first, only those that scored, each with whether it is strong: see
    /// [`RANKED_KEPT_SHARE`]), the strong ones among the first `keep_ranked_top` pass
    /// whatever their category. The planner narrows the catalog for a weak model; it must not take
    /// away a step the question names while the allowance has room (tester 19 F16: "search
    /// the web … and save it to a file" fired research alone, and the ranker's #2 `fs.write`
    /// was never sent). The budget still cuts them, lowest ranked first.
    pub fn keep_ranked<'a>(
        &self,
        plan: &mut ContextPlan,
        ranked: impl IntoIterator<Item = (&'a str, bool)>,
        catalog: &[&str],
    ) {
        if plan.kept >= plan.total {
            return;
        }
        let ranked_in: Vec<String> = ranked
            .into_iter()
            .take(self.keep_ranked_top)
            .filter(|&(name, strong)| strong && !plan.keeps(name))
            .map(|(name, _)| name.to_string())
            .collect();
        if ranked_in.is_empty() {
            return;
        }
        plan.allowlist = catalog
            .iter()
            .filter(|name| plan.keeps(name) || ranked_in.iter().any(|r| r == *name))
            .map(|name| name.to_string())
            .collect();
        plan.kept = plan.allowlist.len();
        plan.ranked_in = ranked_in;
        plan.recount_hint(plan.kept);
    }
}

/// The ranker's best entries the planner keeps whatever category fired
/// ([`Planner::keep_ranked`]): enough for a question of two or three requests, where the
/// ranking places each request's best entry first.
pub const KEEP_RANKED_TOP: usize = 3;

/// An entry of the ranker's top is strong enough to pass the planner when it was placed
/// first for one of the question's requests or as a lookup step, or scored at least this
/// share of the top score: "compare these two options" ranks `builtin.post-to-podcast` #3
/// for the word "two" alone, at 0.38 of the top.
pub const RANKED_KEPT_SHARE: f64 = 0.5;

/// `[Context: research + crypto task | tools: 5/32 | thinking: medium]`
pub fn hint_line(categories: &[String], kept: usize, total: usize, thinking: Thinking) -> String {
    let what = if categories.is_empty() {
        "general".to_string()
    } else {
        categories.join(" + ")
    };
    format!("[Context: {what} task | tools: {kept}/{total} | thinking: {thinking}]")
}

fn is_list_line(line: &str) -> bool {
    let l = line.trim_start();
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    (digits > 0 && digits < 3 && matches!(l[digits..].chars().next(), Some('.' | ')')))
        || l.starts_with("- ")
        || l.starts_with("* ")
}

fn sentence_count(text: &str) -> usize {
    text.split(['.', '!', '?', '\n'])
        .filter(|s| s.split_whitespace().count() >= 3)
        .count()
}

fn has_file_path(text: &str) -> bool {
    const EXT: &[&str] = &[
        "rs", "py", "ts", "tsx", "js", "jsx", "go", "java", "c", "h", "cpp", "hpp", "rb", "md",
        "json", "toml", "yaml", "yml", "txt", "log", "csv", "sh", "sql", "html", "css", "lock",
    ];
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | '(' | ')' | ','))
        .any(|w| {
            let w = w.trim_end_matches([':', '.', ';', '!', '?']);
            let has_ext = w
                .rsplit_once('.')
                .is_some_and(|(stem, ext)| !stem.is_empty() && EXT.contains(&ext));
            let is_path = w.len() > 2
                && (w.starts_with('/') || w.starts_with("./") || w.starts_with("~/"))
                && w[1..].contains('/');
            (has_ext && !w.contains("://")) || is_path
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = r#"
always_include = ["message.send"]
[categories.casual]
patterns = [{ pattern = '^\s*(hi|hey|hello|yo|sup|thanks)\b', weight = 3 }]
signals = { short = 1 }
threshold = 3
tools = ["message.send"]
thinking = "off"
memory = { max_facts = 0, max_tokens = 0 }
[categories.memory]
patterns = [{ pattern = '\b(remember|recall)\b', weight = 3 }]
tools = ["memory.*"]
thinking = "low"
memory = { max_facts = 25, max_tokens = 1000 }
[categories.crypto]
patterns = [{ pattern = '\b(sol|eth|btc|wallet)\b', weight = 3 }, { pattern = '\b(send|transfer)\b', weight = 1 }]
tools = ["crypto.*", "web.search"]
thinking = "medium"
memory = { max_facts = 8, max_tokens = 300 }
[categories.media]
patterns = [{ pattern = '\bimage\b', weight = 3 }]
tools = ["image.*"]
thinking = "off"
[categories.complex]
patterns = [{ pattern = 'step by step', weight = 3 }]
signals = { long = 3 }
full_set = true
thinking = "high"
"#;
    const CATALOG: &[&str] = &[
        "message.send",
        "memory.store",
        "memory.search",
        "crypto.wallet",
        "web.search",
        "image.generate",
        "uncategorised.tool",
    ];

    fn planner() -> Planner {
        Planner::new(&RulesFile::parse(RULES, "rules").unwrap(), "rules").unwrap()
    }

    #[test]
    fn union_of_tool_sets_max_memory_highest_thinking() {
        let p = planner().plan("remember my wallet address and check my SOL", CATALOG);
        assert_eq!(p.categories.len(), 2);
        assert!(p.keeps("memory.store") && p.keeps("crypto.wallet") && p.keeps("web.search"));
        assert!(p.keeps("message.send"), "always_include");
        assert!(p.keeps("uncategorised.tool"), "unknown tools pass through");
        assert!(!p.keeps("image.generate"));
        assert_eq!(p.memory.max_facts, 25);
        assert_eq!(p.memory.max_tokens, 1000);
        assert_eq!(p.thinking, Thinking::Medium);
        assert_eq!(
            p.hint.as_deref(),
            Some("[Context: crypto + memory task | tools: 6/7 | thinking: medium]")
        );
    }

    #[test]
    fn complex_or_no_match_passes_everything() {
        let none = planner().plan("what a lovely afternoon for a long walk", CATALOG);
        assert!(none.categories.is_empty());
        assert_eq!(none.kept, CATALOG.len());
        assert_eq!(none.full_set_reason.as_deref(), Some("no category matched"));
        assert_eq!(none.thinking, Thinking::Low);
        let complex = planner().plan("walk me through it step by step: remember it", CATALOG);
        assert_eq!(complex.kept, CATALOG.len());
        assert_eq!(complex.thinking, Thinking::High);
    }

    #[test]
    fn weak_words_alone_stay_below_threshold() {
        let p = planner().plan("send me the report when it is done", CATALOG);
        assert!(!p.categories.contains(&"crypto".to_string()));
        let s = p.scores.iter().find(|s| s.category == "crypto").unwrap();
        assert_eq!(s.score, 1.0);
        assert!(s.reasons[0].contains("send|transfer"));
    }

    #[test]
    fn a_bad_extra_pattern_is_named_by_its_own_list_and_place() {
        let base = RulesFile::parse(RULES, "rules").unwrap();
        let over = RulesFile::parse(
            "[categories.memory]\nextra_patterns = [{ pattern = 'ok', weight = 1 }, { pattern = '[', weight = 1 }]",
            "planner.toml",
        )
        .unwrap();
        let err = Planner::new(&base.overlay(over), "planner.toml")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("categories.memory.extra_patterns[1]"),
            "as the file writes it, not counted after the shipped patterns: {err}"
        );
    }

    #[test]
    fn toggles_and_overrides() {
        let base = RulesFile::parse(RULES, "rules").unwrap();
        let over = RulesFile::parse(
            r#"
tool_filtering = false
[categories.crypto]
disabled = true
[categories.memory]
thinking = "high"
extra_patterns = [{ pattern = '\bnote to self\b', weight = 3 }]
"#,
            "user",
        )
        .unwrap();
        let p = Planner::new(&base.overlay(over), "x").unwrap();
        let plan = p.plan("note to self: buy SOL", CATALOG);
        assert_eq!(plan.categories, vec!["memory"]);
        assert_eq!(plan.thinking, Thinking::High);
        assert_eq!(plan.kept, CATALOG.len());
        let off = RulesFile::parse("enabled = false", "x").unwrap();
        let p = Planner::new(&RulesFile::parse(RULES, "r").unwrap().overlay(off), "x").unwrap();
        let plan = p.plan("remember", CATALOG);
        assert!(!plan.enabled && plan.hint.is_none() && plan.kept == CATALOG.len());
    }

    #[test]
    fn bad_rules_are_named() {
        let err = RulesFile::parse("[categories.x]\npaterns = []", "planner.toml").unwrap_err();
        assert!(err.to_string().contains("planner.toml: line 2"), "{err}");
        let bad = RulesFile::parse(
            "[categories.x]\npatterns = [{ pattern = '(', weight = 1 }]",
            "planner.toml",
        )
        .unwrap();
        let err = Planner::new(&bad, "planner.toml").err().unwrap();
        assert!(
            err.to_string().contains("categories.x.patterns[0]"),
            "{err}"
        );
    }

    #[test]
    fn nan_infinity_and_negative_thresholds_are_refused_by_field() {
        for (text, field, says) in [
            (
                "[categories.x]\nthreshold = nan",
                "categories.x.threshold",
                "is NaN",
            ),
            (
                "[categories.x]\nthreshold = -1",
                "categories.x.threshold",
                "is -1",
            ),
            (
                "[categories.x]\nthreshold = inf",
                "categories.x.threshold",
                "is infinite",
            ),
            (
                "[categories.x]\npatterns = [{ pattern = 'a', weight = 1 }, { pattern = 'b', weight = -inf }]",
                "categories.x.patterns[1].weight",
                "is infinite",
            ),
            (
                "[categories.x]\nextra_patterns = [{ pattern = 'a', weight = nan }]",
                "categories.x.extra_patterns[0].weight",
                "is NaN",
            ),
            (
                "[categories.x]\nsignals = { long = nan }",
                "categories.x.signals.long",
                "is NaN",
            ),
            (
                "[categories.x]\nsignals = { url = 1e9 }",
                "categories.x.signals.url",
                "is 1000000000",
            ),
        ] {
            let err = RulesFile::parse(text, "planner.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("planner.toml: field '{field}' {says}")),
                "{text}: {err}"
            );
        }
        // Counter-evidence stays allowed: the shipped rules use negative pattern weights.
        assert!(
            RulesFile::parse(
                "[categories.x]\npatterns = [{ pattern = 'a', weight = -3 }]",
                "p"
            )
            .is_ok()
        );
    }

    #[test]
    fn signals_and_globs() {
        let p = planner();
        let s = p.signals("fix src/main.rs:\n1. build\n2. test\nsee https://x.io ???");
        for want in [
            Signal::FilePath,
            Signal::List,
            Signal::Url,
            Signal::ManyQuestions,
        ] {
            assert!(s.contains(&want), "{want:?} in {s:?}");
        }
        assert!(p.signals("🙂👍").contains(&Signal::EmojiOnly));
        assert!(glob_match("memory.*", "memory.store"));
        assert!(!glob_match("memory.*", "memorystore"));
        assert!(glob_match("builtin.*-blog", "builtin.remember-and-blog"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "abc") && glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy") && !glob_match("a*b", "ba"));
        assert!(glob_match("**", "x") && glob_match("é*", "état") && !glob_match("é*", "e"));
        assert!(!glob_match("memory.store", "memory.stor"));
    }

    #[test]
    fn many_stars_against_a_long_name_is_quick_not_a_hang() {
        // The recursive matcher ran for minutes on this; tests/parser_fuzz.rs seeds it too.
        let pattern = format!("{}b", "*a".repeat(12));
        assert!(!glob_match(&pattern, &"a".repeat(4096)));
        assert!(glob_match(&pattern, &format!("{}b", "a".repeat(4096))));
    }
}

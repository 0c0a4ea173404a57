//! Token counting (DESIGN §2.2): exact for o200k/cl100k, a labelled estimate otherwise.

use serde::Serialize;

use crate::core::budget::Tokenizer;

/// A count and whether it is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TokenCount {
    pub tokens: usize,
    pub exact: bool,
}

/// The most bytes one estimated token stands for: [`estimate`] is at least
/// `bytes / ESTIMATE_MAX_BYTES_PER_TOKEN` of any text (a single space or punctuation mark
/// joined to an ordinary 7-letter word, `" _abcdefg"`, is the sparsest case), so a text of
/// at least `b` bytes is estimated at no fewer than [`estimate_at_least`]`(b)` tokens.
pub const ESTIMATE_MAX_BYTES_PER_TOKEN: usize = 9;

/// Count the tokens of `text` as `tokenizer` sees it. The BPE tables are built once
/// per process (tiktoken-rs singletons) and reused.
pub fn count(tokenizer: Tokenizer, text: &str) -> TokenCount {
    match tokenizer {
        Tokenizer::O200k => TokenCount {
            tokens: tiktoken_rs::o200k_base_singleton().count_ordinary(text),
            exact: true,
        },
        Tokenizer::Cl100k => TokenCount {
            tokens: tiktoken_rs::cl100k_base_singleton().count_ordinary(text),
            exact: true,
        },
        Tokenizer::Estimate => TokenCount {
            tokens: estimate(text),
            exact: false,
        },
    }
}

/// The fewest tokens [`estimate`] gives any text of `bytes` bytes.
pub fn estimate_at_least(bytes: usize) -> usize {
    bytes.div_ceil(ESTIMATE_MAX_BYTES_PER_TOKEN)
}

/// A token count meant to be at or above what cl100k and o200k count, for models whose
/// tokenizer we do not have (tester 19 F1: bytes/3 was 1.3–2.6× under for base64, hex,
/// digits, emoji and combining marks). One pass over the bytes, no allocation, no BPE: the
/// text is cut where those tokenizers' pre-tokenizers cut it, and each piece is charged
/// what a BPE can at most make of it in the common case:
///
/// - a run of digits: one token per 3 (both split digits in groups of at most 3);
/// - an ordinary word (ASCII letters, split at camelCase humps): 1 token up to 7 letters,
///   one more per 4 beyond; a word that reads as random (under a fifth vowels, 4
///   consonants in a row, or the case flipping more than every 4th letter) and any letters
///   in a run that also holds digits (hex, base64, ids): 3 tokens per 4 letters; a
///   pattern over and over (`hahaha`), unlike vowels in a row and runs of one letter
///   (`sooooo`) as [`word`] charges them;
/// - punctuation: a single mark before a word joins it if it is one [`joins_word`] names
///   (`.` `_` `-` `(` `/`; a comma before a single letter), else it is a token of its own
///   (`|grep`, `&t=`, `{b:`); any other run as [`marks`] charges it (as the BPEs merge
///   marks: pieces, not whole runs);
/// - whitespace: a space before a word or mark joins it; any other run 1 token, one more
///   per change of character (tabs and spaces mixed) and per 8 characters, and at least
///   one per carriage return not before a line feed (`\r\r\r` is three in cl100k);
/// - a control character (NUL, DEL, form feed…): 1 token each;
/// - each byte of a non-ASCII character: 1 token (rare CJK, emoji sequences and combining
///   marks fall back to bytes; common CJK and other scripts are overestimated).
///
/// No piece is charged more tokens than it has bytes, so the estimate never exceeds the
/// text's bytes, and it is additive over lines: a text cut after a newline (the next part
/// not starting with whitespace) is the sum of its parts' estimates. Measured on
/// `tests/data/tokens` (`cargo test --lib core::tokens`): never under max(cl100k, o200k);
/// see README *Token-true budgets* for the ratios.
pub fn estimate(text: &str) -> usize {
    let b = text.as_bytes();
    let n = b.len();
    let mut tokens = 0;
    let mut i = 0;
    while i < n {
        let c = b[i];
        if c >= 0x80 {
            // Every byte of a non-ASCII character: a token at most.
            let len = match c {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            let len = len.min(n - i);
            tokens += len;
            i += len;
        } else if c.is_ascii_alphanumeric() {
            let end = run_end(b, i, u8::is_ascii_alphanumeric);
            tokens += alphanumeric(&b[i..end]);
            i = end;
        } else if is_control(c) {
            // A control character (NUL, DEL, a form feed…): a token each at most.
            tokens += 1;
            i += 1;
        } else if is_space(c) {
            let end = run_end(b, i, |&x| is_space(x));
            let joins = end - i == 1
                && c == b' '
                && b.get(end)
                    .is_some_and(|&x| x.is_ascii_alphabetic() || is_mark(x));
            if !joins {
                let changes = (i + 1..end)
                    .filter(|&k| b[k] != b[k - 1] && b[k - 1] != b'\n')
                    .count();
                // A carriage return not before a line feed: neither table merges runs of
                // them far (cl100k not at all: `\r\r\r` is three tokens).
                let lone_cr = (i..end)
                    .filter(|&k| b[k] == b'\r' && b.get(k + 1) != Some(&b'\n'))
                    .count();
                // Indentation by tabs before text: its last tab goes apart from the rest
                // (tester 32 F1: `\t\t\t\t]` is three tokens, not two).
                let last_tab = usize::from(end - i >= 2 && b[end - 1] == b'\t' && end < n);
                tokens += (1 + changes + last_tab + (end - i) / 8)
                    .max(lone_cr)
                    .min(end - i);
            }
            i = end;
        } else {
            let end = run_end(b, i, |&x| is_mark(x));
            let len = end - i;
            // A mark joins the word after it, unless a space before took it (` (a` is ` (`
            // and `a`: tester 32 F1, `(a) (a)` was charged two tokens of three).
            let after_space = i > 0 && b[i - 1] == b' ';
            tokens += if len == 1 && !after_space && b.get(end).is_some_and(u8::is_ascii_alphabetic)
            {
                // A comma joins a single letter (`,x` is a token in both: `Y,N,N`).
                let single = b.get(end + 1).is_none_or(|x| !x.is_ascii_alphabetic());
                usize::from(!(joins_word(c) || (c == b',' && single)))
            } else {
                marks(&b[i..end])
            };
            i = end;
        }
    }
    tokens
}

/// A run of marks no word joins. A run of one mark over and over (`-----`, `....`) is
/// merged far by both BPEs: 1 token per 4 (quotes, `&`, brackets, braces and backticks only
/// in pairs: 1 per 2, tester 48). Otherwise both merge marks only in the pieces
/// their tables hold (tester 30 F9: minified `[[[],[{}]],` and regular expressions were
/// charged half their tokens, a run at most 1 per 4): the run's JSON stretches (of
/// `"{}[]:,`) are cut greedily into [`JSON_PIECES`], 1 token each, and every other stretch
/// is dense text, 3 per 4 marks (1 for a lone mark).
fn marks(run: &[u8]) -> usize {
    if run.iter().all(|&x| x == run[0]) {
        // Quotes, `&`, brackets and braces repeated merge only in pairs.
        return if matches!(
            run[0],
            b'"' | b'\'' | b'&' | b'[' | b']' | b'{' | b'}' | b'`'
        ) {
            run.len().div_ceil(2)
        } else {
            (3 + run.len()).div_ceil(4)
        };
    }
    let mut tokens = 0;
    let mut k = 0;
    while k < run.len() {
        let json = is_json_mark(run[k]);
        let end = run_end(run, k, |&x| is_json_mark(x) == json);
        tokens += if json {
            let stretch = &run[k..end];
            let pieces = json_pieces(stretch);
            // Longer than any piece, quotes or not, both merge about 2 marks a token
            // (tester 32 F1: `",",",",…` is one token per 2, not per 3).
            if stretch.contains(&b'"') && stretch.len() <= JSON_PIECE_MAX {
                pieces
            } else {
                pieces.max(stretch.len().div_ceil(2))
            }
        } else {
            dense(end - k)
        };
        k = end;
    }
    tokens
}

fn is_json_mark(c: u8) -> bool {
    matches!(c, b'"' | b'{' | b'}' | b'[' | b']' | b':' | b',')
}

/// The tokens of a stretch of JSON marks: longest [`JSON_PIECES`] first, a mark no piece
/// starts with 1.
fn json_pieces(stretch: &[u8]) -> usize {
    let mut tokens = 0;
    let mut k = 0;
    while k < stretch.len() {
        let longest = (2..=JSON_PIECE_MAX.min(stretch.len() - k))
            .rev()
            .find(|&l| JSON_PIECES.binary_search(&&stretch[k..k + l]).is_ok())
            .unwrap_or(1);
        tokens += 1;
        k += longest;
    }
    tokens
}

const JSON_PIECE_MAX: usize = 6;

/// Every string of 2–6 JSON marks that cl100k and o200k both hold as one token (found by
/// asking both of every such string; sorted, for the binary search).
const JSON_PIECES: &[&[u8]] = &[
    b"\"\"",
    b"\"\"\"",
    b"\"\",",
    b"\"\":",
    b"\",",
    b"\",\"",
    b"\",\"\",\"",
    b"\",[",
    b"\",{",
    b"\":",
    b"\":\"",
    b"\":\"\",\"",
    b"\":[",
    b"\":[\"",
    b"\":{\"",
    b"\"[",
    b"\"]",
    b"\"],",
    b"\"]:",
    b"\"][",
    b"\"][\"",
    b"\"]]",
    b"\"{",
    b"\"}",
    b"\"},",
    b"\"},{\"",
    b"\"}}",
    b",\"",
    b",\",",
    b",,",
    b",,,",
    b",,,,",
    b",:",
    b",:,",
    b",:,:",
    b",[",
    b",{",
    b":\"",
    b":\",",
    b":,",
    b"::",
    b"::::",
    b"::{",
    b":[",
    b":[\"",
    b":[[",
    b":]",
    b":],",
    b":{",
    b":{}",
    b"[\"",
    b"[,",
    b"[,]",
    b"[:",
    b"[:,",
    b"[:,:,",
    b"[:]",
    b"[[",
    b"[]",
    b"[]\"",
    b"[],",
    b"[][",
    b"[][]",
    b"[]{",
    b"[]{\"",
    b"[]}",
    b"[{",
    b"]\"",
    b"]\",",
    b"],",
    b"],\"",
    b"],[",
    b"]:",
    b"][",
    b"][\"",
    b"][:",
    b"][]",
    b"]]",
    b"]],",
    b"]][",
    b"]{",
    b"]}",
    b"]}\"",
    b"]},",
    b"{\"",
    b"{:",
    b"{{",
    b"{}",
    b"{}\",",
    b"{},",
    b"}\"",
    b"}\",",
    b"},",
    b"},\"",
    b"},{",
    b"},{\"",
    b"}:",
    b"}:{",
    b"}[",
    b"}]",
    b"}],",
    b"}{",
    b"}}",
    b"}}\"",
    b"}},",
    b"}}{{",
];

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// ASCII that is neither a letter, a digit, whitespace nor a control character.
fn is_mark(c: u8) -> bool {
    c < 0x80 && !c.is_ascii_alphanumeric() && !is_space(c) && !is_control(c)
}

/// An ASCII control character other than tab, line feed and carriage return.
fn is_control(c: u8) -> bool {
    (c < 0x20 && !is_space(c)) || c == 0x7f
}

/// The marks both tables join to most words after them (`.com`, `_id`, `-name`, `(self`,
/// `/usr`). Tester 48: every mark before a word had been free, but asked of both tables
/// before 616 words (the 52 single letters, words of `prose.txt` and `code.py`), each of
/// these is free before at least half of them, every other mark before under 40 % (`,`
/// 39 %, `:` 22 %, `=` 26 %, `|` `^` `]` `~` before none), so `a|b|c` is five tokens, not
/// three. A comma is also free before a single letter (`,x` is one token in both).
fn joins_word(c: u8) -> bool {
    matches!(c, b'.' | b'_' | b'-' | b'(' | b'/')
}

/// The end of the run from `start` of bytes `pred` holds for.
fn run_end(b: &[u8], start: usize, pred: impl Fn(&u8) -> bool) -> usize {
    b[start..]
        .iter()
        .position(|x| !pred(x))
        .map_or(b.len(), |k| start + k)
}

/// Three tokens per four characters, rounded up: dense text (random letters, hex, base64).
fn dense(len: usize) -> usize {
    (3 * len).div_ceil(4)
}

/// A run of ASCII letters and digits: digits in groups of 3, letters as words, or dense
/// when the run mixes letters with digits.
fn alphanumeric(run: &[u8]) -> usize {
    let mixed = run.iter().any(u8::is_ascii_digit) && run.iter().any(u8::is_ascii_alphabetic);
    let mut tokens = 0;
    let mut k = 0;
    while k < run.len() {
        if run[k].is_ascii_digit() {
            let end = run_end(run, k, u8::is_ascii_digit);
            tokens += (end - k).div_ceil(3);
            k = end;
        } else {
            let end = run_end(run, k, u8::is_ascii_alphabetic);
            tokens += if mixed {
                dense(end - k)
            } else {
                letters(&run[k..end])
            };
            k = end;
        }
    }
    tokens
}

/// A run of ASCII letters: dense when its case flips more than every 4th letter (random
/// text, base64), else each camelCase part as a word (`getElementById`, `HTTPServer`).
fn letters(run: &[u8]) -> usize {
    let n = run.len();
    let flips = run
        .windows(2)
        .filter(|w| w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase())
        .count();
    if n > 2 && flips * 4 > n {
        return dense(n);
    }
    let mut tokens = 0;
    let mut start = 0;
    for k in 1..n {
        let hump = run[k].is_ascii_uppercase()
            && (run[k - 1].is_ascii_lowercase()
                || run.get(k + 1).is_some_and(u8::is_ascii_lowercase));
        if hump {
            tokens += word(&run[start..k]);
            start = k;
        }
    }
    tokens + word(&run[start..])
}

/// One word of ASCII letters. Besides its length and the random-looking test, a word
/// neither table holds is charged as they split it (tester 48): a letter pattern over and
/// over (`hahaha`, `abcabc`: half its letters repeat the one 2 or 3 back) a token per 2
/// letters; unlike vowels in a row (`oeuiea`: a third of its letters) as dense text; a run
/// of 3 or more of one letter (`sooooo`, `Ooooooh`) apart from the rest, a token per 3
/// letters or 2 and one per 8, whichever is fewer (`oooooooo` is one token in both).
fn word(w: &[u8]) -> usize {
    let n = w.len();
    if n <= 2 {
        return 1;
    }
    let vowel = |c: u8| matches!(c | 0x20, b'a' | b'e' | b'i' | b'o' | b'u' | b'y');
    let mut vowels = 0;
    let mut consonants = 0;
    let mut most = 0;
    let mut repeats = 0;
    let mut vowel_pairs = 0;
    // Runs of 3 or more of one letter: their letters and their tokens.
    let mut run: usize = 1;
    let mut run_letters = 0;
    let mut run_tokens = 0;
    for k in 0..n {
        let c = w[k] | 0x20;
        let v = vowel(c);
        vowels += usize::from(v);
        consonants = if v { 0 } else { consonants + 1 };
        most = most.max(consonants);
        let p1 = if k >= 1 { w[k - 1] | 0x20 } else { 0 };
        if k >= 1 && c != p1 {
            vowel_pairs += usize::from(v && vowel(p1));
            let p2 = if k >= 2 { w[k - 2] | 0x20 } else { 0 };
            let p3 = if k >= 3 { w[k - 3] | 0x20 } else { 0 };
            repeats += usize::from(c == p2 || c == p3);
        }
        run = if k >= 1 && c == p1 { run + 1 } else { 1 };
        if run >= 3 && (k + 1 == n || w[k + 1] | 0x20 != c) {
            run_letters += run;
            run_tokens += run.div_ceil(3).min(2 + run / 8);
        }
    }
    if vowels * 5 < n || most >= 4 || (n >= 6 && vowel_pairs * 3 >= n) {
        dense(n)
    } else if n >= 6 && repeats * 2 >= n {
        n.div_ceil(2)
    } else if run_letters > 0 {
        let rest = n - run_letters;
        usize::from(rest > 0) + rest.saturating_sub(7).div_ceil(4) + run_tokens
    } else {
        1 + n.saturating_sub(7).div_ceil(4)
    }
}

/// Build the BPE tables ahead of first use (they take a noticeable moment to build).
pub fn warm_up(tokenizer: Tokenizer) {
    let _ = count(tokenizer, "warm up");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_are_exact_and_labelled() {
        let o = count(Tokenizer::O200k, "hello world");
        assert_eq!(
            o,
            TokenCount {
                tokens: 2,
                exact: true
            }
        );
        let c = count(Tokenizer::Cl100k, "hello world");
        assert_eq!(
            c,
            TokenCount {
                tokens: 2,
                exact: true
            }
        );
    }

    #[test]
    fn the_estimate_is_labelled_and_charges_each_kind_of_text() {
        assert_eq!(
            count(Tokenizer::Estimate, "hello world"),
            TokenCount {
                tokens: 2,
                exact: false
            }
        );
        assert_eq!(estimate(""), 0);
        // Digits in groups of 3; letters among digits 3 per 4; a byte per non-ASCII byte.
        assert_eq!(estimate("1234567"), 3);
        assert_eq!(estimate("deadbeef00"), 7);
        assert_eq!(estimate("😀"), 4);
        // A JSON run is 1; a random-looking word is dense; an ordinary one is not.
        assert_eq!(estimate("\":\""), 1);
        assert_eq!(estimate("qwxkzjvbnmplrt"), 11);
        assert_eq!(estimate("repository"), 2);
        // Tester 48: a mark before a word is a token unless the tables join it.
        assert_eq!(estimate("a|b|c"), 5);
        assert_eq!(estimate("a.b/c"), 3);
        assert_eq!(estimate("Y,N,N"), 3);
        assert_eq!(estimate("k=v&x=y"), 7);
        // Patterns over and over, runs of a letter, lone `\r`, control characters, quotes.
        assert_eq!(estimate("hahahaha"), 4);
        assert_eq!(estimate("sooooo"), 3);
        assert_eq!(estimate("\r\r\r"), 3);
        assert_eq!(estimate("\0\0\u{7f}\u{c}"), 4);
        assert_eq!(estimate("''''"), 2);
    }

    /// Tester 19 F1: bytes/3 was far under the real count for base64, hex, digits, CJK,
    /// emoji and combining marks. Every sample of `tests/data/tokens` (and the MCP catalogs
    /// and prompts of `tests/data`) is estimated at or above what both BPE tokenizers count,
    /// and English prose, code comments' JSON and tool catalogs within [`WASTE`] of it.
    #[test]
    #[allow(clippy::print_stderr)] // each sample's ratio, for README (`-- --nocapture`)
    fn the_estimate_is_never_under_cl100k_or_o200k_on_the_corpus() {
        // 1.4 until tester 30 F9: charging JSON runs as the BPEs split them (`"],"` is two
        // tokens, not one) put the Notion catalog at 1.41.
        const WASTE: f64 = 1.45;
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut files = Vec::new();
        for dir in ["tokens", "mcp", "prompts"] {
            for entry in std::fs::read_dir(data.join(dir)).unwrap().flatten() {
                files.push(entry.path());
            }
        }
        files.sort();
        let mut under = Vec::new();
        let mut wasteful = Vec::new();
        for path in &files {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name == "README.md" {
                continue;
            }
            let text = std::fs::read_to_string(path).unwrap();
            let real = count(Tokenizer::Cl100k, &text)
                .tokens
                .max(count(Tokenizer::O200k, &text).tokens);
            let est = estimate(&text);
            let ratio = est as f64 / real as f64;
            eprintln!(
                "{name:32} bytes {:7} real {real:6} estimate {est:6} ratio {ratio:.2}",
                text.len()
            );
            if est < real {
                under.push(format!("{name}: {est} < {real}"));
            }
            let tight = name.starts_with("prose")
                || name.starts_with("catalog_")
                || name.ends_with(".json")
                || name.ends_with(".md");
            if tight && ratio > WASTE {
                wasteful.push(format!("{name}: {ratio:.2}"));
            }
            assert!(est <= text.len(), "{name}: more tokens than bytes");
            assert!(
                est >= estimate_at_least(text.len()),
                "{name}: under the floor"
            );
        }
        assert!(files.len() > 40, "the corpus is there: {}", files.len());
        assert!(
            under.is_empty(),
            "estimated under the real count: {under:?}"
        );
        assert!(
            wasteful.is_empty(),
            "over {WASTE}× the real count: {wasteful:?}"
        );
    }

    /// The JSON pieces are what their comment says: one token in both tables, sorted for
    /// the binary search, none longer than [`JSON_PIECE_MAX`].
    #[test]
    fn every_json_piece_is_one_token_in_both_tables() {
        assert!(
            JSON_PIECES.windows(2).all(|w| w[0] < w[1]),
            "sorted, once each"
        );
        for piece in JSON_PIECES {
            let text = std::str::from_utf8(piece).unwrap();
            assert!((2..=JSON_PIECE_MAX).contains(&piece.len()), "{text}");
            assert_eq!(count(Tokenizer::Cl100k, text).tokens, 1, "{text}");
            assert_eq!(count(Tokenizer::O200k, text).tokens, 1, "{text}");
        }
        // A stretch is cut longest piece first; a mark no piece starts with is 1 token.
        assert_eq!(json_pieces(b"\"},{\""), 1);
        assert_eq!(json_pieces(b"\"],\""), 2);
        // Brackets alone merge less than the greedy cut: 1 token per 2 marks at least.
        assert_eq!(marks(b"]]],[[["), 4);
        assert_eq!(marks(b"-----"), 2);
    }

    /// The sparsest texts stay within [`ESTIMATE_MAX_BYTES_PER_TOKEN`], and what compaction
    /// relies on holds: the estimate is at most the bytes and adds up over lines.
    #[test]
    fn the_estimate_has_a_floor_a_ceiling_and_adds_up_over_lines() {
        for text in [
            " _abcdefg _abcdefg _abcdefg",
            "_abcdefg_abcdefg",
            "                                         x",
            "\t \t \t \t \t \t \t \t \t",
            " \"},{\" \"},{\"",
            "a",
            " ",
            "\n\n\n\n",
        ] {
            let e = estimate(text);
            assert!(e <= text.len(), "{text:?}: {e}");
            assert!(e >= estimate_at_least(text.len()), "{text:?}: {e}");
        }
        let lines = [
            "{\"packs\":[\n",
            "{\"name\":\"web.search\",\"d\":\"Find pages 😀\"},\n",
            "{\"name\":\"x\"}\n",
            "]}",
        ];
        let sum: usize = lines.iter().map(|l| estimate(l)).sum();
        assert_eq!(estimate(&lines.concat()), sum);
    }
}

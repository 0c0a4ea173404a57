//! Token counting (DESIGN §2.2): exact for o200k/cl100k, a labelled estimate otherwise.

use serde::Serialize;

use crate::core::budget::Tokenizer;

/// A count and whether it is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TokenCount {
    pub tokens: usize,
    pub exact: bool,
}

/// Bytes per token for the estimate: 3 errs on the high side (seed 002).
pub const ESTIMATE_BYTES_PER_TOKEN: usize = 3;

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
            tokens: estimate(text.len()),
            exact: false,
        },
    }
}

/// Bytes/3, rounded up.
pub fn estimate(bytes: usize) -> usize {
    bytes.div_ceil(ESTIMATE_BYTES_PER_TOKEN)
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
    fn estimate_is_bytes_over_three_rounded_up() {
        let e = count(Tokenizer::Estimate, "abcdefg");
        assert_eq!(
            e,
            TokenCount {
                tokens: 3,
                exact: false
            }
        );
        assert_eq!(count(Tokenizer::Estimate, "").tokens, 0);
    }
}

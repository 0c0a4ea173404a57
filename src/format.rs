//! Number and text formatting shared by the front ends.

pub use crate::core::text::thousands;

pub use crate::core::text::clip;

/// `1 entry`, `2 entries`: a count with its noun in the number it takes.
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A share for a chart's legend: `12.3%`; `<0.1%` for a part too small to show at one
/// decimal (so it never reads as nothing); `0%` for nothing.
pub fn percent(value: f64) -> String {
    if value <= 0.0 {
        "0%".into()
    } else if value < 0.05 {
        "<0.1%".into()
    } else {
        format!("{value:.1}%")
    }
}

/// As [`crate::core::text::elide`] (one cut for every front end).
pub use crate::core::text::elide;

#[cfg(test)]
mod tests {
    #[test]
    fn groups_by_three() {
        assert_eq!(super::thousands(1_234_567), "1,234,567");
        assert_eq!(super::thousands(12), "12");
        assert_eq!(super::thousands(0), "0");
    }

    #[test]
    fn elide_keeps_head_and_tail_and_never_exceeds_the_width() {
        assert_eq!(
            super::elide("anthropic/claude-haiku-4-5", 14),
            "anth…haiku-4-5"
        );
        assert_eq!(super::elide("tencent/", 8), "tencent/");
        assert_eq!(super::elide("tencent/hunyuan", 1), "…");
        assert_eq!(super::elide("tencent/hunyuan", 0), "");
        for w in 0..20 {
            assert!(
                super::elide("openrouter/openrouter/free", w)
                    .chars()
                    .count()
                    <= w
            );
        }
    }
}

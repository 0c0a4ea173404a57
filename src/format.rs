//! Number and text formatting shared by the front ends.

/// 12345 → "12,345".
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub use crate::core::text::clip;

#[cfg(test)]
mod tests {
    #[test]
    fn groups_by_three() {
        assert_eq!(super::thousands(1_234_567), "1,234,567");
        assert_eq!(super::thousands(12), "12");
        assert_eq!(super::thousands(0), "0");
    }
}

//! Attachments in the console: a paste of more than a few lines, or a file attached with the
//! attach key, goes beside the instruction as an attachment (a chip under the prompt box)
//! instead of into it. The planner never reads an attachment and the ranker reads only its
//! outline, so a pasted file's words cannot steer the request; the instruction stays what
//! the operator typed.

use std::path::{Path, PathBuf};

use crate::core::request::Attachment;

/// A paste of more lines than this becomes an attachment.
pub const PASTE_ATTACH_LINES: usize = 5;
/// A paste longer than this (bytes) becomes an attachment, however few its lines (minified
/// JSON, a one-line log).
pub const PASTE_ATTACH_BYTES: usize = 2_000;
/// The most one attachment (a file or a paste) may hold in the console: every change of
/// model, tier or instruction plans the request again with it. Bigger files go through
/// `ctxconsole preview --attach`.
pub const ATTACH_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Whether a paste goes in as an attachment rather than as instruction text.
pub fn is_attachment_paste(text: &str) -> bool {
    text.lines().count() > PASTE_ATTACH_LINES || text.len() > PASTE_ATTACH_BYTES
}

/// The rule in words, for the help screen.
pub fn paste_rule() -> String {
    format!(
        "in Prompt, a paste over {PASTE_ATTACH_LINES} lines or {} bytes is an attachment",
        crate::format::thousands(PASTE_ATTACH_BYTES)
    )
}

/// What a chip is called: a file's name, or a paste's first line that says anything.
pub fn paste_label(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(blank paste)")
        .to_string()
}

/// A paste as the `n`th pasted attachment. Its name has no extension, so its kind is read
/// from its content.
pub fn pasted(n: usize, text: String) -> Attachment {
    Attachment::new(format!("paste {n}"), text)
}

/// The file a typed path names: `~/` is the home directory; a relative path is taken from
/// where the console was started.
pub fn typed_path(typed: &str, home: Option<&Path>) -> PathBuf {
    let typed = typed.trim();
    match (typed.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(typed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_of_more_than_a_few_lines_or_a_long_one_is_an_attachment() {
        assert!(!is_attachment_paste("draft a blog\nfrom this\nnote"));
        assert!(!is_attachment_paste(&"1\n".repeat(PASTE_ATTACH_LINES)));
        assert!(is_attachment_paste(&"1\n".repeat(PASTE_ATTACH_LINES + 1)));
        assert!(is_attachment_paste(&"x".repeat(PASTE_ATTACH_BYTES + 1)));
        assert_eq!(paste_label("\n  \n  fn main() {\n}"), "fn main() {");
        assert_eq!(
            typed_path(" ~/notes/a.md ", Some(Path::new("/home/me"))),
            PathBuf::from("/home/me/notes/a.md")
        );
        assert_eq!(typed_path("a.md", None), PathBuf::from("a.md"));
    }
}

//! Answers paid for that could not be stored, kept in a private file in the workspace as the
//! plan lines `ctxconsole import plans` reads back (`unstored-plans-STAMP.jsonl`, 0600,
//! never half a file, never over another): the console's quit, and a process that must end
//! now (a second signal) with answers still in hand.

use std::path::{Path, PathBuf};

use crate::core::terminal_text::ShownPath;

/// How the name of every file of answers not stored begins, and ends.
const UNSTORED_PREFIX: &str = "unstored-plans-";
const UNSTORED_SUFFIX: &str = ".jsonl";

/// The files of answers not stored in the workspace `dir` ([`unstored_file`]'s names; files
/// only, not what a symbolic link of such a name points to), by name: what `scrub` reads
/// with the rest of what is kept (tester 50 F16).
pub fn unstored_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(UNSTORED_PREFIX)
            && name.ends_with(UNSTORED_SUFFIX)
            && entry.file_type()?.is_file()
        {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// Where quitting writes the answers it could not store: `unstored-plans-STAMP.jsonl` in
/// the workspace (`-2`, `-3` … when taken).
fn unstored_file(dir: &Path, now: i64, n: u32) -> PathBuf {
    let stamp: String = crate::core::time::format_timestamp(now)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let suffix = if n > 1 {
        format!("-{n}")
    } else {
        String::new()
    };
    dir.join(format!("{UNSTORED_PREFIX}{stamp}{suffix}{UNSTORED_SUFFIX}"))
}

/// Write `lines` whole to a new private file (0600, written beside and linked into
/// place: never half a file, never over another) in `dir`. Returns its path.
fn write_unstored(dir: &Path, lines: &[&str], now: i64) -> anyhow::Result<PathBuf> {
    let mut text = lines.join("\n");
    text.push('\n');
    let mut last = None;
    for n in 1..=100 {
        let path = unstored_file(dir, now, n);
        match crate::fsio::write_file(&path, text.as_bytes(), false) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("writing {}", path.shown())));
            }
        }
    }
    Err(anyhow::anyhow!(
        "{}: 100 files of unstored plans already there ({})",
        dir.shown(),
        last.map_or_else(String::new, |e| e.to_string())
    ))
}

/// Answers the store could not take, written to a private file in `dir` as plan lines
/// ([`write_unstored`]), and what came of it worded once — for the console's quit and
/// for a process that must end now ([`keep_in_hand`]): `head` says what the answers are
/// (`2 answers could not be stored (why)`, `ended while storing 1 answer`), `after` follows
/// the import hint. Said in the log too; when no file could take them, the lines come back,
/// to print whole.
pub fn keep_unstored(dir: &Path, lines: &[&str], now: i64, head: &str, after: &str) -> KeptReport {
    let answers = lines.len();
    let (said, lines) = match write_unstored(dir, lines, now) {
        Ok(path) => (
            format!(
                "{head}; each is a plan line in {} (0600): `ctxconsole import plans {}` stores \
                 them{after}",
                path.shown(),
                crate::fsio::shell_word(&path)
            ),
            Vec::new(),
        ),
        Err(e) => (
            format!(
                "{head}, and no file could take them ({}): each is printed below as a plan \
                 line",
                crate::exit::Said(&e)
            ),
            lines.iter().map(|l| l.to_string()).collect(),
        ),
    };
    tracing::warn!(answers, "{said}");
    KeptReport {
        said: vec![said],
        lines,
    }
}

/// The answers in hand (`live::in_hand`: back and not stored yet, or kept), written to a
/// private file in the workspace as plan lines, worded after `why` (`ended while storing`);
/// handed back whole when no file can take them. For a process that must end now: the
/// console's second signal, `send`'s and `replay`'s (tester 36 F3). Out of hand after.
/// Returns the lines, and what came of them to say.
pub fn keep_in_hand(workspace: &Path, why: &str) -> (Vec<String>, KeptReport) {
    let lines = super::in_hand::lines_in_hand();
    if lines.is_empty() {
        return (lines, KeptReport::default());
    }
    // Written to the file or handed back to print: out of hand either way.
    super::in_hand::settled(&lines);
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let report = keep_unstored(
        workspace,
        &refs,
        crate::store::now_secs(),
        &format!("{why} {}", answers(lines.len())),
        " (one stored meanwhile is said to be already present)",
    );
    (lines, report)
}

/// What came of answers kept in a file: what to say, and the lines no file could take.
#[derive(Debug, Default)]
pub struct KeptReport {
    /// Lines for stderr (and the log).
    pub said: Vec<String>,
    /// Plan lines no file could take: printed whole on stdout.
    pub lines: Vec<String>,
}

/// `1 answer`, `3 answers`.
pub fn answers(n: usize) -> String {
    crate::format::counted(n, "answer", "answers")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q8 item 4: the quit and an end at once write the answers they could not store through
    /// one function and word its outcome alike: the file named with the command that stores
    /// it, or, with no file, the lines handed back to print whole.
    #[test]
    fn answers_not_stored_are_kept_and_said_in_one_wording() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [r#"{"plan":1}"#, r#"{"plan":2}"#];
        let now = 1_764_137_700;
        for (head, after) in [
            ("2 answers could not be stored (locked)", ""),
            (
                "ended while storing 2 answers",
                " (one stored meanwhile is said to be already present)",
            ),
        ] {
            let r = keep_unstored(dir.path(), &lines, now, head, after);
            assert!(r.lines.is_empty(), "{r:?}");
            let [said] = r.said.as_slice() else {
                panic!("{r:?}")
            };
            let file = said
                .split(" each is a plan line in ")
                .nth(1)
                .and_then(|t| t.split(" (0600)").next())
                .unwrap_or_else(|| panic!("{said}"));
            assert!(
                said.starts_with(&format!("{head}; each is a plan line in ")),
                "{said}"
            );
            assert!(said.ends_with(&format!("` stores them{after}")), "{said}");
            assert!(said.contains("`ctxconsole import plans "), "{said}");
            assert_eq!(
                std::fs::read_to_string(file).unwrap(),
                "{\"plan\":1}\n{\"plan\":2}\n"
            );
        }
        // No file can take them: said so, and the lines come back to print whole.
        let gone = dir.path().join("not-a-dir");
        std::fs::write(&gone, "").unwrap();
        let r = keep_unstored(&gone, &lines, now, "ended while storing 2 answers", "");
        assert_eq!(r.lines, lines);
        assert!(
            r.said[0].starts_with("ended while storing 2 answers, and no file could take them (")
                && r.said[0].ends_with("): each is printed below as a plan line"),
            "{r:?}"
        );
    }
}

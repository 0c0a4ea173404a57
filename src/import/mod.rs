//! Importers: files and processes in, core values out.

pub mod catalog;
pub mod labels;
pub mod litellm;
pub mod mcp;
pub mod traffic;

use crate::core::terminal_text::ShownPath;
use std::io::BufRead;
use std::path::Path;

use crate::core::error::utf8_text;
use crate::core::request::Attachment;
use crate::exit::bad_input;
use crate::fsio;

use crate::core::text::UTF8_BOM as BOM;

/// Read a file the user named as UTF-8 text: a missing file, a directory, FIFO or device
/// under its name, or invalid UTF-8 is bad input named with its path (and for UTF-8, the
/// line and column). Every text file ctxconsole reads comes through here.
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = fsio::read_regular(path)?;
    text_from_bytes(&crate::core::terminal_text::path(path), bytes)
}

/// A file attached to a request (`--attach FILE`, the console's attach key): named by its
/// file name, read as [`read_text`] reads; one bigger than `max_bytes` is refused, naming
/// the file and both sizes, before any of it is read.
pub fn read_attachment(path: &Path, max_bytes: u64) -> anyhow::Result<Attachment> {
    let len = fsio::open_regular(path)?
        .metadata()
        .map_err(|e| bad_input(format!("{}: cannot read: {e}", path.shown())))?
        .len();
    if len > max_bytes {
        return Err(bad_input(format!(
            "{}: {} bytes, more than the {} an attachment may hold here",
            path.shown(),
            crate::format::thousands(len as usize),
            crate::format::thousands(max_bytes as usize)
        )));
    }
    let name = path.file_name().map_or_else(
        || path.shown().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let bytes = fsio::read_regular(path)?;
    Ok(Attachment::new(
        name,
        text_as_given(path.shown().as_ref(), bytes)?,
    ))
}

/// A workspace file's text, or `None` when the workspace has no file of that name. Anything
/// else under the name (a directory, a FIFO) is an error naming it, never skipped.
pub fn read_optional_text(path: &Path) -> anyhow::Result<Option<String>> {
    match fsio::read_optional(path)? {
        Some(bytes) => text_from_bytes(&crate::core::terminal_text::path(path), bytes).map(Some),
        None => Ok(None),
    }
}

/// Bytes the user gave (a file, stdin) as UTF-8 text, a leading BOM dropped; invalid UTF-8
/// is bad input naming `origin`, the line and the column.
pub fn text_from_bytes(origin: &str, mut bytes: Vec<u8>) -> anyhow::Result<String> {
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    text_as_given(origin, bytes)
}

/// Bytes as UTF-8 text, a leading BOM kept: for an attachment, whose one BOM
/// [`Attachment::new`] drops however it arrives (a file read here and dropping one too took
/// two from a file that starts with two, where MCP took one; tester 11 T11-9).
pub fn text_as_given(origin: &str, bytes: Vec<u8>) -> anyhow::Result<String> {
    utf8_text(origin, &bytes)?;
    // Valid UTF-8 was just checked; the conversion reuses the buffer.
    String::from_utf8(bytes).map_err(|e| bad_input(format!("{origin}: {e}")))
}

/// A text file (or `-` for stdin) read as it streams, for inputs too big to hold whole
/// (JSON Lines imports): the same checks and the same BOM handling as [`read_text`].
pub fn open_text(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    let mut reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin().lock()))
    } else {
        Box::new(std::io::BufReader::with_capacity(
            1 << 16,
            fsio::open_regular(path)?,
        ))
    };
    skip_bom(&mut reader).map_err(|e| bad_input(format!("{}: cannot read: {e}", path.shown())))?;
    Ok(reader)
}

/// Drop a leading BOM from a stream. The first read of a file or pipe holds at least its
/// first three bytes in practice; a BOM split across reads is left to the parser, which
/// names the line and column.
fn skip_bom(reader: &mut dyn BufRead) -> std::io::Result<()> {
    if reader.fill_buf()?.starts_with(BOM) {
        reader.consume(BOM.len());
    }
    Ok(())
}

/// Read JSON Lines as they stream: blank lines skipped, invalid UTF-8 named by line, `f`
/// called with the 1-based line number and its text, `progress` with the lines read every
/// 10,000. Every JSON Lines import reads through here.
pub fn for_each_line(
    source: &str,
    mut reader: impl BufRead,
    progress: &mut impl FnMut(usize),
    mut f: impl FnMut(usize, &str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| bad_input(format!("{source}: cannot read: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        let text = std::str::from_utf8(&buf).map_err(|e| {
            anyhow::Error::new(crate::core::error::CoreError::Content {
                origin: format!("{source}: line {line}"),
                message: format!("not UTF-8 (byte {})", e.valid_up_to() + 1),
            })
        })?;
        if text.trim().is_empty() {
            continue;
        }
        // A byte order mark past the file's start (files joined with `cat`, each written
        // with one) is named, not left to the parser's "expected value" (tester 23 F10).
        if text.as_bytes().starts_with(BOM) {
            return Err(anyhow::Error::new(crate::core::error::CoreError::Content {
                origin: format!("{source}: line {line}"),
                message: "starts with a byte order mark (U+FEFF), which only a file's first \
                          line may hold (files joined with cat?)"
                    .to_string(),
            }));
        }
        f(line, text.trim_end_matches(['\n', '\r']))?;
        if line.is_multiple_of(10_000) {
            progress(line);
        }
    }
}

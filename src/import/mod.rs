//! Importers: files and processes in, core values out.

pub mod catalog;
pub mod labels;
pub mod litellm;
pub mod mcp;

use std::path::Path;

use crate::core::error::utf8_text;
use crate::exit::bad_input;

/// Read a file the user named as UTF-8 text: a missing file or invalid UTF-8 is bad input,
/// named with its path (and for UTF-8, the line and column).
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path)
        .map_err(|e| bad_input(format!("{}: cannot read: {e}", path.display())))?;
    text_from_bytes(&path.display().to_string(), bytes)
}

/// Bytes the user gave (a file, stdin) as UTF-8 text; invalid UTF-8 is bad input naming
/// `origin`, the line and the column.
pub fn text_from_bytes(origin: &str, bytes: Vec<u8>) -> anyhow::Result<String> {
    utf8_text(origin, &bytes)?;
    // Valid UTF-8 was just checked; the conversion reuses the buffer.
    String::from_utf8(bytes).map_err(|e| bad_input(format!("{origin}: {e}")))
}

//! A gateway's traffic files read through [`open_text`](super::open_text) and handed to
//! [`crate::core::traffic`]: OTLP JSON spans (`import traces`) and LiteLLM spend logs
//! (`import litellm`).

use std::io::Read;
use std::path::Path;

use crate::core::traffic::{Traffic, read_litellm, read_otel};
use crate::exit::bad_input;

fn read_all(path: &Path) -> anyhow::Result<String> {
    let origin = path.display().to_string();
    let mut bytes = Vec::new();
    super::open_text(path)?
        .read_to_end(&mut bytes)
        .map_err(|e| bad_input(format!("{origin}: cannot read: {e}")))?;
    super::text_from_bytes(&origin, bytes)
}

/// OpenTelemetry GenAI spans, one OTLP JSON `{"resourceSpans":[…]}` object per line.
pub fn read_traces(path: &Path) -> anyhow::Result<Traffic> {
    let origin = path.display().to_string();
    let text = read_all(path)?;
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    Ok(read_otel(&origin, lines)?)
}

/// LiteLLM proxy spend logs: a JSON array of SpendLogs rows, or one row per line.
pub fn read_spend_logs(path: &Path) -> anyhow::Result<Traffic> {
    let origin = path.display().to_string();
    let text = read_all(path)?;
    Ok(read_litellm(&origin, &text)?)
}

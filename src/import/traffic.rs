//! A gateway's traffic files read through [`open_text`](super::open_text) and handed to
//! [`crate::core::traffic`]: OTLP JSON spans (`import traces`) and LiteLLM spend logs
//! (`import litellm`).

use crate::core::terminal_text::ShownPath;
use serde::de::{DeserializeSeed, Deserializer as _, Error as _, SeqAccess, Visitor};
use std::io::{BufRead, Read};
use std::path::Path;

use crate::core::error::CoreError;
use crate::core::history::PlanRecord;
use crate::core::traffic::{OtelReader, RowOf, SpendRow, StreamRead, spend_row};
use crate::exit::bad_input;

/// OpenTelemetry GenAI spans, one OTLP JSON `{"resourceSpans":[…]}` object per line, read as
/// they stream: each chat span's plan goes to `plan` as its line is read, so memory holds
/// one line and a few fields per `execute_tool` span (linked to their chats after the last
/// line: [`OtelReader`]), whatever the file's size. `progress` hears the lines read every
/// 10,000.
pub fn read_traces(
    path: &Path,
    mut progress: impl FnMut(usize),
    mut plan: impl FnMut(PlanRecord) -> anyhow::Result<()>,
) -> anyhow::Result<StreamRead> {
    let origin = path.shown().to_string();
    let mut reader = OtelReader::default();
    super::for_each_line(
        &origin,
        super::open_text(path)?,
        &mut progress,
        |line, text| reader.read_line(&origin, line, text, &mut plan),
    )?;
    Ok(reader.finish())
}

/// LiteLLM proxy spend logs, a JSON array of SpendLogs rows (named `row N` in errors) or one
/// row per line (`line N`), read as they stream: each row becomes a plan handed to `plan`
/// before the next is read, so memory holds one row, whatever the file's size. `progress`
/// hears the rows read every 10,000. Returns the rows read.
pub fn read_spend_logs(
    path: &Path,
    progress: impl FnMut(usize),
    plan: impl FnMut(PlanRecord) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    let origin = path.shown().to_string();
    spend_log_rows(&origin, super::open_text(path)?, progress, plan)
}

/// [`read_spend_logs`] on a stream `origin` names.
fn spend_log_rows(
    origin: &str,
    mut reader: impl BufRead,
    mut progress: impl FnMut(usize),
    mut plan: impl FnMut(PlanRecord) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    let cannot_read = |e: std::io::Error| bad_input(format!("{origin}: cannot read: {e}"));
    // The first byte that is not white space says which: the white space before it is
    // kept, so positions in errors count from the file's start.
    let mut leading = Vec::new();
    let array = loop {
        let buf = reader.fill_buf().map_err(cannot_read)?;
        if buf.is_empty() {
            break false;
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break buf[i] == b'[',
            None => {
                let n = buf.len();
                leading.extend_from_slice(buf);
                reader.consume(n);
            }
        }
    };
    let reader = std::io::Cursor::new(leading).chain(reader);
    let mut rows = 0usize;
    if array {
        // serde_json reads a byte at a time: a BufReader of its own keeps that cheap.
        let reader = std::io::BufReader::with_capacity(1 << 16, reader);
        let mut recent = Recent::new(reader);
        let mut de = serde_json::Deserializer::from_reader(&mut recent);
        let mut each = |row: usize, position: &str, read: SpendRow| -> anyhow::Result<()> {
            rows = row;
            plan(spend_row(position, read)?)?;
            if row.is_multiple_of(10_000) {
                progress(row);
            }
            Ok(())
        };
        let mut visitor = Rows {
            origin,
            each: &mut each,
            refused: None,
        };
        let read = (&mut de)
            .deserialize_seq(&mut visitor)
            .and_then(|_| de.end());
        drop(de);
        let de_recent = recent.recent();
        if let Some(e) = visitor.refused {
            return Err(e);
        }
        read.map_err(|e| match e.classify() {
            serde_json::error::Category::Io => cannot_read(std::io::Error::other(e)),
            _ => anyhow::Error::new(CoreError::json_streamed(
                origin,
                &String::from_utf8_lossy(&de_recent),
                &e,
            )),
        })?;
    } else {
        super::for_each_line(origin, reader, &mut progress, |line, text| {
            let position = format!("{origin}: line {line}");
            let mut de = serde_json::Deserializer::from_str(text);
            let read = RowOf {
                position: &position,
            }
            .deserialize(&mut de)
            .and_then(|read| de.end().map(|()| read))
            .map_err(|e| CoreError::json_line(origin, line, text, &e))?;
            rows += 1;
            plan(spend_row(&position, read)?)
        })?;
    }
    Ok(rows)
}

/// A reader that remembers the last bytes read through it: where a streamed parse stopped,
/// for its error to quote (a lone surrogate's escape), without keeping the stream.
struct Recent<R> {
    inner: R,
    tail: std::collections::VecDeque<u8>,
}

/// Bytes [`Recent`] remembers.
const RECENT_BYTES: usize = 64;

impl<R> Recent<R> {
    fn new(inner: R) -> Self {
        Recent {
            inner,
            tail: std::collections::VecDeque::with_capacity(RECENT_BYTES),
        }
    }

    fn recent(&self) -> Vec<u8> {
        self.tail.iter().copied().collect()
    }
}

impl<R: Read> Read for Recent<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if self.tail.len() == RECENT_BYTES {
                self.tail.pop_front();
            }
            self.tail.push_back(b);
        }
        Ok(n)
    }
}

/// The elements of a JSON array, each read as a row ([`RowOf`], named `ORIGIN: row N`) and
/// handed one at a time to `each` (1-based) as the parser reaches them; what `each` refuses
/// is kept in `refused` and stops the parse.
struct Rows<'a> {
    origin: &'a str,
    each: &'a mut dyn FnMut(usize, &str, SpendRow) -> anyhow::Result<()>,
    refused: Option<anyhow::Error>,
}

impl<'de> Visitor<'de> for &mut Rows<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of spend log rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut n = 0usize;
        loop {
            let position = format!("{}: row {}", self.origin, n + 1);
            let Some(read) = seq.next_element_seed(RowOf {
                position: &position,
            })?
            else {
                break;
            };
            n += 1;
            if let Err(e) = (self.each)(n, &position, read) {
                self.refused = Some(e);
                return Err(A::Error::custom("row refused"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A stream that counts the bytes it has handed out.
    struct Counted {
        bytes: std::io::Cursor<Vec<u8>>,
        read: Rc<Cell<usize>>,
    }

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.bytes.read(buf)?;
            self.read.set(self.read.get() + n);
            Ok(n)
        }
    }

    fn row(i: usize) -> Value {
        serde_json::json!({"request_id": format!("r{i}"), "model": "m",
            "startTime": "2026-10-03T12:05:00",
            "messages": [{"role": "user", "content": "x".repeat(400_000)}]})
    }

    /// Each row reaches the store before the stream is read much past it: as an array and
    /// as JSON Lines, the first plan is handed on with little more than the first row read,
    /// not the whole file.
    #[test]
    fn rows_are_handed_on_as_the_stream_reaches_them() {
        let rows: Vec<Value> = (1..=5).map(row).collect();
        let first = rows[0].to_string().len();
        let array = serde_json::to_string(&rows).unwrap();
        let lines: String = rows.iter().map(|r| format!("{r}\n")).collect();
        for text in [array, lines] {
            let read = Rc::new(Cell::new(0));
            let stream = std::io::BufReader::new(Counted {
                bytes: std::io::Cursor::new(text.clone().into_bytes()),
                read: read.clone(),
            });
            let mut seen = Vec::new();
            let n = spend_log_rows(
                "f",
                stream,
                |_| {},
                |p| {
                    seen.push((p.id, read.get()));
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(n, 5);
            let ids: Vec<&str> = seen.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "litellm-r1",
                    "litellm-r2",
                    "litellm-r3",
                    "litellm-r4",
                    "litellm-r5"
                ]
            );
            // At most a row and two buffers (the reader's and the parser's) ahead.
            assert!(
                seen[0].1 <= first + 2 * (1 << 16),
                "{} of {}",
                seen[0].1,
                text.len()
            );
            assert!(seen[0].1 < text.len() / 2);
        }
    }

    #[test]
    fn a_row_refused_stops_the_read_with_its_own_error() {
        let text = format!("[{}, {{\"request_id\": \"\"}}, {}]", row(1), row(3));
        let mut stored = 0;
        let err = spend_log_rows(
            "f",
            text.as_bytes(),
            |_| {},
            |_| {
                stored += 1;
                Ok(())
            },
        )
        .unwrap_err()
        .to_string();
        assert_eq!(stored, 1);
        assert!(err.starts_with("f: row 2: field 'request_id'"), "{err}");
    }
}

//! Live import from an MCP server started over stdio, with the rmcp client.

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use std::process::Stdio;
use std::time::Duration;

use crate::exit::bad_input;
use crate::import::catalog::{ImportedCatalog, parse_catalog};

/// How long a server gets to start, answer `initialize` and list its tools.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// Split a command line into words: white space separates, single and double quotes group,
/// a backslash escapes the next character outside single quotes.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => match chars.next() {
                Some(n) => {
                    word.push(n);
                    in_word = true;
                }
                None => return Err("ends with a lone backslash".into()),
            },
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(format!("has an unclosed {q} quote"));
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("is empty".into());
    }
    Ok(words)
}

/// Start `command_line`, list all its tools, stop it. Any failure is bad input naming the
/// command: it did not start, exited, spoke something other than MCP, or took too long.
pub async fn import_tools(
    command_line: &str,
    timeout: Duration,
) -> anyhow::Result<ImportedCatalog> {
    let words = split_command(command_line)
        .map_err(|e| bad_input(format!("--mcp \"{command_line}\" {e}")))?;
    let mut cmd = tokio::process::Command::new(&words[0]);
    cmd.args(&words[1..]);
    let origin = format!("MCP server `{command_line}`");
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| bad_input(format!("{origin} did not start: {e}")))?;
    // Keep what the server says on stderr: its last line explains most failed handshakes.
    let stderr_task = stderr.map(|mut err| {
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            // Drain it all so a chatty server never blocks on a full pipe; keep the last 64 KB.
            let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
            while let Ok(n) = err.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 64 * 1024 {
                    buf.drain(..buf.len() - 64 * 1024);
                }
            }
            buf
        })
    });
    let listed = tokio::time::timeout(timeout, async {
        let client = ()
            .serve(transport)
            .await
            .map_err(|e| format!("did not complete the MCP handshake: {e}"))?;
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("failed tools/list: {e}"));
        let _ = client.cancel().await;
        tools
    })
    .await
    .map_err(|_| {
        bad_input(format!(
            "{origin} did not answer within {}s",
            timeout.as_secs()
        ))
    })?;
    let listed = match listed {
        Ok(tools) => tools,
        Err(e) => {
            let said = match stderr_task {
                Some(task) => tokio::time::timeout(Duration::from_millis(500), task)
                    .await
                    .ok()
                    .and_then(Result::ok),
                None => None,
            };
            let last = said
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim()
                        .to_string()
                })
                .filter(|l| !l.is_empty());
            let tail = last
                .map(|l| format!(" (its stderr: {l})"))
                .unwrap_or_default();
            return Err(bad_input(format!("{origin} {e}{tail}")));
        }
    };
    let json = serde_json::json!({ "tools": listed });
    parse_catalog(&json.to_string(), &origin).map_err(anyhow::Error::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_command("npx -y @mcp/server-memory").unwrap(),
            vec!["npx", "-y", "@mcp/server-memory"]
        );
        assert_eq!(
            split_command(r#"run "a b" 'c d' e\ f"#).unwrap(),
            vec!["run", "a b", "c d", "e f"]
        );
        assert_eq!(split_command("x ''").unwrap(), vec!["x", ""]);
        assert!(split_command("  ").is_err());
        assert!(split_command("a 'b").is_err());
    }
}

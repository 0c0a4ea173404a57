//! Errors of the pure core. Each names what was being read and where.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum CoreError {
    #[error("unknown tier '{0}': expected A, B or C")]
    UnknownTier(String),
    #[error("{origin}: line {line}, column {column}: {message}")]
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{origin}: field '{field}' {problem}")]
    Field {
        origin: String,
        field: String,
        problem: String,
    },
    #[error("{origin}: {message}")]
    Content { origin: String, message: String },
}

impl CoreError {
    pub fn toml(origin: &str, text: &str, err: &toml::de::Error) -> CoreError {
        let (line, column) = err
            .span()
            .map(|s| line_col(text, s.start))
            .unwrap_or((1, 1));
        CoreError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message: err.message().trim().to_string(),
        }
    }

    pub fn json(origin: &str, err: &serde_json::Error) -> CoreError {
        let message = err.to_string();
        // serde_json appends " at line L column C"; the position is reported separately.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        CoreError::Syntax {
            origin: origin.to_string(),
            line: err.line().max(1),
            column: err.column().max(1),
            message,
        }
    }

    /// An error in one line of a JSON Lines file: the line is the file's (1-based), the
    /// column the parser's within that line.
    pub fn json_line(origin: &str, line: usize, err: &serde_json::Error) -> CoreError {
        match CoreError::json(origin, err) {
            CoreError::Syntax {
                origin,
                column,
                message,
                ..
            } => CoreError::Syntax {
                origin,
                line,
                column,
                message,
            },
            other => other,
        }
    }

    /// Invalid UTF-8: the position of the first bad byte.
    pub fn utf8(origin: &str, bytes: &[u8], err: &std::str::Utf8Error) -> CoreError {
        let good = &bytes[..err.valid_up_to()];
        // The valid prefix is UTF-8 by definition.
        let text = std::str::from_utf8(good).unwrap_or_default();
        let (line, column) = line_col(text, text.len());
        CoreError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message: format!("invalid UTF-8 (byte offset {})", err.valid_up_to()),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut offset = offset;
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// Decode bytes as UTF-8 or say where they stop being UTF-8.
pub fn utf8_text<'a>(origin: &str, bytes: &'a [u8]) -> Result<&'a str, CoreError> {
    std::str::from_utf8(bytes).map_err(|e| CoreError::utf8(origin, bytes, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é\nx", 3), (2, 1));
    }

    #[test]
    fn invalid_utf8_names_line() {
        let bytes = b"{\n  \"a\": \"\xff\"\n}";
        let err = utf8_text("cat.json", bytes).unwrap_err().to_string();
        assert!(err.starts_with("cat.json: line 2, column 9"), "{err}");
    }
}

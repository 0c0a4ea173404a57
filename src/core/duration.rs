//! The one duration parser for everything a user writes as a duration: CLI flags
//! (`--since`, `--older-than`, `--mcp-timeout`) and `config.toml` values (`drift_window`,
//! `timeout`, `connect_timeout`, `retry_base`, `retry_max_wait`).
//!
//! A number and a unit (`500ms`, `30s`, `90m`, `36h`, `7d`, `2w`); a bare number is refused
//! with a hint, because `7` could mean seconds or days. The arithmetic is checked and every
//! call site states the range it accepts: a ten-year timeout or a drift window of a
//! million days is a mistake to report, not a value to use.

use std::ops::RangeInclusive;
use std::time::Duration;

use thiserror::Error;

use crate::core::terminal_text::quoted;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;

/// The largest duration anything accepts: 100 years (of 365.25 days).
pub const MAX: Duration = Duration::from_secs(36_525 * DAY);

/// How far back `--since` and `cache gc --older-than` may reach.
pub const AGE: RangeInclusive<Duration> = Duration::ZERO..=MAX;
/// `history.drift_window`: an execution without a plan id still counts for the caller's
/// latest plan this long after it.
pub const DRIFT_WINDOW: RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(30 * DAY);
/// `llm.connect_timeout` and `--mcp-timeout`.
pub const CONNECT_TIMEOUT: RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(10 * MINUTE);
/// `llm.timeout`: from sending a request to the last byte of its reply.
pub const REQUEST_TIMEOUT: RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(2 * HOUR);
/// `llm.retry_base`: the first backoff (it doubles per retry).
pub const RETRY_BASE: RangeInclusive<Duration> = Duration::ZERO..=Duration::from_secs(MINUTE);
/// `llm.retry_max_wait`: the longest `retry-after` waited for.
pub const RETRY_MAX_WAIT: RangeInclusive<Duration> = Duration::ZERO..=Duration::from_secs(HOUR);

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    #[error("{} needs a unit: {units}", quoted(text))]
    BareNumber { text: String, units: String },
    #[error("{}: expected a number and a unit, like 90m, 36h, 7d or 2w", quoted(.0))]
    NotADuration(String),
    #[error("{}: unknown unit {} (ms, s, m, h, d, w)", quoted(text), quoted(unit))]
    UnknownUnit { text: String, unit: String },
    #[error("{} is {problem} {bound}", quoted(text))]
    OutOfRange {
        text: String,
        problem: &'static str,
        bound: String,
    },
}

/// The units after a bare number that make a duration within `range` (`7d, 7h, …`; tester
/// 50 F14: `--mcp-timeout 5` suggested `5d` and `5h`, both past its 10m bound), while the
/// number is short enough to repeat; the bounds when no unit fits.
fn with_units(number: &str, range: &RangeInclusive<Duration>) -> String {
    let bounds = || {
        format!(
            "a unit (ms, s, m, h, d or w) making it from {} to {}",
            describe(*range.start()),
            describe(*range.end())
        )
    };
    let Ok(n) = number.parse::<u64>() else {
        return bounds();
    };
    let of = |size: u64| n.checked_mul(size).map(Duration::from_secs);
    let fitting: Vec<String> = [
        ("d", of(DAY)),
        ("h", of(HOUR)),
        ("m", of(MINUTE)),
        ("s", of(1)),
        ("ms", Some(Duration::from_millis(n))),
    ]
    .into_iter()
    .filter(|(_, d)| d.is_some_and(|d| range.contains(&d)))
    .map(|(unit, _)| format!("{number}{unit}"))
    .collect();
    let weeks = of(WEEK).is_some_and(|d| range.contains(&d));
    match fitting.split_last() {
        None => bounds(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!(
            "{} or {last}{}",
            rest.join(", "),
            if weeks { " (w for weeks)" } else { "" }
        ),
    }
}

impl DurationError {
    /// A bare number: the text was probably meant as a duration, so a caller that also
    /// accepts other forms (a timestamp) reports this one.
    pub fn is_bare_number(&self) -> bool {
        matches!(self, DurationError::BareNumber { .. })
    }
}

/// Parse `text` as a duration within `range` (both ends included).
pub fn parse_duration(
    text: &str,
    range: RangeInclusive<Duration>,
) -> Result<Duration, DurationError> {
    let s = text.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(DurationError::NotADuration(s.to_string()));
    }
    if unit.is_empty() {
        let units = if s.len() <= 20 {
            with_units(s, &range)
        } else {
            "d, h, m, s or ms after it (w for weeks)".to_string()
        };
        return Err(DurationError::BareNumber {
            text: s.to_string(),
            units,
        });
    }
    let too_long = || DurationError::OutOfRange {
        text: s.to_string(),
        problem: "longer than",
        bound: describe(*range.end()),
    };
    // More digits than a u64 holds is simply too long; the range says by how much.
    let n: u64 = digits.parse().map_err(|_| too_long())?;
    let duration = match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => n.checked_mul(MINUTE).map(Duration::from_secs),
        "h" => n.checked_mul(HOUR).map(Duration::from_secs),
        "d" => n.checked_mul(DAY).map(Duration::from_secs),
        "w" => n.checked_mul(WEEK).map(Duration::from_secs),
        _ => {
            return Err(DurationError::UnknownUnit {
                text: s.to_string(),
                unit: unit.to_string(),
            });
        }
    }
    .ok_or_else(too_long)?;
    if duration > *range.end() {
        return Err(too_long());
    }
    if duration < *range.start() {
        return Err(DurationError::OutOfRange {
            text: s.to_string(),
            problem: "shorter than",
            bound: describe(*range.start()),
        });
    }
    Ok(duration)
}

/// A bound as a person would write it: `100 years`, `30d`, `10m`, `1ms`.
/// A duration as a person writes it, in the largest whole unit (`90s` → `90s`, `2h`, `500ms`):
/// what [`parse_duration`] reads back.
pub fn describe(d: Duration) -> String {
    if d == MAX {
        return "100 years".into();
    }
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 || secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    for (unit, size) in [("w", WEEK), ("d", DAY), ("h", HOUR), ("m", MINUTE)] {
        if secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_values() {
        let p = |s| parse_duration(s, AGE);
        assert_eq!(p("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(p("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(p("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(p("36h"), Ok(Duration::from_secs(129_600)));
        assert_eq!(p(" 7d "), Ok(Duration::from_secs(604_800)));
        assert_eq!(p("2w"), Ok(Duration::from_secs(1_209_600)));
        assert_eq!(p("0s"), Ok(Duration::ZERO));
        assert_eq!(p("36525d"), Ok(MAX));
    }

    #[test]
    fn a_bare_number_gets_a_hint() {
        let err = parse_duration("7", AGE).unwrap_err();
        assert!(err.is_bare_number());
        assert!(
            err.to_string().starts_with("'7' needs a unit: 7d, 7h, 7m"),
            "{err}"
        );
        // Only the units that make a duration within the range (tester 50 F14).
        let tenth = Duration::from_millis(100)..=Duration::from_secs(600);
        assert_eq!(
            parse_duration("5", tenth.clone()).unwrap_err().to_string(),
            "'5' needs a unit: 5m or 5s"
        );
        assert_eq!(
            parse_duration("50", tenth.clone()).unwrap_err().to_string(),
            "'50' needs a unit: 50s"
        );
        assert_eq!(
            parse_duration("999999", tenth).unwrap_err().to_string(),
            "'999999' needs a unit: a unit (ms, s, m, h, d or w) making it from 100ms to 10m"
        );
    }

    #[test]
    fn overflow_and_bounds_are_errors_not_wraps() {
        for huge in [
            "144115188075855872d",
            "18446744073709551615s",
            "99999999999999999999999ms",
            "36526d",
            "5219w",
        ] {
            let err = parse_duration(huge, AGE).unwrap_err();
            assert!(
                err.to_string().contains("longer than 100 years"),
                "{huge}: {err}"
            );
        }
        let err = parse_duration("31d", DRIFT_WINDOW).unwrap_err();
        assert!(err.to_string().contains("longer than 30d"), "{err}");
        let err = parse_duration("0s", CONNECT_TIMEOUT).unwrap_err();
        assert!(err.to_string().contains("shorter than 1ms"), "{err}");
        let err = parse_duration("2h1s", REQUEST_TIMEOUT).unwrap_err();
        assert!(err.to_string().contains("unknown unit"), "{err}");
    }

    #[test]
    fn what_is_not_a_duration() {
        for bad in [
            "", "d", "x", "3y", "1.5h", "-1s", "+1s", "7 d", "7D", "１s", "7é",
        ] {
            assert!(parse_duration(bad, AGE).is_err(), "{bad}");
        }
    }
}

//! Timestamps as the history files write them: RFC 3339 in, RFC 3339 UTC out, Unix seconds
//! inside. Parsing and formatting are chrono's (a well-kept crate, not hand-written byte
//! slicing); nothing here reads a clock.

use chrono::{DateTime, Datelike, SecondsFormat};

/// Seconds since 1970-01-01T00:00:00Z of an RFC 3339 timestamp (`2026-10-03T12:00:00Z`,
/// `…T12:00:00.250+02:00`), or of a plain integer of Unix seconds.
pub fn parse_timestamp(text: &str) -> Result<i64, String> {
    let s = text.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .map_err(|_| format!("'{s}' is out of range"));
    }
    parse_rfc3339(s)
}

/// What is wrong with a time `text` (as given) that came to `secs`, when it lies outside
/// the years the history keeps ([`TIMESTAMP`](crate::core::bounds::TIMESTAMP)): `is out of
/// range: … is before 1970-01-01T00:00:00Z, the earliest time the history keeps`. One
/// wording for MCP's `at` and the imports' (tester 20 F6: the import said the seconds).
pub fn timestamp_out_of_range(text: &str, secs: i64) -> Option<String> {
    let range = &crate::core::bounds::TIMESTAMP;
    let (side, edge, which) = if secs < *range.start() {
        ("before", *range.start(), "earliest")
    } else if secs > *range.end() {
        ("after", *range.end(), "latest")
    } else {
        return None;
    };
    Some(format!(
        "is out of range: {} is {side} {}, the {which} time the history keeps",
        crate::core::terminal_text::for_terminal_line(text.trim()),
        format_timestamp(edge)
    ))
}

/// The nanoseconds past the whole second of an RFC 3339 timestamp (`…00.300Z` → 300,000,000);
/// 0 for Unix seconds, a whole second, or text that is not one (its error is the reader's).
/// Two spellings of one instant (`Z`, `+01:00`, `.000`) give the same. A leap second's are
/// those past the next second ([`unix_seconds`]).
pub fn subsecond_nanos(text: &str) -> u32 {
    DateTime::parse_from_rfc3339(text.trim()).map_or(0, |t| t.timestamp_subsec_nanos() % NANOS)
}

const NANOS: u32 = 1_000_000_000;

/// The Unix seconds of `t`, a leap second (`23:59:60.5Z`, which chrono gives as the second
/// before with a second or more of nanoseconds) folded into the next second, as POSIX's
/// formula and [`parse_timestamp_millis`] count it: `2017-01-01T00:00:00.5Z`. Every surface then says
/// one time — `history show` had said `23:59:59Z` and `export` `23:59:60.500Z` (tester 23
/// F11) — and it reads back as itself.
fn unix_seconds<Tz: chrono::TimeZone>(t: &DateTime<Tz>) -> i64 {
    t.timestamp() + i64::from(t.timestamp_subsec_nanos() >= NANOS)
}

/// Seconds since the epoch of an RFC 3339 timestamp only (no Unix seconds): for input
/// where a bare number means something else, like `--since`.
pub fn parse_rfc3339(text: &str) -> Result<i64, String> {
    let s = text.trim();
    DateTime::parse_from_rfc3339(s)
        .map(|t| unix_seconds(&t))
        .map_err(|e| {
            format!(
                "{} is not an RFC 3339 timestamp (like 2026-10-03T12:00:00Z): {e}",
                crate::core::terminal_text::quoted(s)
            )
        })
}

/// What a time written as `text` (a date, `YYYY-MM-DD` at its start) leaves off of RFC 3339,
/// in the words that follow "a time needs", with the time it was likely meant as: `its
/// offset (…), like 2026-11-17T00:00:00Z` for one with its time of day. The time of day is
/// named only where it is missing, or its seconds are (tester 48 nit: a time with its time of
/// day was told it needs one). `None` when nothing is left off, or the rest is not a time of
/// day (the parser's words then say what is wrong).
pub fn time_lacks(text: &str) -> Option<String> {
    let s = text.trim();
    let date = s.get(..10).filter(|d| {
        d.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
    })?;
    let rest = &s[10..];
    if rest.is_empty() {
        return Some(format!("its time of day and offset, like {date}T00:00:00Z"));
    }
    let sep = rest
        .chars()
        .next()
        .filter(|c| matches!(c, 'T' | 't' | ' '))?;
    let rest = &rest[1..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.'))
        .unwrap_or(rest.len());
    let (time, offset) = rest.split_at(end);
    let two = |t: &str| t.len() == 2 && t.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = time.split(':').collect();
    let seconds = match parts.as_slice() {
        [h, m] if two(h) && two(m) => false,
        [h, m, sec] if two(h) && two(m) => {
            let (whole, fraction) = sec.split_once('.').unwrap_or((sec, "1"));
            if !two(whole) || fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            true
        }
        _ => return None,
    };
    // Only an offset as RFC 3339 writes one is echoed (what is suggested is the text given,
    // and nothing else of it reaches the terminal).
    let b = offset.as_bytes();
    let is_offset = matches!(offset, "Z" | "z")
        || (b.len() == 6
            && matches!(b[0], b'+' | b'-')
            && offset.get(1..3).is_some_and(two)
            && b[3] == b':'
            && offset.get(4..).is_some_and(two));
    if !(offset.is_empty() || is_offset) {
        return None;
    }
    match (seconds, offset.is_empty()) {
        (true, false) => None,
        (true, true) => Some(format!(
            "its offset (Z for UTC, or one like +01:00), like {s}Z"
        )),
        (false, true) => Some(format!(
            "the seconds of its time of day and an offset, like {date}{sep}{time}:00Z"
        )),
        (false, false) => Some(format!(
            "the seconds of its time of day, like {date}{sep}{time}:00{offset}"
        )),
    }
}

/// Milliseconds since the epoch of a log's timestamp: RFC 3339, or an ISO 8601 date-time
/// without an offset (`2026-10-03T12:00:00.250123`, `2026-10-03 12:00:00`), read as UTC —
/// how a database export writes a `timestamp without time zone` column.
pub fn parse_timestamp_millis(text: &str) -> Result<i64, String> {
    let s = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, format) {
            return Ok(t.and_utc().timestamp_millis());
        }
    }
    Err(format!(
        "{} is not a timestamp (like 2026-10-03T12:00:00Z or 2026-10-03T12:00:00.250)",
        crate::core::terminal_text::quoted(s)
    ))
}

/// Seconds since the epoch of an HTTP date (RFC 9110 section 5.6.7), always GMT: the
/// preferred IMF-fixdate (`Wed, 21 Oct 2099 07:28:00 GMT`) and the two obsolete forms a
/// recipient must still read, RFC 850 (`Wednesday, 21-Oct-99 07:28:00 GMT`, the century
/// chrono's: 69–99 are the 1900s) and asctime (`Wed Oct 21 07:28:00 2099`). The day name
/// is redundant and not checked against the date: a server's slip there still says when.
pub fn parse_http_date(text: &str) -> Result<i64, String> {
    let s = text.trim();
    let date = s.split_once(' ').and_then(|(day, rest)| {
        let name = day.strip_suffix(',').unwrap_or(day);
        (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic())).then_some(rest)
    });
    for format in [
        "%d %b %Y %H:%M:%S GMT",
        "%d-%b-%y %H:%M:%S GMT",
        "%b %e %H:%M:%S %Y",
    ] {
        if let Some(t) = date.and_then(|d| chrono::NaiveDateTime::parse_from_str(d, format).ok()) {
            return Ok(unix_seconds(&t.and_utc()));
        }
    }
    Err(format!(
        "'{s}' is not an HTTP date (like Wed, 21 Oct 2099 07:28:00 GMT)"
    ))
}

/// `2026-10-03T12:00:00Z`. Seconds beyond what a date can say (hundreds of thousands of
/// years away) come out as the plain number, which [`parse_timestamp`] reads back.
pub fn format_timestamp(secs: i64) -> String {
    match DateTime::from_timestamp(secs, 0) {
        Some(t) => t.to_rfc3339_opts(SecondsFormat::Secs, true),
        None => secs.to_string(),
    }
}

/// [`format_timestamp`] with the part of a second `nanos` (`2026-10-03T12:00:00.25Z`): as
/// many digits as it needs, none for a whole second, so a time read with a fraction is
/// written back with it.
pub fn format_timestamp_nanos(secs: i64, nanos: u32) -> String {
    match DateTime::from_timestamp(secs, nanos).filter(|_| nanos > 0) {
        Some(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        None => format_timestamp(secs),
    }
}

/// `2026-10-03 12:00`: for tables, where seconds are noise.
pub fn format_minute(secs: i64) -> String {
    match DateTime::from_timestamp(secs, 0) {
        Some(t) => t.format("%Y-%m-%d %H:%M").to_string(),
        None => secs.to_string(),
    }
}

/// The year of `secs` (UTC), or `None` past what a date can say.
pub fn year_of(secs: i64) -> Option<i32> {
    DateTime::from_timestamp(secs, 0).map(|t| t.year())
}

/// A table's time in 11 columns or fewer: `11-18 05:08` in `this_year` (the caller's clock),
/// else the date with its year, `9999-12-31` (tester 5 C8: a plan of 9999 read as this
/// year's New Year's Eve).
pub fn format_minute_short(secs: i64, this_year: Option<i32>) -> String {
    match DateTime::from_timestamp(secs, 0) {
        Some(t) if Some(t.year()) == this_year => t.format("%m-%d %H:%M").to_string(),
        Some(t) => t.format("%Y-%m-%d").to_string(),
        None => secs.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_time_leaves_off_is_said_precisely() {
        for (text, lacks) in [
            (
                "2026-11-17",
                Some("its time of day and offset, like 2026-11-17T00:00:00Z"),
            ),
            (
                "2026-11-17T00:00:00",
                Some("its offset (Z for UTC, or one like +01:00), like 2026-11-17T00:00:00Z"),
            ),
            (
                "2026-11-17t08:30:00.250",
                Some("its offset (Z for UTC, or one like +01:00), like 2026-11-17t08:30:00.250Z"),
            ),
            (
                "2026-11-17 09:30",
                Some("the seconds of its time of day and an offset, like 2026-11-17 09:30:00Z"),
            ),
            (
                "2026-11-17T09:30Z",
                Some("the seconds of its time of day, like 2026-11-17T09:30:00Z"),
            ),
            ("2026-11-17T00:00:00Z", None),
            ("2026-11-17T00:00:00-05:00", None),
            ("2026-11-17X", None),
            ("2026-11-17T9", None),
            ("2026-11-17T00:00:00.", None),
            ("2026-11-17T09:30\u{1b}[31m", None),
            ("2026-11-17T09:30+1", None),
            ("2026-11-17T09:30+a\u{e9}:0", None),
            ("20261-1-17T09:30", None),
        ] {
            assert_eq!(time_lacks(text).as_deref(), lacks, "{text}");
        }
        // What it suggests reads.
        for text in [
            "2026-11-17T00:00:00",
            "2026-11-17 09:30",
            "2026-11-17T09:30+01:00",
        ] {
            let like = time_lacks(text).unwrap();
            let like = like.rsplit("like ").next().unwrap();
            assert!(parse_rfc3339(like).is_ok(), "{text}: {like}");
        }
    }

    #[test]
    fn round_trips_and_offsets() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_timestamp("2026-10-03T12:00:00Z"), Ok(1_791_028_800));
        assert_eq!(
            parse_timestamp("2026-10-03T14:00:00.250+02:00"),
            Ok(1_791_028_800)
        );
        assert_eq!(parse_timestamp("1791028800"), Ok(1_791_028_800));
        for secs in [0, 951_782_400, 1_791_028_800, 4_102_444_799, -86_400] {
            assert_eq!(parse_timestamp(&format_timestamp(secs)), Ok(secs));
        }
        assert_eq!(format_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_minute(1_791_028_800), "2026-10-03 12:00");
    }

    /// Tester 23 F11: a leap second is the next second, by every reader and with its
    /// fraction, so it is written back as the time it was read as.
    #[test]
    fn a_leap_second_is_folded_into_the_next_second() {
        let next_day = 1_483_228_800;
        for (text, nanos) in [
            ("2016-12-31T23:59:60Z", 0),
            ("2016-12-31T23:59:60.5Z", 500_000_000),
            ("2017-01-01T00:59:60.5+01:00", 500_000_000),
        ] {
            assert_eq!(parse_timestamp(text), Ok(next_day), "{text}");
            assert_eq!(subsecond_nanos(text), nanos, "{text}");
            assert_eq!(
                parse_timestamp_millis(text),
                Ok(next_day * 1000 + i64::from(nanos / 1_000_000)),
                "{text}"
            );
        }
        assert_eq!(
            format_timestamp_nanos(next_day, 500_000_000),
            "2017-01-01T00:00:00.500Z"
        );
        assert_eq!(
            parse_http_date("Sat, 31 Dec 2016 23:59:60 GMT"),
            Ok(next_day)
        );
        assert_eq!(parse_timestamp("2016-12-31T23:59:59.5Z"), Ok(next_day - 1));
    }

    #[test]
    fn rejects_what_is_not_a_timestamp() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-10-03T12:00:00",
            "2026-10-03T25:00:00Z",
            "2026-10-03T12:00:00+0200",
            "２０２６-10-03T12:00:00Z",
            "2026-11-01T00:00:00+0é00",
            "2026-11-01T00:00:00é",
            "é026-11-01T00:00:00Z",
            "2026-11-01T00:00:00+24:00",
            "2026-11-01T00:00:00.Z",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn multibyte_text_anywhere_is_an_error_not_a_panic() {
        let base = "2026-11-01T00:00:00+01:00";
        for i in 0..=base.len() {
            for insert in ["é", "€", "𝟘", "\u{0}"] {
                let text = format!("{}{insert}{}", &base[..i], &base[i..]);
                assert!(parse_timestamp(&text).is_err(), "{text}");
                let cut: String = text.chars().take(i).collect();
                let _ = parse_timestamp(&cut);
            }
        }
    }

    #[test]
    fn leap_seconds_lowercase_and_space_separator() {
        // POSIX's count: 23:59:60 is the next day's 00:00:00.
        assert_eq!(
            parse_timestamp("2016-12-31T23:59:60Z"),
            parse_timestamp("2017-01-01T00:00:00Z")
        );
        assert_eq!(parse_timestamp("2026-10-03t12:00:00z"), Ok(1_791_028_800));
        assert_eq!(parse_timestamp("2026-10-03 12:00:00Z"), Ok(1_791_028_800));
        assert!(parse_rfc3339("1791028800").is_err());
    }

    #[test]
    fn http_dates_in_their_three_forms() {
        let at = parse_timestamp("2099-10-21T07:28:00Z");
        assert_eq!(parse_http_date("Wed, 21 Oct 2099 07:28:00 GMT"), at);
        assert_eq!(parse_http_date(" Wed Oct 21 07:28:00 2099 "), at);
        assert_eq!(parse_http_date("Thu, 21 Oct 2099 07:28:00 GMT"), at);
        assert_eq!(
            parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            parse_timestamp("1994-11-06T08:49:37Z")
        );
        assert_eq!(
            parse_http_date("Sun Nov  6 08:49:37 1994"),
            parse_timestamp("1994-11-06T08:49:37Z")
        );
        for bad in [
            "",
            "120",
            "Wed, 21 Oct 2099 07:28:00",
            "Wed, 21 Oct 2099 07:28:00 PST",
            "Wed, 32 Oct 2099 07:28:00 GMT",
            "2099-10-21T07:28:00Z",
            "21 Oct 2099 07:28:00 GMT",
            "W3d, 21 Oct 2099 07:28:00 GMT",
            "Wed, 21 Oct 2099 07:28:00 GMTé",
        ] {
            assert!(parse_http_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formatting_never_panics_at_the_extremes() {
        for secs in [i64::MIN, -1, 253_402_300_800, i64::MAX] {
            let _ = (format_timestamp(secs), format_minute(secs));
        }
        assert_eq!(format_timestamp(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(parse_timestamp(&format_timestamp(i64::MAX)), Ok(i64::MAX));
    }
}

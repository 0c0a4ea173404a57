//! Numbers and time as a user gives them to the binary (issue 16, class 6): one duration
//! parser with a unit required and a bound, RFC 3339 that never panics, and NaN, infinity
//! and out-of-range values in every workspace file refused with the file and the field.

use assert_cmd::Command;
use std::path::Path;

mod common;
use common::{ctx, json_of};

/// Exit 2 with one clear line on stderr (no panic); the line is returned.
fn bad_input(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}\nstderr: {err}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn plan_count(home: &Path) -> u64 {
    json_of(ctx(home).args(["history", "--json", "--limit", "0"]))["total"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_non_ascii_offset_in_since_is_bad_input_not_a_panic() {
    let home = tempfile::tempdir().unwrap();
    let err = bad_input(ctx(home.path()).args(["history", "--since", "2026-11-01T00:00:00+0é00"]));
    assert!(err.contains("--since") && err.contains("RFC 3339"), "{err}");
    // Every shape of the documented forms still works.
    for ok in [
        "7d",
        "36h",
        "90m",
        "2w",
        "2026-10-15T00:00:00Z",
        "2026-10-15T02:00:00+02:00",
    ] {
        json_of(ctx(home.path()).args(["history", "--since", ok, "--json", "--limit", "1"]));
    }
}

#[test]
fn a_bare_number_is_refused_with_a_hint_not_read_as_days() {
    let home = tempfile::tempdir().unwrap();
    let err = bad_input(ctx(home.path()).args(["history", "--since", "7"]));
    assert!(
        err.contains("'7' needs a unit") && err.contains("7d"),
        "{err}"
    );
    let err = bad_input(ctx(home.path()).args(["cache", "gc", "--older-than", "30"]));
    assert!(err.contains("'30' needs a unit"), "{err}");
    let err = bad_input(ctx(home.path()).args(["replay", "--failed", "--offline", "--since", "3"]));
    assert!(err.contains("'3' needs a unit"), "{err}");
    // Meant as a duration, told what a duration is (not an RFC 3339 parse error).
    for meant in ["1.5d", "7D", "1e3s"] {
        let err = bad_input(ctx(home.path()).args(["history", "--since", meant]));
        assert!(
            err.contains("a duration is a whole number and a unit"),
            "{meant}: {err}"
        );
    }
    // Meant as a time, told what a time needs (not "unknown unit '-11-01'"): precisely what
    // is missing, the time of day only where it is (tester 48 nit: a time with its time of
    // day was told it needs one).
    for (meant, needs) in [
        (
            "2026-11-01",
            "a time needs its time of day and offset, like 2026-11-01T00:00:00Z",
        ),
        (
            "2026-11-17T00:00:00",
            "a time needs its offset (Z for UTC, or one like +01:00), like 2026-11-17T00:00:00Z",
        ),
        (
            "2026-11-17 08:30:00.25",
            "a time needs its offset (Z for UTC, or one like +01:00), like 2026-11-17 08:30:00.25Z",
        ),
        (
            "2026-11-17T09:30",
            "a time needs the seconds of its time of day and an offset, like 2026-11-17T09:30:00Z",
        ),
        (
            "2026-11-17T09:30+01:00",
            "a time needs the seconds of its time of day, like 2026-11-17T09:30:00+01:00",
        ),
    ] {
        for command in [
            &["history", "--since", meant][..],
            &["replay", "--failed", "--offline", "--since", meant],
        ] {
            let err = bad_input(ctx(home.path()).args(command));
            assert!(err.contains(needs), "{meant}: {err}");
            assert!(!err.contains("a duration"), "{meant}: {err}");
        }
    }
}

#[test]
fn a_huge_older_than_is_refused_and_deletes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let mut cache = ctxconsole::store::cache::OutputCache::open_in(home.path()).unwrap();
    cache.store("kept\n").unwrap();
    drop(cache);
    for huge in [
        "144115188075855872d",
        "18446744073709551615s",
        "101y",
        "5300w",
    ] {
        let err = bad_input(ctx(home.path()).args(["cache", "gc", "--older-than", huge]));
        assert!(err.contains("--older-than"), "{huge}: {err}");
    }
    let v = json_of(ctx(home.path()).args(["cache", "gc", "--older-than", "1h", "--json"]));
    assert_eq!(v["removed"], 0);
    assert_eq!(v["entries"], 1, "{v}");
}

#[test]
fn config_durations_out_of_bounds_name_file_and_key() {
    for (key, value) in [
        ("[history]\ndrift_window", "\"106751991167301d\""),
        ("[history]\ndrift_window", "\"15\""),
        ("[llm]\nretry_base", "\"18446744073709551615s\""),
        ("[llm]\ntimeout", "\"3650d\""),
        ("[llm]\nconnect_timeout", "\"0s\""),
        ("[llm]\nretries", "4000000000"),
    ] {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!("{key} = {value}\n"),
        )
        .unwrap();
        let err = bad_input(ctx(home.path()).args(["history", "--drift", "--json"]));
        let field = key
            .split(['[', ']', '\n'])
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(".");
        assert!(
            err.contains("config.toml") && err.contains(&field),
            "{key} = {value}: {err}"
        );
    }
}

/// A duration given as another type says a duration is wanted, and an integer past TOML's
/// 64 bits says so, each naming the key with its table (tester 6 F6: "is
/// 99999999999999999999` as i128; expected any valid TOML value", "field 'timeout' is 0;
/// expected a string").
#[test]
fn config_values_of_the_wrong_kind_say_what_the_key_takes() {
    let beyond =
        "beyond the whole numbers TOML holds (-9223372036854775808 to 9223372036854775807)";
    let duration = "expected a duration as a string, such as \"20s\", \"500ms\" or \"5m\"";
    for (table, key, value, says) in [
        ("llm", "timeout", "0", format!("is 0; {duration}")),
        ("llm", "retry_base", "true", format!("is true; {duration}")),
        (
            "history",
            "drift_window",
            "[1]",
            format!("is an array; {duration}"),
        ),
        // (A key with a bound of its own names that instead: the next test.)
        (
            "llm",
            "timeout",
            "99999999999999999999",
            format!("is 99999999999999999999, {beyond}"),
        ),
        (
            "history",
            "drift_window",
            "-99999999999999999999",
            format!("is -99999999999999999999, {beyond}"),
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(&config, format!("[{table}]\n{key} = {value}\n")).unwrap();
        let err = bad_input(ctx(home.path()).args(["preview", "hello"]));
        let says = format!(
            "{}: line 2, column {}: field '{table}.{key}' {says}",
            config.display(),
            key.len() + 4
        );
        assert!(
            err.contains(&says),
            "{key} = {value}:\n{err}\nexpected: {says}"
        );
        assert!(!err.contains("i128") && !err.contains('`'), "{err}");
    }
}

/// Every whole number in config.toml, given as another type, negative, fractional or out of
/// range, fails with one message naming the file, the line, the key, its bounds and what was
/// found — not serde's bare "expected u32".
#[test]
fn config_whole_numbers_of_the_wrong_type_name_the_key_and_its_bounds() {
    for (key, value, found, bounds) in [
        ("concurrency", "\"4\"", "string \"4\"", "from 1 to 16"),
        ("concurrency", "2.5", "2.5", "from 1 to 16"),
        ("concurrency", "-1", "-1", "from 1 to 16"),
        ("concurrency", "99", "99", "from 1 to 16"),
        ("retries", "true", "true", "from 0 to 20"),
        ("retries", "-1", "-1", "from 0 to 20"),
        ("retries", "9999999999", "9999999999", "from 0 to 20"),
        (
            "max_reply_bytes",
            "\"1MB\"",
            "string \"1MB\"",
            "from 1024 to 268435456",
        ),
        (
            "max_reply_bytes",
            "[1]",
            "an array",
            "from 1024 to 268435456",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(&config, format!("[llm]\n{key} = {value}\n")).unwrap();
        let err = bad_input(ctx(home.path()).args(["preview", "hello"]));
        let says = format!(
            "{}: line 2, column {}: field 'llm.{key}' is {found}; expected a whole number {bounds}",
            config.display(),
            key.len() + 4
        );
        assert!(
            err.contains(&says),
            "{key} = {value}:\n{err}\nexpected: {says}"
        );
    }
}

/// A number past what TOML holds — a whole number from 2^63 to 2^64−1 (the parser reads it,
/// a TOML value cannot hold it), past 2^64, a float past f64 — or a table or array holding
/// one, given to a whole-number key, is said against that key and its bound, as written
/// (tester 7 T7-9: "u64 value was too large", "floating-point number overflowed", and
/// `retries = {a = 9…}` named 'a'). Any other key says TOML's own bound, with the key, in
/// config.toml and budgets.toml alike.
#[test]
fn numbers_past_what_toml_holds_name_the_key_and_a_bound() {
    for (key, value, found, bounds) in [
        (
            "retries",
            "9223372036854775808",
            "9223372036854775808",
            "from 0 to 20",
        ),
        (
            "retries",
            "18446744073709551615",
            "18446744073709551615",
            "from 0 to 20",
        ),
        (
            "concurrency",
            "9_223_372_036_854_775_808",
            "9_223_372_036_854_775_808",
            "from 1 to 16",
        ),
        (
            "retries",
            "99999999999999999999",
            "99999999999999999999",
            "from 0 to 20",
        ),
        ("retries", "1e400", "1e400", "from 0 to 20"),
        (
            "max_reply_bytes",
            "-1e400",
            "-1e400",
            "from 1024 to 268435456",
        ),
        (
            "retries",
            "{a = 99999999999999999999}",
            "a table",
            "from 0 to 20",
        ),
        (
            "concurrency",
            "[9223372036854775808]",
            "an array",
            "from 1 to 16",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(&config, format!("[llm]\n{key} = {value}\n")).unwrap();
        let err = bad_input(ctx(home.path()).args(["preview", "hello"]));
        let says = format!(
            "{}: line 2, column {}: field 'llm.{key}' is {found}; expected a whole number {bounds}",
            config.display(),
            key.len() + 4
        );
        assert!(
            err.contains(&says),
            "{key} = {value}:\n{err}\nexpected: {says}"
        );
    }
    let floats =
        "beyond the numbers TOML holds (-1.7976931348623157e308 to 1.7976931348623157e308)";
    let row = "[[model]]\nid = \"x/y\"\noutput_tokens = 500\ntier = \"B\"\n";
    for (file, text, says) in [
        (
            "config.toml",
            "[llm]\nretry_base = 1e400\n".to_string(),
            format!("line 2, column 14: field 'llm.retry_base' is 1e400, {floats}"),
        ),
        (
            "budgets.toml",
            format!("{row}input_tokens = 1e400\n"),
            // A whole-number key with its bound, as config.toml's (tester 9 T9-12).
            "line 5, column 16: field 'input_tokens' is 1e400; expected a whole number from 0 to 100000000".to_string(),
        ),
        (
            "budgets.toml",
            format!("{row}input_tokens = 9000\nprices = {{ input = -1e400 }}\n"),
            format!("line 6, column 20: field 'input' is -1e400, {floats}"),
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(file);
        std::fs::write(&path, &text).unwrap();
        let err = bad_input(ctx(home.path()).args(["preview", "hello"]));
        let says = format!("{}: {says}", path.display());
        assert!(err.contains(&says), "{text}\n{err}\nexpected: {says}");
        assert!(!err.contains("overflowed"), "{err}");
    }
}

/// Tester 9 T9-12: a 65-bit binary literal read "is a number" where hex and decimal are
/// quoted as written; with two bad keys the later line was named (keys were visited in
/// alphabetical order); budgets.toml's `input_tokens` gave two bounds for one key ("of 0 or
/// more" for `-1`, `nan`, `1.5`; "from 0 to 100000000" for `99999999999`) and a too-large
/// hex as its decimal value. One bound per key, the value as written, the first bad line.
#[test]
fn whole_numbers_say_their_key_bound_as_written_and_the_first_bad_line() {
    let check = |file: &str, text: &str, says: &str| {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(file);
        std::fs::write(&path, text).unwrap();
        let err = bad_input(ctx(home.path()).args(["preview", "hello"]));
        let says = format!("{}: {says}", path.display());
        assert!(err.contains(&says), "{text}\n{err}\nexpected: {says}");
    };
    let ones = format!("0b{}", "1".repeat(65));
    check(
        "config.toml",
        &format!("[llm]\nconcurrency = {ones}\n"),
        &format!(
            "line 2, column 15: field 'llm.concurrency' is {ones}; expected a whole number from 1 to 16"
        ),
    );
    // A longer one is quoted as every error quotes what was written: cut, with its length.
    let long = format!("0b{}", "1".repeat(120));
    check(
        "config.toml",
        &format!("[llm]\nconcurrency = {long}\n"),
        "line 2, column 15: field 'llm.concurrency' is '0b1111",
    );
    for (retries, concurrency) in [
        ("99999999999999999999", "99999999999999999999"),
        ("99", "99"),
    ] {
        check(
            "config.toml",
            &format!("[llm]\nretries = {retries}\nconcurrency = {concurrency}\n"),
            &format!(
                "line 2, column 11: field 'llm.retries' is {retries}; expected a whole number from 0 to 20"
            ),
        );
    }
    let row = "[[model]]\nid = \"x/y\"\noutput_tokens = 500\ntier = \"B\"\n";
    for (value, found) in [
        ("-1", "-1"),
        ("nan", "NaN"),
        ("1.5", "1.5"),
        ("99999999999", "99999999999"),
        ("0x1_0000_0000_0000_0000", "0x1_0000_0000_0000_0000"),
        ("\"32000\"", "string \"32000\""),
    ] {
        check(
            "budgets.toml",
            &format!("{row}input_tokens = {value}\n"),
            &format!(
                "line 5, column 16: field 'input_tokens' is {found}; expected a whole number from 0 to 100000000"
            ),
        );
    }
    // So does every whole number of a row: the type and the range say one bound.
    let row = format!("{row}input_tokens = 9000\n");
    for (line, says) in [
        (
            "max_tokens = -1",
            "column 14: field 'max_tokens' is -1; expected a whole number from 1 to 100000000",
        ),
        (
            "max_tokens = 0",
            "column 14: field 'max_tokens' is 0; expected a whole number from 1 to 100000000",
        ),
        (
            "seed = 1.5",
            "column 8: field 'seed' is 1.5; expected a whole number from 0 to 9007199254740991",
        ),
        (
            "max_catalog_bytes = \"9\"",
            "column 21: field 'max_catalog_bytes' is string \"9\"; expected a whole number from 0 to 1073741824",
        ),
    ] {
        check(
            "budgets.toml",
            &format!("{row}{line}\n"),
            &format!("line 6, {says}"),
        );
    }
}

/// A number of the wrong type in budgets.toml or planner.toml names the file, the line, the
/// key and what was found, in an operator's words — never serde's "expected usize".
#[test]
fn workspace_numbers_of_the_wrong_type_name_the_key_in_plain_words() {
    let row = |field: &str| {
        format!(
            "[[model]]\nid = \"x/y\"\ninput_tokens = 9000\noutput_tokens = 500\ntier = \"B\"\n{field}\n"
        )
    };
    for (file, text, says) in [
        (
            "budgets.toml",
            "[[model]]\nid = \"x/y\"\ninput_tokens = \"32000\"\n".to_string(),
            "line 3, column 16: field 'input_tokens' is string \"32000\"; expected a whole number from 0 to 100000000",
        ),
        (
            "budgets.toml",
            row("max_tokens = 2.5"),
            "line 6, column 14: field 'max_tokens' is 2.5; expected a whole number from 1 to 100000000",
        ),
        (
            "budgets.toml",
            row("prices = { input = \"1.0\" }"),
            "line 6, column 20: field 'input' is string \"1.0\"; expected a number",
        ),
        (
            "budgets.toml",
            row("prefix_cache = 1"),
            "line 6, column 16: field 'prefix_cache' is 1; expected true or false",
        ),
        (
            "planner.toml",
            "short_chars = \"20\"\n".to_string(),
            "line 1, column 15: field 'short_chars' is string \"20\"; expected a whole number of 0 or more",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(file);
        std::fs::write(&path, &text).unwrap();
        let err = bad_input(ctx(home.path()).args(["preview", "hello"]));
        let says = format!("{}: {says}", path.display());
        assert!(
            err.contains(&says),
            "{file}:\n{text}\n{err}\nexpected: {says}"
        );
        assert!(!err.contains("usize") && !err.contains("f64"), "{err}");
    }
}

#[test]
fn nan_infinity_and_negative_numbers_in_workspace_files_are_refused() {
    let cases = [
        (
            "budgets.toml",
            "[[model]]\nid = \"m\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\nprices = { input = nan, output = 1.0 }\n",
            "prices.input",
        ),
        (
            "budgets.toml",
            "[[model]]\nid = \"m\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\nprices = { input = 1.0, output = -inf }\n",
            "prices.output",
        ),
        (
            "budgets.toml",
            "[[model]]\nid = \"m\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\nprices = { input = -2.5, output = 1.0 }\n",
            "prices.input",
        ),
        (
            "planner.toml",
            "[categories.casual]\nthreshold = nan\n",
            "categories.casual.threshold",
        ),
        (
            "planner.toml",
            "[categories.casual]\nthreshold = -1\n",
            "categories.casual.threshold",
        ),
        (
            "planner.toml",
            "[categories.casual]\nextra_patterns = [{ pattern = 'x', weight = inf }]\n",
            "categories.casual.extra_patterns[0].weight",
        ),
        (
            "planner.toml",
            "[categories.casual]\nsignals = { short = nan }\n",
            "categories.casual.signals.short",
        ),
    ];
    for (file, text, field) in cases {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(file), text).unwrap();
        let err = bad_input(ctx(home.path()).args(["budgets", "--json"]));
        assert!(
            err.contains(file) && err.contains(field),
            "{file} {text}: {err}"
        );
    }
}

#[test]
fn registry_numbers_as_strings_are_read_or_named() {
    let home = tempfile::tempdir().unwrap();
    let reg = home.path().join("reg.json");
    std::fs::write(
        &reg,
        r#"{"acme/str-window": {"max_input_tokens": "128000", "max_output_tokens": "8192", "input_cost_per_token": "3e-06", "output_cost_per_token": 1.5e-05, "mode": "chat"},
            "acme/word-window": {"max_input_tokens": "lots", "max_output_tokens": 4096, "mode": "chat"}}"#,
    )
    .unwrap();
    let v = json_of(ctx(home.path()).args([
        "budgets",
        "--registry",
        reg.to_str().unwrap(),
        "--model",
        "acme/str-window",
        "--json",
    ]));
    let row = if v["row"].is_object() { &v["row"] } else { &v };
    assert_eq!(row["input_tokens"], 128_000, "{v}");
    assert_eq!(row["output_tokens"], 8192, "{v}");
    let out = ctx(home.path())
        .args(["budgets", "--registry", reg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("acme/word-window")
            && all.contains("max_input_tokens")
            && all.contains("lots"),
        "{all}"
    );
}

/// Outside tester 10 T10-9: one entry with a window or price out of bounds (−128000, 2^63,
/// 128000.7, a price of −1) refused the whole registry (exit 2), and a `registry.json` in the
/// workspace stopped every command; T10-18: a repeated key was read last-wins without a
/// word and `keyed/café` composed and decomposed were two rows printed alike. Now each bad
/// entry is skipped with one note naming it, its fields and their values as written, and the
/// rest is read; the repeat and the spellings are one row each, said.
#[test]
fn a_registry_entry_out_of_bounds_is_skipped_with_a_note_and_the_rest_read() {
    let home = tempfile::tempdir().unwrap();
    let text = "{\"acme/good\": {\"max_input_tokens\": 128000, \"max_output_tokens\": 8192, \"mode\": \"chat\"},
        \"acme/neg\": {\"max_input_tokens\": -128000, \"mode\": \"chat\"},
        \"acme/huge\": {\"max_input_tokens\": 9223372036854775808, \"mode\": \"chat\"},
        \"acme/huge64\": {\"max_input_tokens\": 18446744073709551616, \"mode\": \"chat\"},
        \"acme/flt\": {\"max_input_tokens\": 128000.7, \"mode\": \"chat\"},
        \"acme/cost\": {\"max_input_tokens\": 8000, \"input_cost_per_token\": -1, \"mode\": \"chat\"},
        \"acme/a\": {\"max_input_tokens\": 8000}, \"acme/a\": {\"max_input_tokens\": 64000},
        \"acme/cafe\\u0301\": {\"max_input_tokens\": 2000000}, \"acme/caf\\u00e9\": {\"max_input_tokens\": 1000}}";
    std::fs::write(home.path().join("registry.json"), text).unwrap();
    let v = json_of(ctx(home.path()).args(["budgets", "--json"]));
    let rows: Vec<(&str, u64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with("acme/")))
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["input_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("acme/a", 64_000),
            ("acme/caf\u{e9}", 1000),
            ("acme/good", 128_000)
        ],
        "{v:#}"
    );
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    for said in [
        "3 rows; skipped 0 non-chat, 0 without a window, 0 whose id breaks the name rule or ends in '*' and 5 with a value out of bounds or of the wrong type",
        r#"["acme/neg"] skipped, the rest read: max_input_tokens is -128000; expected a whole number from 0 to 100000000"#,
        r#"["acme/huge"] skipped, the rest read: max_input_tokens is 9223372036854775808;"#,
        r#"["acme/huge64"] skipped, the rest read: max_input_tokens is 18446744073709551616;"#,
        r#"["acme/flt"] skipped, the rest read: max_input_tokens is 128000.7;"#,
        r#"["acme/cost"] skipped, the rest read: input_cost_per_token is -1; expected a number from 0 to 1"#,
        "model id 'acme/a' is given 2 times: the last is read",
        "model id 'acme/caf\u{e9}' is spelled 2 ways that print alike: the composed (NFC) spelling is read",
    ] {
        assert_eq!(
            notes.iter().filter(|n| n.contains(said)).count(),
            1,
            "{said}: {notes:#?}"
        );
    }
    // A command that does not budget is not stopped by the registry either.
    let out = ctx(home.path())
        .args(["history", "--limit", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Outside tester F11: a registry key the one name rule refuses (a control, bidi or
/// invisible character, spaces around it) never becomes a budget row — the console would
/// send it and store plans the store's own export cannot import back. The row is skipped
/// and said, as a registry's other unusable rows are; the rest of the registry is read.
/// Tester 18 F9: a model whose own registry entry was skipped (or left out as a spelling
/// that prints like the one read) fell back with only the full `budgets` table and
/// `compact`'s text saying why; where that model is looked up (`budgets --model`,
/// `preview`, `compact --json`) it was just "fallback". The lookup now carries the note.
#[test]
fn a_model_whose_registry_entry_was_skipped_says_so_wherever_it_is_looked_up() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("registry.json"),
        "{\"h/neg\": {\"max_input_tokens\": -1, \"max_output_tokens\": 8192, \"mode\": \"chat\"},
          \"h/caf\\u00e9\": {\"max_input_tokens\": 64000}, \"h/cafe\\u0301\": {\"max_input_tokens\": 9000}}",
    )
    .unwrap();
    let skipped = r#"registry.json: ["h/neg"] skipped, the rest read: max_input_tokens is -1"#;
    let says = |notes: &serde_json::Value, what: &str| {
        notes
            .as_array()
            .unwrap_or_else(|| panic!("{notes}"))
            .iter()
            .filter(|n| n.as_str().is_some_and(|n| n.contains(what)))
            .count()
    };
    let v = json_of(ctx(home.path()).args(["budgets", "--model", "h/neg", "--json"]));
    assert_eq!(v["matched_by"], "fallback");
    assert_eq!(says(&v["notes"], skipped), 1, "{v:#}");
    let text = ctx(home.path())
        .args(["budgets", "--model", "h/neg"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(skipped), "{text}");
    // A spelling left out for printing like the one read falls back, and says why.
    let v = json_of(ctx(home.path()).args(["budgets", "--model", "h/cafe\u{301}", "--json"]));
    assert_eq!(
        says(&v["notes"], "is spelled 2 ways that print alike"),
        1,
        "{v:#}"
    );
    // The spelling read resolves exactly, with no note of its own.
    let v = json_of(ctx(home.path()).args(["budgets", "--model", "h/caf\u{e9}", "--json"]));
    assert_eq!(v["matched_by"], "exact");
    assert_eq!(v["notes"], serde_json::json!([]), "{v:#}");
    // Another unknown model has nothing to say.
    let v = json_of(ctx(home.path()).args(["budgets", "--model", "h/other", "--json"]));
    assert_eq!(v["notes"], serde_json::json!([]), "{v:#}");

    let v =
        json_of(ctx(home.path()).args(["preview", "remember this", "--model", "h/neg", "--json"]));
    assert_eq!(says(&v["warnings"], skipped), 1, "{:#}", v["warnings"]);
    let text = ctx(home.path())
        .args(["preview", "remember this", "--model", "h/neg"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(text.matches(skipped).count(), 1, "{text}");

    let v = json_of(ctx(home.path()).args(["compact", "--model", "h/neg", "--json"]));
    assert_eq!(says(&v["warnings"], skipped), 1, "{:#}", v["warnings"]);
    // The workspace's notes, as compact's text prints them after its summary.
    assert_eq!(
        says(&v["notes"], "registry.json: 1 rows; skipped"),
        1,
        "{v:#}"
    );
    assert_eq!(says(&v["notes"], skipped), 1, "{v:#}");
}

#[test]
fn registry_ids_breaking_the_name_rule_are_skipped_and_said() {
    let home = tempfile::tempdir().unwrap();
    let entry =
        serde_json::json!({"max_input_tokens": 128000, "max_output_tokens": 4096, "mode": "chat"});
    let bad = [
        "acme/\u{202e}evil",
        "acme/ok\u{1b}[2J",
        "acme/zw\u{200b}",
        " acme/sp",
    ];
    let mut registry = serde_json::Map::new();
    registry.insert("acme/good".into(), entry.clone());
    for id in bad {
        registry.insert(id.into(), entry.clone());
    }
    std::fs::write(
        home.path().join("registry.json"),
        serde_json::Value::Object(registry).to_string(),
    )
    .unwrap();
    let v = json_of(ctx(home.path()).args(["budgets", "--json"]));
    let ids: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| id.contains("acme/"))
        .collect();
    assert_eq!(ids, ["acme/good"], "{v:#}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("1 rows") && notes.contains("4 whose id"),
        "{notes}"
    );
    let out = ctx(home.path()).args(["budgets"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for said in [
        "'acme/\\u{202e}evil' holds a control, bidi or invisible character: skipped",
        "'acme/ok\\x1b[2J' holds a control",
        "'acme/zw\\u{200b}' holds a control",
        "' acme/sp' has spaces around it: skipped",
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
}

#[test]
fn out_of_range_numbers_in_an_import_name_the_line_and_keep_nothing() {
    let home = tempfile::tempdir().unwrap();
    let before = plan_count(home.path());
    let good = r#"{"id":"n-1","at":"2026-11-20T00:00:00Z","caller":"c","model":"m","intent":"summarise this page","steps":[{"order":1,"tool":"builtin.page-digest"}]}"#;
    for bad in [
        r#"{"id":"n-2","at":"2026-11-20T00:01:00Z","caller":"c","model":"m","intent":"x y z","steps":[{"order":1,"tool":"a"}],"duration_ms":-1}"#,
        r#"{"id":"n-2","at":"2026-11-20T00:01:00Z","caller":"c","model":"m","intent":"x y z","steps":[{"order":1,"tool":"a"}],"duration_ms":9223372036854775807}"#,
        r#"{"id":"n-2","at":-5,"caller":"c","model":"m","intent":"x y z","steps":[{"order":1,"tool":"a"}]}"#,
        r#"{"id":"n-2","at":99999999999999,"caller":"c","model":"m","intent":"x y z","steps":[{"order":1,"tool":"a"}]}"#,
    ] {
        let file = home.path().join("plans.jsonl");
        std::fs::write(&file, format!("{good}\n{bad}\n")).unwrap();
        let err = bad_input(ctx(home.path()).args(["import", "plans", file.to_str().unwrap()]));
        assert!(
            err.contains("plans.jsonl") && err.contains("line 2"),
            "{bad}: {err}"
        );
        assert_eq!(plan_count(home.path()), before, "nothing kept: {bad}");
    }
    let file = home.path().join("executions.jsonl");
    std::fs::write(&file, "{\"at\":-1,\"caller\":\"c\",\"tool\":\"a\"}\n").unwrap();
    let err = bad_input(ctx(home.path()).args(["import", "executions", file.to_str().unwrap()]));
    assert!(
        err.contains("executions.jsonl") && err.contains("line 1"),
        "{err}"
    );
}

#[test]
fn mcp_timeout_takes_a_duration_with_a_unit() {
    let home = tempfile::tempdir().unwrap();
    let err = bad_input(ctx(home.path()).args(["compact", "--mcp", "true", "--mcp-timeout", "5"]));
    assert!(err.contains("'5' needs a unit"), "{err}");
    let err =
        bad_input(ctx(home.path()).args(["compact", "--mcp", "true", "--mcp-timeout", "3650d"]));
    assert!(err.contains("--mcp-timeout"), "{err}");
}

/// One rule for a model id wherever it is named: the budget row, the provider it routes to
/// and the stored plan must read the same id, so one with spaces around it (budgeted as
/// `local/x`, routed elsewhere as ` local/x`), an empty one or one with a control character
/// is refused by every command, as a usage error naming the flag.
#[test]
fn a_model_id_with_spaces_around_it_is_refused_everywhere() {
    let home = tempfile::tempdir().unwrap();
    for id in [" local/x", "local/x ", "", "   ", "local/\u{7}x"] {
        for args in [
            vec!["budgets", "--model", id],
            vec!["preview", "clone the repo", "--model", id],
            vec!["compact", "--model", id],
            vec!["send", "clone the repo", "--model", id],
            vec!["send", "clone the repo", "--model", "a/b", "--baseline", id],
            vec!["replay", "pl-0001", "--model", id],
        ] {
            let err = bad_input(ctx(home.path()).args(&args));
            assert!(err.contains("a model id"), "{args:?}: {err}");
        }
    }
    // The refusal quotes what was typed, made safe: an 8-bit CSI is shown, not sent.
    let err = bad_input(ctx(home.path()).args(["preview", "x", "--model", "local/\u{9b}31mX"]));
    assert!(err.contains("local/\\u{9b}31mX"), "{err}");
    assert!(!err.contains('\u{9b}'), "{err}");
}

/// Tester 16 F9: `[history] drift_window = "1999ms"` was accepted and became 1 s (the window
/// is kept in whole seconds). A window with a part of a second is refused, naming the file,
/// the key and the whole seconds around it; one in whole seconds written in ms is read.
#[test]
fn a_drift_window_that_is_not_whole_seconds_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    for value in ["1999ms", "90500ms", "1500ms"] {
        std::fs::write(&config, format!("[history]\ndrift_window = \"{value}\"\n")).unwrap();
        let err = bad_input(ctx(home.path()).args(["history", "--drift", "--json"]));
        assert!(
            err.contains(&config.display().to_string())
                && err.contains("history.drift_window")
                && err.contains("whole seconds"),
            "{value}: {err}"
        );
    }
    std::fs::write(&config, "[history]\ndrift_window = \"1999ms\"\n").unwrap();
    let err = bad_input(ctx(home.path()).args(["history", "--drift", "--json"]));
    assert!(err.contains("1s or 2s"), "{err}");
    std::fs::write(&config, "[history]\ndrift_window = \"2000ms\"\n").unwrap();
    let v = json_of(ctx(home.path()).args(["history", "--drift", "--json"]));
    assert_eq!(v["window_secs"], 2, "{v}");
}

/// Tester 50 F17: `dev gen-history --plans` took any count (2^64 − 1 wrote until the disk was
/// full); past `core::bounds::GENERATED_PLANS` it is refused naming the flag and the bound,
/// and nothing is written.
#[test]
fn a_generated_store_past_its_bound_is_refused_before_anything_is_written() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("gen.sqlite");
    for count in [
        "18446744073709551615",
        "99999999999999999999999",
        "10000001",
        "1e6",
    ] {
        let err = bad_input(
            ctx(home.path())
                .args(["dev", "gen-history", "--plans", count, "--out"])
                .arg(&out),
        );
        assert!(
            err.contains("--plans") && err.contains("from 0 to 10000000"),
            "{count}: {err}"
        );
        assert!(!out.exists(), "{count}");
    }
}

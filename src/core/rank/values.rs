//! Words for what a value is or what a question asks for: "when" wants a date, `1970` is a
//! year, `euros` a currency. Stop-word removal and literal values hide them.

use crate::core::text;

/// Words for what the intent asks for or gives, which stop-word removal and literal values
/// hide: question words name the answer wanted ("when" wants a date, "where" a location),
/// and values name their own kind (`1970` is a year, `euros` a currency, `March 17` a date),
/// so an intent holding one reaches the tool whose parameter takes it.
pub(super) fn answer_type_expansion(intent: &str) -> Vec<String> {
    let lower = intent.to_lowercase();
    let mut out = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    let mut tokens = lower.split_whitespace().peekable();
    while let Some(token) = tokens.next() {
        out.extend(value_shape(token));
        if is_long_option(token, tokens.peek().copied()) {
            out.push("command");
        }
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        if is_numeric_date(token) {
            out.push("date");
            continue;
        }
        words.extend(token.split(|c: char| !c.is_alphanumeric()));
    }
    words.retain(|w| !w.is_empty());
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let prev = if i > 0 { words[i - 1] } else { "" };
        let in_date = |n: &str| is_month(n) || is_day_number(n);
        let add: &[&str] = match (*w, next) {
            ("when", _) => &["date", "time"],
            ("where", _) => &["location"],
            ("who", _) | ("whom", _) => &["person", "name"],
            ("how", "many") => &["number", "count"],
            ("how", "much") => &["amount", "cost", "price"],
            ("how", "long") => &["duration", "time"],
            ("how", "far") => &["distance"],
            ("how", measure) if asks_a_measure(words.get(i + 2).copied()) => match measure {
                "high" => &["height", "elevation"],
                "tall" => &["height"],
                "old" => &["age"],
                "fast" => &["speed"],
                "heavy" => &["weight"],
                "big" | "large" => &["size"],
                "deep" => &["depth"],
                _ => &[],
            },
            // The year of a written-out date belongs to the date.
            _ if is_year(w) && !in_date(prev) && !in_date(next) => &["year"],
            _ if is_month(w) && (is_day_number(next) || is_day_number(prev) || is_year(next)) => {
                &["date"]
            }
            _ if is_currency(w) => &["currency"],
            _ if is_us_state(w, next) => &["state"],
            _ => unit_name(w.trim_start_matches(|c: char| c.is_ascii_digit())),
        };
        out.extend(add);
    }
    out.into_iter().map(text::stem).collect()
}

/// Whether the word after "how high", "how old", … lets them ask for a measure: a verb, a
/// pronoun, a determiner or a preposition ("how high is it", "how old the tree is", "how
/// high above sea level"), or the question's end. Before a noun they are part of a compound ("how large language models
/// work", "how deep learning", "how fast-forward merges", "how old versions are pruned").
fn asks_a_measure(next: Option<&str>) -> bool {
    next.is_none_or(|w| {
        matches!(
            w,
            "is" | "are"
                | "was"
                | "were"
                | "be"
                | "can"
                | "could"
                | "do"
                | "does"
                | "did"
                | "will"
                | "would"
                | "should"
                | "must"
                | "might"
                | "may"
                | "has"
                | "have"
                | "it"
                | "they"
                | "he"
                | "she"
                | "you"
                | "we"
                | "i"
                | "this"
                | "that"
                | "the"
                | "my"
                | "your"
                | "his"
                | "her"
                | "its"
                | "their"
                | "our"
                | "above"
                | "below"
                | "up"
                | "in"
                | "on"
                | "at"
        )
    })
}

/// Whether `token` is a command line's long option (`docker --version`, `ls --all`): `--`,
/// a letter, then letters, digits, `-` or `=…`, where a command line is plain — in a code span,
/// or last in its sentence, or before another option. A dash typed as `--` in prose ("for two
/// --preferably by the window") has more prose after it.
fn is_long_option(token: &str, next: Option<&str>) -> bool {
    let in_code = token.contains('`');
    let closing = |c: char| matches!(c, '`' | ')' | '"' | '\'' | '.' | '?' | '!' | ';' | ',');
    let unclosed = token.trim_end_matches(closing);
    let ends_sentence = token[unclosed.len()..].contains(['.', '?', '!', ';', ',']);
    let bare = unclosed.trim_start_matches(['`', '(', '"', '\'']);
    let Some(option) = bare.strip_prefix("--") else {
        return false;
    };
    let name = option.split('=').next().unwrap_or(option);
    let well_formed = name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    well_formed && (in_code || ends_sentence || next.is_none_or(|n| n.starts_with('-')))
}

/// What a written value is by its shape: a web address is a URL, a file's path a path to a
/// file, an address with `@` and a dotted domain an email.
fn value_shape(token: &str) -> &'static [&'static str] {
    let token = token
        .trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | ',' | ';' | '(' | ')' | '?' | '!'));
    let token = token.trim_end_matches('.');
    // Anywhere in the token: a markdown link, `url=https://…`, `<https://…>`.
    // So is a git remote written `git@github.com:org/repo.git`.
    let remote = token.split_once('@').is_some_and(|(user, rest)| {
        !user.is_empty()
            && rest
                .split_once(':')
                .is_some_and(|(host, _)| host.contains('.'))
    });
    if token.contains("://") || token.starts_with("www.") || remote {
        return &["url"];
    }
    if is_email(token) {
        return &["email"];
    }
    // Most tokens: no slash, no path (and nothing gathered for them, on every query).
    if !token.contains(['/', '\\']) {
        return &[];
    }
    // A drive's path may use either slash; any other, forward ones (a written "\\n" after a
    // one-letter label is no path).
    let drive = token.len() > 3
        && token.as_bytes()[0].is_ascii_alphabetic()
        && matches!(token.get(1..3), Some(":\\" | ":/"));
    let rooted =
        drive || token.starts_with('/') || token.starts_with("~/") || token.starts_with("./");
    let segments: Vec<&str> = if drive {
        token.split(['/', '\\']).filter(|s| !s.is_empty()).collect()
    } else {
        token.split('/').filter(|s| !s.is_empty()).collect()
    };
    // A file's name ends in an extension with a letter ("todo.txt"); "and/or/both" has none,
    // and neither has `7/3.5` or `v1.2/v1.3`.
    let named_file = segments.last().is_some_and(|last| {
        last.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                && ext.bytes().any(|b| b.is_ascii_alphabetic())
        })
    });
    let enough = if drive {
        named_file || segments.len() >= 3
    } else {
        segments.len() >= 2 && (rooted || named_file)
    };
    if enough {
        return &["path", "file"];
    }
    &[]
}

/// `name@example.com`: a user part, and a domain of dotted labels whose last is two or more
/// letters (`lodash@4.17.21` is a version, `git@github.com:org/repo` an address of another
/// kind).
fn is_email(token: &str) -> bool {
    let Some((user, domain)) = token.split_once('@') else {
        return false;
    };
    let labels: Vec<&str> = domain.split('.').collect();
    !user.is_empty()
        && user
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-'))
        && labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_alphabetic()))
}

/// `2023-05-21`, `2023.10.2`, `09/09/2023`: three number groups, one of them a year.
fn is_numeric_date(token: &str) -> bool {
    let groups: Vec<&str> = token.split(['-', '.', '/']).collect();
    groups.len() == 3
        && groups
            .iter()
            .all(|g| !g.is_empty() && g.len() <= 4 && g.bytes().all(|b| b.is_ascii_digit()))
        && (is_year(groups[0]) || is_year(groups[2]))
}

/// `1871`, `2021`: a four-digit number a calendar would use.
fn is_year(word: &str) -> bool {
    word.len() == 4
        && word
            .parse::<u32>()
            .is_ok_and(|y| (1000..=2199).contains(&y))
}

/// `17`, `10th`, `1st`.
fn is_day_number(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    matches!(suffix, "" | "st" | "nd" | "rd" | "th")
        && digits.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d))
}

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

fn is_month(word: &str) -> bool {
    MONTHS.contains(&word)
}

/// Currency names and ISO codes people write in requests.
const CURRENCIES: &[&str] = &[
    "dollar", "dollars", "euro", "euros", "yen", "sterling", "rupee", "rupees", "yuan", "renminbi",
    "franc", "francs", "peso", "pesos", "krona", "krone", "kronor", "ruble", "rubles", "rouble",
    "lira", "reais", "dirham", "baht", "usd", "eur", "gbp", "jpy", "cad", "aud", "nzd", "chf",
    "cny", "inr", "mxn", "brl", "krw", "sek", "nok", "dkk", "rub", "zar", "sgd", "hkd",
];

fn is_currency(word: &str) -> bool {
    CURRENCIES.contains(&word)
}

/// US state names; the second word of a two-word name follows the first (`new` `mexico`).
const US_STATES: &[&str] = &[
    "alabama",
    "alaska",
    "arizona",
    "arkansas",
    "california",
    "colorado",
    "connecticut",
    "delaware",
    "florida",
    "georgia",
    "hawaii",
    "idaho",
    "illinois",
    "indiana",
    "iowa",
    "kansas",
    "kentucky",
    "louisiana",
    "maine",
    "maryland",
    "massachusetts",
    "michigan",
    "minnesota",
    "mississippi",
    "missouri",
    "montana",
    "nebraska",
    "nevada",
    "new hampshire",
    "new jersey",
    "new mexico",
    "north carolina",
    "north dakota",
    "ohio",
    "oklahoma",
    "oregon",
    "pennsylvania",
    "rhode island",
    "south carolina",
    "south dakota",
    "tennessee",
    "texas",
    "utah",
    "vermont",
    "virginia",
    "washington",
    "west virginia",
    "wisconsin",
    "wyoming",
];

fn is_us_state(word: &str, next: &str) -> bool {
    US_STATES.iter().any(|s| match s.split_once(' ') {
        Some((a, b)) => a == word && b == next,
        None => *s == word,
    })
}

/// The unit an abbreviation stands for (`cm` → centimeter), as parameter descriptions spell
/// it out ("height in centimeters").
fn unit_name(abbreviation: &str) -> &'static [&'static str] {
    match abbreviation {
        "mm" => &["millimeter"],
        "cm" => &["centimeter"],
        "km" => &["kilometer"],
        "kg" | "kgs" => &["kilogram"],
        "mg" => &["milligram"],
        "lb" | "lbs" => &["pound"],
        "oz" => &["ounce"],
        "ft" => &["feet", "foot"],
        "mi" => &["mile"],
        "mph" => &["mile", "hour"],
        "kph" | "kmh" => &["kilometer", "hour"],
        "ml" => &["milliliter"],
        "hr" | "hrs" => &["hour"],
        "mins" => &["minute"],
        "sec" | "secs" => &["second"],
        "ms" => &["millisecond"],
        "gb" => &["gigabyte"],
        "mb" => &["megabyte"],
        "kb" => &["kilobyte"],
        _ => &[],
    }
}

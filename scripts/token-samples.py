#!/usr/bin/env python3
"""Write tester 48's token-estimate samples into tests/data/tokens (seeded: the same bytes
every run). Operator pastes the estimate had charged 0.25-0.89x of cl100k/o200k: marks
before words that neither table merges (PSV exports, shell pipelines, query strings,
minified CSS), long repeated letter patterns, lone carriage returns and control characters.

Tester 49's samples (their own `random.Random(49)`, so the files above keep their bytes):
pronounceable ids (consonant-vowel slugs, proquints, Hawaiian-like names), long runs of one
vowel and patterns of up to 6 letters over and over, English words in CAPITALS (prose, SQL-ish
lines, env names, `-`/`/`/`.`-joined ids, Title-Case ids) and indented YAML. The estimate had
charged them 0.25-0.91x.

    python3 scripts/token-samples.py
"""
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tokens")
r = random.Random(48)
NAMES = ["Ali", "Bo", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ida", "Jo"]
STATES = ["WA", "FL", "NY", "TX", "CA", "OR", "NV", "MA"]


def psv_export():
    # `psql -A` output: a header, pipe-separated rows, a row count.
    lines = ["ID|NAME|ST|ACTIVE|G|NOTE"]
    for _ in range(220):
        lines.append("|".join([
            str(r.randint(10000, 99999)), r.choice(NAMES), r.choice(STATES),
            r.choice("YN"), r.choice("MF"), r.choice(["n/a", "err", "ok", "x", ""]),
        ]))
    lines.append("(220 rows)")
    return "\n".join(lines) + "\n"


def psv_flags():
    lines = []
    for _ in range(300):
        if r.random() < 0.5:
            lines.append("|" + "|".join(r.choice("YN") for _ in range(3)) + "|" + r.choice("ab") + "|")
        else:
            lines.append("|".join([r.choice("xyzc"), r.choice(STATES), r.choice("YN"), r.choice(["n/a", "err"])]))
    return "\n".join(lines) + "\n"


def shell_pipelines():
    cmds = ["grep x", "sort", "uniq -c", "head", "tail -n5", "wc -l", "cut -d, -f2", "tr a b",
            "awk '{print $1}'", "sed s/a/b/", "xargs rm", "tee log", "jq .id", "sort -rn"]
    lines = []
    for _ in range(260):
        parts = ["cat " + r.choice(["f", "log", "a.txt", "out"])]
        parts += [r.choice(cmds) for _ in range(r.randint(2, 5))]
        sep = "|" if r.random() < 0.8 else "&&"
        lines.append(sep.join(parts))
    return "\n".join(lines) + "\n"


def query_strings():
    keys = ["id", "t", "v", "s", "l", "q", "p", "k", "x", "i", "ref", "utm"]
    vals = ["a", "b", "c", "en", "de", "y", "j", "v", "on", "1"]
    lines = []
    for _ in range(240):
        pairs = "&".join(f"{r.choice(keys)}={r.choice(vals) if r.random() < 0.8 else r.randint(0, 9999)}"
                         for _ in range(r.randint(3, 6)))
        lines.append(r.choice(["GET /api?", "POST /v1/q?", "", "https://ex.com/s?"]) + pairs)
    return "\n".join(lines) + "\n"


def css_minified():
    props = ["b:c", "d:e", "h:0", "m:0", "p:1", "c:red", "w:9", "z:1"]
    out = []
    for i in range(180):
        sel = r.choice([f".a{i}", f"#f{i}>g", f".n{i} .x", f"a:hover", f"@media(w:9){{.q{i}"])
        body = ";".join(r.choice(props) for _ in range(r.randint(1, 3)))
        out.append(f"{sel}{{{body}}}" + ("}" if sel.startswith("@media") else ""))
    # one line, as a minifier writes it
    return "".join(out) + "\n"


def repeated_letters():
    words = ["haha", "hahaha", "ahahahahah", "hahahahahahahaha", "lololol", "hehehe",
             "sooooooo", "nooooooo", "yessssss", "Ooooooooooooooh", "yeeeeeeees", "hmmmmmm",
             "wow", "ok", "yeah", "right", "sure", "good", "see you", "that's funny", "way"]
    lines = [" ".join(r.choice(words) for _ in range(r.randint(2, 4))) for _ in range(220)]
    lines.append("ha" * 500)
    lines.append("ab" * 300)
    lines.append("".join(r.choice("aeiou") for _ in range(400)))
    return "\n".join(lines) + "\n"


def control_chars():
    out = []
    # lines broken by a lone carriage return (old Mac, a progress bar captured raw)
    for i in range(120):
        out.append(f"progress {i}%\r")
    out.append("\r" * 400)
    out.append("\x00" * 300)
    out.append("\x7f" * 200)
    out.append("".join(r.choice("\x01\x02\x03\x0b\x0c\x1b") + r.choice("xy") for _ in range(200)))
    out.append("'" * 300)
    out.append('"' * 200)
    return "\n".join(out) + "\n"


q = random.Random(49)
# Ordinary English words, as a README or a log holds them.
WORDS = """request model budget token window catalog history replay preview client server
import export store record value table column index search filter result error warning
message attach prompt answer format string number count limit total before after during
between every other first last where which while from with into over under about across
this that these those then than when what have will would could should might must been
being make made take given found shown called named saved sent read write open close start
stop check build test run file path name list item entry field option setting default
public private local remote user group account access session cache queue event stream
batch update delete create insert select order report summary detail status health
""".split()
V = "aeiou"


def cv_slugs():
    cons = "bcdfghjklmnprstvz"
    def word(n):
        return "".join(q.choice(cons) + q.choice(V) for _ in range(n))
    lines = [" ".join(word(q.randint(2, 7)) for _ in range(8)) for _ in range(120)]
    lines += ["-".join(word(q.randint(2, 4)) for _ in range(3)) for _ in range(60)]
    # Hawaiian-like names: few consonants, vowel pairs.
    def name():
        return "".join(q.choice("hklmnpw") * (q.random() < 0.8) + q.choice(V) + q.choice(["", "", "a", "i", "u"])
                       for _ in range(q.randint(3, 7))).capitalize()
    lines += [" ".join(name() for _ in range(6)) for _ in range(60)]
    return "\n".join(lines) + "\n"


def proquints():
    cons = "bdfghjklmnprstvz"
    vow = "aiou"
    def quint():
        return "".join([q.choice(cons), q.choice(vow), q.choice(cons), q.choice(vow), q.choice(cons)])
    return "\n".join("-".join(quint() for _ in range(4)) for _ in range(200)) + "\n"


def vowel_runs():
    lines = [c * 400 for c in "aeiouy"]
    lines += [c.upper() * 100 for c in "aeiouy"]
    for period in range(2, 7):
        for _ in range(3):
            unit = "".join(q.choice("qwrtypsdfghjklzxcvbnm" + V) for _ in range(period))
            lines.append(unit * (120 // period))
    lines += ["".join(q.choice(V) for _ in range(q.randint(4, 12))) for _ in range(60)]
    return "\n".join(lines) + "\n"


def caps_prose():
    lines = [" ".join(w.upper() for w in q.sample(WORDS, 10)) for _ in range(150)]
    lines += ["SELECT " + ", ".join(w.upper() for w in q.sample(WORDS, 3)) + " FROM " + q.choice(WORDS).upper()
              + " WHERE " + q.choice(WORDS).upper() + " = " + str(q.randint(0, 999)) for _ in range(60)]
    lines += [q.choice(["ERROR", "WARN", "INFO"]) + ": " + " ".join(w.upper() for w in q.sample(WORDS, 6)) for _ in range(60)]
    return "\n".join(lines) + "\n"


def caps_ids():
    lines = []
    for _ in range(60):
        lines.append("%s_%s=%s" % (q.choice(WORDS).upper(), q.choice(WORDS).upper(), q.choice(WORDS)))
    for sep in "-/.":
        for _ in range(40):
            lines.append(sep + sep.join(w.upper() for w in q.sample(WORDS, 8)))
    for sep in "-/._":
        for _ in range(30):
            lines.append(sep + sep.join(w.capitalize() for w in q.sample(WORDS, 8)))
    return "\n".join(lines) + "\n"


def yaml_indented():
    lines = []
    depth = 0
    for i in range(400):
        key = q.choice(WORDS)
        if q.random() < 0.3 and depth < 4:
            lines.append("  " * depth + key + ":")
            depth += 1
        elif q.random() < 0.15:
            lines.append("  " * depth + "- " + q.choice(WORDS))
        else:
            lines.append("  " * depth + key + ": " + q.choice(WORDS + [str(q.randint(0, 9999))]))
            if depth and q.random() < 0.3:
                depth = q.randint(0, depth - 1)
    return "\n".join(lines) + "\n"


FILES = {
    "ops_psv_export.txt": psv_export,
    "ops_psv_flags.txt": psv_flags,
    "ops_shell_pipelines.txt": shell_pipelines,
    "ops_query_strings.txt": query_strings,
    "ops_css_minified.css": css_minified,
    "ops_repeated_letters.txt": repeated_letters,
    "ops_control_chars.txt": control_chars,
    "ids_cv_slugs.txt": cv_slugs,
    "ids_proquints.txt": proquints,
    "letters_vowel_runs.txt": vowel_runs,
    "caps_prose.txt": caps_prose,
    "caps_ids.txt": caps_ids,
    "yaml_indented.yaml": yaml_indented,
}

for name, make in FILES.items():
    with open(os.path.join(OUT, name), "w", newline="") as f:
        f.write(make())

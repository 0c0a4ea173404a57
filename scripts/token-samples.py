#!/usr/bin/env python3
"""Write tester 48's token-estimate samples into tests/data/tokens (seeded: the same bytes
every run). Operator pastes the estimate had charged 0.25-0.89x of cl100k/o200k: marks
before words that neither table merges (PSV exports, shell pipelines, query strings,
minified CSS), long repeated letter patterns, lone carriage returns and control characters.

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


FILES = {
    "ops_psv_export.txt": psv_export,
    "ops_psv_flags.txt": psv_flags,
    "ops_shell_pipelines.txt": shell_pipelines,
    "ops_query_strings.txt": query_strings,
    "ops_css_minified.css": css_minified,
    "ops_repeated_letters.txt": repeated_letters,
    "ops_control_chars.txt": control_chars,
}

for name, make in FILES.items():
    with open(os.path.join(OUT, name), "w", newline="") as f:
        f.write(make())

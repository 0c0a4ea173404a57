#!/usr/bin/env python3
"""Send operator intents to the real model with and without compaction and tabulate the arms.

    real_model_ab.py CTXCONSOLE_BIN RESULTS.jsonl

Each intent goes out once per arm (`compacted`, `full`, `no-planner`) through
`ctxconsole send --compare … --json`; every result line is kept in RESULTS.jsonl and the
table printed is what the README quotes: per arm, how often a valid plan came back, mean
input/output tokens and mean latency.
"""
import json
import os
import statistics
import subprocess
import sys

MODEL = "local/smollm2"
# CTXCONSOLE_REAL_ARMS / CTXCONSOLE_REAL_INTENTS narrow a run on a slow machine.
ARMS = os.environ.get("CTXCONSOLE_REAL_ARMS", "full,no-planner").split(",")
INTENTS = [
    "remember this launch note, draft a blog from it and make an illustration",
    "take a screenshot of the settings page and click the save button",
    "search the web for prefix caching benchmarks, then summarise the top results",
    "what is the price of bitcoin in euros today?",
    "fix the failing test in the parser and open a pull request",
    "transcribe this podcast episode and write show notes",
    "recall what I told you about the launch date and answer the question",
    "open the dashboard in the browser and fill in the signup form",
    "generate an image of a lighthouse at dusk in watercolour",
    "review this pull request for security problems",
]


def main() -> int:
    binary, out_path = sys.argv[1], sys.argv[2]
    intents = INTENTS[: int(os.environ.get("CTXCONSOLE_REAL_INTENTS", len(INTENTS)))]
    rows = []
    with open(out_path, "w") as out:
        for intent in intents:
            cmd = [binary, "send", intent, "--model", MODEL, "--caller", "real-model", "--json"]
            for arm in ARMS:
                cmd += ["--compare", arm]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if not done.stdout.strip():
                print(f"send failed ({done.returncode}): {done.stderr.strip()[:300]}", file=sys.stderr)
                continue
            sent = json.loads(done.stdout)
            for r in sent.get("results", []):
                out.write(json.dumps(r) + "\n")
                out.flush()
                rows.append(r)
    table(rows)
    return 0


def table(rows):
    arms = []
    for r in rows:
        if r.get("arm") not in arms:
            arms.append(r.get("arm"))
    print(f"| arm | sent | valid plan | input tokens (mean; ctxconsole's estimate when the server sends no usage) | output tokens (mean) | catalog entries (mean) | latency s (mean) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for arm in arms:
        rs = [r for r in rows if r.get("arm") == arm]
        valid = sum(1 for r in rs if r.get("plan") and r["plan"].get("steps"))
        usage = [(r.get("usage") or {}) for r in rs]
        prompt = [u.get("prompt_tokens") for u in usage if u.get("prompt_tokens") is not None]
        if not prompt:
            # llama-cpp-python's server sends no usage in a stream: the request's estimate.
            prompt = [r.get("request", {}).get("input_tokens") for r in rs]
            prompt = [p for p in prompt if p is not None]
        completion = [u.get("completion_tokens") for u in usage if u.get("completion_tokens") is not None]
        entries = [r.get("request", {}).get("catalog_entries", 0) for r in rs]
        latency = [r.get("latency_ms", 0) / 1000 for r in rs]
        mean = lambda xs: f"{statistics.mean(xs):,.0f}" if xs else "–"
        print(
            f"| {arm} | {len(rs)} | {valid}/{len(rs)} | {mean(prompt)} | {mean(completion)} | "
            f"{mean(entries)} | {statistics.mean(latency):.1f} |" if latency else f"| {arm} | 0 | – | – | – | – | – |"
        )


if __name__ == "__main__":
    sys.exit(main())

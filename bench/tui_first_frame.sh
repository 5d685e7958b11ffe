#!/usr/bin/env bash
# Time to the first frame when the terminal UI opens a long session (issue 12): a session of
# 20,000 entries (~50 MB, tool results up to a few hundred KB, from the session_load example)
# opened with `pi --session <file>` in a pseudo-terminal, from exec to the end of the first
# synchronized frame that shows the conversation. Target: < 300 ms.
# Usage: bench/tui_first_frame.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
cargo build --release --quiet --bin pi --example session_load
BIN="${CARGO_TARGET_DIR:-target}/release"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$BIN/examples/session_load" gen "$WORK/big.jsonl" 20000 50
python3 bench/tui_first_frame.py "$BIN/pi" "$WORK/big.jsonl" "$RUNS"

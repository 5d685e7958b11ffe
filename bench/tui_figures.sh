#!/usr/bin/env bash
# Issue 25's streaming figures in one run (see bench/tui_figures.py): CPU and peak memory in
# both modes at 2,000 tokens/s with one SSE event per write, bytes written for a 10,000-token
# answer, and the delta-to-terminal delay (p50/p99).
# Usage: bench/tui_figures.sh [rounds] [pi binary]   (builds the release binary when none is given)
set -euo pipefail
cd "$(dirname "$0")/.."
PI="${2:-}"
if [ -z "$PI" ]; then
  cargo build --release --quiet --bin pi
  PI="$(realpath "${CARGO_TARGET_DIR:-target}")/release/pi"
fi
python3 bench/tui_figures.py "$PI" "${1:-3}"

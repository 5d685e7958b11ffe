#!/usr/bin/env bash
# The TUI streaming benchmark of the real binary in a pseudo-terminal (see bench/tui_stream.py):
# CPU, peak memory, bytes written to the terminal, idle CPU, and the delay from a delta to its
# text on the terminal, in both UI modes, inline (the default) and full-screen (MODE=fullscreen).
# Each run measures:
#   * 10,000 tokens at 2,000 tokens/s, events written in batches every 10 ms;
#   * the same with each event written on its own (PACED=1), as real providers send them;
#   * 400 tokens of markdown at 25 tokens/s, one event per write (a slow local model);
#   * 300 words on one line at 25 tokens/s (issue 25: the answer that showed nothing for 12 s).
# Usage: bench/tui_stream.sh [runs] [pi binary]   (builds the release binary when none is given)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
PI="${2:-}"
if [ -z "$PI" ]; then
  cargo build --release --quiet --bin pi
  PI="$PWD/target/release/pi"
fi
for _ in $(seq "$RUNS"); do
  for mode in inline fullscreen; do
    MODE=$mode python3 bench/tui_stream.py "$PI"
    MODE=$mode PACED=1 python3 bench/tui_stream.py "$PI"
    MODE=$mode PACED=1 RATE=25 TOKENS=400 IDLE=1 python3 bench/tui_stream.py "$PI"
    MODE=$mode PACED=1 RATE=25 TOKENS=300 IDLE=1 SHAPE=line python3 bench/tui_stream.py "$PI"
  done
done

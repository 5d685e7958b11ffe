#!/usr/bin/env bash
# The TUI streaming benchmark of the real binary in a pseudo-terminal (see bench/tui_stream.py):
# 10,000 tokens at 2,000 tokens/s; CPU, peak memory, bytes written to the terminal, idle CPU.
# Each run measures both server modes: events written in batches every 10 ms, and each event
# written on its own, paced (PACED=1), as real providers send them; each in both UI modes, inline
# (the default) and full-screen (MODE=fullscreen).
# Usage: bench/tui_stream.sh [runs]   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
cargo build --release --quiet --bin pi
for _ in $(seq "$RUNS"); do
  for mode in inline fullscreen; do
    MODE=$mode python3 bench/tui_stream.py "$PWD/target/release/pi"
    MODE=$mode PACED=1 python3 bench/tui_stream.py "$PWD/target/release/pi"
  done
done

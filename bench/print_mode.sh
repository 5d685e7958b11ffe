#!/usr/bin/env bash
# Whole-process cost of `pi`: `--version`, and `pi -p` against a local OpenAI-compatible server
# answering (a) one short text, (b) 20,000 tokens, one per SSE event, and (c) three turns: a
# `read` call, a `bash` call (`echo hi`), then a short text. Reports the median of
# RUNS runs of wall time, CPU time (user+sys) and peak RSS (bench/measure.py, from wait4 rusage).
# Usage: bench/print_mode.sh [runs]   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-9}"
ROOT="$PWD"
cargo build --release --quiet --bin pi
PI="$PWD/target/release/pi"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

mkdir -p "$WORK/agent" "$WORK/project"
echo "some notes" > "$WORK/project/notes.txt"
cat > "$WORK/agent/config.toml" <<TOML
model = "bench/bench"
[providers.bench]
api = "openai-completions"
base_url = "http://127.0.0.1:PORT/v1"
[[providers.bench.models]]
id = "bench"
TOML

measure() { # label, then the command
  local label="$1"; shift
  python3 "$ROOT/bench/measure.py" "$RUNS" "$label" -- "$@"
}

run_with_server() { # mode, label
  local port=$((20000 + RANDOM % 20000))
  MODE="$1" python3 bench/sse_server.py "$port" &
  local pid=$!
  for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
  mkdir -p "$WORK/live"
  sed "s/PORT/$port/" "$WORK/agent/config.toml" > "$WORK/live/config.toml"
  (cd "$WORK/project" && measure "$2" env -i PATH="$PATH" HOME="$WORK" \
    PI_CODING_AGENT_DIR="$WORK/live" "$PI" -p "hello")
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "pi bench, $RUNS runs each, medians ($(nproc) cores)"
measure "pi --version" "$PI" --version
run_with_server short "(a) pi -p, one short answer"
run_with_server long "(b) pi -p, 20,000 streamed tokens"
run_with_server tools "(c) pi -p, three turns with tools"

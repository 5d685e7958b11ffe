#!/usr/bin/env bash
# Whole-process cost of resuming a long session and asking once more (issue 29): `pi --session
# <file> -p` on a session of 20,000 entries (~50 MB, tool results up to a few hundred KB; made by
# examples/session_load.rs), against a local OpenAI-compatible server that reads the request and
# answers one short text. Reports the median of RUNS runs of wall time, CPU time (user+sys) and
# peak RSS of pi (bench/measure.py). The server's time to read the ~40 MB request is in the wall
# time only; CPU and memory are pi's own.
# Target: <= 0.25 s CPU and <= 150 MB peak.
# Usage: bench/resume_request.sh [runs]   (builds the release binary and the generator first)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
ROOT="$PWD"
# Two builds: together, the example's dev-dependencies would change the features the binary is
# built with, and so its code layout (build/hot_code.txt names would no longer match).
cargo build --release --quiet --bin pi
cargo build --release --quiet --example session_load
PI="$PWD/target/release/pi"
GEN="${CARGO_TARGET_DIR:-target}/release/examples/session_load"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

mkdir -p "$WORK/project" "$WORK/agent"
"$GEN" gen "$WORK/big.jsonl" 20000 50
port=$((20000 + RANDOM % 20000))
MODE=short python3 bench/sse_server.py "$port" &
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
# A window large enough that the whole history is sent (no compaction).
cat > "$WORK/agent/config.toml" <<TOML
model = "bench/bench"
[providers.bench]
api = "openai-completions"
base_url = "http://127.0.0.1:$port/v1"
[[providers.bench.models]]
id = "bench"
context_window = 100000000
TOML
echo "pi resume bench, $RUNS runs each, medians ($(nproc) cores), session $(du -m "$WORK/big.jsonl" | cut -f1) MB"
run() { # label, then extra flags
  local label="$1"; shift
  (cd "$WORK/project" && python3 "$ROOT/bench/measure.py" "$RUNS" "$label" -- env -i PATH="$PATH" \
    HOME="$WORK" PI_CODING_AGENT_DIR="$WORK/agent" "$PI" --model bench/bench --session "$WORK/big.jsonl" "$@" \
    -p "one more thing")
}
run "resume + one request (read-only)" --read-only
run "resume + one request (appending)"

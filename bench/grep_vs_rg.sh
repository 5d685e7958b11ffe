#!/usr/bin/env bash
# pi's in-process grep against ripgrep on a large source tree, side by side, in one run.
#
#   bench/grep_vs_rg.sh [TREE] [IDENTIFIER]      (RUNS=7 by default)
#
# TREE defaults to the cargo registry sources (~/.cargo/registry/src), IDENTIFIER to `Result`.
# Three cases, each timed RUNS times with the two programs interleaved after one warm-up run
# each (so both read from the page cache), reporting the median wall time:
#
#   all   every match of IDENTIFIER, printed   pi: grep_bench all   rg: rg -n
#   tool  what the model gets: first 100       pi: the grep tool    rg: rg -n | head -n 100
#   none  a token that occurs nowhere (pure scan speed)
#
# Both sides search hidden files and honour .gitignore outside git repositories
# (rg --hidden --no-require-git), as the tool does. Output goes through `wc -l` on both sides,
# and the line counts are printed so a difference in what was searched shows up.
set -euo pipefail
cd "$(dirname "$0")/.."

TREE="${1:-$HOME/.cargo/registry/src}"
PATTERN="${2:-Result}"
RUNS="${RUNS:-7}"
ABSENT="ZqXjv_no_such_identifier_91"

if ! command -v rg >/dev/null 2>&1; then
  echo "installing ripgrep..." >&2
  apt-get install -y ripgrep >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y ripgrep >/dev/null; }
fi

cargo build --quiet --release --example grep_bench
BIN="${CARGO_TARGET_DIR:-target}/release/examples/grep_bench"
RG=(rg -n --hidden --no-require-git)

now_ms() { date +%s%3N; }

# time_ms CMD... : runs CMD (a shell string) with output counted, prints "ms lines".
time_ms() {
  local start end lines
  start=$(now_ms)
  lines=$( (bash -c "$1" || true) | wc -l)
  end=$(now_ms)
  echo "$((end - start)) $lines"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_case() {
  local name="$1" pi_cmd="$2" rg_cmd="$3"
  local pi_times=() rg_times=() pi_lines rg_lines r
  bash -c "$pi_cmd" >/dev/null || true
  bash -c "$rg_cmd" >/dev/null || true
  for _ in $(seq "$RUNS"); do
    r=$(time_ms "$rg_cmd"); rg_times+=("${r% *}"); rg_lines="${r#* }"
    r=$(time_ms "$pi_cmd"); pi_times+=("${r% *}"); pi_lines="${r#* }"
  done
  local pi_med rg_med
  pi_med=$(printf '%s\n' "${pi_times[@]}" | median)
  rg_med=$(printf '%s\n' "${rg_times[@]}" | median)
  awk -v n="$name" -v p="$pi_med" -v r="$rg_med" -v pl="$pi_lines" -v rl="$rg_lines" \
    'BEGIN { printf "%-6s %10d %10d %8.2fx %12d %12d\n", n, p, r, (r > 0 ? p / r : 0), pl, rl }'
  echo "       pi runs: ${pi_times[*]}   rg runs: ${rg_times[*]}"
}

files=$(find "$TREE" -type f | wc -l)
size=$(du -sh "$TREE" | cut -f1)
echo "tree: $TREE ($files files, $size); pattern: $PATTERN; runs: $RUNS; cores: $(nproc)"
echo "$(rg --version | head -1); pi grep: $BIN"
printf '%-6s %10s %10s %9s %12s %12s\n' case "pi ms" "rg ms" "pi/rg" "pi lines" "rg lines"
run_case all "$BIN all '$PATTERN' '$TREE'" "${RG[*]} '$PATTERN' '$TREE'"
run_case tool "$BIN tool '$PATTERN' '$TREE'" "${RG[*]} '$PATTERN' '$TREE' | head -n 100"
run_case none "$BIN all '$ABSENT' '$TREE'" "${RG[*]} '$ABSENT' '$TREE'"

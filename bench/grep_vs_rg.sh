#!/usr/bin/env bash
# pi's in-process grep against ripgrep on a large source tree, side by side, in one run.
#
#   bench/grep_vs_rg.sh [TREE] [IDENTIFIER]      (RUNS=7 by default)
#
# TREE defaults to the cargo registry sources (~/.cargo/registry/src), IDENTIFIER to `Result`.
# Three cases, each timed RUNS times with the two programs interleaved after one warm-up run
# each (so both read from the page cache), reporting the median wall time and the median CPU
# time (user + system, in ms; steadier than wall time when the machine is busy):
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

# time_one CMD : runs CMD (a shell string) with its output counted by `wc -l`; prints
# "wall_ms cpu_ms lines" (cpu = user + system time of the command and its children).
time_one() {
  local tf lines start end
  tf=$(mktemp)
  start=$(date +%s%N)
  lines=$( (/usr/bin/time -f '%U %S' -o "$tf" bash -c "$1" || true) | wc -l)
  end=$(date +%s%N)
  # GNU time puts a "non-zero status" line first when the command fails (rg: no match).
  tail -n 1 "$tf" | awk -v w="$(((end - start) / 1000000))" -v l="$lines" \
    '{ printf "%d %d %d\n", w, ($1 + $2) * 1000, l }'
  rm -f "$tf"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_case() {
  local name="$1" pi_cmd="$2" rg_cmd="$3"
  local pi_wall=() rg_wall=() pi_cpu=() rg_cpu=() pi_lines rg_lines w c l
  bash -c "$pi_cmd" >/dev/null || true
  bash -c "$rg_cmd" >/dev/null || true
  for _ in $(seq "$RUNS"); do
    read -r w c l < <(time_one "$rg_cmd"); rg_wall+=("$w"); rg_cpu+=("$c"); rg_lines=$l
    read -r w c l < <(time_one "$pi_cmd"); pi_wall+=("$w"); pi_cpu+=("$c"); pi_lines=$l
  done
  local pw rw pc rc
  pw=$(printf '%s\n' "${pi_wall[@]}" | median)
  rw=$(printf '%s\n' "${rg_wall[@]}" | median)
  pc=$(printf '%s\n' "${pi_cpu[@]}" | median)
  rc=$(printf '%s\n' "${rg_cpu[@]}" | median)
  awk -v n="$name" -v pw="$pw" -v rw="$rw" -v pc="$pc" -v rc="$rc" -v pl="$pi_lines" -v rl="$rg_lines" \
    'BEGIN { printf "%-5s %8d %8d %7.2fx %8d %8d %7.2fx %9d %9d\n", n, pw, rw, (rw > 0 ? pw / rw : 0), pc, rc, (rc > 0 ? pc / rc : 0), pl, rl }'
  echo "      wall pi: ${pi_wall[*]} | rg: ${rg_wall[*]}"
}

files=$(find "$TREE" -type f | wc -l)
size=$(du -sh "$TREE" | cut -f1)
echo "tree: $TREE ($files files, $size); pattern: $PATTERN; runs: $RUNS; cores: $(nproc)"
echo "$(rg --version | head -1); pi grep: $BIN"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %8s %8s %8s %8s %8s %8s %9s %9s\n' case "pi wall" "rg wall" "ratio" "pi cpu" "rg cpu" "ratio" "pi lines" "rg lines"
run_case all "$BIN all '$PATTERN' '$TREE'" "${RG[*]} '$PATTERN' '$TREE'"
run_case tool "$BIN tool '$PATTERN' '$TREE'" "${RG[*]} '$PATTERN' '$TREE' | head -n 100"
run_case none "$BIN all '$ABSENT' '$TREE'" "${RG[*]} '$ABSENT' '$TREE'"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

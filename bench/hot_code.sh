#!/usr/bin/env bash
# Regenerates build/hot_code.txt, the functions the common paths run, which build.rs hands to
# the linker so they sit together at the start of the code (see build.rs for why: peak memory).
#
# Runs the release binary under callgrind through the paths that matter for memory: `--version`,
# `pi -p` on one short answer, on 2,000 streamed tokens, in JSON mode and on the three-turn tool
# case (bench/sse_server.py), and the TUI streaming 400 tokens in a pseudo-terminal, in both UI
# modes (bench/tui_stream.py). Every function any of them ran that the binary defines is listed,
# in the order first seen. Symbol names carry hashes that survive most edits to function bodies
# but not renames, new generic uses, dependency or compiler upgrades, or build settings; a
# function not found is placed as the linker likes, so rerun this after such changes (the
# memory figures of bench/print_mode.sh show when it is due).
# Usage: bench/hot_code.sh [pi binary]   (builds the release binary when none is given; needs
# valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
PI="${1:-}"
if [ -z "$PI" ]; then
  cargo build --release --quiet --bin pi
  PI="$PWD/target/release/pi"
fi
PI="$(realpath "$PI")"
OUT="$PWD/build/hot_code.txt"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

# Profiles are named so that sorting them gives the order they were taken in.
GRIND=(valgrind -q --tool=callgrind --demangle=no)
"${GRIND[@]}" --callgrind-out-file="$WORK/cg.0version.%p" "$PI" --version > /dev/null
mkdir -p "$WORK/home" "$WORK/project"
echo "some notes" > "$WORK/project/notes.txt"
for mode in short long tools; do
  port=$((20000 + RANDOM % 20000))
  MODE=$mode TOKENS=2000 python3 bench/sse_server.py "$port" &
  pid=$!
  for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
  python3 -c 'import sys; sys.path.insert(0, "bench"); from bench_server import write_config
write_config(sys.argv[1], int(sys.argv[2]))' "$WORK/home" "$port" > /dev/null
  run() { (cd "$WORK/project" && env -i PATH="$PATH" HOME="$WORK/home" \
    PI_CODING_AGENT_DIR="$WORK/home/agent" "$@"); }
  run "${GRIND[@]}" --callgrind-out-file="$WORK/cg.1$mode.%p" "$PI" -p hello > /dev/null 2>&1
  [ "$mode" = short ] && run "${GRIND[@]}" --callgrind-out-file="$WORK/cg.2json.%p" \
    "$PI" --mode json -p hello > /dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
done

# The TUI: bench/tui_stream.py runs whatever binary it is given in a pseudo-terminal.
cat > "$WORK/pi-grind" <<SH
#!/bin/sh
exec ${GRIND[*]} --callgrind-out-file=$WORK/cg.3tui.%p "$PI" "\$@"
SH
chmod +x "$WORK/pi-grind"
for mode in inline fullscreen; do
  MODE=$mode TOKENS=400 RATE=100 IDLE=0.1 python3 bench/tui_stream.py "$WORK/pi-grind" > /dev/null
  # As bench/tui_figures.sh measures it: one SSE event per write.
  MODE=$mode PACED=1 TOKENS=2000 RATE=500 IDLE=0.1 python3 bench/tui_stream.py "$WORK/pi-grind" \
    > /dev/null
done

mkdir -p build
python3 - "$PI" "$OUT" "$WORK" <<'PY'
import glob, re, subprocess, sys
pi, out, work = sys.argv[1:]
defined = set()
for line in subprocess.run(["nm", "--defined-only", pi], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        defined.add(parts[2])
names, seen = [], set()
for path in sorted(glob.glob(f"{work}/cg.*")):
    for m in re.finditer(r"^c?fn=\(\d+\) (.+)$", open(path).read(), re.M):
        name = m.group(1).strip()
        if name in defined and name not in seen:
            seen.add(name)
            names.append(name)
with open(out, "w") as f:
    f.write("\n".join(names) + "\n")
print(f"{len(names)} functions written to {out}")
PY
# The linker reads the list; cargo does not watch it. Touching the binary's source relinks it
# at the next release build without compiling the library again.
touch src/main.rs

#!/usr/bin/env bash
# Session storage benchmark (issue 5):
#   (a) resume a session of 20,000 entries (~50 MB, tool results up to a few hundred KB):
#       load the file, build the context, hand it to an Agent — time and peak memory;
#   (b) list 1,000 sessions of 1 MB each, with the files in the page cache (warm) and after
#       evicting just those files from it (cold, via posix_fadvise; nothing else is touched);
#   (c) count the messages of those 1,000 sessions, as the picker does after listing them;
#   (d) prepare a compaction of the 20,000-entry session: cut point, summary requests, the
#       compaction entry appended and synced (the model's time excluded).
# Targets: (a) < 300 ms and peak memory < 3x the file size; (b) < 300 ms.
# Prints the median of RUNS runs. Usage: bench/session_resume.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
cargo build --release --quiet --example session_load
BIN="${CARGO_TARGET_DIR:-target}/release/examples/session_load"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$BIN" gen "$WORK/big.jsonl" 20000 50
"$BIN" gen-many "$WORK/many" 1000 1

python3 - "$BIN" "$WORK" "$RUNS" <<'PY'
import os, re, statistics, subprocess, sys

bin_, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
big = os.path.join(work, "big.jsonl")
many = os.path.join(work, "many")

def run(cmd):
    p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd, capture_output=True, text=True, check=True)
    rss = int(re.search(r"MAXRSS (\d+)", p.stderr).group(1)) / 1024
    return p.stdout, rss

def evict(folder):
    for name in os.listdir(folder):
        fd = os.open(os.path.join(folder, name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)

size_mb = os.path.getsize(big) / 1e6
times, loads, peaks = [], [], []
for _ in range(runs):
    out, rss = run([bin_, "load", big])
    m = re.search(r"resume: ([\d.]+) ms \(load ([\d.]+) ms\)", out)
    times.append(float(m.group(1))); loads.append(float(m.group(2))); peaks.append(rss)
print(f"session bench, {runs} runs each, medians ({os.cpu_count()} cores)")
print(f"(a) resume 20,000 entries ({size_mb:.1f} MB): {statistics.median(times):6.1f} ms to a ready agent "
      f"(parse {statistics.median(loads):.1f} ms), peak {statistics.median(peaks):.1f} MB "
      f"= {statistics.median(peaks) / size_mb:.2f}x the file  [target < 300 ms, < 3x]")
print(f"    all runs (ms): {', '.join(f'{t:.0f}' for t in times)}")

for label, cold in (("warm", False), ("cold", True)):
    times, read = [], 0.0
    for _ in range(runs):
        if cold:
            evict(many)
        out, _ = run([bin_, "list", many])
        m = re.search(r"list: ([\d.]+) ms \| (\d+) sessions, ([\d.]+) MB on disk, ([\d.]+) MB read", out)
        times.append(float(m.group(1))); read = float(m.group(4)); disk = float(m.group(3)); n = m.group(2)
    print(f"(b) list {n} sessions x 1 MB ({disk:.0f} MB), {label} cache: {statistics.median(times):6.1f} ms, "
          f"{read:.1f} MB read  [target < 300 ms]")

# The picker's message counts, which arrive after the listing (every file read whole).
def median_ms(cmd, label):
    """Median over the runs of the milliseconds `cmd` prints after `label:`."""
    times = []
    for _ in range(runs):
        out, _ = run(cmd)
        times.append(float(re.search(label + r": ([\d.]+) ms", out).group(1)))
    return statistics.median(times)

print(f"(c) message counts of those sessions (after the listing), warm cache: "
      f"{median_ms([bin_, 'count', many], 'count'):6.1f} ms")

# Preparing a compaction of the 20,000-entry session (model time excluded).
print(f"(d) prepare a compaction of the 20,000-entry session (cut, requests, entry): "
      f"{median_ms([bin_, 'prepare', big], 'prepare'):6.1f} ms  [target < 150 ms]")
PY

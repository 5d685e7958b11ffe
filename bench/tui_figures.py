#!/usr/bin/env python3
"""Issue 25's streaming figures in one run: the real TUI in a pseudo-terminal receiving a
10,000-token answer at 2,000 tokens/s, one SSE event per write (as providers send them), in
both modes (inline, the default, and --fullscreen). For each mode it prints:

  * streaming CPU as % of one core, and peak resident memory (VmHWM);
  * bytes written to the terminal for the whole answer;
  * the delay from a delta's arrival at pi to its text on the terminal, p50 and p99: the
    paced server notes when it has written a delta holding a marker word, the pty reader
    notes when that marker first appears in pi's output (both on this machine's monotonic
    clock; the loopback socket adds microseconds).

Each measurement is one run of bench/tui_stream.py (PACED=1 RATE=2000 TOKENS=10000);
RUNS rounds alternate the modes and the medians are printed with every round's figures and
the load average before it, since other work on the machine (builds) shows in CPU and delay.

Usage: tui_figures.py PI_BINARY [RUNS]   (bench/tui_figures.sh builds the release binary)
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("inline", "fullscreen")


def measure(pi, mode):
    env = {**os.environ, "MODE": mode, "PACED": "1", "RATE": "2000", "TOKENS": "10000",
           "IDLE": "1", "JSON": "1"}
    out = subprocess.run([sys.executable, os.path.join(HERE, "tui_stream.py"), pi], env=env,
                         capture_output=True, text=True, timeout=120)
    for line in out.stdout.splitlines():
        if line.startswith("JSON "):
            return json.loads(line[5:])
    sys.exit(f"tui_stream.py ({mode}) gave no figures:\n{out.stdout}\n{out.stderr}")


def main():
    pi = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cores = os.cpu_count()
    results = {m: [] for m in MODES}
    print(f"pi TUI, 10,000 tokens at 2,000 tokens/s, one SSE event per write, 200x50 pty, "
          f"{cores} cores, {runs} rounds")
    for r in range(runs):
        for mode in MODES:
            load = os.getloadavg()[0]
            f = measure(pi, mode)
            f["load"] = load
            results[mode].append(f)
            print(f"  round {r + 1} {mode:10s} load {load:4.2f}: cpu {f['cpu_pct']:5.2f}%, "
                  f"peak {f['peak_mb']:5.1f} MB, {f['bytes'] / 1e3:6.1f} KB written, "
                  f"delay p50 {f['p50_ms']:5.1f} ms p99 {f['p99_ms']:5.1f} ms "
                  f"({f['markers_seen']}/{f['markers_sent']} markers)", flush=True)
    print("medians (text streamed: %.1f KB)" % (results[MODES[0]][0]["text_bytes"] / 1e3))
    print(f"  {'mode':10s} {'CPU % core':>10s} {'peak RSS':>9s} {'to terminal':>12s} "
          f"{'delay p50':>10s} {'delay p99':>10s}")
    for mode in MODES:
        rows = results[mode]

        def med(key):
            return statistics.median(f[key] for f in rows)
        print(f"  {mode:10s} {med('cpu_pct'):9.2f}% {max(f['peak_mb'] for f in rows):6.1f} MB "
              f"{med('bytes') / 1e3:9.1f} KB {med('p50_ms'):7.1f} ms {med('p99_ms'):7.1f} ms")
    loads = [f["load"] for rows in results.values() for f in rows]
    print(f"  load average (1 min) before the rounds: {min(loads):.2f}-{max(loads):.2f} "
          f"on {cores} cores" + ("  (busy: rerun when the machine is quieter)"
                                if max(loads) > cores / 2 else ""))


if __name__ == "__main__":
    main()

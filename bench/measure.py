#!/usr/bin/env python3
"""Run a command N times; print median wall ms, CPU ms (user+sys) and peak RSS MB, and the
slowest run's CPU (a target met by the median alone can still be missed by some runs).

Usage: measure.py RUNS LABEL -- CMD [ARGS...]
CPU comes from wait4() rusage; peak RSS from /usr/bin/time (a small C program, so the memory of
the forking Python process does not count, as it would in Python's own rusage).
"""
import os
import statistics
import subprocess
import sys
import time


def main():
    runs = int(sys.argv[1])
    label = sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    walls, cpus, rss = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        walls.append((time.perf_counter() - start) * 1000)
        err = p.stderr.read().decode(errors="replace")
        if os.waitstatus_to_exitcode(status) != 0:
            sys.stderr.write(err)
            sys.exit(f"{label}: command failed")
        cpus.append((usage.ru_utime + usage.ru_stime) * 1000)
        kb = [int(l.split()[1]) for l in err.splitlines() if l.startswith("MAXRSS ")]
        rss.append(kb[-1] / 1024 if kb else float("nan"))
    print(f"{label:<36} wall {statistics.median(walls):7.1f} ms   cpu {statistics.median(cpus):7.1f} ms   peak {statistics.median(rss):6.1f} MB   cpu max {max(cpus):7.1f} ms")


main()

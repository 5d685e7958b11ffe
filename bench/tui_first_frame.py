#!/usr/bin/env python3
"""Time from exec to the first drawn frame of `pi --session <file>` in a pseudo-terminal.

A frame is drawn inside synchronized output (ESC [ ? 2026 h ... ESC [ ? 2026 l); the first one
that ends after the session is open is the first frame the person sees. Prints the median and
every run. Usage: tui_first_frame.py <pi> <session.jsonl> [runs]
"""

import os
import shutil
import signal
import statistics
import sys
import tempfile
import time

from bench_server import ModelsHandler, Terminal, serve, spawn_pi, write_config

END_FRAME = b"\x1b[?2026l"


def one_run(pi, session, port):
    work = tempfile.mkdtemp(prefix="pi-first-frame-")
    try:
        agent = write_config(work, port)
        start = time.monotonic()
        pid, fd = spawn_pi(pi, work, agent, 40, 120, ("--session", session))
        term = Terminal(fd)
        deadline = start + 20
        took = float("nan")
        while time.monotonic() < deadline:
            if term.seen(END_FRAME):
                took = (time.monotonic() - start) * 1000
                break
            time.sleep(0.0005)
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)
        return took
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    pi = os.path.abspath(sys.argv[1])
    session = os.path.abspath(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    port = serve(ModelsHandler)
    times = [one_run(pi, session, port) for _ in range(runs)]
    size = os.path.getsize(session) / 1e6
    print(f"first frame of a {size:.0f} MB session (20,000 entries), {runs} runs, "
          f"{os.cpu_count()} cores")
    print(f"  median {statistics.median(times):6.1f} ms  [target < 300 ms]")
    print(f"  all runs (ms): {', '.join(f'{t:.0f}' for t in times)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Start-up with MCP servers configured (issue 16): none versus three stdio servers.

(a) TUI: time from exec to the first drawn frame in a pseudo-terminal, with no MCP server and
    with three servers that each take DELAY_MS to start (they must not delay the frame).
(b) Print mode: wall time of `pi -p hello` against a local model server, with no MCP server,
    with three servers that start at once (the wait is their handshake), and with three that
    never finish starting within startup_timeout_sec = 1 (the wait is capped there).

Usage: mcp_start.py <pi> <mcp_bench> [runs]
"""

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_server import Server, Terminal, serve, spawn_pi, write_config
from sse_server import Handler

END_FRAME = b"\x1b[?2026l"
DELAY_MS = 3000


def config(work, port, server_bin, servers, delay_ms, timeout=None):
    agent = write_config(work, port)
    with open(os.path.join(agent, "config.toml"), "a") as f:
        for i in range(servers):
            f.write(f'\n[mcp_servers.s{i}]\ncommand = "{server_bin}"\n'
                    f'args = ["serve", "{delay_ms}"]\n')
            if timeout is not None:
                f.write(f"startup_timeout_sec = {timeout}\n")
    return agent


def first_frame(pi, port, server_bin, servers):
    work = tempfile.mkdtemp(prefix="pi-mcp-frame-")
    try:
        agent = config(work, port, server_bin, servers, DELAY_MS)
        start = time.monotonic()
        pid, fd = spawn_pi(pi, work, agent, 40, 120)
        term = Terminal(fd)
        took = float("nan")
        while time.monotonic() < start + 20:
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


def print_mode(pi, port, server_bin, servers, delay_ms, timeout=None):
    work = tempfile.mkdtemp(prefix="pi-mcp-print-")
    try:
        agent = config(work, port, server_bin, servers, delay_ms, timeout)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": work, "PI_CODING_AGENT_DIR": agent}
        start = time.monotonic()
        p = subprocess.run([pi, "--no-session", "-p", "hello"], env=env, cwd=work,
                           stdin=subprocess.DEVNULL, capture_output=True)
        took = (time.monotonic() - start) * 1000
        if p.returncode != 0:
            sys.exit(p.stderr.decode(errors="replace"))
        return took
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(label, times, note=""):
    print(f"  {label:<52} median {statistics.median(times):7.1f} ms  "
          f"(min {min(times):.0f}, max {max(times):.0f}){note}")


def main():
    pi, server_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    port = serve(Handler)
    print(f"MCP start-up, {runs} runs each, {os.cpu_count()} cores")
    print("(a) TUI, exec to first frame")
    for n in (0, 3):
        label = "no MCP server" if n == 0 else f"3 stdio servers, each {DELAY_MS} ms to start"
        report(label, [first_frame(pi, port, server_bin, n) for _ in range(runs)])
    print("(b) print mode, `pi -p hello` wall time")
    report("no MCP server", [print_mode(pi, port, server_bin, 0, 0) for _ in range(runs)])
    report("3 stdio servers, ready at once",
           [print_mode(pi, port, server_bin, 3, 0) for _ in range(runs)])
    report("3 stdio servers never ready, startup_timeout_sec = 1",
           [print_mode(pi, port, server_bin, 3, 60000, 1) for _ in range(runs)],
           "  [capped by the timeout]")


if __name__ == "__main__":
    main()

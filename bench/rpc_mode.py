#!/usr/bin/env python3
"""CPU cost of RPC mode: `pi --mode rpc` streams a 20,000-delta answer from bench/sse_server.py
("long" mode) as JSON lines; the client sends one prompt, reads until agent_end, closes stdin.

Usage: rpc_mode.py PI_BINARY RUNS
Reports the median CPU time (user+sys of the pi process alone, from wait4) and wall time.
Target (issue 15): at most 60 ms of CPU.
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    pi, runs = sys.argv[1], int(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))
    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.join(here, "sse_server.py"), str(port)],
                              env={**os.environ, "MODE": "long"})
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    work = tempfile.mkdtemp()
    agent = os.path.join(work, "agent")
    os.makedirs(agent)
    with open(os.path.join(agent, "config.toml"), "w") as f:
        f.write(f'model = "bench/bench"\n[providers.bench]\napi = "openai-completions"\n'
                f'base_url = "http://127.0.0.1:{port}/v1"\n[[providers.bench.models]]\nid = "bench"\n')
    env = {"PATH": os.environ["PATH"], "HOME": work, "PI_CODING_AGENT_DIR": agent}
    cpus, walls, lines_seen = [], [], []
    try:
        for _ in range(runs):
            start = time.perf_counter()
            p = subprocess.Popen([pi, "--mode", "rpc", "--no-session"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                 cwd=work)
            p.stdin.write(b'{"id":"1","type":"prompt","message":"hello"}\n')
            p.stdin.flush()
            n = 0
            for line in p.stdout:
                n += 1
                if line.startswith(b'{"type":"agent_end"'):
                    break
            p.stdin.close()
            p.stdout.read()
            _, status, usage = os.wait4(p.pid, 0)
            walls.append((time.perf_counter() - start) * 1000)
            cpus.append((usage.ru_utime + usage.ru_stime) * 1000)
            lines_seen.append(n)
    finally:
        server.kill()
    print(f"pi --mode rpc, 20,000 streamed deltas, {runs} runs, {os.cpu_count()} cores: "
          f"cpu {statistics.median(cpus):.1f} ms (median; target <= 60 ms), "
          f"wall {statistics.median(walls):.1f} ms, {statistics.median(lines_seen):.0f} lines")


main()

#!/usr/bin/env python3
"""The RPC reader on one long line: `pi --mode rpc` gets a `get_state` command padded to SIZE
megabytes (an unknown field, which the command ignores), then a small `get_state`; the client
times from the first byte written to each response. No model is called; the only cost is
reading, splitting and parsing the line (a dummy Anthropic key gives pi a model; nothing is
sent).

Usage: rpc_long_line.py PI_BINARY [SIZE_MB] [RUNS]   (defaults: 40 MB, 3 runs)
Reports the median wall time to the long line's response and to the next one. pi gets a
config.toml whose [rpc] max_line_bytes admits the line (older binaries ignore the key).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def one_run(pi, line, env, cwd):
    p = subprocess.Popen([pi, "--mode", "rpc", "--no-session"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    start = time.perf_counter()
    p.stdin.write(line)
    p.stdin.write(b'{"id":"after","type":"get_state"}\n')
    p.stdin.flush()
    times = {}
    for raw in p.stdout:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if msg.get("type") == "response" and msg.get("id") in ("long", "after"):
            times[msg["id"]] = time.perf_counter() - start
            if not msg.get("success"):
                times[msg["id"] + "_error"] = msg.get("error")
            if len(times) >= 2 and "after" in times:
                break
    p.stdin.close()
    p.stdout.read()
    p.wait()
    return times


def main():
    pi = sys.argv[1]
    size_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    head = b'{"id":"long","type":"get_state","padding":"'
    tail = b'"}\n'
    line = head + b"x" * (size_mb * 1_000_000 - len(head) - len(tail)) + tail
    work = tempfile.mkdtemp()
    try:
        agent = os.path.join(work, "agent")
        os.makedirs(agent)
        with open(os.path.join(agent, "config.toml"), "w") as f:
            f.write(f"[rpc]\nmax_line_bytes = {len(line) + 1024}\n")
        env = {"PATH": os.environ["PATH"], "HOME": work, "PI_CODING_AGENT_DIR": agent,
               "OLLAMA_HOST": "127.0.0.1:9", "ANTHROPIC_API_KEY": "not-used"}
        long_t, after_t = [], []
        for _ in range(runs):
            t = one_run(pi, line, env, work)
            if "long_error" in t:
                print(f"the long line was refused: {t['long_error']}", file=sys.stderr)
            long_t.append(t.get("long", float("nan")))
            after_t.append(t.get("after", float("nan")))
        print(f"{size_mb} MB line, {runs} runs: response to it after "
              f"{statistics.median(long_t):.3f} s (median; runs {', '.join(f'{x:.3f}' for x in long_t)}), "
              f"to the next command after {statistics.median(after_t):.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

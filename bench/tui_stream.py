#!/usr/bin/env python3
"""The interactive TUI under a live stream, measured from outside.

Starts a local OpenAI-compatible server that streams TOKENS tokens (default 10,000, about 57 KB
of markdown) at RATE tokens per second (default 2,000), runs the release `pi` binary in a
pseudo-terminal of ROWSxCOLS (default 50x200), types a prompt, and reports for the streaming
window:

  * CPU time of the pi process (user+sys from /proc/<pid>/stat) and its average as % of a core;
  * peak resident memory (VmHWM from /proc/<pid>/status);
  * bytes pi wrote to the terminal, next to the bytes of text streamed;
  * CPU used while idle afterwards (IDLE seconds, nothing happening);
  * the delay from a delta leaving the server to its text reaching the terminal (p50, p99,
    max): every MARK-th token is a marker word (`q00042`) whose first appearance in pi's
    output is timed; markers pi never wrote whole (a redraw that reused cells) are counted.

With PACED=1 the server writes each SSE event on its own, one every 1/RATE seconds, as real
providers send them (each event then wakes the whole chain); by default it writes RATE/100
events together every 10 ms.

MODE=fullscreen runs pi with --fullscreen (the alternate screen); by default it runs in the
inline mode, which prints the conversation into the terminal's scrollback.

Usage: bench/tui_stream.py [PI_BINARY]   (bench/tui_stream.sh builds it and calls this)
Environment: TOKENS, RATE, ROWS, COLS, IDLE, CODE (0: no code blocks), PACED (1: one event per
write), SHAPE (`markdown`, the default, or `line`: one paragraph without a newline, as in
issue 25's 300-word answer), MARK (default 20), MODE (inline or fullscreen), JSON (1: also
one line `JSON {...}` with the figures, for bench/tui_figures.py).
"""
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

from bench_server import ModelsHandler, Terminal, chunk, quit_pi, serve, spawn_pi, write_config

TOKENS = int(os.environ.get("TOKENS", "10000"))
RATE = int(os.environ.get("RATE", "2000"))
ROWS = int(os.environ.get("ROWS", "50"))
COLS = int(os.environ.get("COLS", "200"))
IDLE = float(os.environ.get("IDLE", "5"))
CODE = os.environ.get("CODE", "1") != "0"  # CODE=0: no fenced code blocks (no highlighting)
PACED = os.environ.get("PACED", "0") == "1"
SHAPE = os.environ.get("SHAPE", "markdown")
MARK = int(os.environ.get("MARK", "20"))
MODE = os.environ.get("MODE", "inline")
# The server sends RATE*TICK tokens every TICK seconds (one token per write when paced).
TICK = 1.0 / RATE if PACED else 0.01

WORDS = ("the agent reads files runs commands and edits code while the person watches "
         "streaming output arrives token by token through the terminal renderer which "
         "must stay calm fast and correct under load").split()


def marker(i):
    return f"q{i:05d}"


def tokens():
    """About 5.7 bytes per token: words, paragraphs, a list, headings and code now and then
    (SHAPE=line: words only, one long line). Every MARK-th word is a marker."""
    out = []
    for i in range(TOKENS):
        w = marker(i) if i % MARK == MARK // 2 else WORDS[i % len(WORDS)]
        if SHAPE == "line":
            pass
        elif i % 600 == 0:
            out.append(f"\n\n## Part {i // 600 + 1}\n\n")
        elif CODE and i % 250 == 125:
            out.append("\n\n```rust\nfn main() { println!(\"step\"); }\n```\n\n")
        elif i % 90 == 0:
            out.append("\n\n")
        elif i % 30 == 0:
            out.append("\n- ")
        out.append(w + " ")
    return out


TOKEN_LIST = tokens()
TEXT_BYTES = sum(len(t.encode()) for t in TOKEN_LIST)
STREAM_DONE = threading.Event()
STREAM_STARTED = threading.Event()
# Marker number -> when the server sent it / when pi first wrote it.
SENT = {}
SHOWN = {}
MARKER = re.compile(rb"q(\d{5})")


class Shown:
    """Finds marker words in pi's output (a marker may be split across two reads)."""

    def __init__(self):
        self.carry = b""

    def __call__(self, data, when):
        text = self.carry + data
        for m in MARKER.finditer(text):
            SHOWN.setdefault(int(m.group(1)), when)
        self.carry = text[-6:]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


class Handler(ModelsHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        if self.not_a_chat():
            return
        send = self.start_chunked_stream()
        STREAM_STARTED.set()
        per_tick = max(1, int(RATE * TICK))
        start = time.monotonic()
        for n in range(0, len(TOKEN_LIST), per_tick):
            # Paced against the clock, so a slow tick does not slow the whole stream.
            due = start + (n / per_tick) * TICK
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            batch = TOKEN_LIST[n:n + per_tick]
            send(b"".join(chunk({"content": t}) for t in batch))
            sent = time.monotonic()
            for t in batch:
                m = MARKER.search(t.encode())
                if m:
                    SENT[int(m.group(1))] = sent
        send(chunk({}, "stop"))
        send(b'data: {"id":"b","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d}}\n\n' % TOKENS)
        send(b"data: [DONE]\n\n")
        self.end_chunked_stream()
        STREAM_DONE.set()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    pi = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/pi")
    port = serve(Handler)
    work = tempfile.mkdtemp(prefix="pi-tui-bench-")
    agent = write_config(work, port)
    args = ("--no-session", "--fullscreen") if MODE == "fullscreen" else ("--no-session",)
    pid, fd = spawn_pi(pi, work, agent, ROWS, COLS, args)
    term = Terminal(fd)
    term.listeners.append(Shown())

    deadline = time.monotonic() + 10
    while not term.seen(b"bench") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    startup_bytes = term.count()

    cpu0 = cpu_seconds(pid)
    bytes0 = term.count()
    t0 = time.monotonic()
    term.write(b"stream please\r")
    if not STREAM_STARTED.wait(10):
        sys.exit("pi never called the server; it wrote:\n" + term.tail.decode(errors="replace"))
    if not STREAM_DONE.wait(TOKENS / RATE * 4 + 10):
        sys.exit("the stream did not finish")
    while not term.quiet_for(0.3):
        time.sleep(0.05)
    t1 = time.monotonic()
    cpu1 = cpu_seconds(pid)
    bytes1 = term.count()
    peak = peak_rss_mb(pid)

    time.sleep(1.0)
    idle_cpu0 = cpu_seconds(pid)
    idle_bytes0 = term.count()
    time.sleep(IDLE)
    idle_cpu1 = cpu_seconds(pid)
    idle_bytes1 = term.count()

    quit_pi(pid, term)
    shutil.rmtree(work, ignore_errors=True)

    wall = t1 - t0
    cpu = cpu1 - cpu0
    writes = "one SSE event per write" if PACED else f"{max(1, int(RATE * TICK))} events per write"
    delays = [1000 * (SHOWN[k] - t) for k, t in SENT.items() if k in SHOWN]
    print(f"pi TUI ({MODE}), {SHAPE}, {TOKENS} tokens ({TEXT_BYTES / 1000:.1f} KB of text) at {RATE} tokens/s, "
          f"{writes}, {COLS}x{ROWS} pty, {os.cpu_count()} cores")
    print(f"  streaming window  {wall:6.2f} s wall, {cpu * 1000:7.1f} ms CPU = {100 * cpu / wall:5.2f}% of a core")
    print(f"  peak memory       {peak:6.1f} MB (VmHWM)")
    print(f"  terminal output   {(bytes1 - bytes0) / 1e6:6.3f} MB while streaming "
          f"(startup screen {startup_bytes / 1e3:.1f} KB)")
    print(f"  idle              {100 * (idle_cpu1 - idle_cpu0) / IDLE:5.2f}% of a core over {IDLE:.0f} s, "
          f"{idle_bytes1 - idle_bytes0} bytes written")
    if delays:
        print(f"  delta to terminal p50 {percentile(delays, 50):7.1f} ms, p99 {percentile(delays, 99):7.1f} ms, "
              f"max {max(delays):7.1f} ms ({len(delays)} of {len(SENT)} markers seen)")
    if os.environ.get("JSON") == "1":
        # One line for bench/tui_figures.py.
        print("JSON " + json.dumps({
            "mode": MODE, "wall_s": wall, "cpu_ms": cpu * 1000, "cpu_pct": 100 * cpu / wall,
            "peak_mb": peak, "bytes": bytes1 - bytes0, "text_bytes": TEXT_BYTES,
            "idle_pct": 100 * (idle_cpu1 - idle_cpu0) / IDLE,
            "p50_ms": percentile(delays, 50) if delays else None,
            "p99_ms": percentile(delays, 99) if delays else None,
            "max_ms": max(delays) if delays else None,
            "markers_seen": len(delays), "markers_sent": len(SENT)}))


main()

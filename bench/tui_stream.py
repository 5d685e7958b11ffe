#!/usr/bin/env python3
"""The interactive TUI under a live stream, measured from outside.

Starts a local OpenAI-compatible server that streams TOKENS tokens (default 10,000, about 57 KB
of markdown) at RATE tokens per second (default 2,000), runs the release `pi` binary in a
pseudo-terminal of ROWSxCOLS (default 50x200), types a prompt, and reports for the streaming
window:

  * CPU time of the pi process (user+sys from /proc/<pid>/stat) and its average as % of a core;
  * peak resident memory (VmHWM from /proc/<pid>/status);
  * bytes pi wrote to the terminal, next to the bytes of text streamed;
  * CPU used while idle afterwards (IDLE seconds, nothing happening).

With PACED=1 the server writes each SSE event on its own, one every 1/RATE seconds, as real
providers send them (each event then wakes the whole chain); by default it writes RATE/100
events together every 10 ms.

MODE=fullscreen runs pi with --fullscreen (the alternate screen); by default it runs in the
inline mode, which prints the conversation into the terminal's scrollback.

Usage: bench/tui_stream.py [PI_BINARY]   (bench/tui_stream.sh builds it and calls this)
Environment: TOKENS, RATE, ROWS, COLS, IDLE, CODE (0: no code blocks), PACED (1: one event per
write), MODE (inline or fullscreen).
"""
import os
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
MODE = os.environ.get("MODE", "inline")
# The server sends RATE*TICK tokens every TICK seconds (one token per write when paced).
TICK = 1.0 / RATE if PACED else 0.01

WORDS = ("the agent reads files runs commands and edits code while the person watches "
         "streaming output arrives token by token through the terminal renderer which "
         "must stay calm fast and correct under load").split()


def tokens():
    """About 5.7 bytes per token: words, paragraphs, a list, headings and code now and then."""
    out = []
    for i in range(TOKENS):
        w = WORDS[i % len(WORDS)]
        if i % 600 == 0:
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


class Handler(ModelsHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
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
            send(b"".join(chunk({"content": t}) for t in TOKEN_LIST[n:n + per_tick]))
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

    wall = t1 - t0
    cpu = cpu1 - cpu0
    writes = "one SSE event per write" if PACED else f"{max(1, int(RATE * TICK))} events per write"
    print(f"pi TUI ({MODE}), {TOKENS} tokens ({TEXT_BYTES / 1000:.1f} KB of text) at {RATE} tokens/s, "
          f"{writes}, {COLS}x{ROWS} pty, {os.cpu_count()} cores")
    print(f"  streaming window  {wall:6.2f} s wall, {cpu * 1000:7.1f} ms CPU = {100 * cpu / wall:5.2f}% of a core")
    print(f"  peak memory       {peak:6.1f} MB (VmHWM)")
    print(f"  terminal output   {(bytes1 - bytes0) / 1e6:6.3f} MB while streaming "
          f"(startup screen {startup_bytes / 1e3:.1f} KB)")
    print(f"  idle              {100 * (idle_cpu1 - idle_cpu0) / IDLE:5.2f}% of a core over {IDLE:.0f} s, "
          f"{idle_bytes1 - idle_bytes0} bytes written")


main()

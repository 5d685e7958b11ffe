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

Usage: bench/tui_stream.py [PI_BINARY]   (bench/tui_stream.sh builds it and calls this)
Environment: TOKENS, RATE, ROWS, COLS, IDLE, CODE (0: no code blocks), PACED (1: one event per
write).
"""
import json
import os
import pty
import select
import socketserver
import struct
import sys
import tempfile
import termios
import fcntl
import threading
import time
from http.server import BaseHTTPRequestHandler

TOKENS = int(os.environ.get("TOKENS", "10000"))
RATE = int(os.environ.get("RATE", "2000"))
ROWS = int(os.environ.get("ROWS", "50"))
COLS = int(os.environ.get("COLS", "200"))
IDLE = float(os.environ.get("IDLE", "5"))
CODE = os.environ.get("CODE", "1") != "0"  # CODE=0: no fenced code blocks (no highlighting)
PACED = os.environ.get("PACED", "0") == "1"
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


def chunk(delta, finish=None):
    body = {"id": "b", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return ("data: " + json.dumps(body, separators=(",", ":")) + "\n\n").encode()


TOKEN_LIST = tokens()
TEXT_BYTES = sum(len(t.encode()) for t in TOKEN_LIST)
STREAM_DONE = threading.Event()
STREAM_STARTED = threading.Event()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        data = json.dumps({"data": [{"id": "bench"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def send(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

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
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        STREAM_DONE.set()


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


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


class Terminal:
    """Reads everything pi writes, counting bytes, on a background thread."""

    def __init__(self, fd):
        self.fd = fd
        self.bytes = 0
        self.tail = b""
        self.last = time.monotonic()
        self.lock = threading.Lock()
        threading.Thread(target=self.pump, daemon=True).start()

    def pump(self):
        while True:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.5)
                if not r:
                    continue
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.bytes += len(data)
                self.tail = (self.tail + data)[-65536:]
                self.last = time.monotonic()

    def count(self):
        with self.lock:
            return self.bytes

    def quiet_for(self, seconds):
        with self.lock:
            return time.monotonic() - self.last >= seconds

    def seen(self, needle):
        with self.lock:
            return needle in self.tail

    def write(self, data):
        os.write(self.fd, data)


def main():
    pi = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/pi")
    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()

    work = tempfile.mkdtemp(prefix="pi-tui-bench-")
    agent = os.path.join(work, "agent")
    os.makedirs(agent)
    with open(os.path.join(agent, "config.toml"), "w") as f:
        f.write(f'model = "bench/bench"\n[providers.bench]\napi = "openai-completions"\n'
                f'base_url = "http://127.0.0.1:{port}/v1"\n[[providers.bench.models]]\n'
                f'id = "bench"\n')
    env = {"PATH": os.environ.get("PATH", ""), "HOME": work, "TERM": "xterm-256color",
           "PI_CODING_AGENT_DIR": agent}

    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.execve(pi, [pi, "--no-session"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
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

    term.write(b"\x04")
    deadline = time.monotonic() + 5
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)

    wall = t1 - t0
    cpu = cpu1 - cpu0
    writes = "one SSE event per write" if PACED else f"{max(1, int(RATE * TICK))} events per write"
    print(f"pi TUI, {TOKENS} tokens ({TEXT_BYTES / 1000:.1f} KB of text) at {RATE} tokens/s, "
          f"{writes}, {COLS}x{ROWS} pty, {os.cpu_count()} cores")
    print(f"  streaming window  {wall:6.2f} s wall, {cpu * 1000:7.1f} ms CPU = {100 * cpu / wall:5.2f}% of a core")
    print(f"  peak memory       {peak:6.1f} MB (VmHWM)")
    print(f"  terminal output   {(bytes1 - bytes0) / 1e6:6.3f} MB while streaming "
          f"(startup screen {startup_bytes / 1e3:.1f} KB)")
    print(f"  idle              {100 * (idle_cpu1 - idle_cpu0) / IDLE:5.2f}% of a core over {IDLE:.0f} s, "
          f"{idle_bytes1 - idle_bytes0} bytes written")


main()

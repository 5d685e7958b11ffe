"""Pieces the benchmark scripts share: an OpenAI-compatible server's framing and model listing,
a threaded server, a pseudo-terminal reader, and a pi config pointing at the local server.

Imported by bench/sse_server.py, bench/tui_stream.py and bench/esc_latency.py (run them as
scripts: Python puts their folder on the import path).
"""
import fcntl
import json
import os
import pty
import select
import struct
import termios
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler


def chunk(delta, finish=None):
    """One Chat Completions SSE event."""
    body = {"id": "b", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return ("data: " + json.dumps(body, separators=(",", ":")) + "\n\n").encode()


class ModelsHandler(BaseHTTPRequestHandler):
    """Quiet, keep-alive, and answers GET /v1/models with one model named `bench`."""

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

    def not_a_chat(self):
        """A POST to anything but the chat endpoint (pi also asks a local server how large its
        window is, e.g. Ollama's POST /api/show) gets a 404 instead of an event stream, as from
        a real server. Returns True when it answered so."""
        if self.path.rstrip("/").endswith("/chat/completions"):
            return False
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()
        return True

    def start_chunked_stream(self):
        """Send the headers of a chunked event stream; returns a function sending one chunk."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def send(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        return send

    def end_chunked_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve(handler):
    """Start `handler` on a free port of 127.0.0.1 in the background; returns the port."""
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def write_config(work, port):
    """A pi agent folder under `work` whose only model is the local server; returns its path."""
    agent = os.path.join(work, "agent")
    os.makedirs(agent, exist_ok=True)
    with open(os.path.join(agent, "config.toml"), "w") as f:
        f.write(f'model = "bench/bench"\n[providers.bench]\napi = "openai-completions"\n'
                f'base_url = "http://127.0.0.1:{port}/v1"\n[[providers.bench.models]]\n'
                f'id = "bench"\n')
    return agent


def spawn_pi(pi, work, agent, rows, cols, args=("--no-session",)):
    """Start `pi <args>` (by default `--no-session`) in a pseudo-terminal of rows x cols, in
    `work`, with a clean environment; returns (pid, master fd)."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": work, "TERM": "xterm-256color",
           "PI_CODING_AGENT_DIR": agent}
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.execve(pi, [pi, *args], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return pid, fd


class Terminal:
    """Reads everything pi writes to its pseudo-terminal on a background thread: counts the
    bytes, keeps the last 64 KB, and notes when output last arrived."""

    def __init__(self, fd):
        self.fd = fd
        self.bytes = 0
        self.tail = b""
        self.last = time.monotonic()
        self.lock = threading.Lock()
        # Called with (bytes read, when) for every read, on the reading thread.
        self.listeners = []
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
            now = time.monotonic()
            with self.lock:
                self.bytes += len(data)
                self.tail = (self.tail + data)[-65536:]
                self.last = now
            for listen in self.listeners:
                listen(data, now)

    def count(self):
        with self.lock:
            return self.bytes

    def quiet_for(self, seconds):
        with self.lock:
            return time.monotonic() - self.last >= seconds

    def seen(self, needle):
        with self.lock:
            return needle in self.tail

    def since(self, mark):
        """What was written after the byte count `mark` (at most the last 64 KB)."""
        with self.lock:
            return self.tail[max(0, len(self.tail) - (self.bytes - mark)):]

    def write(self, data):
        os.write(self.fd, data)


def quit_pi(pid, term, wait=5.0):
    """Ctrl+D, then wait for pi to exit (killed after `wait` seconds)."""
    term.write(b"\x04")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)

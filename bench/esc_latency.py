#!/usr/bin/env python3
"""How long Esc takes to end a run while a bash command runs, measured from outside.

Starts a local OpenAI-compatible server whose first reply calls the bash tool with COMMAND
(default `sleep 3`, which honours SIGTERM), runs the release `pi` binary in a pseudo-terminal,
sends a prompt, waits until the command's process exists, presses Esc and reports, over RUNS
runs (default 5):

  * until the command's process is gone;
  * until pi shows the run as ended ("Operation aborted" on screen);
  * until the status line stops ("esc to interrupt" no longer drawn after the Esc).

Usage: bench/esc_latency.py [PI_BINARY]   (build with `cargo build --release` first)
Environment: COMMAND, RUNS.
"""
import json
import os
import sys
import tempfile
import time

from bench_server import ModelsHandler, Terminal, chunk, quit_pi, serve, spawn_pi, write_config

COMMAND = os.environ.get("COMMAND", "sleep 3")
RUNS = int(os.environ.get("RUNS", "5"))


class Handler(ModelsHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.not_a_chat():
            return
        send = self.start_chunked_stream()
        last = body.get("messages", [{}])[-1]
        if last.get("role") == "user":
            args = json.dumps({"command": COMMAND})
            events = [
                chunk({"tool_calls": [{"index": 0, "id": "call_1", "function":
                                       {"name": "bash", "arguments": args}}]}),
                chunk({}, "tool_calls"),
            ]
        else:
            events = [chunk({"content": "done"}), chunk({}, "stop")]
        for data in events + [b"data: [DONE]\n\n"]:
            send(data)
        self.end_chunked_stream()


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def one_run(pi, work, agent):
    pid, fd = spawn_pi(pi, work, agent, 40, 120)
    term = Terminal(fd)
    deadline = time.monotonic() + 10
    while not term.seen(b"bench") and time.monotonic() < deadline:
        time.sleep(0.02)
    os.write(fd, b"run it\r")
    deadline = time.monotonic() + 10
    kids = []
    while not kids and time.monotonic() < deadline:
        kids = children(pid)
        time.sleep(0.005)
    if not kids:
        sys.exit("the command never started")
    time.sleep(0.3)
    mark = term.count()
    t0 = time.monotonic()
    os.write(fd, b"\x1b")
    gone = shown = stopped = None
    deadline = t0 + 10
    while time.monotonic() < deadline and None in (gone, shown, stopped):
        now = time.monotonic()
        if gone is None and not any(alive(k) for k in kids):
            gone = now - t0
        after = term.since(mark)
        if shown is None and b"Operation aborted" in after:
            shown = now - t0
        # The status line is redrawn without the hint once it stops.
        if stopped is None and after and b"esc to interrupt" not in after[-4096:] \
                and (b"Stopping" in after or shown is not None):
            stopped = now - t0
        time.sleep(0.002)
    quit_pi(pid, term)
    os.close(fd)
    return gone, shown, stopped


def main():
    pi = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/pi")
    port = serve(Handler)
    work = tempfile.mkdtemp(prefix="pi-esc-bench-")
    agent = write_config(work, port)
    rows = [one_run(pi, work, agent) for _ in range(RUNS)]

    def fmt(v):
        return "   n/a" if v is None else f"{v * 1000:6.0f}"

    print(f"Esc while bash runs `{COMMAND}`, {RUNS} runs (ms after the key)")
    print("  command gone   run ended   status stopped")
    for g, s, st in rows:
        print(f"  {fmt(g)}         {fmt(s)}      {fmt(st)}")


if __name__ == "__main__":
    main()

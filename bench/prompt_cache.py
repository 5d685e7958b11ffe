#!/usr/bin/env python3
"""Prompt-cache reads over a long session: a local server that models a provider's prompt
cache, and a driver that runs `pi --mode rpc` against it for TURNS prompts.

Usage: prompt_cache.py PI_BINARY [API] [TURNS]
  API   openai (Chat Completions, default) or anthropic (Messages)
  TURNS prompts sent in one session (default 30)
  DUMP=FILE writes every request body the server received, one JSON line each.

Each prompt makes two model calls: the first answers with some reasoning and a `read` call of
a 2 KB file, the second with a paragraph of text, so the transcript grows by a tool call, its
result and an answer per turn (as a coding session does).

How the server counts tokens (the same for every binary measured, so the figures compare):
the prompt is rendered in the order a provider sees it (tools, system prompt, messages), each
piece as the JSON pi sent with `cache_control` markers left out; 4 bytes are one token.
  openai     as OpenAI documents its automatic cache: the longest prefix shared with any earlier
             request counts as cached once it is at least 1,024 tokens, rounded down to a
             multiple of 128 tokens (`usage.prompt_tokens_details.cached_tokens`).
  anthropic  as the Messages API's explicit cache: every block carrying `cache_control` writes
             the prefix up to and including it; a later request reads the longest written
             prefix it starts with (`cache_read_input_tokens`), prefixes under 1,024 tokens are
             not cached, and what the request's own last breakpoint adds is written
             (`cache_creation_input_tokens`). The 20-block look-back is not modelled: a prefix
             counts only if the request starts with it.
Entries never expire (a session at the speed of a local server stays within any TTL).

Prints total prompt tokens, cached tokens and the hit ratio, over all calls and over the
calls after the first prompt (the first can only write), and how much of each request the
next one repeats (100%: every request starts with the whole previous one, so what is not
cached is only what the turn added and the provider's rounding).

Run it with two binaries to compare, e.g. main's and a branch's: `bench/prompt_cache.sh`
builds this tree's and measures both APIs.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

from bench_server import ModelsHandler, serve

TOKEN_BYTES = 4
OPENAI_MIN, OPENAI_STEP = 1024, 128
ANTHROPIC_MIN = 1024

NOTES = "\n".join(
    f"line {i}: the quick brown fox jumps over the lazy dog while the build keeps running"
    for i in range(24)
)
ANSWER = ("The file lists the same sentence on every line, numbered from zero. "
          "Nothing in it changed since the last look, so there is nothing to fix yet. ") * 4


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def without_cache_control(value):
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def tokens(nbytes):
    return nbytes // TOKEN_BYTES


class Cache:
    """The prompts and breakpoint prefixes seen so far, and the usage reported per call."""

    def __init__(self):
        self.lock = threading.Lock()
        self.prompts = []  # openai: every earlier rendered prompt
        self.written = {}  # anthropic: prefix length in bytes -> set of digests
        self.calls = []  # (prompt tokens, cached tokens)
        self.last = None  # the previous rendered prompt
        self.kept = []  # (tokens of the previous prompt this one starts with, its length)

    def note_prefix(self, prompt):
        """How much of the previous request this one repeats (call with the lock held)."""
        if self.last is not None:
            self.kept.append((tokens(len(os.path.commonprefix([prompt, self.last]))),
                              tokens(len(self.last))))
        self.last = prompt

    def openai(self, body):
        parts = [dumps(body.get("tools", []))]
        parts += [dumps(m) for m in body.get("messages", [])]
        prompt = "\n".join(parts).encode()
        with self.lock:
            common = max((len(os.path.commonprefix([prompt, p])) for p in self.prompts),
                         default=0)
            self.prompts.append(prompt)
            self.note_prefix(prompt)
            total = tokens(len(prompt))
            shared = tokens(common)
            cached = 0 if shared < OPENAI_MIN else shared - shared % OPENAI_STEP
            self.calls.append((total, cached))
        return total, cached

    def anthropic(self, body):
        pieces = []  # (rendered block, carries a breakpoint)
        for tool in body.get("tools", []):
            pieces.append((dumps(without_cache_control(tool)), "cache_control" in tool))
        system = body.get("system", [])
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        for block in system:
            pieces.append((dumps(without_cache_control(block)), "cache_control" in block))
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            pieces.append((message.get("role", ""), False))
            for block in content:
                pieces.append((dumps(without_cache_control(block)), "cache_control" in block))
        prompt = b""
        breakpoints = []
        for text, marked in pieces:
            prompt += text.encode() + b"\n"
            if marked:
                breakpoints.append(len(prompt))
        with self.lock:
            self.note_prefix(prompt)
            read = 0
            for length, digests in self.written.items():
                if length > read and length <= len(prompt) and \
                        hashlib.sha256(prompt[:length]).digest() in digests:
                    read = length
            for length in breakpoints:
                if tokens(length) >= ANTHROPIC_MIN:
                    self.written.setdefault(length, set()).add(
                        hashlib.sha256(prompt[:length]).digest())
            total = tokens(len(prompt))
            cached = tokens(read) if tokens(read) >= ANTHROPIC_MIN else 0
            last = breakpoints[-1] if breakpoints else 0
            created = max(0, tokens(last) - cached) if tokens(last) >= ANTHROPIC_MIN else 0
            self.calls.append((total, cached))
        return total, cached, created


CACHE = Cache()
DUMP = open(os.environ["DUMP"], "w") if os.environ.get("DUMP") else None
DUMP_LOCK = threading.Lock()


def sse(event, data):
    return (f"event: {event}\n" if event else "").encode() + b"data: " + dumps(data).encode() + b"\n\n"


def answers_a_tool(body):
    messages = body.get("messages", [])
    if not messages:
        return False
    last = messages[-1]
    if last.get("role") == "tool":
        return True
    content = last.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


class Handler(ModelsHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.endswith("/messages") and self.not_a_chat():
            return
        if DUMP:
            with DUMP_LOCK:
                DUMP.write(dumps(body) + "\n")
                DUMP.flush()
        n = len(CACHE.calls)
        final = answers_a_tool(body)
        if self.path.endswith("/messages"):
            data = self.anthropic(body, n, final)
        else:
            data = self.openai(body, n, final)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def openai(self, body, n, final):
        total, cached = CACHE.openai(body)

        def chunk(delta, finish=None):
            return sse(None, {"id": f"c{n}", "choices": [
                {"index": 0, "delta": delta, "finish_reason": finish}]})
        out = [chunk({"reasoning_content": f"Call {n}: deciding what to do next."})]
        if final:
            out.append(chunk({"content": ANSWER}))
            out.append(chunk({}, "stop"))
        else:
            out.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{n}", "type": "function",
                                              "function": {"name": "read", "arguments": ""}}]}))
            out.append(chunk({"tool_calls": [{"index": 0, "function": {
                "arguments": dumps({"path": "notes.txt"})}}]}))
            out.append(chunk({}, "tool_calls"))
        out.append(sse(None, {"id": f"c{n}", "choices": [], "usage": {
            "prompt_tokens": total, "completion_tokens": 40,
            "prompt_tokens_details": {"cached_tokens": cached}}}))
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)

    def anthropic(self, body, n, final):
        total, cached, created = CACHE.anthropic(body)
        out = [sse("message_start", {"type": "message_start", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [], "stop_reason": None, "usage": {
                "input_tokens": total - cached - created, "output_tokens": 1,
                "cache_read_input_tokens": cached, "cache_creation_input_tokens": created}}})]
        out.append(sse("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "thinking",
                                                                 "thinking": ""}}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "thinking_delta", "thinking": f"Call {n}: deciding what to do next."}}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "signature_delta", "signature": f"sig{n}"}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        if final:
            out.append(sse("content_block_start", {"type": "content_block_start", "index": 1,
                                                   "content_block": {"type": "text", "text": ""}}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                   "delta": {"type": "text_delta",
                                                             "text": ANSWER}}))
            stop = "end_turn"
        else:
            out.append(sse("content_block_start", {"type": "content_block_start", "index": 1,
                                                   "content_block": {"type": "tool_use",
                                                                     "id": f"toolu_{n}",
                                                                     "name": "read",
                                                                     "input": {}}}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": dumps(
                                                                 {"path": "notes.txt"})}}))
            stop = "tool_use"
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
        out.append(sse("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": stop}, "usage": {"output_tokens": 40}}))
        out.append(sse("message_stop", {"type": "message_stop"}))
        return b"".join(out)


def config(agent, api, port):
    os.makedirs(agent, exist_ok=True)
    wire = "anthropic-messages" if api == "anthropic" else "openai-completions"
    path = "" if api == "anthropic" else "/v1"
    with open(os.path.join(agent, "config.toml"), "w") as f:
        f.write(f'model = "bench/bench"\n[providers.bench]\napi = "{wire}"\n'
                f'base_url = "http://127.0.0.1:{port}{path}"\nkey = "none"\n'
                f'[[providers.bench.models]]\nid = "bench"\nreasoning = true\n'
                f'context_window = 1000000\n')


def drive(pi, work, agent, turns):
    env = {"PATH": os.environ["PATH"], "HOME": work, "PI_CODING_AGENT_DIR": agent}
    p = subprocess.Popen([pi, "--mode", "rpc", "--no-session"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=work)
    ended = 0
    for turn in range(turns):
        p.stdin.write(dumps({"id": str(turn), "type": "prompt",
                             "message": f"Turn {turn}: read notes.txt and tell me what changed."
                             }).encode() + b"\n")
        p.stdin.flush()
        for line in p.stdout:
            event = json.loads(line)
            if event.get("type") == "agent_end":
                ended += 1
                break
        else:
            break
    p.stdin.close()
    p.stdout.read()
    err = p.stderr.read().decode(errors="replace")
    p.wait()
    if ended != turns:
        sys.exit(f"pi ended {ended} of {turns} prompts; stderr:\n{err}")


def main():
    pi = sys.argv[1]
    api = sys.argv[2] if len(sys.argv) > 2 else "openai"
    turns = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    port = serve(Handler)
    work = tempfile.mkdtemp()
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write(NOTES)
    config(os.path.join(work, "agent"), api, port)
    try:
        drive(pi, work, os.path.join(work, "agent"), turns)
    finally:
        subprocess.run(["rm", "-rf", work])
    calls = CACHE.calls
    later = calls[2:]

    def line(name, rows):
        total = sum(t for t, _ in rows)
        cached = sum(c for _, c in rows)
        ratio = cached / total if total else 0.0
        return f"{name}: {len(rows)} calls, prompt {total} tokens, cached {cached} ({ratio:.1%})"
    print(f"{api}, {turns} prompts, {os.path.basename(pi)}")
    print("  " + line("all calls", calls))
    print("  " + line("after the first prompt", later))
    kept = sum(k for k, _ in CACHE.kept)
    previous = sum(n for _, n in CACHE.kept)
    print(f"  each request starts with the previous one: {kept} of {previous} tokens "
          f"({kept / previous if previous else 0:.1%})")


if __name__ == "__main__":
    main()

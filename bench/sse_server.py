#!/usr/bin/env python3
"""A local OpenAI-compatible server for bench/print_mode.sh.

GET  /v1/models            -> one model
POST /v1/chat/completions  -> a streamed answer: MODE=short (one short text),
                              MODE=long (TOKENS deltas, one per SSE event, written as fast as
                              the socket takes them) or MODE=tools (three turns: a `read` call,
                              a `bash` call, then a short text; the turn is told by the number
                              of tool results in the request).
Bodies are prebuilt so the server costs as little as possible during the measurement.
"""
import json
import os
import sys

from bench_server import ModelsHandler, Server, chunk

MODE = os.environ.get("MODE", "short")
TOKENS = int(os.environ.get("TOKENS", "20000"))


def build():
    parts = []
    if MODE == "long":
        for i in range(TOKENS):
            parts.append(chunk({"content": f"t{i % 10} "}))
    else:
        parts.append(chunk({"content": "Hello from the bench server."}))
    parts.append(chunk({}, "stop"))
    parts.append(b'data: {"id":"b","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d}}\n\n' % TOKENS)
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def tool_call(name, arguments):
    """A whole answer that is one tool call."""
    call = {"index": 0, "id": f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}
    return b"".join([chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), b"data: [DONE]\n\n"])


BODY = build()
TOOL_TURNS = [tool_call("read", {"path": "notes.txt"}), tool_call("bash", {"command": "echo hi"})]


class Handler(ModelsHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        request = self.rfile.read(length)
        if self.not_a_chat():
            return
        body = BODY
        if MODE == "tools":
            results = request.count(b'"role":"tool"')
            body = TOOL_TURNS[results] if results < len(TOOL_TURNS) else BODY
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 18080
    with Server(("127.0.0.1", port), Handler) as s:
        s.serve_forever()

#!/usr/bin/env python3
"""A local OpenAI-compatible server for bench/print_mode.sh.

GET  /v1/models            -> one model
POST /v1/chat/completions  -> a streamed answer: MODE=short (one short text) or
                              MODE=long (TOKENS deltas, one per SSE event, written as fast as
                              the socket takes them).
Bodies are prebuilt so the server costs as little as possible during the measurement.
"""
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


BODY = build()


class Handler(ModelsHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 18080
    with Server(("127.0.0.1", port), Handler) as s:
        s.serve_forever()

#!/usr/bin/env python3
"""For bench/prefill.py: records each POST body under OUT/<n>.json and answers with a one-word reply in the wire
format its path asks for (Chat Completions, Messages, Responses)."""
import json, sys, os, itertools
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
OUT = sys.argv[2]; os.makedirs(OUT, exist_ok=True)
n = itertools.count()
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(404); self.send_header("content-length","2"); self.end_headers(); self.wfile.write(b"{}")
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        with open(f"{OUT}/{next(n)}-{self.path.strip('/').replace('/','_')}.json", "wb") as f: f.write(body)
        self.send_response(200); self.send_header("content-type","text/event-stream"); self.end_headers()
        w = lambda s: (self.wfile.write(s.encode()), self.wfile.flush())
        if self.path.endswith("/chat/completions"):
            w('data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"}}]}\n\n')
            w('data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n')
            w('data: [DONE]\n\n')
        elif self.path.endswith("/messages"):
            for ev, d in [("message_start", {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"stop_reason":None,"usage":{"input_tokens":1,"output_tokens":0}}}),
                          ("content_block_start", {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
                          ("content_block_delta", {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}),
                          ("content_block_stop", {"type":"content_block_stop","index":0}),
                          ("message_delta", {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}),
                          ("message_stop", {"type":"message_stop"})]:
                w(f"event: {ev}\ndata: {json.dumps(d)}\n\n")
        else:
            item = {"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}
            for d in [{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}},
                      {"type":"response.output_item.added","output_index":0,"item":dict(item, content=[], status="in_progress")},
                      {"type":"response.content_part.added","output_index":0,"item_id":"msg_1","content_index":0,"part":{"type":"output_text","text":""}},
                      {"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","content_index":0,"delta":"ok"},
                      {"type":"response.output_text.done","output_index":0,"item_id":"msg_1","content_index":0,"text":"ok"},
                      {"type":"response.output_item.done","output_index":0,"item":item},
                      {"type":"response.completed","response":{"id":"r","status":"completed","output":[item],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}]:
                w(f"event: {d['type']}\ndata: {json.dumps(d)}\n\n")
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()

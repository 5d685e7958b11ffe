#!/usr/bin/env python3
"""The first request's prefill: what pi (and, when given, the Node.js pi) sends before the
user's first word — system prompt plus tool definitions — per wire format and tool selection,
in tokens of the model a llama.cpp server at LLAMA (default http://127.0.0.1:8080) serves.

Chat Completions bodies are sent to that server and its own `prompt_tokens` reported (the chat
template applied, tools rendered as the model sees them); Anthropic and Responses bodies have
no such server here, so their system prompt and tool JSON are counted with its `/tokenize`.

usage: prefill.py PI [NODE_PI]"""
import glob, json, os, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = os.environ.get("LLAMA", "http://127.0.0.1:8080")
SELECTIONS = [("default", []), ("read,bash", ["--tools", "read,bash"]),
              ("read,grep,find,ls", ["--tools", "read,grep,find,ls"]), ("no tools", ["-nt"])]
FORMATS = [("cc", "openai-completions", "/v1"), ("am", "anthropic-messages", ""),
           ("rs", "openai-responses", "/v1")]


def post(path, body):
    req = urllib.request.Request(LLAMA + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))


def tokens(text):
    return len(post("/tokenize", {"content": text})["tokens"])


def text_of(content):
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def count(body):
    """Tokens the model reads before the user's words."""
    if "system" in body:  # Anthropic Messages
        system, tools = text_of(body["system"]), body.get("tools", [])
    elif "input" in body:  # Responses
        system = body.get("instructions") or "".join(
            text_of(m["content"]) for m in body["input"] if m.get("role") in ("system", "developer"))
        tools = body.get("tools", [])
    else:  # Chat Completions: the server's own count, the user's "hi" turn taken off
        b = dict(body, stream=False, max_tokens=1, model="local")
        for k in ("stream_options", "max_completion_tokens"):
            b.pop(k, None)
        return post("/v1/chat/completions", b)["usage"]["prompt_tokens"]
    return tokens(system) + tokens(json.dumps(tools, separators=(",", ":")))


def first_requests(binary, node, port):
    home = tempfile.mkdtemp(prefix="prefill-")
    out = os.path.join(home, "bodies")
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "prefill_capture.py"), str(port), out])
    time.sleep(0.5)
    os.makedirs(os.path.join(home, ".pi/agent"))
    os.makedirs(os.path.join(home, "proj"))
    url = f"http://127.0.0.1:{port}"
    if node:
        providers = {p: {"baseUrl": url + suffix, "api": api, "apiKey": "x",
                         "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                         "models": [{"id": "m"}]} for p, api, suffix in FORMATS}
        with open(os.path.join(home, ".pi/agent/models.json"), "w") as f:
            json.dump({"providers": providers}, f)
    else:
        with open(os.path.join(home, ".pi/agent/config.toml"), "w") as f:
            for p, api, suffix in FORMATS:
                f.write(f'[providers.{p}]\napi = "{api}"\nbase_url = "{url}{suffix}"\nkey = "x"\n'
                        f'compat = {{ supportsDeveloperRole = false, supportsReasoningEffort = false }}\n'
                        f'[[providers.{p}.models]]\nid = "m"\n')
    env = dict(os.environ, HOME=home)
    env.pop("PI_CODING_AGENT_DIR", None)
    found = {}
    try:
        for p, _, _ in FORMATS:
            for name, flags in SELECTIONS:
                before = set(glob.glob(out + "/*"))
                subprocess.run([binary, "--model", f"{p}/m", *flags, "-p", "hi"], env=env,
                               cwd=os.path.join(home, "proj"), capture_output=True, timeout=120)
                new = [f for f in set(glob.glob(out + "/*")) - before if "api_show" not in f]
                if new:
                    found[(p, name)] = json.load(open(new[0]))
    finally:
        server.kill()
    return found


def main():
    pis = [("pi (Rust)", sys.argv[1], False)]
    if len(sys.argv) > 2:
        pis.append(("pi (Node.js)", sys.argv[2], True))
    rows = {}
    for i, (label, binary, node) in enumerate(pis):
        for key, body in first_requests(binary, node, 8190 + i).items():
            rows.setdefault(key, {})[label] = count(body)
    print(f"{'format':6} {'tools':18} " + " ".join(f"{l:>13}" for l, _, _ in pis))
    for (p, name), by in sorted(rows.items()):
        print(f"{p:6} {name:18} " + " ".join(f"{by.get(l, '-'):>13}" for l, _, _ in pis))


main()

//! A scripted HTTP/1.1 server on 127.0.0.1 for provider tests.
//!
//! Each incoming connection gets the next scripted [`Reply`]: a status, headers, and body
//! chunks sent with chunked transfer encoding, so SSE arrives piece by piece exactly as a real
//! API sends it. A reply can pause, stall until the client hangs up (recording when), drop
//! the connection mid-body, or run until the connection closes (no framing, so the close looks
//! like a proper end). Every request is recorded (method, path, headers, JSON body).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Debug)]
pub enum Chunk {
    Bytes(Vec<u8>),
    Delay(Duration),
    /// Keep the connection open until the client closes it.
    Stall,
    /// Close the socket without finishing the body.
    Disconnect,
    /// Wait until the test opens the gate: a reply paced by what the test has seen.
    Gate(Gate),
    /// Close the socket where a body without length ends. A reply holding this is sent
    /// without chunked framing (its body runs until the connection closes), so the client
    /// sees a clean end wherever the close falls: a cut it cannot tell from a proper end.
    Close,
}

/// A point a scripted reply waits at until the test calls [`Gate::open`] (which may come
/// first: the opening is kept).
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<tokio::sync::Notify>);

impl Gate {
    pub fn open(&self) {
        self.0.notify_one();
    }
}

#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Chunk>,
}

impl Reply {
    /// A 200 SSE stream.
    pub fn sse(chunks: Vec<Chunk>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
        }
    }

    /// An error status with a JSON body.
    pub fn error(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Chunk::Bytes(body.as_bytes().to_vec())],
        }
    }

    /// Take the request and never answer (no status line, no headers), until the client
    /// hangs up.
    pub fn silent() -> Self {
        Reply {
            status: 0,
            headers: Vec::new(),
            chunks: vec![Chunk::Stall],
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
}

/// One SSE event (`event:` line only when `name` is not empty).
pub fn event(name: &str, data: &Value) -> Chunk {
    let mut s = String::new();
    if !name.is_empty() {
        s.push_str(&format!("event: {name}\n"));
    }
    s.push_str(&format!("data: {data}\n\n"));
    Chunk::Bytes(s.into_bytes())
}

/// A raw SSE data line (for `[DONE]` or deliberately malformed payloads).
/// One Chat Completions chunk (`choices[0].delta` and its finish reason) as an SSE event.
pub fn chunk(delta: Value, finish: Option<&str>) -> Chunk {
    event(
        "",
        &json!({"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

/// A whole Chat Completions answer: `text`, then the stop.
pub fn text_reply(text: &str) -> Reply {
    Reply::sse(vec![
        chunk(json!({ "content": text }), None),
        chunk(json!({}), Some("stop")),
        raw_data("[DONE]"),
    ])
}

/// An Ollama `/api/tags` answer listing one model.
/// A Chat Completions reply that makes one tool call (`arguments` is the JSON text the model
/// sends, possibly broken on purpose).
pub fn call_reply(id: &str, name: &str, arguments: &str) -> Reply {
    Reply::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "function": {"name": name, "arguments": arguments}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        raw_data("[DONE]"),
    ])
}

pub fn tags(model: &str) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        chunks: vec![Chunk::Bytes(
            json!({"models": [{"name": model}]})
                .to_string()
                .into_bytes(),
        )],
    }
}

pub fn raw_data(data: &str) -> Chunk {
    Chunk::Bytes(format!("data: {data}\n\n").into_bytes())
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The body as sent (a form, which `body` cannot hold).
    pub raw: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Chooses a reply from the request (for scripts that depend on what the client sends).
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct State {
    replies: Vec<Reply>,
    /// Answers every request when set (the scripted replies are not used).
    responder: Option<Responder>,
    requests: Vec<Recorded>,
    /// Questions about the server's context window (see [`is_window_probe`]).
    probes: Vec<Recorded>,
    /// The window `/props` reports (`None`: "not found", as most servers say).
    n_ctx: Option<u64>,
    /// Answer without `connection: close`, as llama.cpp's server does, and then hang up on a
    /// client that sends another request on the same connection.
    keep_alive: bool,
    /// Requests that came on a connection already used (and were hung up on).
    reused: usize,
    /// Whole answers to window and template questions, by path (`/props`, `/api/show`, …).
    probe_answers: std::collections::HashMap<String, Value>,
    /// When the client closed a stalled connection, relative to when the stall began.
    close_delays: Vec<Duration>,
    /// Connections that reached a stall (everything before it was sent).
    stalls: usize,
    /// Body chunks written so far, over all connections.
    chunks_sent: usize,
}

impl State {
    /// pi asking how large a window the server gives (provider::window): kept apart from the
    /// model requests and the scripts, answered as llama.cpp's `/props` when the test set a
    /// window, else "not found".
    fn answer_probe(&mut self, probe: Recorded) -> Reply {
        let mut body = self.probe_answers.get(&probe.path).cloned();
        if let Some(n) = self.n_ctx.filter(|_| probe.path == "/props") {
            let props = body.get_or_insert_with(|| serde_json::json!({}));
            props["default_generation_settings"] = serde_json::json!({"n_ctx": n});
        }
        self.probes.push(probe);
        match body {
            Some(b) => Reply::error(200, &b.to_string()),
            None => Reply::error(404, "{}"),
        }
    }
}

#[derive(Clone)]
pub struct TestServer {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl TestServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            replies: replies.into_iter().rev().collect(),
            ..Default::default()
        }));
        let s2 = state.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let s3 = s2.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, s3).await;
                });
            }
        });
        TestServer {
            url: format!("http://{addr}"),
            state,
        }
    }

    /// A server whose replies `responder` chooses from each request.
    pub async fn responding(responder: Responder) -> Self {
        let server = Self::start(Vec::new()).await;
        server.state.lock().unwrap().responder = Some(responder);
        server
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Report a context window of `n_ctx` tokens at `/props`, as llama.cpp's server does.
    pub fn say_window(&self, n_ctx: u64) {
        self.state.lock().unwrap().n_ctx = Some(n_ctx);
    }

    /// Keep connections open after each answer, then hang up on a request sent on one.
    pub fn keep_alive_then_hang_up(&self) {
        self.state.lock().unwrap().keep_alive = true;
    }

    /// Requests sent on a connection that had already been answered.
    pub fn reused_connections(&self) -> usize {
        self.state.lock().unwrap().reused
    }

    /// Answer pi's question at `path` (`/props`, `/api/show`, …) with `body`.
    pub fn say_probe(&self, path: &str, body: Value) {
        self.state
            .lock()
            .unwrap()
            .probe_answers
            .insert(path.to_string(), body);
    }

    /// The questions pi asked about the server's context window.
    pub fn probes(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().probes.clone()
    }

    /// How many body chunks have been written so far (a test can see a stream stop moving).
    pub fn chunks_sent(&self) -> usize {
        self.state.lock().unwrap().chunks_sent
    }

    pub fn close_delays(&self) -> Vec<Duration> {
        self.state.lock().unwrap().close_delays.clone()
    }

    /// Wait (at most 5 s) until `n` connections have reached their stall: everything the
    /// reply had to send before it has been written.
    pub async fn wait_stalls(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.state.lock().unwrap().stalls < n {
            assert!(Instant::now() < deadline, "no stall reached");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

async fn serve(mut sock: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let (method, path, headers) = parse_head(&String::from_utf8_lossy(&buf[..head_end]));
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let raw = String::from_utf8_lossy(&body).into_owned();
    let reply = {
        let mut st = state.lock().unwrap();
        let recorded = Recorded {
            method,
            path,
            headers,
            body: json,
            raw,
        };
        if is_window_probe(&recorded) {
            Some(st.answer_probe(recorded))
        } else {
            let chosen = st.responder.as_ref().map(|r| r(&recorded));
            st.requests.push(recorded);
            chosen.or_else(|| st.replies.pop())
        }
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::error(
            500,
            r#"{"error":{"message":"test server: no reply scripted"}}"#,
        )
    });
    if reply.status == 0 {
        let since = Instant::now();
        state.lock().unwrap().stalls += 1;
        let mut one = [0u8; 1];
        let _ = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut one)).await;
        state.lock().unwrap().close_delays.push(since.elapsed());
        return Ok(());
    }
    let framed = !reply.chunks.iter().any(|c| matches!(c, Chunk::Close));
    let mut out = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if framed {
        out.push_str("transfer-encoding: chunked\r\n");
    }
    let keep_alive = state.lock().unwrap().keep_alive;
    out.push_str(if keep_alive {
        "\r\n"
    } else {
        "connection: close\r\n\r\n"
    });
    sock.write_all(out.as_bytes()).await?;
    for chunk in reply.chunks {
        match chunk {
            Chunk::Bytes(b) if framed => {
                sock.write_all(format!("{:x}\r\n", b.len()).as_bytes())
                    .await?;
                sock.write_all(&b).await?;
                sock.write_all(b"\r\n").await?;
                sock.flush().await?;
                state.lock().unwrap().chunks_sent += 1;
            }
            Chunk::Bytes(b) => {
                sock.write_all(&b).await?;
                sock.flush().await?;
            }
            Chunk::Delay(d) => tokio::time::sleep(d).await,
            Chunk::Gate(g) => {
                sock.flush().await?;
                g.0.notified().await;
            }
            Chunk::Disconnect => return Ok(()),
            Chunk::Close => {
                sock.shutdown().await?;
                return Ok(());
            }
            Chunk::Stall => {
                sock.flush().await?;
                state.lock().unwrap().stalls += 1;
                let since = Instant::now();
                let mut one = [0u8; 1];
                // Returns 0 (or an error) when the client closes its side.
                let _ = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut one)).await;
                state.lock().unwrap().close_delays.push(since.elapsed());
                return Ok(());
            }
        }
    }
    sock.write_all(b"0\r\n\r\n").await?;
    sock.flush().await?;
    if keep_alive {
        hang_up_on_reuse(&mut sock, &state).await;
    }
    Ok(())
}

/// The method, path and (lower-cased) headers of a request head.
fn parse_head(head: &str) -> (String, String, Vec<(String, String)>) {
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let headers = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (method, path, headers)
}

/// A client that sends another request on this connection gets it closed under it.
async fn hang_up_on_reuse(sock: &mut TcpStream, state: &Mutex<State>) {
    let mut one = [0u8; 1];
    if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut one)).await
        && n > 0
    {
        state.lock().unwrap().reused += 1;
    }
}

/// Whether `r` is pi asking a server how large a context it serves (llama.cpp's `/props`, a
/// `/v1/models` list, LM Studio's `/api/v0/models/…`, Ollama's `/api/ps` and `/api/show`).
fn is_window_probe(r: &Recorded) -> bool {
    let p = r.path.as_str();
    (r.method == "GET"
        && (p == "/props"
            || p == "/v1/models"
            || p == "/api/ps"
            || p.starts_with("/api/v0/models/")))
        || (r.method == "POST" && p == "/api/show")
}

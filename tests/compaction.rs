//! Compaction end to end (issue 13): the real binary against a local server that answers like
//! a small model with a 16k window. A run of many tool turns goes on past the window by
//! condensing its older part between turns; a request the server refuses as too long is
//! compacted and sent again; the session file records the compaction so a resume sees the
//! summary and the kept messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::server::{Recorded, Reply, TestServer, chunk, raw_data};
use tokio::process::Command;

const WINDOW: u64 = 16_384;

fn home(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pi-compaction-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("agent")).unwrap();
    d
}

/// A config whose only model is the server's, with a 16k window.
fn configure(home: &std::path::Path, server: &TestServer) {
    std::fs::write(
        home.join("agent/config.toml"),
        format!(
            "model = \"lab/small\"\n\
             [providers.lab]\napi = \"openai-completions\"\nbase_url = \"{}/v1\"\n\
             [[providers.lab.models]]\nid = \"small\"\ncontext_window = {WINDOW}\n\
             [compaction]\nreserve_tokens = 4096\nkeep_recent_tokens = 3000\n",
            server.url
        ),
    )
    .unwrap();
}

fn pi(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Run `pi` with `args` in `home` and require it to succeed (stderr shown if not).
async fn run_ok(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = pi(home).args(args).output().await.unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// Tokens the server says a request took: its JSON size / 4.
fn request_tokens(r: &Recorded) -> u64 {
    (r.body.to_string().len() / 4) as u64
}

fn usage(prompt: u64) -> Value {
    json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 20,
           "total_tokens": prompt + 20}})
}

fn text(t: &str, prompt: u64) -> Reply {
    Reply::sse(vec![
        chunk(json!({ "content": t }), None),
        chunk(json!({}), Some("stop")),
        support::server::event("", &usage(prompt)),
        raw_data("[DONE]"),
    ])
}

fn read_call(n: usize, prompt: u64) -> Reply {
    Reply::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"), "function":
                {"name": "read", "arguments": json!({"path": format!("part{n}.txt")}).to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        support::server::event("", &usage(prompt)),
        raw_data("[DONE]"),
    ])
}

fn is_summary_request(r: &Recorded) -> bool {
    r.body["tools"].as_array().is_none_or(Vec::is_empty)
}

/// A server answering like a small model: summary requests (no tools) get `summary`; the
/// agent's requests get `agent(n, tokens of the request)`, `n` counting them from 0. Also
/// returns that count.
async fn small_model(
    summary: &'static str,
    agent: impl Fn(usize, u64) -> Reply + Send + Sync + 'static,
) -> (TestServer, Arc<AtomicUsize>) {
    small_model_saying(summary, None, agent).await
}

/// [`small_model`], also answering llama.cpp's `/props` with a window of `n_ctx` when given.
async fn small_model_saying(
    summary: &'static str,
    n_ctx: Option<u64>,
    agent: impl Fn(usize, u64) -> Reply + Send + Sync + 'static,
) -> (TestServer, Arc<AtomicUsize>) {
    let agent_calls = Arc::new(AtomicUsize::new(0));
    let calls = agent_calls.clone();
    let server = TestServer::responding(Arc::new(move |r: &Recorded| {
        if !r.path.ends_with("/chat/completions") {
            return Reply::error(404, "{}");
        }
        let prompt = request_tokens(r);
        if is_summary_request(r) {
            return text(summary, prompt);
        }
        agent(calls.fetch_add(1, Ordering::SeqCst), prompt)
    }))
    .await;
    if let Some(n) = n_ctx {
        server.say_window(n);
    }
    (server, agent_calls)
}

/// Write `n` files of ~1,000 tokens each.
fn write_parts(home: &std::path::Path, n: usize) {
    for i in 0..n {
        let line = format!("part {i}: the quick brown fox jumps over the lazy dog again\n");
        std::fs::write(
            home.join(format!("part{i}.txt")),
            line.repeat(4000 / line.len()),
        )
        .unwrap();
    }
}

fn session_lines(home: &std::path::Path) -> Vec<Value> {
    let dir = home.join("agent/sessions");
    let mut out = Vec::new();
    for d in std::fs::read_dir(dir).unwrap().flatten() {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(f.path()).unwrap();
                out.extend(
                    text.lines()
                        .map(|l| serde_json::from_str::<Value>(l).unwrap()),
                );
            }
        }
    }
    out
}

#[tokio::test]
async fn thirty_tool_turns_fit_a_16k_window_by_compacting_between_turns() {
    const TURNS: usize = 30;
    let (server, _) = small_model(
        "## Goal\nRead every part file.\n\n## Progress\n### Done\n- [x] Read the early parts.",
        |n, prompt| {
            if n < TURNS {
                read_call(n, prompt)
            } else {
                text("All parts read.", prompt)
            }
        },
    )
    .await;
    let h = home("turns");
    configure(&h, &server);
    write_parts(&h, TURNS);
    let out = run_ok(&h, &["--mode", "json", "read every part file"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "compaction_end")
        .collect();
    assert!(!ends.is_empty(), "no compaction happened:\n{stdout}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "compaction_start" && e["reason"] == "threshold")
    );
    let first = ends[0];
    assert_eq!(first["aborted"], false);
    assert_eq!(first["willRetry"], false);
    assert!(
        first["result"]["summary"]
            .as_str()
            .unwrap()
            .contains("## Goal")
    );
    assert!(first["result"]["tokensBefore"].as_u64().unwrap() > WINDOW - 4096);
    assert!(
        first["result"]["details"]["readFiles"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "part0.txt")
    );
    // The run got to its end, and no request the agent sent was over the window.
    assert!(stdout.contains("All parts read."));
    let requests = server.requests();
    for r in requests.iter().filter(|r| !is_summary_request(r)) {
        assert!(
            request_tokens(r) < WINDOW,
            "a request of {} tokens",
            request_tokens(r)
        );
    }
    // After a compaction, the next request starts with the summary and no longer holds the
    // first turn's file.
    let after = requests.iter().rfind(|r| !is_summary_request(r)).unwrap();
    let body = after.body["messages"].to_string();
    assert!(body.contains("Earlier turns of this conversation were condensed"));
    assert!(!body.contains("part 0: the quick"));
    // Between compactions the request prefix stays byte for byte the same (prompt caching).
    let last_summary = requests.iter().rposition(is_summary_request).unwrap();
    let after: Vec<&Recorded> = requests[last_summary + 1..]
        .iter()
        .filter(|r| !is_summary_request(r))
        .collect();
    assert!(
        after.len() >= 2,
        "too few requests after the last compaction"
    );
    for pair in after.windows(2) {
        let (a, b) = (
            pair[0].body["messages"].as_array().unwrap(),
            pair[1].body["messages"].as_array().unwrap(),
        );
        assert_eq!(
            a[..],
            b[..a.len()],
            "the prefix changed between compactions"
        );
        assert_eq!(pair[0].body["tools"], pair[1].body["tools"]);
    }

    // The session records it as the Node pi does; a resume sees summary + kept messages.
    let lines = session_lines(&h);
    let compactions: Vec<&Value> = lines.iter().filter(|l| l["type"] == "compaction").collect();
    assert!(!compactions.is_empty());
    let c = compactions.last().unwrap();
    let kept = c["firstKeptEntryId"].as_str().unwrap();
    assert!(
        lines.iter().any(|l| l["id"] == kept),
        "firstKeptEntryId {kept} not in the file"
    );
    assert!(c["tokensBefore"].as_u64().unwrap() > 0);
    assert!(c["details"]["readFiles"].is_array());

    // Resumed: the first request holds the summary and the kept messages, not the early turns.
    let before = server.requests().len();
    run_ok(&h, &["-c", "-p", "and now?"]).await;
    let resumed = server.requests()[before..]
        .iter()
        .find(|r| !is_summary_request(r))
        .unwrap()
        .body["messages"]
        .to_string();
    assert!(resumed.contains("Earlier turns of this conversation were condensed"));
    assert!(!resumed.contains("part 0: the quick"));
    assert!(resumed.contains("and now?"));
    let _ = std::fs::remove_dir_all(&h);
}

#[tokio::test]
async fn forty_tool_turns_fit_an_8k_window_with_the_default_settings() {
    // No [compaction] figures: reserve and keep shrink with the window (2,048 and 2,730).
    // Once with the window in the config, once with only the server saying it (llama.cpp's
    // `/props`), the config naming no window.
    for told_by_server in [false, true] {
        forty_turns_at_8k(told_by_server).await;
    }
}

async fn forty_turns_at_8k(told_by_server: bool) {
    const TURNS: usize = 40;
    const SMALL: u64 = 8_192;
    let (server, _) = small_model_saying(
        "## Goal\nRead every part file.",
        told_by_server.then_some(SMALL),
        |n, prompt| {
            if n < TURNS {
                read_call(n, prompt)
            } else {
                text("All forty read.", prompt)
            }
        },
    )
    .await;
    let h = home(&format!("turns-8k-{told_by_server}"));
    let window = if told_by_server {
        String::new()
    } else {
        format!("context_window = {SMALL}\n")
    };
    std::fs::write(
        h.join("agent/config.toml"),
        format!(
            "model = \"lab/small\"\n\
             [providers.lab]\napi = \"openai-completions\"\nbase_url = \"{}/v1\"\n\
             [[providers.lab.models]]\nid = \"small\"\n{window}",
            server.url
        ),
    )
    .unwrap();
    write_parts(&h, TURNS);
    let out = run_ok(&h, &["--mode", "json", "read every part file"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("All forty read."), "{stdout}");
    // The server is asked its window only when the config names none (`/api/ps` is asked
    // for the window alone; `/props` also tells whether the chat template takes tools).
    let asked = server.probes().iter().any(|p| p.path == "/api/ps");
    assert_eq!(asked, told_by_server);
    let compactions = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "compaction_end" && e["result"].is_object())
        .count();
    assert!(compactions >= 3, "{compactions} compactions");
    let requests = server.requests();
    assert_eq!(
        requests.iter().filter(|r| !is_summary_request(r)).count(),
        TURNS + 1
    );
    for r in &requests {
        assert!(
            request_tokens(r) < SMALL,
            "a request of {} tokens (summary: {})",
            request_tokens(r),
            is_summary_request(r)
        );
    }
    let _ = std::fs::remove_dir_all(&h);
}

#[tokio::test]
async fn a_request_refused_as_too_long_is_compacted_and_sent_again() {
    // Recorded refusals: OpenAI's, llama.cpp's (its own wording and type) and Groq's (which
    // says it only in the code).
    let bodies = [
        (
            "openai",
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens","code":"context_length_exceeded"}}"#,
        ),
        (
            "llamacpp",
            r#"{"error":{"code":400,"message":"request (9733 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9733,"n_ctx":8192}}"#,
        ),
        (
            "groq",
            r#"{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
    ];
    for (server_name, body) in bodies {
        let (server, _) = small_model("## Goal\nRead the parts.", move |n, prompt| {
            match n {
                0..4 => read_call(n, 10),
                // The server's real limit is lower than the window the config claims.
                4 => Reply::error(400, body),
                _ => text("Done after compacting.", prompt),
            }
        })
        .await;
        let h = home(&format!("overflow-{server_name}"));
        configure(&h, &server);
        write_parts(&h, 4);
        let out = run_ok(&h, &["--mode", "json", "read the parts"]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let end = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "compaction_end")
            .unwrap_or_else(|| panic!("{server_name}: no compaction"));
        assert_eq!(end["reason"], "overflow", "{server_name}");
        assert_eq!(end["willRetry"], true, "{server_name}");
        assert!(stdout.contains("Done after compacting."), "{server_name}");
        let _ = std::fs::remove_dir_all(&h);
    }
}

#[tokio::test]
async fn a_request_still_too_long_after_compacting_is_a_clear_error() {
    let (server, agent_calls) = small_model("## Goal\nRead the parts.", |n, _| {
        if n < 4 {
            read_call(n, 10)
        } else {
            Reply::error(
                413,
                r#"{"error":{"message":"prompt is too long: 999999 tokens > 4096 maximum"}}"#,
            )
        }
    })
    .await;
    let h = home("overflow-twice");
    configure(&h, &server);
    write_parts(&h, 4);
    let out = pi(&h)
        .args(["-p", "read the parts"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("still too long") && stderr.contains("after compacting"),
        "{stderr}"
    );
    // One compaction, then the request was sent once more and refused again: no loop.
    let summaries = server
        .requests()
        .iter()
        .filter(|r| is_summary_request(r))
        .count();
    assert_eq!(summaries, 1);
    assert_eq!(agent_calls.load(Ordering::SeqCst), 6);
    let _ = std::fs::remove_dir_all(&h);
}

/// The TUI end to end: `/compact` with a focus shows the status, then the counts and the
/// summary; the summary request carried the focus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_in_the_terminal_ui_shows_the_counts_and_the_summary() {
    use support::pty::{Pty, temp_home};
    use support::server::{tags, text_reply};
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("first answer"),
        text_reply("second answer"),
        text_reply("## Goal\nKeep the parser on track."),
    ])
    .await;
    let h = temp_home("compact-tui");
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        "[compaction]\nkeep_recent_tokens = 40\n",
    )
    .unwrap();
    let mut pi = Pty::spawn_sized(&h, &server, None, 40, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(format!("first question {}\r", "word ".repeat(100)).as_bytes());
    pi.wait_for("first answer");
    pi.send(format!("{}\r", "second question, a longer one to keep, ".repeat(4)).as_bytes());
    pi.wait_for("second answer");
    pi.send(b"/compact the parser\r");
    let s = pi.wait_for("Context compacted");
    assert!(s.contains("Keep the parser on track."), "{s}");
    let summary_request = server.requests().last().unwrap().body.to_string();
    assert!(summary_request.contains("the parser"));
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&h);
}

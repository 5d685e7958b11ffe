//! How streams end, through the real binary: a provider stream cut in the middle of an event
//! or trickling bytes that never complete one, an MCP reply larger than the limit, MCP server
//! processes outliving pi, and an RPC line of tens of megabytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_support;
mod support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::binary_home;
use support::server::{Chunk, Reply, TestServer, chunk, tags, text_reply};

/// Not a test: the stdio MCP server, when this binary is re-run as one.
#[test]
fn stdio_server_entry() {
    if std::env::var_os(mcp_support::SERVER_ENV).is_some() {
        mcp_support::run_stdio_server();
    }
}

/// The JSON lines of `pi --mode json`'s stdout.
fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `pi --mode json PROMPT` against `server` (as the local Ollama), with `config` as its
/// config.toml; at most 60 s.
async fn json_run(server: &TestServer, config: &str, prompt: &str) -> (Vec<Value>, String) {
    let home = binary_home("streams");
    std::fs::write(home.join("agent/config.toml"), config).unwrap();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", &server.url)
        .current_dir(home.join("project"))
        .args(["--mode", "json", prompt])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("pi still running after 60 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let _ = std::fs::remove_dir_all(&home);
    (json_lines(&out.stdout), stderr)
}

/// The `errorMessage` of every `auto_retry_start` event.
fn retried_because(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "auto_retry_start")
        .map(|l| l["errorMessage"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The text of the last assistant message.
fn final_text(lines: &[Value]) -> String {
    let end = lines
        .iter()
        .rfind(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .expect("an assistant message");
    end["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_of_an_event_is_retried() {
    let cut = Reply::sse(vec![
        chunk(json!({"content": "the first try"}), None),
        Chunk::Bytes(b"data: {\"id\": \"c1\", \"choices\": [{\"index\": 0, \"del".to_vec()),
        Chunk::Close,
    ]);
    let server = TestServer::start(vec![tags("qwen3:8b"), cut, text_reply("the second try")]).await;
    let (lines, _) = json_run(&server, "[retry]\nbase_delay_ms = 1\n", "hello").await;
    let why = retried_because(&lines);
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].contains("in the middle of an event"), "{why:?}");
    assert_eq!(final_text(&lines), "the second try");
}

#[tokio::test]
async fn a_stream_that_trickles_bytes_ends_like_a_silent_one() {
    // A byte every 50 ms: never a second without data, never a whole event either.
    let rest = "data: {\"id\": \"c1\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \" and more\"}, \"finish_reason\": null}]}\n\n";
    let mut chunks = vec![chunk(json!({"content": "slow"}), None)];
    for b in rest.bytes() {
        chunks.push(Chunk::Delay(Duration::from_millis(50)));
        chunks.push(Chunk::Bytes(vec![b]));
    }
    chunks.extend(text_reply("").chunks.into_iter().skip(1));
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(chunks),
        text_reply("quick this time"),
    ])
    .await;
    let config = "idle_timeout_secs = 1\n[retry]\nbase_delay_ms = 1\n";
    let (lines, _) = json_run(&server, config, "hello").await;
    let why = retried_because(&lines);
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].contains("no complete event from the provider in 1.0 s"),
        "{why:?}"
    );
    assert_eq!(final_text(&lines), "quick this time");
}

/// `pi --mode rpc` in `home`, with pipes for stdin and stdout.
fn rpc_pi(home: &std::path::Path) -> tokio::process::Child {
    support::rpc_pi(home, "127.0.0.1:9")
        .arg("--no-session")
        // A model to start with; no request is made.
        .env("ANTHROPIC_API_KEY", "not-used")
        .spawn()
        .unwrap()
}

/// Write `bytes` to the child's stdin from a task of its own (a pipe holds far less than a long
/// line, so writing waits for pi to read).
fn write_in_background(stdin: tokio::process::ChildStdin, bytes: Vec<u8>) {
    use tokio::io::AsyncWriteExt;
    tokio::spawn(async move {
        let mut stdin = stdin;
        stdin.write_all(&bytes).await.unwrap();
        stdin.flush().await.unwrap();
        // Keep stdin open: closing it would end pi before the test has read its answers.
        std::future::pending::<()>().await;
    });
}

/// The `response` lines of `stdout`, until one with each id in `ids` has come (at most 60 s).
async fn responses(stdout: tokio::process::ChildStdout, ids: &[&str]) -> Vec<Value> {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).expect("every line is JSON");
            if v["type"] == "response" {
                seen.push(v);
            }
            if ids
                .iter()
                .all(|id| seen.iter().any(|r| r["id"] == *id || r["command"] == *id))
            {
                return;
            }
        }
        panic!("stdout closed; responses so far: {seen:?}");
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("no answer within 60 s");
    seen
}

/// A `get_state` command with `id`, padded to `size` bytes (without its line break).
fn padded_command(id: &str, size: usize) -> Vec<u8> {
    let head = format!("{{\"id\":\"{id}\",\"type\":\"get_state\",\"padding\":\"");
    let mut line = head.into_bytes();
    line.resize(size - 2, b'x');
    line.extend_from_slice(b"\"}");
    line
}

#[tokio::test]
async fn an_rpc_line_of_40_mb_is_read_and_answered() {
    let home = binary_home("rpc-long");
    let mut pi = rpc_pi(&home);
    let mut input = padded_command("long", 40_000_000);
    input.extend_from_slice(b"\n{\"id\":\"after\",\"type\":\"get_state\"}\n");
    write_in_background(pi.stdin.take().unwrap(), input);
    let seen = responses(pi.stdout.take().unwrap(), &["long", "after"]).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0]["id"], "long");
    assert_eq!(seen[0]["success"], true, "{}", seen[0]);
    assert_eq!(seen[1]["id"], "after");
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test]
async fn an_rpc_line_past_the_limit_is_refused_and_the_next_command_answered() {
    let home = binary_home("rpc-limit");
    std::fs::write(
        home.join("agent/config.toml"),
        "[rpc]\nmax_line_bytes = 1000000\n",
    )
    .unwrap();
    let mut pi = rpc_pi(&home);
    let mut input = padded_command("big", 3_000_000);
    input.extend_from_slice(b"\n{\"id\":\"after\",\"type\":\"get_state\"}\n");
    write_in_background(pi.stdin.take().unwrap(), input);
    let seen = responses(pi.stdout.take().unwrap(), &["parse", "after"]).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    // The Node.js pi's shape for a line it cannot read.
    assert_eq!(seen[0]["type"], "response");
    assert_eq!(seen[0]["command"], "parse");
    assert_eq!(seen[0]["success"], false);
    let error = seen[0]["error"].as_str().unwrap();
    assert!(error.starts_with("Failed to parse command: "), "{error}");
    assert!(error.contains("3000000 bytes"), "{error}");
    assert!(error.contains("max_line_bytes"), "{error}");
    assert_eq!(seen[1]["id"], "after");
    assert_eq!(seen[1]["success"], true);
    let _ = std::fs::remove_dir_all(&home);
}

/// A unique number for names of processes and folders.
fn unique() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("{}{n:03}", std::process::id())
}

/// A stdio MCP server `name` (this test binary) in `mode`, started by a shell that first puts
/// a helper in the background (`sleep HELPER`, in the server's process group), then becomes
/// the server; `marker` is in the server's command line.
fn server_with_helper(name: &str, mode: &str, helper: &str, marker: &str) -> String {
    let exe = std::env::current_exe().unwrap().display().to_string();
    format!(
        r#"
[mcp_servers.{name}]
command = "sh"
args = ["-c", "sleep {helper} </dev/null >/dev/null 2>&1 & exec \"$0\" {entry} --exact --nocapture --test-threads=1 {marker} 3>&1 1>&2", {exe:?}]
env = {{ {server} = "1", {mode_env} = "{mode}" }}
"#,
        entry = mcp_support::ENTRY_TEST,
        server = mcp_support::SERVER_ENV,
        mode_env = mcp_support::MODE_ENV,
    )
}

/// Wait (at most 20 s) until `done` holds, looking every 20 ms.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let found = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(20), found)
        .await
        .is_err()
    {
        panic!("waited in vain for {what}");
    }
}

/// Kill every process whose command line holds `marker` (cleaning up after a test).
fn kill_all(marker: &str) {
    for dir in support::running_with(marker) {
        if let Some(pid) = dir.rsplit('/').next().and_then(|p| p.parse::<i32>().ok()) {
            // SAFETY: a plain system call on a pid we just found.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

#[tokio::test]
async fn mcp_servers_and_their_helpers_end_with_pi() {
    let id = unique();
    let (helper, marker) = (format!("900.{id}"), format!("pi-mcp-marker-{id}"));
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("fine")]).await;
    // `linger`: the server stays after its stdin closes; only a signal ends it.
    let config = server_with_helper("t", "linger", &helper, &marker);
    let (lines, stderr) = json_run(&server, &config, "hello").await;
    assert_eq!(final_text(&lines), "fine");
    assert!(!stderr.contains("failed to start"), "{stderr}");
    wait_until("the server and its helper to end", || {
        support::running_with(&marker).is_empty() && support::running_with(&helper).is_empty()
    })
    .await;
}

/// `pi --mode rpc` with `config`, its MCP server and the server's helper running.
async fn rpc_with_server(config: &str, helper: &str, marker: &str) -> tokio::process::Child {
    let home = binary_home("rpc-mcp");
    std::fs::write(home.join("agent/config.toml"), config).unwrap();
    let pi = rpc_pi(&home);
    wait_until("the MCP server and its helper", || {
        !support::running_with(marker).is_empty() && !support::running_with(helper).is_empty()
    })
    .await;
    pi
}

#[tokio::test]
async fn sigterm_to_rpc_mode_stops_the_mcp_server_group() {
    let id = unique();
    let (helper, marker) = (format!("901.{id}"), format!("pi-mcp-marker-{id}"));
    let config = server_with_helper("t", "linger", &helper, &marker);
    let mut pi = rpc_with_server(&config, &helper, &marker).await;
    let pid = pi.id().unwrap() as i32;
    // Held until pi has ended: `wait` would close it, and pi ending on the closed stdin (exit 0)
    // would race with its ending on the signal.
    let _stdin = pi.stdin.take();
    // SAFETY: a plain system call on our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(20), pi.wait())
        .await
        .expect("pi still running 20 s after SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(143));
    wait_until("the server and its helper to end", || {
        support::running_with(&marker).is_empty() && support::running_with(&helper).is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_killed_pi_takes_its_mcp_server_along() {
    let id = unique();
    let (helper, marker) = (format!("902.{id}"), format!("pi-mcp-marker-{id}"));
    let config = server_with_helper("t", "linger", &helper, &marker);
    let mut pi = rpc_with_server(&config, &helper, &marker).await;
    pi.start_kill().unwrap();
    pi.wait().await.unwrap();
    // The kernel's death signal ends the server even though pi could do nothing. (A helper
    // the server started is not reached that way; this test cleans it up.)
    wait_until("the server to end", || {
        support::running_with(&marker).is_empty()
    })
    .await;
    kill_all(&helper);
}

#[tokio::test]
async fn mcp_replies_over_the_limit_fail_at_once_and_large_ones_are_cut() {
    // The model asks two servers for 20 MB each: one with the default limit (16 MiB), one
    // allowing 32 MiB. Neither may make the run wait for its (long) tool timeout.
    let calls = Reply::sse(vec![
        chunk(
            json!({"tool_calls": [
                {"index": 0, "id": "call_a", "function": {"name": "mcp__strict__big", "arguments": "{\"bytes\": 20000000}"}},
                {"index": 1, "id": "call_b", "function": {"name": "mcp__roomy__big", "arguments": "{\"bytes\": 20000000}"}}
            ]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        support::server::raw_data("[DONE]"),
    ]);
    let server = TestServer::start(vec![tags("qwen3:8b"), calls, text_reply("done")]).await;
    let config = format!(
        "{}{}",
        mcp_support::stdio_toml("strict", "normal", "tool_timeout_sec = 600"),
        mcp_support::stdio_toml(
            "roomy",
            "normal",
            "tool_timeout_sec = 600\nmax_reply_bytes = 33554432"
        ),
    );
    let (lines, _) = json_run(&server, &config, "fetch both").await;
    assert_eq!(final_text(&lines), "done");
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chats.len(), 2);
    let results: Vec<String> = chats[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(results.len(), 2);
    let strict = &results[0];
    assert!(
        strict.contains("MCP server `strict`, tool `big`"),
        "{strict}"
    );
    assert!(strict.contains("the reply was 19.3 MB"), "{strict}");
    assert!(strict.contains("16 MB"), "{strict}");
    assert!(strict.contains("max_reply_bytes"), "{strict}");
    let roomy = &results[1];
    assert!(
        roomy.len() < 60_000,
        "cut to the output limit: {}",
        roomy.len()
    );
    assert!(roomy.contains("line        1 ---"), "{roomy:.200}");
    assert!(
        roomy.contains("[Lines 1-512 of 200000 shown (50 KB limit). The rest of the result (19.1 MB in all) was left out"),
        "{}",
        &roomy[roomy.len() - 300..]
    );
}

//! `pi -p` and `pi --mode json` end to end: the real binary against a scripted local server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::pi_at_server as pi;
use support::server::{Chunk, Reply, TestServer, call_reply, chunk, event, tags, text_reply};
use support::session_id_of;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

fn home() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("pi-print-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `pi` with `args` and require it to succeed (stderr shown if not).
async fn run_ok(server: &TestServer, home: &std::path::Path, args: &[&str]) -> Output {
    let out = pi(server, home).args(args).output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[tokio::test]
async fn print_mode_prints_the_answer_from_a_local_server() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Hello there")]).await;
    let h = home();
    let out = run_ok(&server, &h, &["-p", "say hi"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello there\n");
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/api/tags");
    assert_eq!(reqs[1].path, "/v1/chat/completions");
    assert_eq!(reqs[1].body["model"], "qwen3:8b");
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1], json!({"role": "user", "content": "say hi"}));
}

#[tokio::test]
async fn json_mode_streams_every_event_as_a_line() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Hi")]).await;
    let h = home();
    let out = pi(&server, &h)
        .args(["--mode", "json", "hello"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    let types: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"agent_start"));
    assert_eq!(types.last(), Some(&"agent_end"));
    assert!(types.contains(&"message_update"));
    let update = lines
        .iter()
        .find(|l| l["type"] == "message_update")
        .unwrap();
    assert!(update.get("assistantMessageEvent").is_some());
    assert!(
        update.get("message").is_none(),
        "updates carry deltas, not the partial"
    );
    let end = lines.iter().rfind(|l| l["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["role"], "assistant");
    assert_eq!(end["message"]["stopReason"], "stop");
}

#[tokio::test]
async fn piped_stdin_joins_the_prompt_and_selects_print_mode() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Summary.")]).await;
    let h = home();
    let mut child = pi(&server, &h)
        .arg("summarize this")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"line one\nline two\n").await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Summary.\n");
    let body = &server.requests()[1].body;
    assert_eq!(
        body["messages"][1]["content"],
        "line one\nline two\n\nsummarize this"
    );
}

#[tokio::test]
async fn a_provider_error_exits_1_with_the_message_and_no_key() {
    let server = TestServer::start(vec![Reply::error(
        401,
        r#"{"error":{"message":"invalid x-api-key"}}"#,
    )])
    .await;
    let h = home();
    let out = pi(&server, &h)
        .args([
            "-p",
            "--model",
            "ollama/qwen3:8b",
            "--api-key",
            "sk-ant-secret-value",
            "hi",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid x-api-key") && err.contains("401"),
        "{err}"
    );
    assert!(!err.contains("sk-ant-secret-value"));
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}

#[tokio::test]
async fn a_wrong_url_is_named_with_its_provider() {
    // The server lists the model but has no chat endpoint (a base URL pointing at the wrong
    // server): a 404 with no body.
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply {
            status: 404,
            headers: Vec::new(),
            chunks: Vec::new(),
        },
    ])
    .await;
    let h = home();
    let out = pi(&server, &h).args(["-p", "hi"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "ollama ({}/v1/chat/completions): not found (HTTP 404)",
        server.url
    );
    assert!(err.contains(&expected), "{err}");
}

#[tokio::test]
async fn max_turns_ends_a_looping_run_with_a_clear_message() {
    let call = call_reply("c1", "nothing", "{}");
    let server = TestServer::start(vec![tags("qwen3:8b"), call.clone(), call.clone(), call]).await;
    let h = home();
    let out = pi(&server, &h)
        .args(["-p", "--max-turns", "2", "loop forever"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--max-turns"), "{err}");
    assert_eq!(server.requests().len(), 3, "probe plus two model calls");
}

#[tokio::test]
async fn the_repeated_call_limit_comes_from_config() {
    let call = call_reply("c1", "nothing", "{}");
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call.clone(),
        call.clone(),
        call.clone(),
        call,
    ])
    .await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(h.join("agent/config.toml"), "max_repeated_tool_turns = 2\n").unwrap();
    let out = pi(&server, &h)
        .args(["-p", "loop forever"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("same tool call 3 turns"), "{err}");
    assert_eq!(server.requests().len(), 4, "probe plus three model calls");
}

#[tokio::test]
async fn custom_providers_come_from_config() {
    let server = TestServer::start(vec![text_reply("from the lab")]).await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        format!(
            "model = \"lab/coder-7b\"\n[providers.lab]\napi = \"openai-completions\"\nbase_url = \"{}/v1\"\nkey = \"LAB_KEY\"\nheaders = {{ \"X-Team\" = \"core\" }}\n[[providers.lab.models]]\nid = \"coder-7b\"\n",
            server.url
        ),
    )
    .unwrap();
    let out = pi(&server, &h)
        .env("LAB_KEY", "lab-secret")
        .args(["-p", "hi"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from the lab\n");
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer lab-secret"));
    assert_eq!(r.header("x-team"), Some("core"));
}

#[tokio::test]
async fn a_broken_config_names_line_and_column_and_does_not_start() {
    let server = TestServer::start(vec![]).await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        "model = \"x\"\nthinking = = \n",
    )
    .unwrap();
    let out = pi(&server, &h).args(["-p", "hi"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.toml:2:"), "{err}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn sigterm_aborts_cleanly_with_143() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(vec![
            chunk(json!({"content": "working"}), None),
            Chunk::Stall,
        ]),
    ])
    .await;
    let h = home();
    let child = pi(&server, &h).args(["-p", "long task"]).spawn().unwrap();
    let pid = child.id().unwrap() as i32;
    // The answer has started streaming and stalls.
    server.wait_stalls(1).await;
    let started = Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn anthropic_base_url_and_key_from_the_environment_with_thinking() {
    let msg_start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 12, "output_tokens": 1}}});
    let server = TestServer::start(vec![Reply::sse(vec![
        event("message_start", &msg_start),
        event("content_block_start", &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        event("content_block_delta", &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Bonjour"}})),
        event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})),
        event("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}})),
        event("message_stop", &json!({"type": "message_stop"})),
    ])])
    .await;
    let h = home();
    let out = pi(&server, &h)
        .env("ANTHROPIC_BASE_URL", server.url.clone())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args([
            "-p",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "high",
            "salut",
        ])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Bonjour\n");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(r.body["thinking"]["budget_tokens"], 16384);
    assert_eq!(r.body["model"], "claude-sonnet-4-5");
}

#[tokio::test]
async fn context_files_and_appended_text_reach_the_system_prompt() {
    let h = home();
    std::fs::write(h.join("AGENTS.md"), "Always answer in French.").unwrap();
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("ok"),
        tags("qwen3:8b"),
        text_reply("ok"),
    ])
    .await;
    let out = pi(&server, &h)
        .args([
            "-p",
            "--append-system-prompt",
            "Be extra careful.",
            "--append-system-prompt",
            "Prefer small diffs.",
            "hi",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let system = server.requests()[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("# Project Context"), "{system}");
    assert!(system.contains("Always answer in French."));
    assert!(system.contains("Be extra careful.\n\nPrefer small diffs."));
    assert!(system.contains("Current working directory: "));
    // Each tool is named by its first sentence: its whole description, rules and all, goes
    // with its definition, and nothing in the first request is sent twice.
    assert!(
        system.contains("\n- read: Read a file from disk.\n"),
        "{system}"
    );
    let tools = server.requests()[1].body["tools"].to_string();
    let rule = "when more remains, a note at the end gives the `offset`";
    assert!(tools.contains(rule) && !system.contains(rule));
    // `-nc`, the Node pi's short form of --no-context-files.
    let out = pi(&server, &h)
        .args(["-p", "-nc", "hi"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let system = server.requests()[3].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains("Always answer in French."));
}

#[tokio::test]
async fn tools_run_for_real_and_the_tool_set_follows_the_flags() {
    let h = home();
    std::fs::write(h.join("notes.txt"), "the answer is 42\n").unwrap();
    let call = call_reply("c1", "read", "{\"path\":\"notes.txt\"}");
    let server = TestServer::start(vec![tags("qwen3:8b"), call, text_reply("It says 42.")]).await;
    let out = run_ok(&server, &h, &["-p", "what does notes.txt say?"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "It says 42.\n");
    let reqs = server.requests();
    let names: Vec<&str> = reqs[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    let tool_msg = reqs[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("the answer is 42")
    );
    let system = reqs[1].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- read: "), "the prompt lists the tools");

    let server =
        TestServer::start(vec![tags("q"), text_reply("a"), tags("q"), text_reply("b")]).await;
    let out = pi(&server, &h)
        .args(["-p", "-t", "grep,ls", "x"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let out2 = pi(&server, &h)
        .args(["-p", "-nt", "x"])
        .output()
        .await
        .unwrap();
    assert!(out2.status.success());
    let reqs = server.requests();
    let names: Vec<&str> = reqs[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["grep", "ls"]);
    assert!(reqs[3].body.get("tools").is_none());

    let bad = pi(&server, &h)
        .args(["-p", "--tools", "read,teleport", "x"])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("teleport"));
}

fn session_files(h: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let root = h.join("agent/sessions");
    for d in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            // Not the lock file a running pi keeps beside its session.
            if f.path().extension().is_some_and(|x| x == "jsonl") {
                out.push(f.path());
            }
        }
    }
    out
}

#[tokio::test]
async fn sessions_are_saved_and_continued_and_no_session_saves_nothing() {
    let server = TestServer::start(vec![
        tags("q"),
        text_reply("first answer"),
        text_reply("second answer"),
    ])
    .await;
    let h = home();
    let out = run_ok(&server, &h, &["-p", "remember 7"]).await;
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pi --session "),
        "resume hint on exit"
    );
    let files = session_files(&h);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("\"type\":\"session\"")
    );
    assert!(text.contains("remember 7") && text.contains("first answer"));
    assert!(text.contains("\"model_change\""));

    // -c continues with the saved model (no probe needed) and sends the history.
    let out = run_ok(&server, &h, &["-c", "-p", "what was it?"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "second answer\n");
    let reqs = server.requests();
    let msgs = reqs.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let contents: Vec<String> = msgs
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(contents.contains(&"remember 7".to_string()));
    assert!(contents.contains(&"first answer".to_string()));
    assert_eq!(session_files(&h).len(), 1, "continued in the same file");

    let server = TestServer::start(vec![tags("q"), text_reply("x")]).await;
    let h2 = home();
    let out = pi(&server, &h2)
        .args(["-p", "--no-session", "hi"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    assert!(session_files(&h2).is_empty());
}

/// Wait until one session file exists and contains every one of `needles`.
async fn wait_for_session_text(h: &std::path::Path, needles: &[&str]) -> std::path::PathBuf {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let files = session_files(h);
        if files.len() == 1 {
            let text = std::fs::read_to_string(&files[0]).unwrap_or_default();
            if needles.iter().all(|n| text.contains(n)) {
                return files[0].clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "the session file never held {needles:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn kill_9(pid: u32) {
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
}

#[tokio::test]
async fn a_process_killed_mid_tool_resumes_knowing_the_call_started() {
    let h = home();
    let marker = h.join("started.txt");
    let command = format!("touch {} && sleep 30", marker.display());
    let call = call_reply(
        "call_sleep",
        "bash",
        &json!({ "command": command }).to_string(),
    );
    let server = TestServer::start(vec![tags("q"), call, text_reply("recovered")]).await;
    let child = pi(&server, &h)
        .args(["-p", "run the long thing"])
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // The command is running and the file says it started.
    wait_for_session_text(&h, &["call_sleep", "pi/tool_started"]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the command never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill_9(pid);
    let _ = child.wait_with_output().await;
    let out = run_ok(&server, &h, &["-c", "-p", "go on"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "recovered\n");
    let last = server.requests().last().unwrap().body.clone();
    let msgs = last["messages"].as_array().unwrap();
    let call_at = msgs
        .iter()
        .position(|m| m["tool_calls"][0]["id"] == "call_sleep")
        .unwrap();
    let answer = &msgs[call_at + 1];
    assert_eq!(answer["role"], "tool");
    assert_eq!(answer["tool_call_id"], "call_sleep");
    let text = answer["content"].to_string();
    assert!(
        text.contains("started") && text.contains("outcome is unknown"),
        "{text}"
    );
    assert!(!text.contains("not run"), "{text}");
}

#[tokio::test]
async fn a_prompt_is_saved_before_the_first_reply() {
    // The server takes the request and never answers; pi is killed while it waits.
    let server = TestServer::start(vec![tags("q"), Reply::silent(), text_reply("at last")]).await;
    let h = home();
    let child = pi(&server, &h)
        .args(["-p", "please remember this prompt"])
        .spawn()
        .unwrap();
    wait_for_session_text(&h, &["please remember this prompt"]).await;
    kill_9(child.id().unwrap());
    let _ = child.wait_with_output().await;
    let out = run_ok(&server, &h, &["-c", "-p", "still there?"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "at last\n");
    let last = server.requests().last().unwrap().body.clone();
    let texts: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        texts[0].contains("please remember this prompt"),
        "{texts:?}"
    );
    assert!(texts[1].contains("still there?"), "{texts:?}");
}

#[tokio::test]
async fn an_unwritable_session_folder_stops_pi_before_any_request() {
    let server = TestServer::start(vec![tags("q"), text_reply("never asked")]).await;
    let h = home();
    // A file stands where the folder would be created (this fails for root too).
    let blocker = h.join("blocker");
    std::fs::write(&blocker, "a file, not a folder").unwrap();
    let dir = blocker.join("sessions");
    let out = pi(&server, &h)
        .args(["--session-dir", dir.to_str().unwrap(), "-p", "hello"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sessions cannot be saved"), "{err}");
    assert!(err.contains("--no-session"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(server.requests().is_empty(), "no model was asked");

    // The same from the config file.
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        format!("session_dir = {:?}\n", dir.to_str().unwrap()),
    )
    .unwrap();
    let out = pi(&server, &h)
        .args(["-p", "hello"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(server.requests().is_empty());
    // --no-session runs anyway.
    let out = run_ok(&server, &h, &["--no-session", "-p", "hello"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "never asked\n");
}

/// The answer is still given; the loss is reported with its `cause`, never followed by how to
/// resume; the exit status says something went wrong.
fn assert_answered_but_not_saved(out: &Output, answer: &str, cause: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).trim_end() == answer,
        "the answer is printed; stderr: {err}"
    );
    assert!(err.contains("could not be saved"), "{err}");
    assert!(err.contains(cause), "{err}");
    assert!(!err.contains("To resume"), "{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
}

#[tokio::test]
async fn a_full_disk_is_reported_and_never_offered_for_resuming() {
    // The answer outgrows what may be written: pi's files may not pass 2 KB (`ulimit -f`),
    // which fails writes the way a full disk does.
    let answer = "x".repeat(6000);
    let server = TestServer::start(vec![tags("q"), text_reply(&answer)]).await;
    let h = home();
    let mut cmd = pi(&server, &h);
    cmd.args(["-p", "write a lot"]);
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2048,
                rlim_max: 2048,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().await.unwrap();
    assert_answered_but_not_saved(&out, &answer, "File too large");
    // What did reach the file is whole lines: the prompt survives.
    let file = &session_files(&h)[0];
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("write a lot"));
}

#[tokio::test]
async fn a_bad_queue_mode_in_config_is_reported() {
    let server = TestServer::start(vec![tags("q"), text_reply("x")]).await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        "steering_mode = \"sometimes\"\n",
    )
    .unwrap();
    let out = pi(&server, &h).args(["-p", "hi"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("steering_mode"));
}

fn jsonl_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
        .count()
}

#[tokio::test]
async fn session_dir_from_config_is_used_below_the_variable_and_the_flag() {
    let server = TestServer::start(vec![
        tags("q"),
        text_reply("one"),
        tags("q"),
        text_reply("two"),
        tags("q"),
        text_reply("three"),
    ])
    .await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(h.join("agent/config.toml"), "session_dir = \"~/kept\"\n").unwrap();
    let run = |cmd: &mut Command| {
        let out = cmd.output();
        async move {
            let out = out.await.unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    };
    // Config only: `~` is the home folder, files go straight into the folder.
    run(pi(&server, &h).args(["-p", "a"])).await;
    assert_eq!(jsonl_in(&h.join("kept")), 1);
    assert!(session_files(&h).is_empty(), "nothing in the default place");
    // The variable beats the config.
    run(pi(&server, &h)
        .env("PI_CODING_AGENT_SESSION_DIR", h.join("from-env"))
        .args(["-p", "b"]))
    .await;
    assert_eq!(jsonl_in(&h.join("from-env")), 1);
    assert_eq!(jsonl_in(&h.join("kept")), 1);
    // The flag beats both.
    let flag = h.join("from-flag");
    run(pi(&server, &h)
        .env("PI_CODING_AGENT_SESSION_DIR", h.join("from-env"))
        .arg("--session-dir")
        .arg(&flag)
        .args(["-p", "c"]))
    .await;
    assert_eq!(jsonl_in(&flag), 1);
    assert_eq!(jsonl_in(&h.join("from-env")), 1);
}

#[tokio::test]
async fn tool_limits_from_config_reach_the_tools() {
    let h = home();
    let body: String = (1..=20).map(|i| format!("row {i}\n")).collect();
    std::fs::write(h.join("rows.txt"), body).unwrap();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(h.join("agent/config.toml"), "[tools]\nmax_lines = 3\n").unwrap();
    let call = call_reply("c1", "read", "{\"path\":\"rows.txt\"}");
    let server = TestServer::start(vec![tags("q"), call, text_reply("ok")]).await;
    run_ok(&server, &h, &["-p", "--no-session", "read rows.txt"]).await;
    let reqs = server.requests();
    let read = reqs[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "read")
        .unwrap()
        .clone();
    assert!(
        read["function"]["description"]
            .as_str()
            .unwrap()
            .contains("at most 3 lines")
    );
    let tool_msg = reqs[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let text = tool_msg["content"].as_str().unwrap();
    assert!(text.starts_with("row 1\nrow 2\nrow 3\n"), "{text}");
    assert!(
        text.ends_with("[Lines 1-3 of 20 shown. Continue with offset=4.]"),
        "{text}"
    );
}

const HOSTILE: &str =
    "title\u{1b}]0;pwned\u{7} clip\u{1b}]52;c;aGk=\u{7} clear\u{1b}[2J c1\u{9b}2J rlo\u{202e}x";

#[tokio::test]
async fn model_text_goes_to_a_pipe_unchanged_and_json_escapes_every_control() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply(HOSTILE),
        tags("qwen3:8b"),
        text_reply(HOSTILE),
    ])
    .await;
    let h = home();
    let out = run_ok(&server, &h, &["-p", "say it"]).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{HOSTILE}\n"),
        "a pipe gets the text as the model wrote it"
    );

    let out = run_ok(&server, &h, &["--mode", "json", "say it"]).await;
    let text = String::from_utf8(out.stdout).unwrap();
    for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(!text.contains(bad), "{bad:?} written raw in JSON mode");
    }
    assert!(
        text.contains("\\u009b") && text.contains("\\u202e"),
        "{text}"
    );
    // Still the same text, once parsed.
    let end = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(end["message"]["content"][0]["text"], HOSTILE);
}

#[tokio::test]
async fn errors_on_stderr_show_controls_instead_of_running_them() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::error(
            400,
            r#"{"error":{"message":"bad \u001b]0;pwned\u0007 request"}}"#,
        ),
    ])
    .await;
    let h = home();
    let out = pi(&server, &h).args(["-p", "go"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("bad ␛]0;pwned␇ request"), "{err}");
}

#[test]
fn on_a_terminal_print_mode_shows_controls_instead_of_running_them() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::Read;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply(HOSTILE),
    ]));
    let h = home();
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_pi"));
    cmd.env_clear();
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.env("HOME", &h);
    cmd.env("PI_CODING_AGENT_DIR", h.join("agent"));
    cmd.env("OLLAMA_HOST", server.url.clone());
    cmd.cwd(&h);
    cmd.args(["-p", "--no-session", "say it"]);
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut bytes = Vec::new();
    // The child has exited: read what it wrote (EIO marks the end on Linux).
    let mut buf = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buf) {
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
    }
    let shown = String::from_utf8_lossy(&bytes);
    assert!(
        !shown.contains('\u{1b}'),
        "an escape reached the terminal: {shown:?}"
    );
    assert!(
        !shown.contains('\u{9b}') && !shown.contains('\u{202e}'),
        "{shown:?}"
    );
    assert!(shown.contains("title␛]0;pwned␇"), "{shown:?}");
    assert!(shown.contains("rlo\\u{202e}x"), "{shown:?}");
    drop(rt);
}

#[tokio::test]
async fn commands_never_see_keys_and_sessions_are_private() {
    use std::os::unix::fs::PermissionsExt;
    const KEY: &str = "sk-ant-test-secret-value-0123456789";
    let server = TestServer::start(vec![
        call_reply(
            "c1",
            "bash",
            r#"{"command":"env; echo key=$ANTHROPIC_API_KEY"}"#,
        ),
        text_reply("done"),
    ])
    .await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        "[tools.env]\ninclude = [\"VISIBLE_TOKEN\"]\nexclude = [\"CORP_*\"]\n",
    )
    .unwrap();
    let out = pi(&server, &h)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("MY_SERVICE_PASSWORD", "hunter2hunter2")
        .env("CORP_VPN", "internal-value")
        .env("VISIBLE_TOKEN", "allowed-by-config")
        .args([
            "--model",
            "ollama/qwen3:8b",
            "-p",
            "show me the environment",
        ])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What the tool printed went back to the model: no key in it.
    let sent = server.requests().last().unwrap().body.to_string();
    assert!(sent.contains("key="), "the command ran: {sent}");
    for secret in [
        KEY,
        "hunter2hunter2",
        "internal-value",
        "ANTHROPIC_API_KEY=",
    ] {
        assert!(!sent.contains(secret), "{secret} reached the model");
    }
    assert!(
        sent.contains("allowed-by-config"),
        "include passes a variable"
    );
    // Nor is it in the session file, which only its owner can read.
    let files = session_files(&h);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(!text.contains(KEY));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(files[0].parent().unwrap()), 0o700);
}

#[tokio::test]
async fn a_session_another_pi_writes_is_refused_with_a_choice() {
    let server = TestServer::start(vec![
        tags("q"),
        // The first pi's request is never answered, so it keeps the session open.
        Reply::silent(),
        // The later ones go on with the model the session names: no probe first.
        text_reply("seen read-only"),
        text_reply("in the copy"),
        text_reply("taken over"),
    ])
    .await;
    let h = home();
    let first = pi(&server, &h)
        .args(["-p", "the first pi's question"])
        .spawn()
        .unwrap();
    let file = wait_for_session_text(&h, &["the first pi's question"]).await;
    let lock = format!("{}.lock", file.display());
    assert!(std::path::Path::new(&lock).exists());

    // A second pi that would write to it is refused and told the two ways on.
    let out = pi(&server, &h)
        .args(["-c", "-p", "me too"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("open in another pi"), "{err}");
    assert!(
        err.contains("pi --fork") && err.contains("--read-only"),
        "{err}"
    );
    let before = std::fs::read(&file).unwrap();

    // Read-only: the conversation is there, nothing is written.
    let out = run_ok(&server, &h, &["-c", "--read-only", "-p", "what was asked?"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "seen read-only\n");
    let sent = server.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("the first pi's question"), "{sent}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the file is untouched"
    );
    assert_eq!(session_files(&h).len(), 1);

    // Fork: a copy to go on in.
    let id = session_id_of(&file);
    let out = run_ok(&server, &h, &["--fork", &id, "-p", "go on"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "in the copy\n");
    assert_eq!(session_files(&h).len(), 2);
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // Once the first pi is gone (even killed), its lock is stale and the session opens again.
    kill_9(first.id().unwrap());
    let _ = first.wait_with_output().await;
    assert!(
        std::path::Path::new(&lock).exists(),
        "left behind by kill -9"
    );
    let out = run_ok(&server, &h, &["--session", &id, "-p", "back"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "taken over\n");
    assert!(std::fs::read(&file).unwrap().len() > before.len());
    assert!(!std::path::Path::new(&lock).exists(), "released on exit");
}

#[tokio::test]
async fn a_full_tmpfs_is_reported_where_the_machine_allows_mounting_one() {
    // A private mount namespace (`unshare -rm`) lets an unprivileged test mount a tiny tmpfs;
    // where that is not allowed, the file-size-limit test above covers the same path.
    let allowed = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !allowed {
        eprintln!("skipped: this machine does not allow a private tmpfs mount");
        return;
    }
    let answer = "y".repeat(20_000);
    let server = TestServer::start(vec![tags("q"), text_reply(&answer)]).await;
    let h = home();
    let sessions = h.join("full");
    std::fs::create_dir_all(&sessions).unwrap();
    // The same program and environment as every other test here, started inside the mount.
    let cmd = pi(&server, &h);
    let program = cmd.as_std().get_program().to_owned();
    let mut wrapped = Command::new("unshare");
    wrapped
        .args([
            "-rm",
            "sh",
            "-c",
            r#"mount -t tmpfs -o size=8k tmpfs "$1" && shift && exec "$@""#,
            "sh",
        ])
        .arg(&sessions)
        .arg(program)
        .args([
            "--session-dir",
            sessions.to_str().unwrap(),
            "-p",
            "fill the disk",
        ]);
    wrapped
        .env_clear()
        .envs(
            cmd.as_std()
                .get_envs()
                .filter_map(|(k, v)| v.map(|v| (k, v))),
        )
        .current_dir(&h)
        .stdin(Stdio::null());
    let out = wrapped.output().await.unwrap();
    assert_answered_but_not_saved(&out, &answer, "No space left on device");
}

#[tokio::test]
async fn a_local_server_that_closes_kept_connections_costs_no_retry() {
    // llama.cpp's server answers without `connection: close` and may close the connection
    // afterwards: a request sent on that connection fails before anything is sent back. pi
    // opens a new connection for each request to a plain-HTTP server.
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply("c1", "nothing", "{}"),
        text_reply("Done."),
    ])
    .await;
    server.keep_alive_then_hang_up();
    let h = home();
    let out = run_ok(&server, &h, &["-p", "go"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Done.\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("retrying"), "{err}");
    assert_eq!(server.reused_connections(), 0);
}

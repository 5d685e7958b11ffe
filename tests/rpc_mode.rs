//! `pi --mode rpc` end to end: a scripted client drives the real binary over stdin and stdout
//! against the local test server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::server::{Chunk, Reply, TestServer, call_reply, chunk, tags, text_reply};
use tokio::process::Command;

use support::rpc::Client;

fn home() -> std::path::PathBuf {
    support::binary_home("rpc")
}

fn stalled(text: &str) -> Reply {
    Reply::sse(vec![chunk(json!({"content": text}), None), Chunk::Stall])
}

#[allow(
    clippy::too_many_lines,
    reason = "one RPC conversation, step by step; the protocol rework rewrites it"
)]
#[tokio::test]
async fn prompts_state_models_and_sessions_over_rpc() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("Hello over RPC"),
        text_reply("Second answer"),
    ])
    .await;
    let h = home();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "prompt", "message": "hi"}))
        .await;
    let r = c.response("1").await;
    assert_eq!(r["command"], "prompt");
    assert_eq!(r["success"], true);
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert!(c.seen.iter().any(|v| v["type"] == "message_update"));

    c.send(json!({"id": "2", "type": "get_messages"})).await;
    let r = c.response("2").await;
    let msgs = r["data"]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1]["role"], "assistant");

    c.send(json!({"id": "3", "type": "get_state"})).await;
    let r = c.response("3").await;
    assert_eq!(r["data"]["model"]["id"], "qwen3:8b");
    assert_eq!(r["data"]["isStreaming"], false);
    assert_eq!(r["data"]["messageCount"], 2);

    c.send(json!({"id": "4", "type": "get_last_assistant_text"}))
        .await;
    assert_eq!(c.response("4").await["data"]["text"], "Hello over RPC");

    c.send(json!({"id": "s1", "type": "get_session_stats"}))
        .await;
    let r = c.response("s1").await;
    assert_eq!(r["data"]["userMessages"], 1);
    assert_eq!(r["data"]["assistantMessages"], 1);
    let out = h.join("project/out.html");
    c.send(json!({"id": "s2", "type": "export_html", "outputPath": out}))
        .await;
    assert_eq!(
        c.response("s2").await["data"]["path"],
        out.display().to_string()
    );
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("Hello over RPC")
    );
    c.send(json!({"id": "s3", "type": "cycle_thinking_level"}))
        .await;
    assert_eq!(
        c.response("s3").await["data"],
        Value::Null,
        "qwen3:8b does not reason"
    );
    c.send(json!({"id": "s4", "type": "get_fork_messages"}))
        .await;
    let r = c.response("s4").await;
    let forkable = r["data"]["messages"].as_array().unwrap().clone();
    assert_eq!(forkable.len(), 1);
    assert_eq!(forkable[0]["text"], "hi");
    c.send(json!({"id": "s5", "type": "fork", "entryId": forkable[0]["entryId"]}))
        .await;
    let r = c.response("s5").await;
    assert_eq!(r["data"]["text"], "hi", "{r}");
    c.send(json!({"id": "s6", "type": "clone"})).await;
    assert_eq!(c.response("s6").await["data"]["cancelled"], false);

    c.send(json!({"id": "5", "type": "set_model", "provider": "nobody", "modelId": "x"}))
        .await;
    let r = c.response("5").await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("Model not found"));
    c.send(json!({"id": "6", "type": "get_available_models"}))
        .await;
    let r = c.response("6").await;
    let first = r["data"]["models"][0].clone();
    assert!(first["contextWindow"].is_number() && first["baseUrl"].is_string());
    c.send(json!({"id": "7", "type": "set_model", "provider": "ollama", "modelId": "qwen3:8b"}))
        .await;
    let r = c.response("7").await;
    assert_eq!(
        r["data"]["id"], "qwen3:8b",
        "the model in use, though not catalogued: {r}"
    );

    // Malformed and unknown commands are answered, and the loop goes on.
    c.send_raw("{not json\n").await;
    let r = c
        .until("parse error", |v| {
            v["type"] == "response" && v["command"] == "parse"
        })
        .await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command")
    );
    c.send(json!({"id": "8", "type": "teleport"})).await;
    let r = c.response("8").await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("teleport"));
    c.send(json!({"id": "c1", "type": "set_auto_compaction", "enabled": false}))
        .await;
    assert_eq!(c.response("c1").await["success"], true);
    c.send(json!({"id": "c2", "type": "get_state"})).await;
    assert_eq!(
        c.response("c2").await["data"]["autoCompactionEnabled"],
        false
    );
    c.send(json!({"id": "c3", "type": "set_auto_retry", "enabled": "yes"}))
        .await;
    assert_eq!(c.response("c3").await["success"], false);
    c.send(json!({"id": "c4", "type": "set_auto_retry", "enabled": false}))
        .await;
    assert_eq!(c.response("c4").await["success"], true);
    c.send(json!({"id": "c5", "type": "cycle_model"})).await;
    assert_eq!(
        c.response("c5").await["data"],
        Value::Null,
        "no scope and no provider key: nothing to cycle to"
    );
    c.send(json!({"id": "9", "type": "abort_retry"})).await;
    assert_eq!(
        c.response("9").await["success"],
        true,
        "nothing is retrying: nothing to do"
    );
    c.send(json!({"id": "9b", "type": "extension_ui_response", "value": "x"}))
        .await;
    let r = c.response("9b").await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"].as_str().unwrap().contains("not supported"),
        "{r}"
    );

    c.send(json!({"id": "10", "type": "new_session"})).await;
    assert_eq!(c.response("10").await["data"]["cancelled"], false);
    c.send(json!({"id": "11", "type": "set_session_name", "name": "rpc work"}))
        .await;
    assert_eq!(c.response("11").await["success"], true);
    c.send(json!({"id": "12", "type": "get_messages"})).await;
    assert_eq!(
        c.response("12").await["data"]["messages"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    // A record may carry U+2028 inside a string, and CRLF endings are accepted.
    c.send_raw(&format!(
        "{}\r\n",
        json!({"id": "13", "type": "prompt", "message": "line\u{2028}separator"})
    ))
    .await;
    assert_eq!(c.response("13").await["success"], true);
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    let sent = &server.requests()[2].body["messages"];
    assert_eq!(
        sent.as_array().unwrap().last().unwrap()["content"],
        "line\u{2028}separator"
    );
    drop(c.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(5), c.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn steering_refusal_abort_and_stdin_closing_mid_run() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        stalled("thinking..."),
        stalled("again..."),
    ])
    .await;
    let h = home();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "prompt", "message": "work"}))
        .await;
    c.response("1").await;
    c.until("a delta", |v| v["type"] == "message_update").await;
    // A prompt during the run must say how to queue it.
    c.send(json!({"id": "2", "type": "prompt", "message": "more"}))
        .await;
    let r = c.response("2").await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("streamingBehavior"));
    c.send(
        json!({"id": "3", "type": "prompt", "message": "later", "streamingBehavior": "followUp"}),
    )
    .await;
    assert_eq!(c.response("3").await["success"], true);
    // Abort mid-stream: agent_end within a second.
    let t = Instant::now();
    c.send(json!({"id": "4", "type": "abort"})).await;
    c.response("4").await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());

    // Closing stdin during a run aborts it, saves the session and exits 0 within a second.
    c.send(json!({"id": "5", "type": "prompt", "message": "once more"}))
        .await;
    c.response("5").await;
    c.until("a delta", |v| {
        v["type"] == "message_update" && v.to_string().contains("again")
    })
    .await;
    let t = Instant::now();
    drop(c.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(5), c.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    let file = support::only_session_file(&h.join("agent"));
    let texts = support::resumed_texts(&file);
    assert!(texts.iter().any(|t| t == "once more"), "{texts:?}");
}

#[tokio::test]
async fn a_steer_sent_while_a_tool_runs_reaches_the_next_request() {
    let call = call_reply("c1", "bash", r#"{"command":"sleep 0.5; echo slept"}"#);
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call,
        text_reply("done after the steer"),
        text_reply("the follow-up answered"),
    ])
    .await;
    let h = home();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "prompt", "message": "run something"}))
        .await;
    c.response("1").await;
    c.until("the tool starting", |v| v["type"] == "tool_execution_start")
        .await;
    c.send(json!({"id": "2", "type": "steer", "message": "and then stop"}))
        .await;
    assert_eq!(c.response("2").await["success"], true);
    c.send(json!({"id": "3", "type": "follow_up", "message": "one more thing"}))
        .await;
    assert_eq!(c.response("3").await["success"], true);
    // The run goes on through the steer and then the follow-up before it ends.
    c.until("the follow-up's answer", |v| {
        v["type"] == "message_end" && v.to_string().contains("the follow-up answered")
    })
    .await;
    let reqs = server.requests();
    let second = reqs[2].body["messages"].to_string();
    assert!(second.contains("slept"), "the tool result: {second}");
    assert!(second.contains("and then stop"), "the steer: {second}");
    assert!(
        !second.contains("one more thing"),
        "the follow-up waits: {second}"
    );
    assert!(
        reqs[3].body["messages"]
            .to_string()
            .contains("one more thing")
    );
}

#[tokio::test]
async fn turning_retries_off_makes_a_server_error_final() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::error(500, r#"{"error":{"message":"boom"}}"#),
        text_reply("not reached"),
    ])
    .await;
    let h = home();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "set_auto_retry", "enabled": false}))
        .await;
    c.response("1").await;
    c.send(json!({"id": "2", "type": "prompt", "message": "hi"}))
        .await;
    c.response("2").await;
    let end = c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert!(end.to_string().contains("boom"), "{end}");
    assert!(!c.seen.iter().any(|v| v["type"] == "auto_retry_start"));
    assert_eq!(server.requests().len(), 2, "no second attempt");
}

#[tokio::test]
async fn a_retry_and_a_shell_command_stop_on_request_and_state_counts_the_queue() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::error(503, r#"{"error":{"message":"overloaded"}}"#),
        stalled("working on it"),
    ])
    .await;
    let h = home();
    // A backoff far longer than the test: only abort_retry can end it in time.
    std::fs::write(
        h.join("agent/config.toml"),
        "[retry]\nbase_delay_ms = 60000\nmax_delay_ms = 60000\n",
    )
    .unwrap();
    let mut c = Client::start(&server, &h);
    let long_prompt = format!("first line\n{}", "a long prompt ".repeat(40));
    c.send(json!({"id": "1", "type": "prompt", "message": long_prompt}))
        .await;
    c.response("1").await;
    c.until("auto_retry_start", |v| v["type"] == "auto_retry_start")
        .await;
    let asked = Instant::now();
    c.send(json!({"id": "2", "type": "abort_retry"})).await;
    assert_eq!(c.response("2").await["success"], true);
    let end = c
        .until("auto_retry_end", |v| v["type"] == "auto_retry_end")
        .await;
    assert_eq!(end["success"], false, "{end}");
    let end = c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert!(asked.elapsed() < Duration::from_secs(1));
    assert!(end.to_string().contains("overloaded"), "{end}");
    assert_eq!(server.requests().len(), 2, "no second attempt");

    // The fork points carry the whole prompt, not the tree's one-line cut.
    c.send(json!({"id": "3", "type": "get_fork_messages"}))
        .await;
    let r = c.response("3").await;
    assert_eq!(
        r["data"]["messages"][0]["text"],
        long_prompt.as_str(),
        "{r}"
    );

    c.send(json!({"id": "4", "type": "prompt", "message": "again"}))
        .await;
    c.response("4").await;
    c.until("streaming", |v| v["type"] == "message_update")
        .await;
    c.send(json!({"id": "5", "type": "follow_up", "message": "later"}))
        .await;
    c.response("5").await;
    c.send(json!({"id": "6", "type": "get_state"})).await;
    let state = c.response("6").await["data"].clone();
    assert_eq!(state["pendingMessageCount"], 1, "{state}");
    assert_eq!(state["isStreaming"], true);
    let file = state["sessionFile"].as_str().unwrap().to_string();
    assert!(file.ends_with(".jsonl"), "{file}");
    c.send(json!({"id": "7", "type": "abort"})).await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;

    // pause holds the next run back before its model call; resume lets it go.
    c.send(json!({"id": "p1", "type": "pause"})).await;
    assert_eq!(c.response("p1").await["data"]["paused"], true);
    c.send(json!({"id": "p2", "type": "get_state"})).await;
    assert_eq!(c.response("p2").await["data"]["isPaused"], true);
    let before = server.requests().len();
    c.send(json!({"id": "p3", "type": "prompt", "message": "held back"}))
        .await;
    c.response("p3").await;
    // Parked first (before its turn opens); the abort ends it from there.
    c.until("the run starting", |v| v["type"] == "agent_start")
        .await;
    c.send(json!({"id": "p4", "type": "abort"})).await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert_eq!(
        server.requests().len(),
        before,
        "no model call while paused"
    );
    c.send(json!({"id": "p5", "type": "resume"})).await;
    assert_eq!(c.response("p5").await["data"]["paused"], false);
    assert!(
        std::path::Path::new(&file).exists(),
        "get_state named the file the session is saved in"
    );

    // abort_bash stops the command; the process is not left running.
    c.send(json!({"id": "8", "type": "bash", "command": "sleep 30; echo never"}))
        .await;
    let asked = Instant::now();
    c.send(json!({"id": "9", "type": "abort_bash"})).await;
    let r = c.response("8").await;
    assert!(asked.elapsed() < Duration::from_secs(2));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["cancelled"], true, "{r}");
    assert!(!r["data"]["output"].as_str().unwrap().contains("never"));
    assert!(
        c.seen
            .iter()
            .any(|v| v["id"] == "9" && v["command"] == "abort_bash" && v["success"] == true)
    );
    drop(c.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(5), c.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn approval_ask_refuses_in_rpc_mode_where_nobody_can_answer() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply("c1", "bash", r#"{"command":"touch made.txt"}"#),
        text_reply("understood"),
    ])
    .await;
    let h = home();
    std::fs::write(h.join("agent/config.toml"), "approval = \"ask\"\n").unwrap();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "prompt", "message": "make a file"}))
        .await;
    c.response("1").await;
    let end = c
        .until("the tool's result", |v| v["type"] == "tool_execution_end")
        .await;
    assert_eq!(end["isError"], true, "{end}");
    assert!(end.to_string().contains("without a person to ask"), "{end}");
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert!(!h.join("project/made.txt").exists());
    assert!(
        server.requests()[2].body["messages"]
            .to_string()
            .contains("without a person to ask"),
        "the refusal reaches the model"
    );
}

#[tokio::test]
async fn compact_runs_the_pre_compact_hooks_first_and_session_start_after() {
    let server = TestServer::responding(std::sync::Arc::new(|r| {
        if r.path == "/api/tags" {
            tags("qwen3:8b")
        } else {
            text_reply("a reply long enough to be worth condensing later on")
        }
    }))
    .await;
    let h = home();
    let seen = h.join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    std::fs::write(
        h.join("agent/config.toml"),
        format!(
            "[compaction]\nkeep_recent_tokens = 1\n\n\
             [[hooks.PreCompact]]\nmatcher = \"manual\"\n\
             hooks = [{{ type = \"command\", command = \"cat > {0}/pre.json\" }}]\n\n\
             [[hooks.SessionStart]]\nmatcher = \"compact\"\n\
             hooks = [{{ type = \"command\", command = \"echo after-compaction; touch {0}/start\" }}]\n",
            seen.display()
        ),
    )
    .unwrap();
    let mut c = Client::start(&server, &h);
    for (id, text) in [("p1", "first question"), ("p2", "second question")] {
        c.send(json!({"id": id, "type": "prompt", "message": text}))
            .await;
        c.response(id).await;
        c.until("agent_end", |v| v["type"] == "agent_end").await;
    }
    c.send(json!({"id": "c1", "type": "compact", "customInstructions": "the plan"}))
        .await;
    assert_eq!(c.response("c1").await["success"], true);
    let pre: Value =
        serde_json::from_str(&std::fs::read_to_string(seen.join("pre.json")).unwrap()).unwrap();
    assert_eq!(pre["hook_event_name"], "PreCompact");
    assert_eq!(pre["trigger"], "manual");
    assert_eq!(pre["custom_instructions"], "the plan");
    // SessionStart (compact) ran, and its words go with the next prompt.
    c.send(json!({"id": "p3", "type": "prompt", "message": "third"}))
        .await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    assert!(seen.join("start").exists());
    let last = server.requests().last().unwrap().body.clone();
    let sent = last["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(sent.contains("after-compaction"), "{sent}");
}

#[tokio::test]
async fn compact_answers_with_what_it_did_and_fails_when_nothing_was_compacted() {
    let server = TestServer::responding(std::sync::Arc::new(|r| {
        if r.path == "/api/tags" {
            tags("qwen3:8b")
        } else {
            text_reply("a reply long enough to be worth condensing later on")
        }
    }))
    .await;
    let h = home();
    // Keep as little as possible as it is, so two exchanges are enough to condense.
    std::fs::write(
        h.join("agent/config.toml"),
        "[compaction]\nkeep_recent_tokens = 1\n",
    )
    .unwrap();
    let mut c = Client::start(&server, &h);

    // Nothing said yet: nothing to compact, and the answer says so.
    c.send(json!({"id": "c0", "type": "compact"})).await;
    let r = c.response("c0").await;
    assert_eq!(r["success"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("nothing"), "{r}");

    for (id, text) in [("p1", "first question"), ("p2", "second question")] {
        c.send(json!({"id": id, "type": "prompt", "message": text}))
            .await;
        c.response(id).await;
        c.until("agent_end", |v| v["type"] == "agent_end").await;
    }
    c.send(json!({"id": "c1", "type": "compact", "customInstructions": "the plan"}))
        .await;
    let r = c.response("c1").await;
    assert_eq!(r["success"], true, "{r}");
    let data = &r["data"];
    assert!(
        data["summary"]
            .as_str()
            .unwrap()
            .contains("worth condensing"),
        "{r}"
    );
    let before = data["tokensBefore"].as_u64().unwrap();
    let after = data["tokensAfter"].as_u64().unwrap();
    assert!(before > 0 && after > 0, "{r}");
    assert!(data["details"].is_object(), "{r}");
    // The entry it keeps from is the one the session file's compaction names.
    let kept = data["firstKeptEntryId"]
        .as_str()
        .expect("an entry id")
        .to_string();
    drop(c.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(5), c.child.wait()).await;
    let file = support::only_session_file(&h.join("agent"));
    let entries: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let compaction = entries
        .iter()
        .find(|e| e["type"] == "compaction")
        .expect("a compaction entry");
    assert_eq!(compaction["firstKeptEntryId"], kept.as_str());
    assert_eq!(compaction["tokensBefore"], before);
    assert!(
        entries
            .iter()
            .any(|e| e["id"] == kept.as_str() && e["type"] == "message")
    );
}

#[tokio::test]
async fn set_model_takes_the_ids_model_takes_with_the_same_warning() {
    let server = TestServer::start(vec![tags("qwen3:8b")]).await;
    let h = home();
    // An id the catalogue does not list, on a known provider: `--model` uses it with a warning.
    let log = h.join("start.log");
    let mut c = Client::start_with(
        &server,
        &h,
        &["--model", "anthropic/claude-opus-9"],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    c.send(json!({"id": "1", "type": "get_state"})).await;
    assert_eq!(
        c.response("1").await["data"]["model"]["id"],
        "claude-opus-9"
    );
    drop(c.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(5), c.child.wait()).await;
    let at_start = std::fs::read_to_string(&log).unwrap();
    let warning = at_start
        .lines()
        .find(|l| l.contains("not in the catalogue"))
        .unwrap_or_else(|| panic!("no warning: {at_start}"))
        .to_string();

    // RPC `set_model` takes the same id, with the same warning.
    let log = h.join("rpc.log");
    let mut c = Client::start_with(
        &server,
        &h,
        &[],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    c.send(
        json!({"id": "2", "type": "set_model", "provider": "anthropic",
                  "modelId": "claude-opus-9"}),
    )
    .await;
    let r = c.response("2").await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["id"], "claude-opus-9");
    c.send(json!({"id": "3", "type": "get_state"})).await;
    assert_eq!(
        c.response("3").await["data"]["model"]["id"],
        "claude-opus-9"
    );
    // An unknown provider is refused, as `--model` refuses it.
    c.send(json!({"id": "4", "type": "set_model", "provider": "nobody", "modelId": "x"}))
        .await;
    let r = c.response("4").await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"].as_str().unwrap().contains("unknown provider"),
        "{r}"
    );
    drop(c.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(5), c.child.wait()).await;
    let in_rpc = std::fs::read_to_string(&log).unwrap();
    assert!(
        in_rpc.lines().any(|l| l == warning),
        "{in_rpc}\nvs {warning}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["--model", "nobody/x", "-p", "hi"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &h)
        .env("PI_CODING_AGENT_DIR", h.join("agent"))
        .env("OLLAMA_HOST", server.url.clone())
        .current_dir(h.join("project"))
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "refused at the start too");
}

#[tokio::test]
async fn new_session_during_a_run_waits_for_its_end_and_starts_empty() {
    // The command ignores SIGTERM: after the abort its run lives on until bash's SIGKILL
    // (2 s later). The new session must begin after that end, not race it.
    let call = call_reply(
        "c1",
        "bash",
        r#"{"command":"trap '' TERM; echo started; sleep 30"}"#,
    );
    let server = TestServer::start(vec![tags("qwen3:8b"), call, text_reply("fresh answer")]).await;
    let h = home();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "prompt", "message": "old work"}))
        .await;
    c.response("1").await;
    c.until("the command running", |v| {
        v["type"] == "tool_execution_update" && v.to_string().contains("started")
    })
    .await;
    c.send(json!({"id": "2", "type": "new_session"})).await;
    c.response("2").await;
    // The old run ended before the answer.
    let end = c.seen.iter().position(|v| v["type"] == "agent_end");
    let answer = c.seen.iter().position(|v| v["id"] == "2");
    assert!(end.is_some() && end < answer, "{:?}", c.seen);
    c.send(json!({"id": "3", "type": "get_messages"})).await;
    let r = c.response("3").await;
    assert_eq!(r["data"]["messages"], json!([]));
    c.send(json!({"id": "4", "type": "prompt", "message": "fresh start"}))
        .await;
    assert_eq!(c.response("4").await["success"], true);
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    // The new request holds only the new conversation (and the system prompt).
    let sent = server.requests()[2].body["messages"].clone();
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["system", "user"], "{sent}");
    c.send(json!({"id": "5", "type": "get_messages"})).await;
    let r = c.response("5").await;
    assert_eq!(r["data"]["messages"].as_array().unwrap().len(), 2);
    drop(c.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(5), c.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    // Two session files: the old one ends with the aborted run, the new one has only the new.
    let dir = h.join("agent").join("sessions");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let old = support::resumed_texts(&files[0]);
    let new = support::resumed_texts(&files[1]);
    assert!(old.iter().any(|t| t == "old work"), "{old:?}");
    assert!(!old.iter().any(|t| t == "fresh start"), "{old:?}");
    assert!(!new.iter().any(|t| t == "old work"), "{new:?}");
    assert!(new.iter().any(|t| t == "fresh start"), "{new:?}");
}

/// A server that lists one model and answers every chat request.
async fn listing_server() -> TestServer {
    TestServer::responding(std::sync::Arc::new(|r| {
        if r.path == "/api/tags" {
            tags("qwen3:8b")
        } else {
            text_reply("ok")
        }
    }))
    .await
}

/// The model id and thinking level a fresh `pi --mode rpc` starts with.
async fn started_with(server: &TestServer, h: &std::path::Path, args: &[&str]) -> (String, String) {
    let mut c = Client::start_with(server, h, args, Stdio::null());
    c.send(json!({"id": "s", "type": "get_state"})).await;
    let state = c.response("s").await;
    drop(c.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), c.child.wait()).await;
    (
        state["data"]["model"]["id"].as_str().unwrap().to_string(),
        state["data"]["thinkingLevel"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn the_model_and_level_chosen_are_remembered_for_the_next_start() {
    let server = listing_server().await;
    let h = home();
    let settings = h.join("agent/settings.json");
    std::fs::write(
        &settings,
        r#"{"quietStartup": true, "someOtherTool": {"keep": [1, 2]}, "defaultThinkingLevel": "low"}"#,
    )
    .unwrap();
    assert_eq!(started_with(&server, &h, &[]).await.0, "qwen3:8b");

    // A model that thinks (the level of one that does not is off whatever is remembered).
    let mut c = Client::start(&server, &h);
    c.send(
        json!({"id": "1", "type": "set_model", "provider": "anthropic",
               "modelId": "claude-sonnet-4-5"}),
    )
    .await;
    assert_eq!(c.response("1").await["success"], true);
    c.send(json!({"id": "2", "type": "set_thinking_level", "level": "high"}))
        .await;
    assert_eq!(c.response("2").await["success"], true);
    // Both commands reached the host before this answer.
    c.send(json!({"id": "3", "type": "get_session_stats"}))
        .await;
    c.response("3").await;
    drop(c.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), c.child.wait()).await;

    // Written where the Node.js pi writes it, every other key kept.
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"quietStartup": true, "someOtherTool": {"keep": [1, 2]},
               "defaultThinkingLevel": "high", "defaultProvider": "anthropic",
               "defaultModel": "claude-sonnet-4-5"})
    );
    assert_eq!(
        started_with(&server, &h, &[]).await,
        ("claude-sonnet-4-5".to_string(), "high".to_string())
    );
    // A flag still wins, and is not remembered.
    assert_eq!(
        started_with(&server, &h, &["--model", "ollama/qwen3:8b"])
            .await
            .0,
        "qwen3:8b"
    );
    assert_eq!(started_with(&server, &h, &[]).await.0, "claude-sonnet-4-5");
    // So does config.toml.
    std::fs::write(h.join("agent/config.toml"), "model = \"ollama/qwen3:8b\"\n").unwrap();
    assert_eq!(started_with(&server, &h, &[]).await.0, "qwen3:8b");
}

#[tokio::test]
async fn a_settings_file_broken_meanwhile_is_left_alone_and_said() {
    let server = listing_server().await;
    let h = home();
    let settings = h.join("agent/settings.json");
    let log = h.join("stderr.log");
    let mut c = Client::start_with(
        &server,
        &h,
        &[],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    c.send(json!({"id": "1", "type": "get_state"})).await;
    c.response("1").await;
    // Someone is halfway through editing it.
    let broken = "{\"theme\": \"light\",\n";
    std::fs::write(&settings, broken).unwrap();
    c.send(json!({"id": "2", "type": "set_model", "provider": "ollama", "modelId": "gemma3:1b"}))
        .await;
    assert_eq!(c.response("2").await["success"], true);
    c.send(json!({"id": "3", "type": "get_session_stats"}))
        .await;
    c.response("3").await;
    drop(c.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), c.child.wait()).await;
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), broken);
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(
        err.contains("settings.json was left as it is because it is not valid JSON"),
        "{err}"
    );
}

#[tokio::test]
async fn a_follow_up_queued_during_a_compaction_runs_after_it_without_being_asked() {
    let gate = support::server::Gate::default();
    let held_summary = Reply::sse(vec![
        Chunk::Gate(gate.clone()),
        chunk(json!({"content": "## Goal\nNotes."}), None),
        chunk(json!({}), Some("stop")),
    ]);
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("a reply long enough to be worth condensing later on"),
        text_reply("another reply long enough to be worth condensing"),
        held_summary,
        // The summary of the turn kept in part.
        text_reply("turn notes"),
        text_reply("the queued follow-up answered"),
    ])
    .await;
    let h = home();
    std::fs::write(
        h.join("agent/config.toml"),
        "[compaction]\nkeep_recent_tokens = 1\n",
    )
    .unwrap();
    let mut c = Client::start(&server, &h);
    for (id, text) in [("p1", "first question"), ("p2", "second question")] {
        c.send(json!({"id": id, "type": "prompt", "message": text}))
            .await;
        c.response(id).await;
        c.until("agent_end", |v| v["type"] == "agent_end").await;
    }
    c.send(json!({"id": "c1", "type": "compact"})).await;
    c.until("compaction_start", |v| v["type"] == "compaction_start")
        .await;
    c.send(json!({"id": "f1", "type": "follow_up", "message": "and after the summary?"}))
        .await;
    assert_eq!(c.response("f1").await["success"], true);
    // The summary is written only now that the follow-up waits in the queue.
    gate.open();
    // Nobody asks again: the host runs what waited once the compaction has ended.
    c.until("the follow-up's answer", |v| {
        v["type"] == "message_end" && v.to_string().contains("the queued follow-up answered")
    })
    .await;
    let compacted = |v: &Value| v["type"] == "response" && v["id"] == "c1";
    let r = match c.seen.iter().find(|v| compacted(v)) {
        Some(r) => r.clone(),
        None => c.until("the compaction's answer", compacted).await,
    };
    assert_eq!(r["success"], true, "{r}");
    let reqs = server.requests();
    let last = &reqs[reqs.len() - 1].body["messages"];
    assert!(
        last.to_string().contains("and after the summary?"),
        "{last}"
    );
}

#[tokio::test]
async fn a_steer_with_an_image_while_idle_starts_a_run_with_both() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("I see it")]).await;
    let h = home();
    let mut c = Client::start(&server, &h);
    // No run to steer: the message starts one as a plain prompt (the steering mark is for what
    // is injected into a run), the image after its text.
    c.send(
        json!({"id": "1", "type": "steer", "message": "look at this",
                  "images": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}),
    )
    .await;
    assert_eq!(c.response("1").await["success"], true);
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    c.send(json!({"id": "2", "type": "get_messages"})).await;
    let r = c.response("2").await;
    let user = &r["data"]["messages"][0];
    assert_eq!(user["role"], "user", "{r}");
    assert_eq!(user.get("steering"), None, "{r}");
    assert_eq!(user["content"][0]["text"], "look at this", "{r}");
    assert_eq!(user["content"][1]["type"], "image", "{r}");
    assert_eq!(user["content"][1]["mimeType"], "image/png", "{r}");
    assert_eq!(r["data"]["messages"][1]["content"][0]["text"], "I see it");
}

/// The model's window in `get_state`, asked until it is `want` (at most 10 s).
async fn window_becomes(c: &mut Client, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        n += 1;
        let id = format!("w{n}");
        c.send(json!({"id": id, "type": "get_state"})).await;
        let got = c.response(&id).await["data"]["model"]["contextWindow"].clone();
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "window still {got}, not {want}; seen {:?}",
            c.seen.iter().rev().take(3).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn ollama_is_asked_its_window_again_once_the_model_is_loaded() {
    // Before the model is loaded Ollama tells only what it could take (its architecture's
    // length); once loaded, `/api/ps` says what it really runs it with.
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("one")]).await;
    server.say_probe(
        "/api/show",
        json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}),
    );
    let h = home();
    let mut c = Client::start(&server, &h);
    window_becomes(&mut c, 40960).await;
    server.say_probe(
        "/api/ps",
        json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096}]}),
    );
    c.send(json!({"id": "1", "type": "prompt", "message": "hi"}))
        .await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    window_becomes(&mut c, 4096).await;
}

#[tokio::test]
async fn an_rpc_prompt_naming_a_template_is_sent_expanded() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Hi")]).await;
    let h = home();
    std::fs::create_dir_all(h.join("agent/prompts")).unwrap();
    std::fs::write(h.join("agent/prompts/greet.md"), "Say hello to $1 in $2.").unwrap();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "prompt", "message": "/greet Ada French"}))
        .await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    let chat = server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    let last = chat.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "Say hello to Ada in French.");
}

#[tokio::test]
async fn get_commands_lists_the_templates_and_skills_a_prompt_can_name() {
    let server = TestServer::start(vec![tags("qwen3:8b")]).await;
    let h = home();
    std::fs::create_dir_all(h.join("agent/prompts")).unwrap();
    std::fs::write(
        h.join("agent/prompts/greet.md"),
        "---\ndescription: Greet someone\n---\nSay hello to $1.",
    )
    .unwrap();
    std::fs::create_dir_all(h.join("project/.pi/skills/pdf")).unwrap();
    std::fs::write(
        h.join("project/.pi/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nSteps.",
    )
    .unwrap();
    let mut c = Client::start(&server, &h);
    c.send(json!({"id": "1", "type": "get_commands"})).await;
    let r = c.response("1").await;
    let commands = r["data"]["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 2, "{r}");
    assert_eq!(commands[0]["name"], "greet");
    assert_eq!(commands[0]["description"], "Greet someone");
    assert_eq!(commands[0]["source"], "prompt");
    assert_eq!(commands[0]["location"], "user");
    assert_eq!(commands[1]["name"], "skill:pdf");
    assert_eq!(commands[1]["source"], "skill");
    assert_eq!(commands[1]["location"], "project");
    assert!(
        commands[1]["path"]
            .as_str()
            .unwrap()
            .ends_with("pdf/SKILL.md")
    );
}

#[tokio::test]
async fn a_window_the_server_reported_survives_opening_another_session() {
    // The model's window came from the server; opening a saved session that used the same
    // model must not fall back to the catalogue's guess (the footer, compaction and
    // `get_state` all count against it).
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("one")]).await;
    server.say_window(8192);
    let h = home();
    let mut c = Client::start(&server, &h);
    window_becomes(&mut c, 8192).await;
    c.send(json!({"id": "1", "type": "prompt", "message": "hi"}))
        .await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    c.send(json!({"id": "2", "type": "get_state"})).await;
    let first = c.response("2").await["data"]["sessionFile"].clone();
    c.send(json!({"id": "3", "type": "new_session"})).await;
    c.response("3").await;
    c.send(json!({"id": "4", "type": "switch_session", "sessionPath": first}))
        .await;
    assert_eq!(c.response("4").await["success"], true);
    c.send(json!({"id": "5", "type": "get_state"})).await;
    let state = c.response("5").await;
    assert_eq!(state["data"]["sessionFile"], first);
    assert_eq!(state["data"]["model"]["contextWindow"], 8192, "{state}");
}

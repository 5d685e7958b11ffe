//! Subagents through the real binary: the `task` tool runs child agents at the local test
//! server, two at once when one reply asks for both, each with its definition's prompt and
//! tools; their answers come back as results, their transcripts are saved beside the
//! parent's, and Esc in the terminal stops them with the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::server::{Chunk, Gate, Recorded, Reply, TestServer, chunk, tags, text_reply};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code for bugs.\ntools: Read, Grep\n---\nYou are a strict reviewer.\n";

fn system(r: &Recorded) -> String {
    r.body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn has_tool_result(r: &Recorded) -> bool {
    r.body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
}

/// One reply asking for two subagents at once.
fn two_tasks() -> Reply {
    let call = |i: usize, id: &str, kind: &str, prompt: &str| {
        json!({"index": i, "id": id, "function": {"name": "task", "arguments":
            json!({"description": "look", "prompt": prompt, "subagent_type": kind}).to_string()}})
    };
    Reply::sse(vec![
        chunk(
            json!({"tool_calls": [
                call(0, "t1", "reviewer", "Review src/lib.rs"),
                call(1, "t2", "general-purpose", "Find the config loader"),
            ]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

fn gated_text(gate: &Gate, text: &str) -> Reply {
    Reply::sse(vec![
        Chunk::Gate(gate.clone()),
        chunk(json!({ "content": text }), None),
        chunk(json!({}), Some("stop")),
    ])
}

fn chats(server: &TestServer) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect()
}

#[tokio::test]
async fn two_subagents_run_at_once_and_their_answers_and_sessions_come_back() {
    let gates = Arc::new([Gate::default(), Gate::default()]);
    let children = Arc::new(AtomicUsize::new(0));
    let (g, c) = (gates.clone(), children.clone());
    let server = TestServer::responding(Arc::new(move |r: &Recorded| {
        if r.path == "/api/tags" {
            return tags("qwen3:8b");
        }
        let sys = system(r);
        if sys.contains("strict reviewer") || sys.contains("subagent of a coding agent") {
            let n = c.fetch_add(1, Ordering::SeqCst).min(1);
            let answer = if sys.contains("strict reviewer") {
                "No bugs in src/lib.rs."
            } else {
                "The loader is config::load."
            };
            return gated_text(&g[n], answer);
        }
        if has_tool_result(r) {
            text_reply("Both done.")
        } else {
            two_tasks()
        }
    }))
    .await;
    let h = support::binary_home("subagents");
    write(&h.join("project/.pi/agents/reviewer.md"), REVIEWER);
    let url = server.url.clone();
    let run = tokio::spawn({
        let h = h.clone();
        async move {
            support::run_pi(
                &h,
                &[("OLLAMA_HOST", url.as_str())],
                &["-p", "check things"],
            )
            .await
        }
    });
    // Both children ask their model before either answers: they run at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while children.load(Ordering::SeqCst) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the second subagent never started while the first waited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    gates[0].open();
    gates[1].open();
    let out = run.await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Both done.");

    let reqs = chats(&server);
    let child = |needle: &str| {
        reqs.iter()
            .find(|r| system(r).contains(needle))
            .unwrap()
            .clone()
    };
    // The reviewer has the tools its definition names that the parent has (read; grep is
    // not active), the general agent all of the parent's but task.
    let tool_names = |r: &Recorded| -> Vec<String> {
        r.body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(tool_names(&child("strict reviewer")), ["read"]);
    let general = tool_names(&child("subagent of a coding agent"));
    assert!(
        general.contains(&"bash".to_string()) && !general.contains(&"task".to_string()),
        "{general:?}"
    );
    // The child sees the prompt it was given, not the parent's conversation.
    let child_msgs = child("strict reviewer").body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(child_msgs.last().unwrap()["content"], "Review src/lib.rs");
    assert!(!child_msgs.iter().any(|m| m["content"] == "check things"));

    // The parent read both answers.
    let last = reqs
        .iter()
        .rev()
        .find(|r| {
            has_tool_result(r)
                && !system(r).contains("reviewer")
                && !system(r).contains("subagent of")
        })
        .unwrap();
    let results: Vec<String> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().any(|r| r.contains("No bugs in src/lib.rs.")),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|r| r.contains("The loader is config::load.")),
        "{results:?}"
    );
    assert!(
        results.iter().all(|r| r.contains("transcript:")),
        "{results:?}"
    );

    assert_transcripts(&h);
}

/// Each subagent's transcript is a session of its own naming the parent's file.
fn assert_transcripts(h: &std::path::Path) {
    let mut subs = Vec::new();
    for e in walk(&h.join("agent/sessions")) {
        if e.parent().is_some_and(|p| p.ends_with("subagents")) {
            subs.push(e);
        }
    }
    assert_eq!(subs.len(), 2, "{subs:?}");
    for s in &subs {
        let text = std::fs::read_to_string(s).unwrap();
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let parent = header["parentSession"].as_str().unwrap();
        assert!(std::path::Path::new(parent).exists(), "{parent}");
        assert!(text.contains("\"role\":\"assistant\""), "{text}");
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn esc_stops_a_running_subagent_with_the_run() {
    use support::pty::Pty;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let never = Gate::default();
    let server = rt.block_on(TestServer::responding(Arc::new(move |r: &Recorded| {
        if r.path == "/api/tags" {
            return tags("qwen3:8b");
        }
        if system(r).contains("subagent of a coding agent") {
            return gated_text(&never, "too late");
        }
        if has_tool_result(r) {
            text_reply("Stopped, as you asked.")
        } else {
            Reply::sse(vec![
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "t1", "function": {"name": "task",
                        "arguments": json!({"description": "dig", "prompt": "Dig deep"}).to_string()}}]}),
                    None,
                ),
                chunk(json!({}), Some("tool_calls")),
            ])
        }
    })));
    let home = support::pty::temp_home("subagent-esc");
    let mut pi = Pty::spawn(&home, &server, &["--tools", "read,bash,task"]);
    pi.wait_for("qwen3:8b");
    pi.send(b"dig into it\r");
    pi.wait_for("general-purpose: thinking");
    pi.send(b"\x1b");
    let s = pi.wait_for("did not finish");
    assert!(s.contains("it was stopped"), "{s}");
    assert!(pi.quit().success());
}

#[tokio::test]
async fn json_mode_tags_subagent_progress_and_approvals_apply_inside() {
    let server = TestServer::responding(Arc::new(|r: &Recorded| {
        if r.path == "/api/tags" {
            return tags("qwen3:8b");
        }
        let child = system(r).contains("subagent of a coding agent");
        match (child, has_tool_result(r)) {
            // The child tries a command; `ask` with nobody to ask refuses it.
            (true, false) => Reply::sse(vec![
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "b1", "function": {"name": "bash",
                        "arguments": json!({"command": "touch made.txt"}).to_string()}}]}),
                    None,
                ),
                chunk(json!({}), Some("tool_calls")),
            ]),
            (true, true) => text_reply("I could not run it."),
            (false, true) => text_reply("ok"),
            (false, false) => Reply::sse(vec![
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "t1", "function": {"name": "task",
                        "arguments": json!({"description": "make", "prompt": "Make a file"}).to_string()}}]}),
                    None,
                ),
                chunk(json!({}), Some("tool_calls")),
            ]),
        }
    }))
    .await;
    let h = support::binary_home("subagents-json");
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &[
            "--mode",
            "json",
            "--approval",
            "ask",
            "--tools",
            "read,bash,task",
            "-p",
            "go",
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!h.join("project/made.txt").exists());
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|v| v["type"] == "tool_execution_update" && v["toolCallId"] == "t1")
        .collect();
    assert!(!updates.is_empty(), "{lines:?}");
    let tagged = &updates.last().unwrap()["partialResult"]["details"]["subagent"];
    assert_eq!(tagged["id"], "t1");
    assert_eq!(tagged["name"], "general-purpose");
    let end = lines
        .iter()
        .find(|v| v["type"] == "tool_execution_end" && v["toolCallId"] == "t1")
        .unwrap();
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("I could not run it."), "{text}");
    assert!(text.contains("bash ×1"), "{text}");
    // The refusal the child got came from the parent's approval gate.
    let child_last = chats(&server)
        .into_iter()
        .rfind(|r| system(r).contains("subagent of a coding agent") && has_tool_result(r))
        .unwrap();
    assert!(
        child_last.body.to_string().contains("ask"),
        "{}",
        child_last.body
    );
}

#[tokio::test]
async fn a_subagent_stop_hook_sends_the_subagent_back_once() {
    let server = TestServer::responding(Arc::new(|r: &Recorded| {
        if r.path == "/api/tags" {
            return tags("qwen3:8b");
        }
        let child = system(r).contains("subagent of a coding agent");
        let last = r.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        match (child, has_tool_result(r)) {
            (true, _) if last.contains("SubagentStop hook") => text_reply("Checked the tests too."),
            (true, _) => text_reply("Looked."),
            (false, true) => text_reply("ok"),
            (false, false) => Reply::sse(vec![
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "t1", "function": {"name": "task",
                        "arguments": json!({"description": "look", "prompt": "Look around"}).to_string()}}]}),
                    None,
                ),
                chunk(json!({}), Some("tool_calls")),
            ]),
        }
    }))
    .await;
    let h = support::binary_home("subagent-stop");
    write(
        &h.join(".claude/settings.json"),
        &json!({"hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command":
            "grep -q '\"stop_hook_active\":true' && exit 0; echo 'check the tests as well' >&2; exit 2"}]}]}})
        .to_string(),
    );
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &["--tools", "read,task", "-p", "go"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parent_last = chats(&server)
        .into_iter()
        .rfind(|r| !system(r).contains("subagent of") && has_tool_result(r))
        .unwrap();
    let result = parent_last.body.to_string();
    assert!(result.contains("Checked the tests too."), "{result}");
    let child_reqs = chats(&server)
        .into_iter()
        .filter(|r| system(r).contains("subagent of a coding agent"))
        .count();
    assert_eq!(child_reqs, 2);
}

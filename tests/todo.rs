//! The `todo` tool through the real binary: its list in JSON mode's events, above the editor
//! in the terminal, and again after resuming the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::pty::Pty;
use support::server::{TestServer, call_reply, tags, text_reply};

fn todo_call() -> support::server::Reply {
    call_reply(
        "td1",
        "todo",
        &json!({"todos": [
            {"content": "Read the parser", "status": "done"},
            {"content": "Fix the off-by-one", "status": "in_progress"},
            {"content": "Run the tests", "status": "pending"}
        ]})
        .to_string(),
    )
}

#[tokio::test]
async fn json_mode_carries_the_list() {
    let server = TestServer::start(vec![tags("qwen3:8b"), todo_call(), text_reply("on it")]).await;
    let h = support::binary_home("todo-json");
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &["--mode", "json", "--tools", "read,todo", "-p", "fix it"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "tool_execution_end" && v["toolName"] == "todo")
        .unwrap();
    let todos = &end["result"]["details"]["todos"];
    assert_eq!(todos[1]["status"], "in_progress");
    assert_eq!(todos[2]["content"], "Run the tests");
}

#[test]
fn the_terminal_shows_the_list_above_the_editor_and_again_after_resuming() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        todo_call(),
        text_reply("Working on the off-by-one."),
        tags("qwen3:8b"),
    ]));
    let home = support::pty::temp_home("todo");
    let mut pi = Pty::spawn(&home, &server, &["--tools", "read,todo"]);
    pi.wait_for("qwen3:8b");
    pi.send(b"fix it\r");
    pi.wait_for("Working on the off-by-one.");
    let s = pi.wait_for(" Todo 1/3");
    assert!(
        s.contains("▸ Fix the off-by-one") && s.contains("○ Run the tests"),
        "{s}"
    );
    pi.send(b"/todos\r");
    pi.wait_until("one line", |s| {
        s.contains("Todo 1/3 · ▸ Fix the off-by-one") && !s.contains("○ Run the tests")
    });
    assert!(pi.quit().success());
    let mut pi = Pty::spawn(&home, &server, &["--tools", "read,todo", "-c"]);
    let s = pi.wait_for(" Todo 1/3");
    assert!(s.contains("▸ Fix the off-by-one"), "{s}");
    assert!(pi.quit().success());
}

//! Live text and the editor, end to end: the real binary in a pseudo-terminal against a local
//! server speaking the Chat Completions wire format, the screen read back through vt100.
//!
//! The streaming test is paced by events, not time: the server sends a delta without a
//! newline and then waits at a gate until the test has seen that text on screen.
//! The editor tests type and paste what a person would and read the rows back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::pty::{Pty, temp_home};
use support::server::{Chunk, Gate, Reply, TestServer, chunk, raw_data, tags, text_reply};

/// The text of the last user message the model was sent.
fn last_prompt(server: &TestServer) -> String {
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    let last = chats.last().expect("a chat request");
    let messages = last.body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        serde_json::Value::String(s) => s.clone(),
        other => other
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_on_screen_before_its_newline_arrives() {
    let first = Gate::default();
    let second = Gate::default();
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(vec![
            chunk(json!({"content": "A single line that is still "}), None),
            Chunk::Gate(first.clone()),
            chunk(json!({"content": "growing, **bold so"}), None),
            Chunk::Gate(second.clone()),
            chunk(json!({"content": " far** and done.\nNext line."}), None),
            chunk(json!({}), Some("stop")),
            raw_data("[DONE]"),
        ]),
    ])
    .await;
    let home = temp_home("live-text");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"stream something");
    pi.wait_for("stream something");
    pi.send(b"\r");

    // No newline has come yet; the server waits until the text is seen.
    let s = pi.wait_for("A single line that is still");
    assert!(s.contains("esc to interrupt"), "still streaming:\n{s}");
    first.open();
    // Open bold markup is shown bold already, without its asterisks.
    let s = pi.wait_for("A single line that is still growing, bold so");
    assert!(!s.contains("**"), "{s}");
    second.open();
    pi.wait_for("Next line.");
    let s = pi.wait_until("the run to end", |s| !s.contains("esc to interrupt"));
    assert!(
        s.contains("A single line that is still growing, bold so far and done."),
        "{s}"
    );
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_prompt_wraps_in_the_editor_and_is_sent_whole() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Got it.")]).await;
    let home = temp_home("wrap");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    // 150 characters: 30 numbered words of five.
    let prompt: String = (1..=30).map(|i| format!("w{i:03} ")).collect();
    let prompt = prompt.trim_end().to_string();
    assert_eq!(prompt.len(), 149);
    pi.send(prompt.as_bytes());
    let s = pi.wait_for("w030");
    let rows: Vec<&str> = s.lines().collect();
    let row_of = |word: &str| rows.iter().position(|r| r.contains(word)).unwrap();
    assert!(s.contains("w001"), "the start stays visible:\n{s}");
    assert!(row_of("w030") > row_of("w001"), "wrapped:\n{s}");
    for i in 1..=30 {
        assert!(s.contains(&format!("w{i:03}")), "w{i:03} is missing:\n{s}");
    }
    pi.send(b"\r");
    pi.wait_for("Got it.");
    assert_eq!(last_prompt(&server), prompt);
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_paste_shows_a_marker_and_is_sent_whole() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Pasted.")]).await;
    let home = temp_home("paste");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    let pasted: String = (1..=120).map(|i| format!("pasted line {i}\n")).collect();
    pi.send(b"look: ");
    // The paste comes after the typed text is on screen, as a person's would. (Text and a
    // paste of over 1 KB in one read would leave the paste unread until the next key:
    // crossterm's reader is edge-triggered and returns the first event of a full buffer.)
    pi.wait_for("look:");
    pi.send(format!("\x1b[200~{pasted}\x1b[201~").as_bytes());
    let s = pi.wait_for("[paste #1 +120 lines]");
    assert!(!s.contains("pasted line 1"), "{s}");
    pi.send(b"\r");
    pi.wait_for("Pasted.");
    assert_eq!(last_prompt(&server), format!("look: {pasted}"));
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newline_keys_and_the_undo_byte_work_in_a_plain_terminal() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Two lines.")]).await;
    let home = temp_home("keys");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    // 0x1F is what xterm and tmux send for Ctrl+-: undo.
    pi.send(b"undo-me");
    pi.wait_for("undo-me");
    pi.send(b"\x1f");
    pi.wait_until("the undo", |s| {
        !s.contains("undo-me") && s.contains("undo-m")
    });
    pi.send(b"\x15"); // Ctrl+U: delete to the line start
    pi.wait_until("an empty editor", |s| !s.contains("undo-m"));
    // Ctrl+J (byte 0x0A) and Shift+Enter as the kitty keyboard protocol reports it.
    pi.send(b"first");
    pi.send(b"\n");
    pi.send(b"second");
    pi.send(b"\x1b[13;2u");
    pi.send(b"third");
    let s = pi.wait_for("third");
    let rows: Vec<&str> = s.lines().collect();
    let row_of = |word: &str| rows.iter().position(|r| r.contains(word)).unwrap();
    assert_eq!(row_of("second"), row_of("first") + 1, "{s}");
    assert_eq!(row_of("third"), row_of("second") + 1, "{s}");
    pi.send(b"\r");
    pi.wait_for("Two lines.");
    assert_eq!(last_prompt(&server), "first\nsecond\nthird");
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

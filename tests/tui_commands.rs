//! Commands and the words about them, end to end: the real binary in a pseudo-terminal
//! against the scripted local server. `/help` and the start-up header name a key as
//! keybindings.json binds it; an unknown `/command` is answered with the nearest known one and
//! never reaches the model, while `//text` sends `/text` as a prompt; `/clone` and `/fork` say
//! cloned and forked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::pty::{Pty, temp_home};
use support::server::{TestServer, tags, text_reply};

/// The user texts of every chat request the server saw, in order.
fn sent_prompts(server: &TestServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| {
            let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
            messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| match &m["content"] {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_and_the_header_name_keys_as_keybindings_json_binds_them() {
    let server = TestServer::start(vec![tags("qwen3:8b")]).await;
    let home = temp_home("help-remap");
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(
        home.join("agent/keybindings.json"),
        r#"{ "app.model.select": "alt+m", "app.agent.pause": "alt+s" }"#,
    )
    .unwrap();
    let mut pi = Pty::spawn_sized(&home, &server, None, 40, &[]);
    let s = pi.wait_for("qwen3:8b");
    assert!(
        s.contains("Alt+M model"),
        "the header names the new key:\n{s}"
    );
    assert!(!s.contains("Ctrl+L"), "{s}");

    pi.send(b"/help\r");
    pi.wait_for("Changed in keybindings.json");
    let all = pi.history().join("\n");
    let keys_of = |what: &str| {
        all.lines()
            .find(|l| l.contains(what))
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| panic!("no {what:?} in /help:\n{all}"))
    };
    assert!(keys_of("choose a model").starts_with("Alt+M "), "{all}");
    assert!(
        keys_of("pause the agent at its next step").starts_with("Alt+S "),
        "{all}"
    );
    assert!(
        keys_of("cycle the approval mode").starts_with("Alt+A "),
        "{all}"
    );
    assert!(keys_of("/export [file]").contains("HTML"), "{all}");
    assert!(
        !all.lines().any(|l| l.trim_start().starts_with("Ctrl+L ")),
        "{all}"
    );
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_command_is_not_sent_and_a_double_slash_is() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("First answer."),
        text_reply("Second answer."),
    ])
    .await;
    let home = temp_home("unknown-command");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");

    pi.send(b"/clear\r");
    pi.wait_for("Unknown command /clear; did you mean /new?");
    pi.send(b"/cost\r");
    pi.wait_for("Unknown command /cost; did you mean /session?");
    assert!(sent_prompts(&server).is_empty());

    // Only what follows reaches the model: a prompt, then one beginning with a slash.
    pi.send(b"hello\r");
    pi.wait_for("First answer.");
    pi.send(b"//clear is a command elsewhere\r");
    pi.wait_for("Second answer.");
    assert!(pi.quit().success());
    assert_eq!(
        sent_prompts(&server),
        ["hello", "/clear is a command elsewhere"]
    );
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clone_and_fork_say_what_they_did() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("First answer.")]).await;
    let home = temp_home("clone-fork");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"hello\r");
    pi.wait_for("First answer.");

    pi.send(b"/clone\r");
    let s = pi.wait_for("Cloned into the new session");
    assert!(!s.contains("Resumed"), "{s}");

    pi.send(b"/fork\r");
    pi.wait_for("Fork before:");
    pi.send(b"\r");
    let s = pi.wait_for("Forked into the new session");
    assert!(!s.contains("Resumed"), "{s}");
    // The prompt forked before is back in the editor, to be changed and sent again.
    pi.send(b"\x15");
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

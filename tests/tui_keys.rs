//! Keys end to end: the real binary in a pseudo-terminal against the scripted local server.
//!
//! Ctrl+G hands the prompt to `$EDITOR` (here a script, run with an argument through `sh`) on
//! the real terminal, out of raw mode, and what is typed then is the editor's; a reply goes on
//! streaming meanwhile; the edited text comes back into the editor and Enter sends it. A failing editor keeps the text and says why. A
//! `keybindings.json` in the Node.js pi's format moves the model picker to Ctrl+Y, and its
//! mistakes show as notices.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::pty::{Pty, temp_home};
use support::server::{Chunk, Reply, TestServer, chunk, raw_data, tags, text_reply};

/// The editor: records what it was given (text, path, permissions, terminal mode), fails when
/// `$HOME/fail` exists, else reads a line typed on the terminal and makes it the text.
const EDITOR_SCRIPT: &str = r#"#!/bin/sh
cp "$1" "$HOME/seen.md"
printf '%s' "$1" > "$HOME/path"
stat -c %a "$1" > "$HOME/mode"
stty -a > "$HOME/stty"
if [ -e "$HOME/fail" ]; then exit 3; fi
printf 'EDITOR READY> '
IFS= read -r line
printf '%s\n' "$line" > "$1"
"#;

/// Wait (at most 20 s) until a session file under `dir` holds `needle`.
fn wait_for_session_text(dir: &std::path::Path, needle: &str) {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut found = Vec::new();
        files(dir, &mut found);
        if found.iter().any(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains(needle)
        }) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no session file holds {needle:?}"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_g_edits_the_prompt_in_the_external_editor() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(vec![
            chunk(json!({"content": "Working on it\n\n"}), None),
            Chunk::Delay(Duration::from_millis(800)),
            chunk(json!({"content": "Done with the first."}), None),
            chunk(json!({}), Some("stop")),
            raw_data("[DONE]"),
        ]),
        text_reply("Got the edited prompt."),
    ])
    .await;
    let home = temp_home("ctrl-g");
    let script = home.join("edit.sh");
    std::fs::write(&script, EDITOR_SCRIPT).unwrap();
    // A command with an argument, as `code --wait` is.
    let editor = format!("sh {}", script.display());
    let mut pi = Pty::spawn_with_env(&home, &server, None, 30, &[("EDITOR", &editor)], &[]);
    pi.wait_for("qwen3:8b");

    pi.send(b"first question\r");
    pi.wait_for("Working on it");
    pi.send(b"draft text");
    pi.wait_for("draft text");
    pi.send(b"\x07"); // Ctrl+G
    pi.wait_for("EDITOR READY>");
    assert!(
        !pi.parser.lock().unwrap().screen().alternate_screen(),
        "the editor has the normal screen"
    );
    // The reply goes on meanwhile (and is saved as it ends).
    wait_for_session_text(&home, "Done with the first.");
    // What is typed now is the editor's, not pi's.
    pi.send(b"from the editor\r");
    // The line shows first as typed on the editor's screen, then in pi's editor: the editor's
    // lines stay above, as any program's output does, and pi's live region comes back below
    // them (after the answer that ended meanwhile).
    let s = pi.wait_until("the text back in pi", |s| {
        s.split_once("EDITOR READY").is_some_and(|(_, after)| {
            after.matches("from the editor").count() == 2 && after.contains("approval: auto")
        })
    });
    let (_, after) = s.split_once("EDITOR READY").unwrap();
    assert!(after.contains("Done with the first."), "{s}");
    assert!(!s.contains("draft text"), "{s}");
    assert!(!pi.parser.lock().unwrap().screen().alternate_screen());
    assert_eq!(
        std::fs::read_to_string(home.join("seen.md")).unwrap(),
        "draft text\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("mode")).unwrap().trim(),
        "600"
    );
    let stty = std::fs::read_to_string(home.join("stty")).unwrap();
    assert!(
        !stty.contains("-icanon"),
        "the editor gets a cooked terminal: {stty}"
    );
    let draft = std::fs::read_to_string(home.join("path")).unwrap();
    assert!(draft.ends_with(".md"), "{draft}");
    assert!(
        !std::path::Path::new(&draft).exists(),
        "the private file is removed"
    );

    pi.send(b"\r");
    pi.wait_for("Got the edited prompt.");
    let last = server.requests().into_iter().last().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(user["content"], "from the editor", "{user}");

    // A failing editor: the text stays, and a notice says why.
    std::fs::write(home.join("fail"), "").unwrap();
    pi.send(b"keep me");
    pi.wait_for("keep me");
    pi.send(b"\x07");
    let s = pi.wait_for("exited with status 3");
    assert!(s.contains("the text is unchanged"), "{s}");
    assert!(s.contains("keep me"), "{s}");
    let draft = std::fs::read_to_string(home.join("path")).unwrap();
    assert!(!std::path::Path::new(&draft).exists());

    pi.send(b"\x03"); // Ctrl+C clears the editor
    pi.wait_until("an empty editor", |s| !s.contains("keep me"));
    assert!(pi.quit().success());
    pi.wait_restored();
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keybindings_json_moves_the_model_picker_and_reports_its_mistakes() {
    let server = TestServer::start(vec![tags("qwen3:8b")]).await;
    let home = temp_home("keybindings");
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(
        home.join("agent/keybindings.json"),
        r#"{ "app.model.select": "ctrl+y", "app.model.pick": "ctrl+q" }"#,
    )
    .unwrap();
    let mut pi = Pty::spawn(&home, &server, &[]);
    let s = pi.wait_for("qwen3:8b");
    assert!(
        s.contains("keybindings.json: unknown action \"app.model.pick\" (ignored)"),
        "{s}"
    );
    assert!(
        s.contains("\"ctrl+y\" now does app.model.select, no longer tui.editor.yank"),
        "{s}"
    );

    // Ctrl+L no longer opens the picker: what follows is typed into the editor.
    pi.send(b"\x0c");
    pi.send(b"zq");
    let s = pi.wait_for("zq");
    assert!(!s.contains("Enter select"), "{s}");
    pi.send(b"\x03");
    pi.wait_until("an empty editor", |s| !s.contains("zq"));

    pi.send(b"\x19"); // Ctrl+Y
    pi.wait_for("Enter select");
    pi.send(b"\x1b");
    pi.wait_until("the picker closed", |s| !s.contains("Enter select"));
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

//! `@file` and images end to end: the real binary against the scripted local server.
//!
//! Print mode: `pi -p @notes.txt "…"` inlines the file with its path, `@shot.png` arrives as an
//! image part, a missing or oversized file stops pi before any request, and a model without
//! image input gets the text with a note on stderr. The terminal UI in a pseudo-terminal: `@`
//! opens the picker, a filter and Enter put the path in the prompt, and the file reaches the
//! model; a pasted image path attaches the image (or, for a model without image input, is
//! left out with a notice).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::{Output, Stdio};

use serde_json::Value;
use support::pty::{Pty, temp_home};
use support::server::{TestServer, tags, text_reply};
use tokio::process::Command;

/// A PNG signature and the start of its header: enough for pi to tell the type.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01";

fn home() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("pi-at-files-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A model that takes images, served by the test server (`lab/vision-1`).
fn vision_config(home: &std::path::Path, server: &TestServer) {
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(
        home.join("agent/config.toml"),
        format!(
            "model = \"lab/vision-1\"\n[providers.lab]\napi = \"openai-completions\"\n\
             base_url = \"{}/v1\"\nkey = \"lab-test-key\"\n[[providers.lab.models]]\n\
             id = \"vision-1\"\nimages = true\n",
            server.url
        ),
    )
    .unwrap();
}

/// `pi` in `home` with a clean environment whose only model is the test server.
async fn run(server: &TestServer, home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", server.url.clone())
        .current_dir(home)
        .stdin(Stdio::null())
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The content of the last user message of the first chat request.
fn user_content(server: &TestServer) -> Value {
    let chat = server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .expect("a chat request");
    let messages = chat.body["messages"].as_array().unwrap().clone();
    messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone()
}

#[tokio::test]
async fn at_files_are_inlined_with_their_paths() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Summary.")]).await;
    let h = home();
    std::fs::write(h.join("notes.txt"), "alpha beta\n").unwrap();
    std::fs::create_dir_all(h.join("src")).unwrap();
    std::fs::write(h.join("src/main.rs"), "fn main() {}").unwrap();
    let out = run(
        &server,
        &h,
        &["-p", "@notes.txt", "@src/main.rs", "summarize"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Summary.\n");
    let content = user_content(&server);
    let text = content.as_str().expect("text only: one string");
    assert_eq!(
        text,
        "<file name=\"notes.txt\">\nalpha beta\n</file>\n\
         <file name=\"src/main.rs\">\nfn main() {}\n</file>\nsummarize"
    );
    let _ = std::fs::remove_dir_all(&h);
}

#[tokio::test]
async fn an_at_image_arrives_as_an_image_part() {
    let server = TestServer::start(vec![text_reply("A pixel.")]).await;
    let h = home();
    vision_config(&h, &server);
    // Named .bin: the type comes from the bytes.
    std::fs::write(h.join("shot.bin"), PNG).unwrap();
    let out = run(&server, &h, &["-p", "@shot.bin", "what is it?"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let content = user_content(&server);
    let parts = content.as_array().expect("text and image parts");
    assert_eq!(parts[0]["text"], "<file name=\"shot.bin\"></file>");
    assert_eq!(parts[1]["type"], "image_url");
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
    assert_eq!(parts[2]["text"], "what is it?");
    let _ = std::fs::remove_dir_all(&h);
}

#[tokio::test]
async fn a_missing_or_oversized_file_stops_pi_before_any_request() {
    let server = TestServer::start(vec![]).await;
    let h = home();
    let out = run(&server, &h, &["-p", "@gone.txt", "summarize"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot attach gone.txt: no such file"),
        "{err}"
    );
    std::fs::write(h.join("huge.log"), "x".repeat(300 * 1024)).unwrap();
    let out = run(&server, &h, &["-p", "@huge.log", "summarize"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot attach huge.log: it is 300.0 KB, more than the 256.0 KB"),
        "{err}"
    );
    // The interactive UI refuses the same way, before taking the terminal.
    let out = run(&server, &h, &["@gone.txt"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    let _ = std::fs::remove_dir_all(&h);
}

#[tokio::test]
async fn a_model_without_images_gets_the_text_and_a_note_says_so() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("No idea.")]).await;
    let h = home();
    std::fs::write(h.join("shot.png"), PNG).unwrap();
    let out = run(&server, &h, &["-p", "@shot.png", "what is it?"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("note: qwen3:8b does not take images, so this was sent without shot.png"),
        "{err}"
    );
    assert_eq!(user_content(&server), Value::from("what is it?"));
    let _ = std::fs::remove_dir_all(&h);
}

/// Type `@`, a filter, Enter on the picker's choice, then send: the file reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_at_picker_in_a_pty_puts_the_file_in_the_prompt() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Read it.")]).await;
    let home = temp_home("at-picker");
    std::fs::create_dir_all(home.join("docs")).unwrap();
    std::fs::write(home.join("docs/release-notes.md"), "the-secret-note-text\n").unwrap();
    std::fs::write(home.join("Cargo.toml"), "[package]\n").unwrap();
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"summarize @");
    pi.wait_for("Enter/Tab insert");
    pi.send(b"relnot");
    pi.wait_for(" › docs/release-notes.md");
    pi.send(b"\r");
    pi.wait_until("the path in the editor, the picker closed", |s| {
        s.contains("summarize @docs/release-notes.md") && !s.contains("Enter/Tab insert")
    });
    pi.send(b"\r");
    let s = pi.wait_for("Read it.");
    assert!(s.contains("[file: docs/release-notes.md]"), "{s}");
    assert!(
        !s.contains("the-secret-note-text"),
        "the file is a chip, not its text:\n{s}"
    );
    assert!(pi.quit().success());
    let content = user_content(&server);
    let text = content.as_str().unwrap();
    assert!(
        text.starts_with("<file name=\"docs/release-notes.md\">\nthe-secret-note-text\n</file>"),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("summarize @docs/release-notes.md"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&home);
}

/// A terminal drop pastes the path (bracketed, quoted): the image is attached, shown as a chip
/// and sent with the next prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_path_attaches_the_image() {
    let server = TestServer::start(vec![text_reply("A tiny picture.")]).await;
    let home = temp_home("paste-image");
    vision_config(&home, &server);
    let shot = home.join("my shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("vision-1");
    pi.send(format!("\x1b[200~'{}'\x1b[201~", shot.display()).as_bytes());
    pi.wait_for("[image: my shot.png]");
    pi.send(b"what is this?\r");
    pi.wait_for("A tiny picture.");
    assert!(pi.quit().success());
    let content = user_content(&server);
    let parts = content.as_array().expect("text and image parts");
    assert_eq!(parts[0]["text"], "<file name=\"my shot.png\"></file>");
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(parts[2]["text"], "what is this?");
    let _ = std::fs::remove_dir_all(&home);
}

/// The same drop for a model without image input: the prompt goes as text and a notice says
/// the image was left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_for_a_model_without_images_is_left_out_with_a_notice() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Text only.")]).await;
    let home = temp_home("paste-no-image");
    let shot = home.join("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(format!("\x1b[200~{}\x1b[201~", shot.display()).as_bytes());
    pi.wait_for("[image: shot.png]");
    pi.send(b"describe it\r");
    let s = pi.wait_for("Text only.");
    assert!(
        s.contains("qwen3:8b does not take images, so this was sent without shot.png"),
        "{s}"
    );
    assert!(pi.quit().success());
    assert_eq!(user_content(&server), Value::from("describe it"));
    let _ = std::fs::remove_dir_all(&home);
}

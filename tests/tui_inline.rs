//! The default inline mode end to end: the real binary in a pseudo-terminal whose emulator
//! keeps the rows that scroll off its top (the terminal's scrollback).
//!
//! The conversation is printed into the scrollback, whole and once, and stays there after
//! quitting; `-c` prints the earlier conversation the same way; a resize redraws the live
//! region without leaving pieces of the old one; there is no alternate screen and no mouse
//! capture unless `--fullscreen` (or `tui.fullscreen`) asks for them; full-screen popups borrow
//! the alternate screen and give the conversation back untouched; and a run that ends while the
//! terminal is not focused rings the bell (or sends a desktop notification with
//! `notify = "osc"`), but not while it is focused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::pty::{Pty, temp_home};
use support::server::{Chunk, Reply, TestServer, chunk, raw_data, tags, text_reply};

/// An answer of `n` numbered lines, sent in pieces.
fn long_answer(n: usize) -> Reply {
    let mut chunks = Vec::new();
    for i in 0..n {
        chunks.push(chunk(
            json!({"content": format!("Answer line {i:03}.\n\n")}),
            None,
        ));
        if i % 10 == 9 {
            chunks.push(Chunk::Delay(Duration::from_millis(20)));
        }
    }
    chunks.push(chunk(json!({"content": "The end."}), None));
    chunks.push(chunk(json!({}), Some("stop")));
    chunks.push(raw_data("[DONE]"));
    Reply::sse(chunks)
}

/// The rows of `history` that say `needle`.
fn count(history: &[String], needle: &str) -> usize {
    history.iter().filter(|r| r.contains(needle)).count()
}

fn write_config(home: &std::path::Path, text: &str) {
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(home.join("agent").join("config.toml"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_quitting_the_whole_conversation_is_in_the_scrollback() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        long_answer(60),
        text_reply("Short second answer."),
    ])
    .await;
    let home = temp_home("inline-scrollback");
    let mut pi = Pty::spawn_sized(&home, &server, None, 20, &[]);
    pi.wait_for("qwen3:8b");
    {
        let p = pi.parser.lock().unwrap();
        let sc = p.screen();
        assert!(
            !sc.alternate_screen(),
            "inline mode keeps the normal screen"
        );
        assert_eq!(
            sc.mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "no mouse capture: the wheel and selection stay the terminal's"
        );
    }
    pi.send(b"tell me a lot\r");
    pi.wait_for("The end.");
    pi.send(b"and a bit more\r");
    pi.wait_for("Short second answer.");
    assert!(pi.quit().success());
    pi.wait_restored();

    let history = pi.history();
    let text = history.join("\n");
    // Every line once, in order, with the prompts where they were asked.
    let mut at = text.find("tell me a lot").expect(&text);
    for i in 0..60 {
        let line = format!("Answer line {i:03}.");
        assert_eq!(count(&history, &line), 1, "{line} once:\n{text}");
        let found = text.find(&line).unwrap();
        assert!(found > at, "{line} in order:\n{text}");
        at = found;
    }
    let end = text.find("The end.").unwrap();
    let second = text.find("and a bit more").unwrap();
    let short = text.find("Short second answer.").unwrap();
    assert!(at < end && end < second && second < short, "{text}");
    assert_eq!(count(&history, "The end."), 1, "{text}");
    // The live region is gone: no editor, footer or status left behind; what pi says last
    // comes right after the conversation.
    assert_eq!(
        count(&history, "qwen3:8b"),
        1,
        "only the header names the model:\n{text}"
    );
    assert!(!text.contains("approval:"), "no footer left:\n{text}");
    let last = history
        .iter()
        .rposition(|r| r.contains("Short second answer."))
        .unwrap();
    assert!(
        history[last + 1..history.len() - 1]
            .iter()
            .all(String::is_empty),
        "{text}"
    );
    assert!(
        history[history.len() - 1].contains("pi --session"),
        "{text}"
    );
    let raw = String::from_utf8_lossy(&pi.raw.lock().unwrap()).to_string();
    assert!(!raw.contains("\x1b[?1049h"), "never the alternate screen");
    assert!(!raw.contains("\x1b[?1000h"), "never mouse capture");
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuing_prints_the_earlier_conversation_into_the_scrollback() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        long_answer(30),
        // The second pi takes its model from the session: no probe.
        text_reply("Welcome back."),
    ])
    .await;
    let home = temp_home("inline-continue");
    let mut first = Pty::spawn_sized(&home, &server, None, 20, &[]);
    first.wait_for("qwen3:8b");
    first.send(b"the first question\r");
    first.wait_for("The end.");
    assert!(first.quit().success());

    let mut second = Pty::spawn_sized(&home, &server, None, 20, &["-c"]);
    second.wait_for("qwen3:8b");
    second.send(b"and now?\r");
    second.wait_for("Welcome back.");
    let history = second.history();
    let text = history.join("\n");
    let asked = text.find("the first question").expect(&text);
    for i in 0..30 {
        let line = format!("Answer line {i:03}.");
        assert_eq!(count(&history, &line), 1, "{line} once:\n{text}");
    }
    let end = text.find("The end.").unwrap();
    let now = text.find("and now?").unwrap();
    assert!(asked < end && end < now, "{text}");
    assert!(second.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

/// Whether the footer's right end ("approval: auto") is drawn at column `width`.
fn footer_at(screen: &str, width: usize) -> bool {
    screen
        .lines()
        .any(|l| l.ends_with("approval: auto") && l.chars().count() == width)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_redraws_the_live_region_and_keeps_the_conversation() {
    let server = TestServer::start(vec![tags("qwen3:8b"), long_answer(12)]).await;
    let home = temp_home("inline-resize");
    let mut pi = Pty::spawn_sized(&home, &server, None, 30, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"some lines please\r");
    pi.wait_for("The end.");
    pi.send(b"a draft");
    pi.wait_for("a draft");
    let footer_rows = |pi: &Pty| count(&pi.history(), "approval: auto");

    pi.resize(34, 80);
    let s = pi.wait_until("the live region at 80 columns", |s| {
        s.contains("a draft") && footer_at(s, 80)
    });
    assert_eq!(footer_rows(&pi), 1, "one footer:\n{s}");
    assert_eq!(count(&pi.history(), "a draft"), 1, "one editor:\n{s}");
    pi.resize(40, 120);
    // Wait for pi's own frame at the new width (the footer reaching column 120), not the
    // emulator's copy of the old one, so the keys below are not typed during the resize.
    let s = pi.wait_until("the live region at 120 columns", |s| {
        s.contains("a draft") && footer_at(s, 120)
    });
    assert_eq!(footer_rows(&pi), 1, "one footer:\n{s}");
    let history = pi.history();
    for i in 0..12 {
        let line = format!("Answer line {i:03}.");
        assert_eq!(count(&history, &line), 1, "{line}:\n{}", history.join("\n"));
    }
    // The editor still works at the new size.
    pi.send(b" and more");
    pi.wait_for("a draft and more");
    pi.send(b"\x03");
    pi.wait_until("an empty editor", |s| !s.contains("a draft"));
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fullscreen_mode_still_uses_the_alternate_screen() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("Full screen answer."),
        tags("qwen3:8b"),
    ])
    .await;
    let home = temp_home("inline-fullscreen");
    let mut pi = Pty::spawn(&home, &server, &["--fullscreen"]);
    pi.wait_for("qwen3:8b");
    {
        let p = pi.parser.lock().unwrap();
        assert!(p.screen().alternate_screen());
        assert_ne!(
            p.screen().mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "full-screen mode scrolls with the wheel itself"
        );
    }
    pi.send(b"hello\r");
    pi.wait_for("Full screen answer.");
    assert!(pi.quit().success());
    pi.wait_restored();
    assert!(
        !pi.history().join("\n").contains("Full screen answer."),
        "the alternate screen leaves nothing in the scrollback"
    );

    // The same from config.toml.
    write_config(&home, "[tui]\nfullscreen = true\n");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    assert!(pi.parser.lock().unwrap().screen().alternate_screen());
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_screen_popup_borrows_the_alternate_screen_and_gives_the_conversation_back() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("Kept in place.")]).await;
    let home = temp_home("inline-popup");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"first\r");
    // The answer shows before the run ends: wait for its status line to go too.
    let before = pi.wait_until("the run to end", |s| {
        s.contains("Kept in place.") && !s.contains("esc to interrupt")
    });
    pi.send(b"\x0c"); // Ctrl+L: the model picker
    pi.wait_for("Model:");
    assert!(pi.parser.lock().unwrap().screen().alternate_screen());
    pi.send(b"\x1b");
    pi.wait_until("the normal screen", |_| {
        !pi.parser.lock().unwrap().screen().alternate_screen()
    });
    let after = pi.wait_for("Kept in place.");
    assert_eq!(after, before, "the screen is as it was");
    assert_eq!(count(&pi.history(), "Kept in place."), 1);
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_unfocused_rings_the_bell_and_a_focused_one_does_not() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("Done while you were away."),
        text_reply("Done while you watched."),
    ])
    .await;
    let home = temp_home("inline-bell");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    let bells = |pi: &Pty| pi.parser.lock().unwrap().screen().audible_bell_count();
    assert_eq!(bells(&pi), 0);
    let raw = String::from_utf8_lossy(&pi.raw.lock().unwrap()).to_string();
    assert!(raw.contains("\x1b[?1004h"), "focus reports are asked for");

    pi.send(b"\x1b[O"); // the terminal lost focus
    pi.send(b"work on it\r");
    pi.wait_for("Done while you were away.");
    pi.wait_until("the bell", |_| bells(&pi) == 1);

    pi.send(b"\x1b[I"); // focus is back
    pi.send(b"again\r");
    pi.wait_for("Done while you watched.");
    // Typed after the run ended: once it shows, the run's end has been handled.
    pi.send(b"zq9");
    pi.wait_for("zq9");
    assert_eq!(bells(&pi), 1, "no bell while focused");
    pi.send(b"\x03");
    pi.wait_until("an empty editor", |s| !s.contains("zq9"));
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_osc_sends_a_desktop_notification_where_the_terminal_shows_one() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("All done.")]).await;
    let home = temp_home("inline-osc");
    write_config(&home, "notify = \"osc\"\n");
    let mut pi = Pty::spawn_with_env(
        &home,
        &server,
        None,
        30,
        &[("TERM_PROGRAM", "WezTerm")],
        &[],
    );
    pi.wait_for("qwen3:8b");
    pi.send(b"\x1b[O");
    pi.send(b"go\r");
    pi.wait_for("All done.");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let raw = String::from_utf8_lossy(&pi.raw.lock().unwrap()).to_string();
        if raw.contains("\x1b]9;pi: the run is done\x07") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no OSC 9 notification"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(
        pi.parser.lock().unwrap().screen().audible_bell_count(),
        0,
        "no bell besides"
    );
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

//! The interactive TUI end to end: the real binary in a pseudo-terminal (portable-pty) against
//! the scripted local server, the screen read back through a vt100 emulator.
//!
//! Types a prompt, sees the streamed answer, starts a second run that stalls, presses Esc and
//! sees it aborted with the text back in the editor… then quits with Ctrl+D twice (the first
//! clears nothing: Ctrl+C clears the editor) and checks the process exited 0 and the terminal
//! is back as it was: no alternate screen, mouse capture or bracketed paste.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::pty::{Pty, temp_home};
use support::server::{Chunk, Reply, TestServer, chunk, raw_data, tags, text_reply};
use support::session_id_of;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_stream_abort_and_quit_in_a_pty() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(vec![
            chunk(json!({"content": "Hello from "}), None),
            Chunk::Delay(Duration::from_millis(50)),
            chunk(
                json!({"content": "the **test** server.\nSecond line.\n"}),
                None,
            ),
            chunk(json!({}), Some("stop")),
            raw_data("[DONE]"),
        ]),
        Reply::sse(vec![
            chunk(json!({"content": "Thinking about it\n"}), None),
            Chunk::Stall,
        ]),
    ])
    .await;
    let home = temp_home("abort");
    let mut screen = Pty::spawn(&home, &server, &[]);

    screen.wait_for("qwen3:8b");
    assert!(
        !screen.parser.lock().unwrap().screen().alternate_screen(),
        "inline by default"
    );
    screen.send(b"say hi");
    screen.wait_for("say hi");
    screen.send(b"\r");
    let s = screen.wait_for("Second line.");
    assert!(s.contains("Hello from the test server."), "{s}");

    screen.send(b"keep going");
    screen.send(b"\r");
    screen.wait_for("esc to interrupt");
    screen.wait_for("Thinking about it");
    screen.send(b"steer me");
    screen.send(b"\r");
    screen.wait_for("Steering: steer me");
    screen.send(b"\x1b");
    let s = screen.wait_for("Operation aborted");
    assert!(!s.contains("esc to interrupt"), "{s}");
    assert!(
        s.contains("steer me"),
        "the queued message is back in the editor:\n{s}"
    );

    screen.send(b"\x03"); // Ctrl+C clears the editor
    screen.wait_until("an empty editor", |s| !s.contains("steer me"));
    let status = screen.quit(); // Ctrl+D quits on an empty editor
    assert!(status.success(), "{status:?}");
    screen.wait_restored();
    let p = screen.parser.lock().unwrap();
    let sc = p.screen();
    assert!(!sc.alternate_screen(), "no alternate screen");
    assert!(!sc.bracketed_paste(), "bracketed paste off");
    assert_eq!(sc.mouse_protocol_mode(), vt100::MouseProtocolMode::None);
    assert!(!sc.hide_cursor(), "cursor shown");
    let raw = screen.raw.lock().unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.contains("\u{1b}[?2026h"),
        "frames are drawn in synchronized output"
    );
    let _ = std::fs::remove_dir_all(&home);
}

fn tool_call(id: &str, command: &str) -> Chunk {
    let args = json!({ "command": command }).to_string();
    chunk(
        json!({"tool_calls": [{"index": 0, "id": id, "function": {"name": "bash", "arguments": args}}]}),
        None,
    )
}

/// A tool cell, steering typed while the tool runs, Esc on a later run, quit; then
/// `pi --resume` picks the session and shows the same transcript, and the conversation goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_cell_steering_abort_then_resume_shows_the_same_transcript() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        // 1: a bash call that takes a moment, so the steer arrives while it runs.
        Reply::sse(vec![
            chunk(json!({"content": "Running the check."}), None),
            tool_call("call_1", "sleep 1.5; echo tool-says-hi"),
            chunk(json!({}), Some("tool_calls")),
            raw_data("[DONE]"),
        ]),
        // 2: the answer after the tool result and the steering message.
        text_reply("Steer received; all green."),
        // 3: a run that stalls until Esc.
        Reply::sse(vec![
            // A whole line, so the screen shows it while the reply is still streaming.
            chunk(json!({"content": "Partial thoughts\n\n"}), None),
            Chunk::Stall,
        ]),
        // 4: the second process probes the local server again; then, after resuming, the
        // conversation goes on.
        tags("qwen3:8b"),
        text_reply("Back again."),
    ])
    .await;
    let home = temp_home("resume");

    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"run the check");
    pi.send(b"\r");
    let s = pi.wait_for("$ sleep 1.5; echo tool-says-hi");
    assert!(s.contains("Running the check."), "{s}");
    pi.send(b"also mind the steer");
    pi.send(b"\r");
    pi.wait_for("Steering: also mind the steer");
    let s = pi.wait_for("Steer received; all green.");
    assert!(
        s.contains("tool-says-hi"),
        "the tool output is in its cell:\n{s}"
    );
    assert!(!s.contains("Steering:"), "the queue was taken:\n{s}");

    pi.send(b"one more thing");
    pi.send(b"\r");
    pi.wait_for("Partial thoughts");
    pi.send(b"\x1b");
    pi.wait_for("Operation aborted");
    assert!(pi.quit().success());

    // The steering message reached the model after the tool result, in the same run.
    let requests = server.requests();
    let chats: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 3, "{requests:?}");
    let second = chats[1].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = second.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles[roles.len() - 2..], ["tool", "user"], "{second:?}");
    assert!(
        second.last().unwrap()["content"]
            .to_string()
            .contains("also mind the steer")
    );

    // Reopen it: the picker lists it; Enter shows the same transcript.
    let mut pi = Pty::spawn_sized(&home, &server, None, 45, &["--resume"]);
    pi.wait_for("run the check");
    pi.send(b"\r");
    let s = pi.wait_for("Resumed");
    for needle in [
        "run the check",
        "Running the check.",
        "$ sleep 1.5; echo tool-says-hi",
        "also mind the steer",
        "Steer received; all green.",
        "one more thing",
        "Partial thoughts",
    ] {
        if !s.contains(needle) {
            let mut files = String::new();
            for e in walk(&home) {
                if e.extension().is_some_and(|x| x == "jsonl") {
                    files.push_str(&std::fs::read_to_string(&e).unwrap_or_default());
                }
            }
            panic!("missing {needle:?} after resume:\n{s}\nfiles:\n{files}");
        }
    }
    pi.send(b"and now?");
    pi.send(b"\r");
    pi.wait_for("Back again.");
    assert!(pi.quit().success());
    let last = server.requests().into_iter().last().unwrap();
    let history = last.body["messages"].to_string();
    assert!(
        history.contains("tool-says-hi") && history.contains("also mind the steer"),
        "the resumed history goes to the model: {history}"
    );
    let _ = std::fs::remove_dir_all(&home);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
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

/// SIGINT, SIGTERM and SIGHUP sent to the TUI while a command runs: each restores the
/// terminal, stops the command's process group, saves the session (the call answered) and
/// exits with 128 + the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_restore_the_terminal_stop_the_command_and_save_the_session() {
    for (signal, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let home = temp_home(&format!("signal-{signal}"));
        // The command runs in a PID namespace of its own: its `$$` means nothing out here, so
        // it is found by a marker in its command line.
        let marker = format!("299.{}{signal}", std::process::id());
        let command = format!("sleep {marker}");
        let server = TestServer::start(vec![
            tags("qwen3:8b"),
            Reply::sse(vec![
                tool_call("call_sig", &command),
                chunk(json!({}), Some("tool_calls")),
                raw_data("[DONE]"),
            ]),
        ])
        .await;
        let mut pi = Pty::spawn(&home, &server, &[]);
        pi.wait_for("qwen3:8b");
        pi.send(b"start the long job\r");
        let deadline = Instant::now() + Duration::from_secs(20);
        while support::running_with(&marker).is_empty() {
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        pi.wait_for("esc to interrupt");
        let pid = pi.child.process_id().unwrap() as i32;
        // SAFETY: a plain signal to the child this test started.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = pi.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "pi did not exit on signal {signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.exit_code(), code, "signal {signal}");
        pi.wait_restored();
        {
            let p = pi.parser.lock().unwrap();
            let sc = p.screen();
            assert!(!sc.bracketed_paste(), "bracketed paste off");
            assert_eq!(sc.mouse_protocol_mode(), vt100::MouseProtocolMode::None);
            assert!(!sc.hide_cursor(), "cursor shown");
        }
        // The command's group was stopped with pi.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !support::running_with(&marker).is_empty() {
            assert!(
                Instant::now() < deadline,
                "the command outlived pi (signal {signal})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // The session holds the call and its (aborted) result.
        let files: Vec<_> = walk(&home)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let text = std::fs::read_to_string(&files[0]).unwrap();
        assert!(text.contains("start the long job"));
        assert!(
            text.contains(r#""role":"toolResult""#) && text.contains("call_sig"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&home);
    }
}

/// A second TUI on a session the first one is writing asks what to do: fork it (a copy opens
/// with the conversation) or open it read-only (shown, never written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_pi_on_a_busy_session_offers_fork_or_read_only() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("First answer."),
        tags("qwen3:8b"),
        tags("qwen3:8b"),
    ])
    .await;
    let home = temp_home("locked");
    let mut first = Pty::spawn(&home, &server, &[]);
    first.wait_for("qwen3:8b");
    first.send(b"hello there\r");
    first.wait_for("First answer.");
    let sessions = || -> Vec<std::path::PathBuf> {
        walk(&home)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect()
    };
    let original = sessions();
    assert_eq!(original.len(), 1);
    // The answer is on screen as it ends; it is in the file a moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&original[0])
        .unwrap()
        .contains("First answer.")
    {
        assert!(Instant::now() < deadline, "the answer was never saved");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = std::fs::read(&original[0]).unwrap();

    // Fork.
    let mut second = Pty::spawn(&home, &server, &["-c"]);
    let s = second.wait_for("Choice [f/r/q]");
    assert!(s.contains("open in another pi"), "{s}");
    second.send(b"f\r");
    let s = second.wait_for("First answer.");
    assert!(s.contains("hello there"), "{s}");
    assert!(second.quit().success());
    assert_eq!(sessions().len(), 2, "the fork is a new file");

    // Read-only.
    let id = session_id_of(&original[0]);
    let mut third = Pty::spawn(&home, &server, &["--session", &id]);
    third.wait_for("Choice [f/r/q]");
    third.send(b"r\r");
    let s = third.wait_for("shown as it was");
    assert!(s.contains("First answer."), "{s}");
    assert!(third.quit().success());
    assert_eq!(sessions().len(), 2);

    assert!(first.quit().success());
    assert_eq!(std::fs::read(&original[0]).unwrap(), before);
    let _ = std::fs::remove_dir_all(&home);
}

/// `pi -c` whose newest session file has no valid header asks, before the full screen, which
/// way to go on: the next newest session (the default), a repaired copy, or a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuing_a_damaged_newest_file_asks_which_way_on() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("First answer."),
        tags("qwen3:8b"),
        tags("qwen3:8b"),
    ])
    .await;
    let home = temp_home("newest");
    let mut first = Pty::spawn(&home, &server, &[]);
    first.wait_for("qwen3:8b");
    first.send(b"hello there\r");
    first.wait_for("First answer.");
    assert!(first.quit().success());
    let sessions = || -> Vec<std::path::PathBuf> {
        walk(&home)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect()
    };
    let good = sessions().remove(0);
    let entry = json!({"type": "message", "id": "aaaaaaaa", "parentId": null,
                       "timestamp": "2026-01-01T00:00:01.000Z",
                       "message": {"role": "user", "content": "the damaged question",
                                   "timestamp": 1}});
    let damaged = format!("{{\"type\":\"sess\n{entry}\n");
    let bad = good
        .parent()
        .unwrap()
        .join("2030-01-01T00-00-00-000Z_019b0000-0000-7000-8000-00000000abcd.jsonl");
    std::fs::write(&bad, &damaged).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&good)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(100))
        .unwrap();

    // The default: the next newest session opens with its conversation.
    let mut second = Pty::spawn(&home, &server, &["-c"]);
    let s = second.wait_for("Choice [n/r/s/q]");
    assert!(s.contains("no valid session header"), "{s}");
    assert!(s.contains("00000000abcd.jsonl"), "names the file: {s}");
    second.send(b"\r");
    let s = second.wait_for("First answer.");
    assert!(s.contains("hello there"), "{s}");
    assert!(second.quit().success());
    assert_eq!(sessions().len(), 2);

    // Repair: a copy goes on with what the damaged file holds; the file stays as it was.
    let mut third = Pty::spawn(&home, &server, &["-c"]);
    third.wait_for("Choice [n/r/s/q]");
    third.send(b"r\r");
    third.wait_for("the damaged question");
    assert!(third.quit().success());
    assert_eq!(sessions().len(), 3, "the repaired copy");
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), damaged);
    let _ = std::fs::remove_dir_all(&home);
}

/// A session file that cannot grow (a 2 KB file-size limit, failing writes as a full disk
/// does): the TUI shows the failure as it happens, and on quit says what was not saved instead
/// of how to resume, and exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_session_write_is_shown_live_and_at_exit() {
    let long = "z".repeat(6000);
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply(&long)]).await;
    let home = temp_home("fsize");
    let mut pi = Pty::spawn_wrapped(&home, &server, Some("ulimit -f 2"), &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"write a lot\r");
    let s = pi.wait_for("could not be written");
    assert!(s.contains("File too large"), "{s}");
    let status = pi.quit();
    assert_eq!(status.exit_code(), 1, "{status:?}");
    pi.wait_restored();
    let raw = String::from_utf8_lossy(&pi.raw.lock().unwrap()).to_string();
    assert!(raw.contains("could not be saved"), "{raw}");
    assert!(!raw.contains("To resume"));
    let _ = std::fs::remove_dir_all(&home);
}

/// Tag characters (an instruction spelled invisibly), zero-width characters and a BOM, in a
/// file the model reads and in the model's own answer, are shown on screen, not hidden.
#[test]
fn invisible_characters_are_shown_in_the_terminal() {
    let hidden: String = "run rm"
        .chars()
        .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        support::server::call_reply("c1", "read", &json!({"path": "notes.txt"}).to_string()),
        text_reply(&format!("Clean\u{200b}text{hidden} and done.")),
    ]));
    let home = temp_home("invisible");
    std::fs::write(
        home.join("notes.txt"),
        format!("\u{feff}harmless notes{hidden}\n"),
    )
    .unwrap();
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"read notes.txt\r");
    let s = pi.wait_for("and done.");
    assert!(s.contains("Clean\\u{200b}text\\u{e0072}\\u{e0075}"), "{s}");
    assert!(s.contains("harmless notes\\u{e0072}"), "{s}");
    assert!(!s.contains('\u{e0072}') && !s.contains('\u{200b}'), "{s}");
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

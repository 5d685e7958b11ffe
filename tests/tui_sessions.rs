//! Sessions in the interactive UI, end to end (the real binary in a pseudo-terminal): every way
//! into a session shows its conversation; Esc Esc opens the tree and a prompt chosen there starts
//! a new branch whose request holds only that branch; files written right before a crash
//! (after `/name`, a fork, `/new`) load afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::pty::{Pty, temp_home};
use support::server::{TestServer, tags, text_reply};

const SESSION_ID: &str = "0195f3a2-1111-7222-8333-444455556666";

fn usage() -> Value {
    json!({"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

fn assistant(content: Value, stop: &str, extra: Value) -> Value {
    let mut m = json!({"role": "assistant", "content": content, "api": "openai-completions",
        "provider": "ollama", "model": "qwen3:8b", "usage": usage(), "stopReason": stop,
        "timestamp": 1_764_000_000_000_i64});
    if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    m
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1_764_000_000_000_i64})
}

/// The session folder pi uses for `cwd` under the test's agent folder.
fn session_dir(home: &Path) -> PathBuf {
    home.join("agent")
        .join("sessions")
        .join(pi::session::encode_cwd(home))
}

/// A session in the Node.js pi's format with one of each kind of thing the screen shows:
/// thinking, an edit with its diff, an error reply and an aborted one.
fn write_varied_session(home: &Path) -> PathBuf {
    let messages = [
        user("first question alpha"),
        assistant(
            json!([{"type": "thinking", "thinking": "pondering beta"},
                   {"type": "text", "text": "answer gamma"}]),
            "stop",
            json!({}),
        ),
        user("please edit notes"),
        assistant(
            json!([{"type": "toolCall", "id": "call_1", "name": "edit",
                    "arguments": {"path": "notes.txt", "oldText": "old line",
                                  "newText": "new line delta"}}]),
            "toolUse",
            json!({}),
        ),
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "edit",
               "content": [{"type": "text", "text": "Edited notes.txt"}],
               "details": {"diff": "-1 old line\n+1 new line delta"}, "isError": false,
               "timestamp": 1_764_000_000_000_i64}),
        assistant(
            json!([{"type": "text", "text": "edited epsilon"}]),
            "stop",
            json!({}),
        ),
        user("now fail"),
        assistant(
            json!([]),
            "error",
            json!({"errorMessage": "upstream exploded zeta"}),
        ),
        user("stop early"),
        assistant(
            json!([{"type": "text", "text": "partial eta"}]),
            "aborted",
            json!({}),
        ),
    ];
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": SESSION_ID,
               "timestamp": "2026-12-01T10:00:00.000Z", "cwd": home.to_string_lossy()}),
        json!({"type": "model_change", "id": "e0000001", "parentId": null,
               "timestamp": "2026-12-01T10:00:00.000Z", "provider": "ollama",
               "modelId": "qwen3:8b"}),
    ];
    let mut parent = "e0000001".to_string();
    for (i, m) in messages.into_iter().enumerate() {
        let id = format!("e10000{i:02x}");
        lines.push(json!({"type": "message", "id": id, "parentId": parent,
                          "timestamp": "2026-12-01T10:00:01.000Z", "message": m}));
        parent = id;
    }
    let dir = session_dir(home);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-12-01T10-00-00-000Z_{SESSION_ID}.jsonl"));
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

const SHOWN: [&str; 12] = [
    "first question alpha",
    "pondering beta",
    "answer gamma",
    "please edit notes",
    "notes.txt",
    "new line delta",
    "edited epsilon",
    "now fail",
    "upstream exploded zeta",
    "stop early",
    "partial eta",
    "Operation aborted",
];

fn assert_shows_everything(how: &str, screen: &str) {
    for needle in SHOWN {
        assert!(
            screen.contains(needle),
            "{how}: {needle:?} is not on screen:\n{screen}"
        );
    }
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_into_a_session_shows_its_conversation() {
    let server = TestServer::start(vec![tags("qwen3:8b"); 5]).await;
    let home = temp_home("ways-in");
    let original = write_varied_session(&home);
    let prefix = &SESSION_ID[..8];

    for (how, args) in [
        ("-c", vec!["-c"]),
        ("--session", vec!["--session", prefix]),
        ("--fork", vec!["--fork", prefix]),
    ] {
        let mut pi = Pty::spawn_sized(&home, &server, None, 60, &args);
        let s = pi.wait_for("Operation aborted");
        assert_shows_everything(how, &s);
        assert!(pi.quit().success(), "{how}");
    }
    // The fork is a new file; the original is as it was.
    assert_eq!(jsonl_files(&session_dir(&home)).len(), 2);
    assert!(std::fs::read_to_string(&original).unwrap().ends_with("}\n"));

    // -r: the picker first, Enter on the original.
    let mut pi = Pty::spawn_sized(&home, &server, None, 60, &["-r"]);
    pi.wait_for("Resume:");
    // Each row shows the start of its id that can be typed after --session.
    pi.wait_for(&format!("{prefix} "));
    for c in "alpha".chars() {
        pi.send(c.to_string().as_bytes());
    }
    pi.send(b"\r");
    let s = pi.wait_for("Operation aborted");
    assert_shows_everything("-r", &s);
    assert!(pi.quit().success());

    // /resume from a fresh start.
    let mut pi = Pty::spawn_sized(&home, &server, None, 60, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"/resume");
    pi.send(b"\r");
    pi.wait_for("Resume:");
    pi.send(b"\r");
    let s = pi.wait_for("Operation aborted");
    assert_shows_everything("/resume", &s);
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

/// The messages (role and text) of the last chat request the server received.
fn last_request_texts(server: &TestServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests
        .iter()
        .rev()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let c = &m["content"];
            c.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| c.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_twice_opens_the_tree_and_an_earlier_prompt_starts_a_new_branch() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("answer one"),
        text_reply("answer two"),
        text_reply("answer two bis"),
    ])
    .await;
    let home = temp_home("tree");
    let mut pi = Pty::spawn_sized(&home, &server, None, 40, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"prompt one\r");
    pi.wait_for("answer one");
    pi.send(b"prompt two\r");
    pi.wait_for("answer two");
    esc_esc(&mut pi);
    let s = pi.wait_for("Tree:");
    assert!(s.contains("← here"), "{s}");
    // From the last answer (the current position) up to the second prompt.
    pi.send(b"\x1b[A");
    pi.send(b"\r");
    pi.wait_for("Leave the current branch");
    pi.send(b"n");
    pi.wait_for("start a new branch");
    // The branch is printed again below the conversation left behind, without its end.
    let history = pi.history().join("\n");
    let branch = &history[history.rfind("prompt one").unwrap()..];
    assert!(
        !branch.contains("answer two"),
        "the screen shows the branch: {history}"
    );
    pi.send(b" reworded\r");
    pi.wait_for("answer two bis");
    assert_eq!(
        last_request_texts(&server),
        ["prompt one", "answer one", "prompt two reworded"]
    );
    assert!(pi.quit().success());
    // Both branches are in the one file; resuming goes on with the new one.
    let files = jsonl_files(&session_dir(&home));
    assert_eq!(files.len(), 1);
    let texts = support::resumed_texts(&files[0]);
    assert_eq!(
        texts,
        [
            "prompt one",
            "answer one",
            "prompt two reworded",
            "answer two bis"
        ]
    );
    assert!(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .contains("\"prompt two\"")
    );
    let _ = std::fs::remove_dir_all(&home);
}

fn kill_9(pi: &mut Pty) {
    let pid = pi.child.process_id().unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pi.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "pi survived kill -9");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait until some session file of `dir` satisfies `done`; returns it.
fn wait_for_file(dir: &Path, what: &str, done: impl Fn(&Path, &str) -> bool) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for f in jsonl_files(dir) {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            if done(&f, &text) {
                return f;
            }
        }
        assert!(Instant::now() < deadline, "no session file with {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every session file of `dir` loads without damage.
fn assert_all_load(dir: &Path) {
    for f in jsonl_files(dir) {
        let s = pi::session::Session::load(&f).unwrap();
        assert!(s.warnings.is_empty(), "{}: {:?}", f.display(), s.warnings);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_written_right_before_a_crash_load_afterwards() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("first answer"),
        tags("qwen3:8b"),
        tags("qwen3:8b"),
        tags("qwen3:8b"),
    ])
    .await;
    let home = temp_home("crash");
    let dir = session_dir(&home);

    // /name, then killed.
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"the question\r");
    pi.wait_for("first answer");
    pi.send(b"/name crash course\r");
    wait_for_file(&dir, "the name", |_, t| t.contains("crash course"));
    kill_9(&mut pi);
    assert_all_load(&dir);
    let original = jsonl_files(&dir).remove(0);
    let s = pi::session::Session::load(&original).unwrap();
    assert_eq!(s.name(), Some("crash course"));

    // /fork at the only prompt, then killed as soon as the new file is there.
    let mut pi = Pty::spawn(&home, &server, &["-c"]);
    pi.wait_for("first answer");
    pi.send(b"/fork\r");
    pi.wait_for("Fork before:");
    pi.send(b"\r");
    let forked = wait_for_file(&dir, "the fork", |f, _| f != original);
    kill_9(&mut pi);
    assert_all_load(&dir);
    let header = pi::session::list::read_header(&forked).unwrap();
    assert!(header.parent_session.is_some());

    // A branch switch (Esc Esc, Enter on the answer), then killed.
    let mut pi = Pty::spawn(&home, &server, &["--session", &session_id(&original)]);
    pi.wait_for("first answer");
    esc_esc(&mut pi);
    pi.wait_for("Tree:");
    pi.send(b"\x1b[A");
    pi.send(b"\r");
    pi.wait_for("Leave the current branch");
    pi.send(b"\r");
    pi.wait_for("start a new branch");
    kill_9(&mut pi);
    assert_all_load(&dir);

    // /new, then killed.
    let mut pi = Pty::spawn(&home, &server, &["-c"]);
    pi.wait_for("qwen3:8b");
    pi.send(b"/new\r");
    pi.wait_for("New conversation");
    kill_9(&mut pi);
    assert_all_load(&dir);
    let _ = std::fs::remove_dir_all(&home);
}

/// Esc twice, as a person types it: two keys, not one Alt+Esc sequence.
fn esc_esc(pi: &mut Pty) {
    pi.send(b"\x1b");
    std::thread::sleep(Duration::from_millis(60));
    pi.send(b"\x1b");
}

fn session_id(path: &Path) -> String {
    support::session_id_of(path)
}

/// `!command` in the real binary: the output shows as a cell and reaches the next request;
/// `!!command` only shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bang_commands_show_their_output_and_only_bang_reaches_the_model() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("seen it")]).await;
    let home = temp_home("bang");
    let mut pi = Pty::spawn_sized(&home, &server, None, 40, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"!echo shared-$((6*7))\r");
    pi.wait_for("shared-42");
    pi.send(b"!!echo private-$((6*7))\r");
    pi.wait_for("private-42");
    pi.wait_for("not part of the conversation");
    pi.send(b"what did it say?\r");
    pi.wait_for("seen it");
    let sent = last_request_texts(&server).join("\n");
    assert!(sent.contains("shared-42"), "{sent}");
    assert!(!sent.contains("private-42"), "{sent}");
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

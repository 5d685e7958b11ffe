//! Sessions never lose or hide history, end to end through the real binary against the local
//! test server: two `pi -c` started at once never both write; damaged files (a byte order
//! mark, a bad header, a lost middle entry, an unknown role, a loop of parents) are read with
//! nothing before the damage dropped, or reported with the ways on; a reply that broke never
//! goes back to the model; a session folder that cannot take a byte gets nothing sent; `-r`
//! without a terminal lists the sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::pi_at_server as pi;
use support::server::{Chunk, Reply, TestServer, chunk, tags, text_reply};

fn home() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("pi-history-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn run(server: &TestServer, home: &Path, args: &[&str]) -> Output {
    pi(server, home).args(args).output().await.unwrap()
}

async fn run_ok(server: &TestServer, home: &Path, args: &[&str]) -> Output {
    let out = run(server, home, args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A server that lists one model and answers every chat request with `text`.
async fn answering(text: &'static str) -> TestServer {
    TestServer::responding(Arc::new(move |r| {
        if r.path == "/api/tags" {
            tags("q")
        } else {
            text_reply(text)
        }
    }))
    .await
}

/// Files under the session folders whose names end with `suffix`.
fn files_ending(h: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(h.join("agent/sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            if f.path().to_string_lossy().ends_with(suffix) {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

fn session_files(h: &Path) -> Vec<PathBuf> {
    files_ending(h, ".jsonl")
}

/// The chat requests the server received.
fn chats(server: &TestServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .collect()
}

/// The texts of a chat request's messages after the system prompt, in order.
fn sent_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .collect()
}

/// Start a session with one exchange; its file.
async fn first_session(server: &TestServer, h: &Path, prompt: &str) -> PathBuf {
    run_ok(server, h, &["-p", prompt]).await;
    let files = session_files(h);
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn header(id: &str) -> String {
    json!({"type": "session", "version": 3, "id": id,
           "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"})
    .to_string()
}

fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    json!({"type": "message", "id": id, "parentId": parent,
           "timestamp": "2026-01-01T00:00:01.000Z",
           "message": {"role": "user", "content": text, "timestamp": 1}})
    .to_string()
}

fn assistant(id: &str, parent: Option<&str>, text: &str) -> String {
    json!({"type": "message", "id": id, "parentId": parent,
           "timestamp": "2026-01-01T00:00:02.000Z",
           "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                       "api": "openai-completions", "provider": "ollama", "model": "q",
                       "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                 "totalTokens": 2,
                                 "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                          "cacheWrite": 0, "total": 0}},
                       "stopReason": "stop", "timestamp": 2}})
    .to_string()
}

/// Write a session file next to `beside`, named as pi names them, written last.
fn write_newest(beside: &Path, id: &str, text: &str) -> PathBuf {
    let path = beside
        .parent()
        .unwrap()
        .join(format!("2030-01-01T00-00-00-000Z_{id}.jsonl"));
    std::fs::write(&path, text).unwrap();
    // The older file a while back, so the new one is clearly the newest.
    std::fs::File::options()
        .write(true)
        .open(beside)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(100))
        .unwrap();
    path
}

const ID: &str = "019b0000-0000-7000-8000-00000000abcd";

#[tokio::test]
async fn two_pi_c_started_at_the_same_instant_never_write_competing_branches() {
    let server = answering("noted").await;
    let h = home();
    let file = first_session(&server, &h, "round zero").await;
    for round in 1..=12 {
        let a = format!("round {round} from a");
        let b = format!("round {round} from b");
        let args_a = ["-c", "-p", a.as_str()];
        let args_b = ["-c", "-p", b.as_str()];
        let (out_a, out_b) = tokio::join!(run(&server, &h, &args_a), run(&server, &h, &args_b));
        let text = std::fs::read_to_string(&file).unwrap();
        let mut winners = 0;
        for (out, prompt) in [(&out_a, &a), (&out_b, &b)] {
            if out.status.success() {
                winners += 1;
                assert!(
                    text.contains(prompt.as_str()),
                    "round {round}: {prompt} is saved"
                );
            } else {
                let err = stderr(out);
                assert!(err.contains("open in another pi"), "round {round}: {err}");
                assert!(
                    !text.contains(prompt.as_str()),
                    "a refused pi writes nothing"
                );
            }
        }
        assert!(winners >= 1, "round {round}: one of them goes on");
    }
    // One file, one chain: every entry continues from the one before it.
    assert_eq!(session_files(&h), std::slice::from_ref(&file));
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for pair in lines[1..].windows(2) {
        assert_eq!(
            pair[1]["parentId"], pair[0]["id"],
            "a competing branch: {}",
            pair[1]
        );
    }
    assert!(files_ending(&h, ".lock").is_empty(), "no lock is left");
}

#[tokio::test]
async fn a_newest_file_with_a_byte_order_mark_is_continued() {
    let server = answering("fine").await;
    let h = home();
    let file = first_session(&server, &h, "the first question").await;
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&file).unwrap());
    std::fs::write(&file, &bytes).unwrap();

    let out = run_ok(&server, &h, &["-c", "-p", "and the next one"]).await;
    assert!(!stderr(&out).contains("header"), "{}", stderr(&out));
    let sent = sent_texts(chats(&server).last().unwrap());
    assert_eq!(sent, ["the first question", "fine", "and the next one"]);
    assert_eq!(
        session_files(&h),
        std::slice::from_ref(&file),
        "no new session was started"
    );
    let text = std::fs::read(&file).unwrap();
    assert!(
        text.starts_with(b"\xEF\xBB\xBF"),
        "the file is only appended to"
    );
    assert!(String::from_utf8_lossy(&text).contains("and the next one"));
}

#[tokio::test]
async fn a_newest_file_without_a_valid_header_is_reported_with_the_ways_on() {
    let server = answering("fine").await;
    let h = home();
    let older = first_session(&server, &h, "the older question").await;
    let damaged = format!(
        "{}\n{}\n{}\n",
        r#"{"type":"sess"#,
        user("aaaaaaaa", None, "the damaged question"),
        assistant("bbbbbbbb", Some("aaaaaaaa"), "the damaged answer"),
    );
    let bad = write_newest(&older, ID, &damaged);
    let requests_before = chats(&server).len();

    let out = run(&server, &h, &["-c", "-p", "go on"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&bad.display().to_string()),
        "names the file: {err}"
    );
    assert!(err.contains("no valid session header"), "{err}");
    assert!(
        err.contains(&format!("--session {}", older.display())),
        "the next newest: {err}"
    );
    assert!(
        err.contains(&format!("--session {}", bad.display())) && err.contains("repaired copy"),
        "the repair: {err}"
    );
    assert!(err.contains("no -c"), "a new session: {err}");
    assert_eq!(chats(&server).len(), requests_before, "nothing was sent");
    assert_eq!(session_files(&h).len(), 2, "nothing was started");

    // The repair it names works: a copy goes on with the damaged file's conversation.
    let bad_text = bad.to_str().unwrap().to_string();
    run_ok(&server, &h, &["--session", &bad_text, "-p", "repaired?"]).await;
    let sent = sent_texts(chats(&server).last().unwrap());
    assert_eq!(
        sent,
        ["the damaged question", "the damaged answer", "repaired?"]
    );
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        damaged,
        "left as it was"
    );
    assert_eq!(session_files(&h).len(), 3, "the repaired copy");

    // A newest file with nothing readable in it offers no repair.
    std::fs::write(&bad, "not a session at all\n").unwrap();
    for f in session_files(&h) {
        if f != bad {
            std::fs::File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(100))
                .unwrap();
        }
    }
    let out = run(&server, &h, &["-c", "-p", "go on"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&bad.display().to_string()), "{err}");
    assert!(!err.contains("repaired copy"), "{err}");
}

/// Continue the newest file holding `text` and return what the model was sent and the
/// warnings pi printed.
async fn continue_damaged(text: &str, reply: &'static str) -> (Vec<String>, String) {
    let server = answering(reply).await;
    let h = home();
    let older = first_session(&server, &h, "an older session").await;
    write_newest(&older, ID, text);
    let out = run_ok(&server, &h, &["-c", "-p", "what now?"]).await;
    let sent = sent_texts(chats(&server).last().unwrap());
    (sent, stderr(&out))
}

#[tokio::test]
async fn a_missing_middle_entry_keeps_the_conversation_before_it() {
    // The entry `lostlost` between the two exchanges is gone.
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n",
        header(ID),
        user("u1u1u1u1", None, "alpha question"),
        assistant("a1a1a1a1", Some("u1u1u1u1"), "alpha answer"),
        user("u2u2u2u2", Some("lostlost"), "beta question"),
        assistant("a2a2a2a2", Some("u2u2u2u2"), "beta answer"),
    );
    let (sent, err) = continue_damaged(&text, "ok").await;
    assert_eq!(
        sent,
        [
            "alpha question",
            "alpha answer",
            "beta question",
            "beta answer",
            "what now?"
        ]
    );
    assert!(
        err.contains("line 4") && err.contains("lostlost") && err.contains("not in the file"),
        "{err}"
    );
}

#[tokio::test]
async fn a_message_of_an_unknown_role_is_reported_and_shown_to_the_model() {
    let odd = json!({"type": "message", "id": "o1o1o1o1", "parentId": "a1a1a1a1",
                     "timestamp": "2026-01-01T00:00:03.000Z",
                     "message": {"role": "observer", "content": "the build is green",
                                 "timestamp": 3}});
    let text = format!(
        "{}\n{}\n{}\n{odd}\n{}\n{}\n",
        header(ID),
        user("u1u1u1u1", None, "alpha question"),
        assistant("a1a1a1a1", Some("u1u1u1u1"), "alpha answer"),
        user("u2u2u2u2", Some("o1o1o1o1"), "beta question"),
        assistant("a2a2a2a2", Some("u2u2u2u2"), "beta answer"),
    );
    let (sent, err) = continue_damaged(&text, "ok").await;
    assert_eq!(sent.len(), 6, "{sent:?}");
    assert_eq!(sent[..2], ["alpha question", "alpha answer"]);
    assert!(
        sent[2].contains("`observer`") && sent[2].contains("the build is green"),
        "{sent:?}"
    );
    assert_eq!(sent[3..], ["beta question", "beta answer", "what now?"]);
    assert!(
        err.contains("line 4") && err.contains("`observer`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_loop_of_parents_is_reported_and_read_once_in_file_order() {
    // u1 → a2 → u2 → a1 → u1: every entry is its own ancestor.
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n",
        header(ID),
        user("u1u1u1u1", Some("a2a2a2a2"), "alpha question"),
        assistant("a1a1a1a1", Some("u1u1u1u1"), "alpha answer"),
        user("u2u2u2u2", Some("a1a1a1a1"), "beta question"),
        assistant("a2a2a2a2", Some("u2u2u2u2"), "beta answer"),
    );
    let (sent, err) = continue_damaged(&text, "ok").await;
    assert_eq!(
        sent,
        [
            "alpha question",
            "alpha answer",
            "beta question",
            "beta answer",
            "what now?"
        ]
    );
    assert!(
        err.contains("line 2") && err.contains("loop back") && err.contains("u1u1u1u1"),
        "{err}"
    );
}

#[tokio::test]
async fn the_partial_text_of_a_broken_reply_never_goes_back_to_the_model() {
    // The first answer breaks after some text; every later one is whole.
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    let server = TestServer::responding(Arc::new(move |r| {
        if r.path == "/api/tags" {
            return tags("q");
        }
        if count.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::sse(vec![
                chunk(json!({"content": "half a thou"}), None),
                Chunk::Disconnect,
            ])
        } else {
            text_reply("whole")
        }
    }))
    .await;
    let h = home();
    std::fs::create_dir_all(h.join("agent")).unwrap();
    // No retry: the broken reply is the run's last word.
    std::fs::write(h.join("agent/config.toml"), "[retry]\nmax_retries = 0\n").unwrap();

    // The next prompt of the same run of pi...
    run(&server, &h, &["-p", "one", "two"]).await;
    let bodies = chats(&server);
    assert_eq!(bodies.len(), 2);
    let second = sent_texts(&bodies[1]);
    assert_eq!(second, ["one", "two"], "the broken reply stays out");
    // ...and after -c.
    run_ok(&server, &h, &["-c", "-p", "three"]).await;
    let third = sent_texts(chats(&server).last().unwrap());
    assert_eq!(third, ["one", "two", "whole", "three"]);
    assert!(
        !chats(&server)
            .iter()
            .any(|b| b.to_string().contains("half a thou"))
    );
    // The file still holds it, as it was shown.
    let text = std::fs::read_to_string(&session_files(&h)[0]).unwrap();
    assert!(text.contains("half a thou"));
}

/// `pi -p hello` with files limited to `bytes` bytes (`ulimit -f`), failing writes the way a
/// full disk does.
async fn with_file_limit(server: &TestServer, h: &Path, bytes: u64) -> Output {
    let mut cmd = pi(server, h);
    cmd.args(["-p", "hello"]);
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().await.unwrap()
}

#[tokio::test]
async fn a_session_folder_full_from_the_start_gets_nothing_sent_and_keeps_nothing() {
    let server = answering("never").await;
    let h = home();
    // One byte fits (the check at start passes), a session's first line does not.
    let out = with_file_limit(&server, &h, 1).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("nothing was sent to the model and nothing was saved"),
        "{err}"
    );
    assert!(err.contains("File too large"), "{err}");
    assert!(!err.contains("To resume"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(chats(&server).is_empty(), "no model was asked");
    assert!(session_files(&h).is_empty(), "no empty session file");
    assert!(files_ending(&h, ".lock").is_empty(), "no empty lock");

    // Not a byte fits: pi stops at the start.
    let out = with_file_limit(&server, &h, 0).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("sessions cannot be saved there"), "{err}");
    assert!(chats(&server).is_empty());
    assert!(
        files_ending(&h, "").iter().all(|f| f.is_dir()),
        "nothing left"
    );
}

#[tokio::test]
async fn resume_without_a_terminal_lists_the_sessions() {
    let server = answering("ok").await;
    let h = home();
    let first = first_session(&server, &h, "alpha topic").await;
    std::fs::File::options()
        .write(true)
        .open(&first)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(100))
        .unwrap();
    run_ok(&server, &h, &["-p", "beta topic"]).await;
    let asked = chats(&server).len();

    let out = run_ok(&server, &h, &["-r", "-p"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("beta topic"), "newest first: {text}");
    assert!(lines[1].contains("alpha topic"), "{text}");
    let id = support::session_id_of(&first);
    let shown = lines[1].split_whitespace().next().unwrap();
    assert!(
        shown.len() >= 8 && id.starts_with(shown),
        "the start of the id that tells it apart, for --session: {text}"
    );
    assert!(lines[1].contains("2 msgs"), "{text}");

    // With a prompt there is nothing to pick with: the list, the way on, nothing sent.
    let out = run(&server, &h, &["-r", "-p", "a question"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    assert!(stderr(&out).contains("--session"), "{}", stderr(&out));
    assert_eq!(chats(&server).len(), asked);
}

/// Three sessions of the home folder: two started in the same minute (their ids share the
/// first 8 characters), one named; each with one user message. Returns their paths.
fn same_minute_sessions(h: &Path) -> [PathBuf; 3] {
    let dir = pi::session::SessionPaths::for_cwd(&h.join("agent"), h).dir;
    std::fs::create_dir_all(&dir).unwrap();
    let write = |stamp: &str, id: &str, text: &str, name: Option<&str>| {
        let path = dir.join(format!("{stamp}_{id}.jsonl"));
        let mut lines = vec![
            json!({"type": "session", "version": 3, "id": id,
                   "timestamp": "2026-01-01T10:00:00.000Z", "cwd": h})
            .to_string(),
            user("a0000001", None, text),
        ];
        if let Some(name) = name {
            lines.push(
                json!({"type": "session_info", "id": "a0000002", "parentId": "a0000001",
                       "timestamp": "2026-01-01T10:00:02.000Z", "name": name})
                .to_string(),
            );
        }
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    [
        write(
            "2026-01-01T10-00-00-000Z",
            "01a23c61-5150-7635-b3fd-ab0404bb9f84",
            "first of the minute",
            None,
        ),
        write(
            "2026-01-01T10-00-01-000Z",
            "01a23c61-5162-7000-8000-000000000001",
            "second of the minute",
            None,
        ),
        write(
            "2026-01-01T10-05-00-000Z",
            "01a23c70-0000-7000-8000-000000000002",
            "a later one",
            Some("release notes"),
        ),
    ]
}

#[tokio::test]
async fn listed_ids_tell_sessions_of_the_same_minute_apart() {
    let server = answering("ok").await;
    let h = home();
    same_minute_sessions(&h);
    let out = run_ok(&server, &h, &["-r", "-p"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut shown: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    shown.sort();
    assert_eq!(
        shown,
        ["01a23c61-515", "01a23c61-516", "01a23c70"],
        "{text}"
    );
}

#[tokio::test]
async fn session_prefixes_open_one_refuse_several_and_name_what_is_missing() {
    let server = answering("ok").await;
    let h = home();
    let [first, second, named] = same_minute_sessions(&h);
    let grew = |p: &Path| std::fs::read_to_string(p).unwrap().contains("\"ok\"");

    // Shared by two: refused, both listed with their distinguishing id, date and message.
    let out = run(&server, &h, &["--session", "01a23c61", "-p", "hi"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("`01a23c61` matches 2 sessions"), "{err}");
    for part in [
        "01a23c61-515",
        "01a23c61-516",
        "2026-01-01 10:00",
        "first of the minute",
        "second of the minute",
    ] {
        assert!(err.contains(part), "{part} in {err}");
    }
    assert!(chats(&server).is_empty(), "nothing was sent");

    // Unknown: a clear error, nothing sent, no new file.
    let out = run(&server, &h, &["--session", "deadbeef", "-p", "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no session matches `deadbeef`"),
        "{}",
        stderr(&out)
    );
    assert!(chats(&server).is_empty());
    assert_eq!(session_files(&h).len(), 3);

    // The listed start of an id (with or without its dash), a file name's start, a name.
    run_ok(&server, &h, &["--session", "01a23c61-516", "-p", "hi"]).await;
    assert!(grew(&second) && !grew(&first) && !grew(&named));
    run_ok(&server, &h, &["--session", "01A23C615150", "-p", "hi"]).await;
    assert!(grew(&first));
    run_ok(&server, &h, &["--session", "2026-01-01T10-05", "-p", "hi"]).await;
    assert!(grew(&named));
    let before = std::fs::read_to_string(&second).unwrap().len();
    run_ok(&server, &h, &["--session", "Release Notes", "-p", "hi"]).await;
    assert_eq!(std::fs::read_to_string(&second).unwrap().len(), before);
    assert_eq!(
        std::fs::read_to_string(&named)
            .unwrap()
            .matches("\"ok\"")
            .count(),
        2,
        "the named session went on"
    );
    // A whole file name, no folder: that session, not a new file in the working folder.
    let name = first.file_name().unwrap().to_str().unwrap().to_string();
    run_ok(&server, &h, &["--session", &name, "-p", "hi"]).await;
    assert!(!h.join(&name).exists());
    assert_eq!(session_files(&h).len(), 3);
}

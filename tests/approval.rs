//! Approval modes end to end: the real binary against the scripted local server.
//!
//! In print mode `ask` refuses what no rule allows (there is nobody to ask) and the refusal
//! reaches the model as the call's error result; `read-only` refuses calls that can change
//! things but runs `read`; an `allow` rule in the person's config lets a command through, and a
//! project's config cannot loosen the mode. In the terminal, `ask` shows the command, `y` runs
//! it, `n` with a typed reason refuses it and the reason reaches the model, and Alt+A cycles
//! the mode in the footer. Ctrl+S holds a run back before its model call until pressed again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::pty::{Pty, temp_home};
use support::server::{TestServer, call_reply, tags, text_reply};

/// The tool result the second request carried back to the model.
fn tool_result(server: &TestServer, request: usize) -> String {
    let body = &server.requests()[request].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// `pi` in print mode in `home/project`, talking to `server`.
async fn print_run(
    home: &std::path::Path,
    server: &TestServer,
    args: &[&str],
) -> std::process::Output {
    support::run_pi(home, &[("OLLAMA_HOST", &server.url)], args).await
}

#[tokio::test]
async fn print_mode_ask_refuses_what_no_rule_allows_and_the_model_is_told() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply(
            "c1",
            "bash",
            &json!({"command": "touch made.txt"}).to_string(),
        ),
        text_reply("ok"),
        tags("qwen3:8b"),
        call_reply(
            "c2",
            "bash",
            &json!({"command": "git init -q && touch ruled.txt"}).to_string(),
        ),
        text_reply("ok"),
    ])
    .await;
    let home = support::binary_home("approval-print");
    let project = home.join("project");
    let out = print_run(&home, &server, &["-p", "--approval", "ask", "make a file"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!project.join("made.txt").exists());
    let result = tool_result(&server, 2);
    assert!(result.contains("without a person to ask"), "{result}");

    // A rule in the person's config allows these commands; the project cannot switch asking
    // off, and its own allow rule is ignored with a warning.
    std::fs::write(
        home.join("agent/config.toml"),
        "[approval]\nmode = \"ask\"\nallow = [\"bash:git init*\", \"bash:touch *\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(project.join(".pi")).unwrap();
    std::fs::write(
        project.join(".pi/config.toml"),
        "[approval]\nmode = \"auto\"\nallow = [\"bash\"]\n",
    )
    .unwrap();
    let out = print_run(&home, &server, &["-p", "make another"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        project.join("ruled.txt").exists(),
        "the rule allowed both commands"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("looser than your own"), "{stderr}");
    assert!(
        stderr.contains("approval.allow rules are ignored"),
        "{stderr}"
    );
}

#[tokio::test]
async fn print_mode_read_only_refuses_changes_but_reads() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply(
            "c1",
            "write",
            &json!({"path": "new.txt", "content": "x"}).to_string(),
        ),
        call_reply("c2", "read", &json!({"path": "notes.txt"}).to_string()),
        text_reply("done"),
    ])
    .await;
    let home = support::binary_home("approval-ro");
    std::fs::write(home.join("project/notes.txt"), "the notes").unwrap();
    let out = print_run(&home, &server, &["-p", "--approval", "read-only", "go"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!home.join("project/new.txt").exists());
    assert!(tool_result(&server, 2).contains("read-only mode"));
    assert!(tool_result(&server, 3).contains("the notes"));
}

#[test]
fn the_terminal_asks_and_y_runs_n_refuses_with_a_reason() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply(
            "c1",
            "bash",
            &json!({"command": "touch made.txt"}).to_string(),
        ),
        call_reply(
            "c2",
            "write",
            &json!({"path": "plan.md", "content": "step one\n"}).to_string(),
        ),
        text_reply("All done."),
    ]));
    let home = temp_home("approval");
    let mut pi = Pty::spawn(&home, &server, &["--approval", "ask"]);
    pi.wait_for("approval: ask");
    pi.send(b"make the files\r");
    let s = pi.wait_for("Run this command?");
    assert!(s.contains("$ touch made.txt"), "{s}");
    assert!(
        !home.join("made.txt").exists(),
        "nothing ran before the answer"
    );
    pi.send(b"y");
    let s = pi.wait_for("Write plan.md?");
    assert!(s.contains("+step one"), "the diff is shown: {s}");
    assert!(home.join("made.txt").exists());
    pi.send(b"n");
    pi.wait_for("Why not");
    pi.send(b"use docs/ instead\r");
    pi.wait_for("All done.");
    assert!(!home.join("plan.md").exists());
    let result = tool_result(&server, 3);
    assert!(result.contains("use docs/ instead"), "{result}");
    // Alt+A: ask → read-only.
    pi.send(b"\x1ba");
    pi.wait_for("approval: read-only");
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn ctrl_s_pauses_before_the_model_call_and_resumes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("Going on now."),
    ]));
    let home = temp_home("pause");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"\x13"); // Ctrl+S
    pi.wait_for("paused 0s");
    pi.send(b"hello\r");
    let s = pi.wait_for("⏸ Paused");
    assert!(s.contains("ctrl+s goes on"), "{s}");
    assert_eq!(server.requests().len(), 1, "only the model probe so far");
    pi.send(b"\x13");
    let s = pi.wait_for("Going on now.");
    assert!(s.contains("Going on after a pause of"), "{s}");
    assert!(
        !s.contains("paused "),
        "the footer no longer says paused: {s}"
    );
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

/// `a` on a shell's or an interpreter's inline code remembers that exact command, never the
/// program; `a` on a script remembers the program and that script; a command padded with
/// spaces shows what the padding hides.
#[test]
fn a_never_widens_and_the_question_hides_nothing() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let bash = |id: &str, command: &str| {
        call_reply(id, "bash", &json!({ "command": command }).to_string())
    };
    let padded = format!("ls{}; touch X", " ".repeat(400));
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        bash("c1", "bash -c 'echo tests ok'"),
        bash("c2", "bash -c 'echo PWNED > pwned.txt; rm -f hello.txt'"),
        bash("c3", "bash -c 'echo tests ok'"),
        bash("c4", "python3 x.py"),
        bash("c5", "python3 -c 'open(\"py.txt\", \"w\")'"),
        bash("c6", &padded),
        text_reply("All done."),
    ]));
    let home = temp_home("approval-widen");
    std::fs::write(home.join("hello.txt"), "keep me").unwrap();
    let mut pi = Pty::spawn(&home, &server, &["--approval", "ask"]);
    pi.wait_for("approval: ask");
    pi.send(b"run the tests\r");
    let asked = |pi: &Pty, what: &str| {
        pi.wait_until(what, |s| {
            s.contains("Run this command?") && s.contains(what)
        })
    };
    let s = asked(&pi, "echo tests ok");
    assert!(
        s.contains("a allow this exact command for the session"),
        "{s}"
    );
    pi.send(b"a");
    // The same shell with other code is asked about again.
    asked(&pi, "echo PWNED");
    pi.send(b"n");
    pi.wait_for("Why not");
    pi.send(b"\r");
    // The exact command runs unasked; the next question is the script.
    let s = asked(&pi, "python3 x.py");
    assert!(
        s.contains("a allow commands starting with `python3 x.py` for the session"),
        "{s}"
    );
    assert!(tool_result(&server, 3).contains("did not allow"));
    assert!(tool_result(&server, 4).contains("tests ok"));
    pi.send(b"a");
    // Remembering the script does not cover inline code.
    asked(&pi, "python3 -c");
    pi.send(b"n");
    pi.wait_for("Why not");
    pi.send(b"\r");
    let s = asked(&pi, "; touch X");
    assert!(s.contains("$ ls␣×400; touch X"), "{s}");
    pi.send(b"n");
    pi.wait_for("Why not");
    pi.send(b"\r");
    pi.wait_for("All done.");
    assert!(!home.join("pwned.txt").exists());
    assert!(!home.join("py.txt").exists());
    assert!(!home.join("X").exists());
    assert!(home.join("hello.txt").exists());
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}

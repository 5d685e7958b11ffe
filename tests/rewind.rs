//! Checkpoints and rewind through the real binary: what `bash`, `write` and `edit` change in
//! the working folder is put back byte for byte (over RPC, after a `kill -9` and a resume, and
//! from the terminal's `/rewind`), git's own state is never touched, and a file the person
//! changed since is kept unless they say otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::pty::Pty;
use support::rpc::Client;
use support::server::{Reply, TestServer, call_reply, tags, text_reply};

/// What a `bash` call does: append, chmod, rename, delete, create a file and a folder.
const SHELL_WORK: &str = "printf 'more\\n' >> a.txt && chmod +x a.txt && mv b.txt b2.txt \
                          && rm gone.txt && printf 'new\\n' > n.txt && mkdir -p d2 \
                          && printf '\\000\\001' > d2/y.bin";

fn bash(id: &str, command: &str) -> Reply {
    call_reply(id, "bash", &json!({ "command": command }).to_string())
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The project's files (not `.git`) with their bytes and modes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap() == ".git" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap(), mode));
            }
        }
    }
    out.sort();
    out
}

/// A git repository with a commit, a second branch, a stash and a staged change.
fn repository(dir: &Path) -> String {
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.join("b.txt"), "bravo\n").unwrap();
    std::fs::write(dir.join("gone.txt"), "to be deleted\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "one"]);
    git(dir, &["branch", "feature"]);
    std::fs::write(dir.join("a.txt"), "stashed\n").unwrap();
    git(dir, &["stash", "-q"]);
    std::fs::write(dir.join("staged.txt"), "staged\n").unwrap();
    git(dir, &["add", "staged.txt"]);
    git_state(dir)
}

fn git_state(dir: &Path) -> String {
    format!(
        "{}{}{}{}{:?}",
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["branch", "--list"]),
        git(dir, &["stash", "list"]),
        git(dir, &["diff", "--cached", "--stat"]),
        std::fs::read(dir.join(".git/index")).unwrap(),
    )
}

async fn prompt_and_wait(c: &mut Client, text: &str) {
    c.send(json!({"id": "p", "type": "prompt", "message": text}))
        .await;
    c.until("agent_end", |v| v["type"] == "agent_end").await;
    c.seen.clear();
}

async fn first_prompt_entry(c: &mut Client) -> Value {
    c.send(json!({"id": "f", "type": "get_fork_messages"}))
        .await;
    c.response("f").await["data"]["messages"][0]["entryId"].clone()
}

#[tokio::test]
async fn rewind_puts_back_what_bash_write_and_edit_changed_and_leaves_git_alone() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash("c1", SHELL_WORK),
        call_reply(
            "c2",
            "write",
            &json!({"path": "nw/deep/w.txt", "content": "written\n"}).to_string(),
        ),
        call_reply(
            "c3",
            "edit",
            &json!({"path": "b2.txt", "oldText": "bravo", "newText": "BRAVO"}).to_string(),
        ),
        text_reply("All done."),
        tags("qwen3:8b"),
    ])
    .await;
    let h = support::binary_home("rewind-rpc");
    let project = h.join("project");
    let git_before = repository(&project);
    let before = files(&project);
    let mut c = Client::start(&server, &h);
    prompt_and_wait(&mut c, "change things").await;
    assert_eq!(
        std::fs::read_to_string(project.join("b2.txt")).unwrap(),
        "BRAVO\n"
    );
    assert!(!project.join("gone.txt").exists());
    let entry = first_prompt_entry(&mut c).await;

    c.send(json!({"id": "d", "type": "rewind", "entryId": entry, "dryRun": true}))
        .await;
    let r = c.response("d").await;
    let planned: Vec<(String, String, String)> = r["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = f["path"].as_str().unwrap();
            (
                p.rsplit('/').next().unwrap().to_string(),
                f["action"].as_str().unwrap().to_string(),
                f["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let ready = |name: &str, action: &str| (name.into(), action.into(), "ready".into());
    assert_eq!(
        planned,
        [
            ready("a.txt", "restore"),
            ready("b.txt", "restore"),
            ready("b2.txt", "delete"),
            ready("y.bin", "delete"),
            ready("gone.txt", "restore"),
            ready("n.txt", "delete"),
            ready("w.txt", "delete"),
        ],
        "{r}"
    );
    // A dry run changes nothing.
    assert!(project.join("n.txt").exists());

    c.send(json!({"id": "r", "type": "rewind", "entryId": entry}))
        .await;
    let r = c.response("r").await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["restored"].as_array().unwrap().len(), 7, "{r}");
    assert_eq!(files(&project), before);
    // The folders made for a new file go with it: the write's always, the command's where
    // the file system keeps birth times (they tell which folders the command made).
    assert!(!project.join("nw").exists());
    if std::fs::metadata(&project)
        .and_then(|m| m.created())
        .is_ok()
    {
        assert!(!project.join("d2").exists());
    }
    assert_eq!(git_state(&project), git_before);
    // The conversation went back too: nothing is left of it.
    c.send(json!({"id": "m", "type": "get_messages"})).await;
    let r = c.response("m").await;
    assert_eq!(r["data"]["messages"].as_array().unwrap().len(), 0, "{r}");

    // The new position is saved at once: resumed before anything else is said, pi opens where
    // the files are, and going before that prompt again has nothing to put back.
    c.child.start_kill().unwrap();
    c.child.wait().await.unwrap();
    let mut c = Client::start_with(&server, &h, &["-c"], std::process::Stdio::null());
    c.send(json!({"id": "m2", "type": "get_messages"})).await;
    let r = c.response("m2").await;
    assert_eq!(r["data"]["messages"].as_array().unwrap().len(), 0, "{r}");
    c.send(json!({"id": "d2", "type": "rewind", "entryId": entry, "dryRun": true}))
        .await;
    let r = c.response("d2").await;
    assert_eq!(r["data"]["files"], json!([]), "{r}");
}

#[tokio::test]
async fn a_file_the_person_changed_is_kept_unless_forced_and_code_only_can_be_undone() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash(
            "c1",
            "printf 'one\\n' > mine.txt && printf 'two\\n' > theirs.txt",
        ),
        text_reply("Made them."),
    ])
    .await;
    let h = support::binary_home("rewind-kept");
    let project = h.join("project");
    let mut c = Client::start(&server, &h);
    prompt_and_wait(&mut c, "make two files").await;
    std::fs::write(project.join("mine.txt"), "my own edit\n").unwrap();
    let entry = first_prompt_entry(&mut c).await;

    c.send(json!({"id": "d", "type": "rewind", "entryId": entry, "dryRun": true}))
        .await;
    let r = c.response("d").await;
    let states: Vec<&str> = r["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["changed_since", "ready"], "{r}");

    // Code only: the conversation stays, the person's file too.
    c.send(json!({"id": "r", "type": "rewind", "entryId": entry, "mode": "code"}))
        .await;
    let r = c.response("r").await;
    assert_eq!(r["data"]["kept"].as_array().unwrap().len(), 1, "{r}");
    assert!(!project.join("theirs.txt").exists());
    assert_eq!(
        std::fs::read_to_string(project.join("mine.txt")).unwrap(),
        "my own edit\n"
    );
    c.send(json!({"id": "m", "type": "get_messages"})).await;
    assert_eq!(
        c.response("m").await["data"]["messages"]
            .as_array()
            .unwrap()
            .len(),
        4
    );

    // The restore is itself recorded: going back to before it makes the file again.
    c.send(json!({"id": "t", "type": "get_state"})).await;
    let file = c.response("t").await["data"]["sessionFile"]
        .as_str()
        .unwrap()
        .to_string();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"customType\":\"pi.checkpoint\""), "{text}");
    let answer = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"]["role"] == "assistant" && v["message"]["stopReason"] == "stop")
        .unwrap()["id"]
        .clone();
    c.send(json!({"id": "u", "type": "rewind", "entryId": answer, "mode": "code"}))
        .await;
    let r = c.response("u").await;
    assert_eq!(r["data"]["restored"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(
        std::fs::read_to_string(project.join("theirs.txt")).unwrap(),
        "two\n"
    );

    // Forced: the person's change is overwritten too.
    c.send(json!({"id": "f2", "type": "rewind", "entryId": entry, "mode": "code", "force": true}))
        .await;
    let r = c.response("f2").await;
    assert_eq!(r["success"], true, "{r}");
    assert!(!project.join("mine.txt").exists());
}

#[tokio::test]
async fn rewind_works_after_kill_9_and_resume() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash(
            "c1",
            "printf 'changed\\n' > keep.txt && printf 'x\\n' > extra.txt",
        ),
        text_reply("Changed."),
        tags("qwen3:8b"),
    ])
    .await;
    let h = support::binary_home("rewind-kill");
    let project = h.join("project");
    std::fs::write(project.join("keep.txt"), "original\n").unwrap();
    let mut c = Client::start(&server, &h);
    prompt_and_wait(&mut c, "change keep.txt").await;
    assert_eq!(
        std::fs::read_to_string(project.join("keep.txt")).unwrap(),
        "changed\n"
    );
    c.child.start_kill().unwrap();
    c.child.wait().await.unwrap();

    let mut c = Client::start_with(&server, &h, &["-c"], std::process::Stdio::null());
    let entry = first_prompt_entry(&mut c).await;
    c.send(json!({"id": "r", "type": "rewind", "entryId": entry}))
        .await;
    let r = c.response("r").await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        std::fs::read_to_string(project.join("keep.txt")).unwrap(),
        "original\n"
    );
    assert!(!project.join("extra.txt").exists());
}

#[test]
fn the_terminal_shows_the_files_and_rewinds_them_with_enter() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        bash(
            "c1",
            "printf 'new body\\n' > notes.txt && mkdir -p drafts/old && printf 'x\\n' > drafts/old/n.txt",
        ),
        text_reply("Rewrote the notes."),
    ]));
    let home = support::pty::temp_home("rewind");
    std::fs::write(home.join("notes.txt"), "old body\n").unwrap();
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"rewrite the notes\r");
    pi.wait_for("Rewrote the notes.");
    pi.send(b"/rewind\r");
    pi.wait_for("Rewind to before:");
    pi.send(b"\r");
    let s = pi.wait_for("Rewind: 2 files the agent changed");
    assert!(
        s.contains("notes.txt")
            && s.contains("n.txt")
            && s.contains("Restore code and conversation"),
        "{s}"
    );
    pi.send(b"d");
    let s = pi.wait_for("What the files become");
    assert!(s.contains("-new body") && s.contains("+old body"), "{s}");
    pi.send(b"d");
    pi.wait_for("Rewind: 2 files");
    pi.send(b"\r");
    let s = pi.wait_for("Files put back: 2");
    assert!(
        s.contains("rewrite the notes"),
        "the prompt is back in the editor: {s}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("notes.txt")).unwrap(),
        "old body\n"
    );
    // The folders the command made went with its file.
    if std::fs::metadata(&home).and_then(|m| m.created()).is_ok() {
        assert!(!home.join("drafts").exists());
    }
    pi.send(b"\x03"); // Ctrl+C clears the editor
    assert!(pi.quit().success());
}

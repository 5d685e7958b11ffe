//! The sandbox (`--sandbox`, `sandbox = "…"`): `bash` under Landlock for real, `write` and
//! `edit` refusing paths outside the allowed folders, the fallback where Landlock is missing,
//! and the flag and config through the real binary.
//!
//! Every folder here lives under Cargo's per-target temp folder, which is neither the
//! workspace nor the system temp folder, so "outside" really is outside. The tests that need
//! Landlock skip (saying why) on a kernel without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi::agent::protocol::tool::{
    AgentTool, ProgressSink, ToolCallContext, ToolError, ToolInvocation, ToolOutput,
};
use pi::agent::protocol::types::ContentBlock;
use pi::tools::sandbox::{Fallback, Sandbox, SandboxMode, Support, landlock};
use pi::tools::{self, ToolContext};
use serde_json::{Value, json};
use support::server::{TestServer, call_reply, text_reply};
use tokio_util::sync::CancellationToken;

/// A fresh folder with `ws/` (the working directory) and `outside/` in it.
struct Place {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
}

/// Where test folders go: outside the temp folder the sandbox allows, wherever the checkout
/// lives (a clone under /tmp puts cargo's own test folder there too).
fn test_root() -> PathBuf {
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(PathBuf::from),
        Some(PathBuf::from("/var/tmp")),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|c| c.canonicalize().ok())
        .find(|c| {
            !c.starts_with(&temp)
                && tempfile::Builder::new()
                    .prefix(".pi-probe-")
                    .tempdir_in(c)
                    .is_ok()
        })
        .expect("a writable folder outside the temp folder for the sandbox tests")
}

fn place() -> Place {
    let dir = tempfile::Builder::new()
        .prefix("pi-sandbox-")
        .tempdir_in(test_root())
        .unwrap();
    let base = dir.path().canonicalize().unwrap();
    assert!(
        !base.starts_with(std::env::temp_dir().canonicalize().unwrap()),
        "the test folder must not be under the temp folder the sandbox allows"
    );
    let ws = base.join("ws");
    let outside = base.join("outside");
    fs::create_dir(&ws).unwrap();
    fs::create_dir(&outside).unwrap();
    Place {
        _dir: dir,
        base,
        ws,
        outside,
    }
}

/// Whether Landlock tests can run; prints why not when they cannot.
fn landlock_here(test: &str) -> bool {
    match landlock::probe() {
        Support::Landlock { .. } => true,
        Support::Missing(why) => {
            eprintln!("{test}: skipped, Landlock is not available here: {why}");
            false
        }
    }
}

fn tool_in(name: &str, ws: &Path, sandbox: Sandbox) -> Arc<dyn AgentTool> {
    tools::build_with(
        &[name],
        Arc::new(ToolContext::new(ws).with_sandbox(sandbox)),
    )
    .unwrap()
    .pop()
    .unwrap()
}

/// The text of a result and whether it is an error.
async fn run(tool: &Arc<dyn AgentTool>, args: Value) -> (String, bool) {
    let call = ToolInvocation {
        tool_call_id: "call_1".into(),
        args,
        cancel: CancellationToken::new(),
        steering: CancellationToken::new(),
        progress: ProgressSink::discard(),
        context: ToolCallContext {
            batch_id: "b".into(),
            index: 0,
            total: 1,
            tool_calls: vec![("call_1".to_string(), "t".to_string())].into(),
        },
    };
    let result: Result<ToolOutput, ToolError> = tool.execute(call).await;
    match result {
        Ok(o) => (
            o.content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<String>(),
            o.is_error,
        ),
        Err(e) => (e.0, true),
    }
}

/// The kernel's refusal, whichever layer gave it: the read-only mount (namespaces) or
/// Landlock.
fn refused(text: &str) -> bool {
    [
        "Read-only file system",
        "Permission denied",
        "Operation not permitted",
    ]
    .iter()
    .any(|m| text.contains(m))
}

async fn bash(tool: &Arc<dyn AgentTool>, command: &str) -> (String, bool) {
    run(tool, json!({ "command": command })).await
}

#[tokio::test]
async fn workspace_write_bash_writes_inside_and_is_denied_outside() {
    if !landlock_here("workspace_write_bash_writes_inside_and_is_denied_outside") {
        return;
    }
    let p = place();
    fs::write(p.outside.join("keep.txt"), "precious\n").unwrap();
    let sandbox = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &p.ws);
    let sh = tool_in("bash", &p.ws, sandbox);
    // The model is told, in the description the system prompt lists.
    assert!(
        sh.description()
            .contains(&format!("may write only under {}", p.ws.display())),
        "{}",
        sh.description()
    );

    let (text, is_error) = bash(
        &sh,
        "echo in > inside.txt && mkdir -p sub && echo deep > sub/x && echo quiet > /dev/null \
         && cat inside.txt",
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(fs::read_to_string(p.ws.join("inside.txt")).unwrap(), "in\n");
    assert!(p.ws.join("sub/x").is_file());
    // Moving and renaming inside the workspace work (git does both all the time).
    let (text, is_error) = bash(
        &sh,
        "mv sub/x sub/y && mkdir other && mv sub/y other/z && rm -r sub && \
         if command -v git >/dev/null; then git init -q repo && cd repo && echo a > a && \
         git add a && git -c user.name=t -c user.email=t@t commit -qm one; fi",
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(p.ws.join("other/z").is_file());

    // The temp folder is allowed too.
    let tmp_file = std::env::temp_dir().join(format!("pi-sandbox-test-{}", std::process::id()));
    let (text, is_error) = bash(&sh, &format!("echo t > {}", tmp_file.display())).await;
    assert!(!is_error, "{text}");
    assert!(tmp_file.is_file());
    fs::remove_file(&tmp_file).unwrap();

    // Outside: creating, truncating, removing and moving out are all denied.
    let out = p.outside.display();
    for command in [
        format!("echo out > {out}/new.txt"),
        format!(": > {out}/keep.txt"),
        format!("truncate -s 0 {out}/keep.txt"),
        format!("rm {out}/keep.txt"),
        format!("mv {out}/keep.txt ./stolen.txt"),
        format!("mkdir {out}/dir"),
        format!("ln -s /etc/hosts {out}/link"),
    ] {
        let (text, is_error) = bash(&sh, &command).await;
        assert!(is_error, "`{command}` should fail: {text}");
        assert!(refused(&text), "`{command}`: {text}");
    }
    assert_eq!(
        fs::read_to_string(p.outside.join("keep.txt")).unwrap(),
        "precious\n"
    );
    // (`mv` falls back to copy-and-remove: the copy in the workspace may exist, the original
    // stays.)
    assert_eq!(fs::read_dir(&p.outside).unwrap().count(), 1);

    // Reading and running programs outside are still fine.
    let (text, is_error) = bash(
        &sh,
        &format!("cat {out}/keep.txt && ls /usr/bin >/dev/null"),
    )
    .await;
    assert!(!is_error && text.contains("precious"), "{text}");

    // pi itself was never restricted.
    fs::write(p.outside.join("by-pi.txt"), "free").unwrap();
}

#[tokio::test]
async fn read_only_bash_cannot_write_even_in_the_workspace() {
    if !landlock_here("read_only_bash_cannot_write_even_in_the_workspace") {
        return;
    }
    let p = place();
    fs::write(p.ws.join("a.txt"), "alpha\n").unwrap();
    let sandbox = Sandbox::new(SandboxMode::ReadOnly, Fallback::Refuse, &p.ws);
    let sh = tool_in("bash", &p.ws, sandbox);
    let (text, is_error) = bash(&sh, "echo b > b.txt").await;
    assert!(is_error && refused(&text), "{text}");
    assert!(!p.ws.join("b.txt").exists());
    let tmp_file = std::env::temp_dir().join(format!("pi-sandbox-ro-{}", std::process::id()));
    let (_, is_error) = bash(&sh, &format!("echo t > {}", tmp_file.display())).await;
    assert!(is_error, "read-only allows no temp files either");
    assert!(!tmp_file.exists());
    let (text, is_error) = bash(
        &sh,
        "cat a.txt; echo gone > /dev/null; git --version >/dev/null 2>&1; true",
    )
    .await;
    assert!(!is_error && text.contains("alpha"), "{text}");
}

#[tokio::test]
async fn write_and_edit_stay_inside_and_see_through_symlinks() {
    // The in-process check needs no Landlock.
    let p = place();
    let sandbox = || {
        Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &p.ws)
            .with_support(Support::Missing("not needed for write and edit".into()))
    };
    let write = tool_in("write", &p.ws, sandbox());
    let edit = tool_in("edit", &p.ws, sandbox());

    let (text, is_error) = run(&write, json!({"path": "src/new.txt", "content": "one\n"})).await;
    assert!(!is_error, "{text}");
    let (text, is_error) = run(
        &edit,
        json!({"path": "src/new.txt", "oldText": "one", "newText": "two"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(
        fs::read_to_string(p.ws.join("src/new.txt")).unwrap(),
        "two\n"
    );

    // Outside, by absolute path and by `..`.
    let target = p.outside.join("x.txt");
    for path in [
        target.display().to_string(),
        "../outside/x.txt".to_string(),
        "sub/../../outside/x.txt".to_string(),
    ] {
        let (text, is_error) = run(&write, json!({"path": path, "content": "no"})).await;
        assert!(is_error, "{path}: {text}");
        assert!(
            text.contains("Refused by the sandbox")
                && text.contains("workspace-write")
                && text.contains(&p.ws.display().to_string()),
            "{text}"
        );
    }
    assert!(!target.exists());
    assert!(!p.ws.join("sub").exists(), "no folder was created either");

    // A symlink inside the workspace pointing outside does not open a way out.
    std::os::unix::fs::symlink(&p.outside, p.ws.join("door")).unwrap();
    fs::write(p.outside.join("f.txt"), "outside text\n").unwrap();
    std::os::unix::fs::symlink(p.outside.join("f.txt"), p.ws.join("f.txt")).unwrap();
    let (text, is_error) = run(&write, json!({"path": "door/x.txt", "content": "no"})).await;
    assert!(is_error && text.contains("resolves to"), "{text}");
    let (text, is_error) = run(&write, json!({"path": "f.txt", "content": "no"})).await;
    assert!(is_error && text.contains("resolves to"), "{text}");
    let (text, is_error) = run(
        &edit,
        json!({"path": "f.txt", "oldText": "outside", "newText": "inside"}),
    )
    .await;
    assert!(
        is_error && text.contains("Refused by the sandbox"),
        "{text}"
    );
    assert_eq!(
        fs::read_to_string(p.outside.join("f.txt")).unwrap(),
        "outside text\n"
    );
    assert!(!target.exists());

    // Read-only refuses the workspace too.
    let ro = Sandbox::new(SandboxMode::ReadOnly, Fallback::Refuse, &p.ws)
        .with_support(Support::Missing("not needed".into()));
    let write = tool_in("write", &p.ws, ro.clone());
    let edit = tool_in("edit", &p.ws, ro);
    let (text, is_error) = run(&write, json!({"path": "ro.txt", "content": "no"})).await;
    assert!(is_error && text.contains("read-only"), "{text}");
    let (text, is_error) = run(
        &edit,
        json!({"path": "src/new.txt", "oldText": "two", "newText": "three"}),
    )
    .await;
    assert!(is_error && text.contains("read-only"), "{text}");
    assert!(!p.ws.join("ro.txt").exists());
    assert_eq!(
        fs::read_to_string(p.ws.join("src/new.txt")).unwrap(),
        "two\n"
    );
}

#[tokio::test]
async fn without_landlock_bash_is_refused_unless_the_fallback_is_warn() {
    let p = place();
    let missing = Support::Missing("pretend kernel without Landlock".into());
    let refuse = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &p.ws)
        .with_support(missing.clone());
    let sh = tool_in("bash", &p.ws, refuse);
    let (text, is_error) = bash(&sh, "echo ran > ran.txt").await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("pretend kernel without Landlock") && text.contains("sandbox_fallback"),
        "{text}"
    );
    assert!(!p.ws.join("ran.txt").exists(), "the command never ran");

    let warn = Sandbox::new(SandboxMode::ReadOnly, Fallback::Warn, &p.ws).with_support(missing);
    assert!(warn.startup_warning().unwrap().contains("WITHOUT"));
    let sh = tool_in("bash", &p.ws, warn);
    let (text, is_error) = bash(&sh, &format!("echo ran > {}/ran.txt", p.outside.display())).await;
    assert!(!is_error, "unconfined: {text}");
    assert!(p.outside.join("ran.txt").is_file());
}

/// The real binary in `p.ws`, with `p.base/home` as home and `p.base/tmp` as temp folder.
fn pi(p: &Place, server: &TestServer) -> tokio::process::Command {
    let home = p.base.join("home");
    let tmp = p.base.join("tmp");
    fs::create_dir_all(home.join("agent")).unwrap();
    fs::create_dir_all(&tmp).unwrap();
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", server.url.clone())
        .current_dir(&p.ws)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c
}

#[tokio::test]
async fn print_mode_runs_bash_in_the_sandbox_the_flag_names_over_config() {
    if !landlock_here("print_mode_runs_bash_in_the_sandbox_the_flag_names_over_config") {
        return;
    }
    let p = place();
    let command = format!(
        "echo in > inside.txt; echo t > \"$TMPDIR/t.txt\"; echo out > {}/out.txt; echo done",
        p.outside.display()
    );
    let server = TestServer::start(vec![
        call_reply("c1", "bash", &json!({ "command": command }).to_string()),
        text_reply("finished"),
    ])
    .await;
    let mut c = pi(&p, &server);
    // Config says read-only; the flag wins.
    fs::write(
        p.base.join("home/agent/config.toml"),
        "sandbox = \"read-only\"\n",
    )
    .unwrap();
    let out = c
        .args([
            "--model",
            "ollama/qwen3:8b",
            "--no-session",
            "--verbose",
            "--sandbox",
            "workspace-write",
            "-p",
            "write some files",
        ])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "finished\n");
    assert!(
        stderr.contains("sandbox workspace-write (namespaces + Landlock ABI")
            || stderr.contains("sandbox workspace-write (Landlock ABI"),
        "--verbose names the sandbox: {stderr}"
    );
    assert_eq!(fs::read_to_string(p.ws.join("inside.txt")).unwrap(), "in\n");
    assert!(p.base.join("tmp/t.txt").is_file(), "TMPDIR is writable");
    assert!(!p.outside.join("out.txt").exists());
    let sent = server.requests().last().unwrap().body.to_string();
    assert!(refused(&sent), "{sent}");
    assert!(sent.contains("done"), "the command went on: {sent}");

    // With only the config, read-only applies: nothing is written in the workspace.
    let command = "echo again > again.txt";
    let server = TestServer::start(vec![
        call_reply("c1", "bash", &json!({ "command": command }).to_string()),
        text_reply("finished"),
    ])
    .await;
    let out = pi(&p, &server)
        .args(["--model", "ollama/qwen3:8b", "--no-session", "-p", "again"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!p.ws.join("again.txt").exists());
    let sent = server.requests().last().unwrap().body.to_string();
    assert!(refused(&sent), "{sent}");
}

#[tokio::test]
async fn bad_sandbox_values_are_refused_clearly() {
    let p = place();
    let server = TestServer::start(vec![]).await;
    let out = pi(&p, &server)
        .args(["--sandbox", "strict", "-p", "x"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("strict") && stderr.contains("workspace-write"),
        "{stderr}"
    );

    fs::write(
        p.base.join("home/agent/config.toml"),
        "model = \"ollama/q\"\nsandbox = \"on\"\n",
    )
    .unwrap();
    let out = pi(&p, &server)
        .args(["--no-session", "-p", "x"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.toml:2:") && stderr.contains("workspace-write"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_users_own_commands_are_not_sandboxed() {
    // The RPC client's `bash` command runs the person's own command, as `!cmd` in the editor:
    // a read-only sandbox for the model does not apply to it.
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let p = place();
    let server = TestServer::start(vec![]).await;
    let mut child = pi(&p, &server)
        .args([
            "--mode",
            "rpc",
            "--no-session",
            "--model",
            "ollama/qwen3:8b",
        ])
        .args(["--sandbox", "read-only"])
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let cmd = json!({"id": "1", "type": "bash", "command": "echo mine > mine.txt"});
    stdin
        .write_all(format!("{cmd}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let answer = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("stdout closed");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "response" && v["id"] == "1" {
                return v;
            }
        }
    })
    .await
    .expect("no answer to the bash command");
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(fs::read_to_string(p.ws.join("mine.txt")).unwrap(), "mine\n");
    drop(stdin);
    let _ = child.wait().await;
}

// ---- No side doors (issue 23): namespaces, unix sockets, process lifetime. ----

/// Whether the namespace layer works here; prints why not when it does not.
fn namespaces_here(test: &str) -> bool {
    if !landlock_here(test) {
        return false;
    }
    match pi::tools::sandbox::namespace::probe() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("{test}: skipped, no namespaces here: {why}");
            false
        }
    }
}

/// Run pi once in `p.ws` with `extra` in its environment and `args`; the model makes one
/// `bash` call with `command`. Returns the call's result as pi sent it back to the model.
async fn one_call(p: &Place, command: &str, extra: &[(&str, String)], args: &[&str]) -> String {
    let server = TestServer::start(vec![
        call_reply("c1", "bash", &json!({ "command": command }).to_string()),
        text_reply("finished"),
    ])
    .await;
    let mut c = pi(p, &server);
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c
        .args(["--model", "ollama/qwen3:8b", "--no-session", "-p", "go"])
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = server.requests().last().unwrap().body.clone();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

const SANDBOXED: &[&str] = &["--sandbox", "workspace-write"];

/// Wait (bounded) for `path` to appear; whether it did.
async fn appears(path: &Path, within: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + within;
    while std::time::Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    path.exists()
}

/// Runs a cleanup command when dropped (servers a test started).
struct Cleanup(Option<std::process::Command>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.output();
        }
    }
}

fn found(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn a_sandboxed_command_cannot_reach_tmux() {
    if !namespaces_here("a_sandboxed_command_cannot_reach_tmux") || !found("tmux") {
        return;
    }
    let p = place();
    let sock = p.base.join("tmux.sock");
    let tmux = |args: &[&str]| {
        let mut c = std::process::Command::new("tmux");
        c.arg("-S").arg(&sock).args(args).env("TERM", "xterm");
        c
    };
    let started = tmux(&["new-session", "-d", "-s", "t"]).status().unwrap();
    assert!(started.success());
    let _server = Cleanup(Some(tmux(&["kill-server"])));
    // The server works for anyone outside the sandbox.
    let control = p.outside.join("control");
    let cmd = format!("touch {}", control.display());
    assert!(
        tmux(&["new-window", "-d", &cmd])
            .status()
            .unwrap()
            .success()
    );
    assert!(appears(&control, std::time::Duration::from_secs(5)).await);

    let pwned = p.outside.join("pwned");
    let command = format!(
        "echo \"tmux=[$TMUX]\"; tmux new-window -d 'touch {pwned}'; \
         tmux -S {sock} new-window -d 'touch {pwned}'; echo done",
        pwned = pwned.display(),
        sock = sock.display()
    );
    let tmux_var = format!("{},{},0", sock.display(), std::process::id());
    let sent = one_call(&p, &command, &[("TMUX", tmux_var)], SANDBOXED).await;
    assert!(sent.contains("tmux=[]"), "TMUX is removed: {sent}");
    assert!(sent.contains("done"), "{sent}");
    // Anything that got through would have run by the time the server answered pi's
    // command; give it a moment anyway.
    assert!(
        !appears(&pwned, std::time::Duration::from_millis(500)).await,
        "tmux ran a command outside the sandbox: {sent}"
    );
}

#[tokio::test]
async fn a_sandboxed_command_cannot_reach_dbus_or_ssh_agent() {
    if !namespaces_here("a_sandboxed_command_cannot_reach_dbus_or_ssh_agent")
        || !found("dbus-daemon")
        || !found("dbus-send")
        || !found("ssh-agent")
    {
        return;
    }
    let p = place();
    // D-Bus.
    let bus = p.base.join("bus.sock");
    let out = std::process::Command::new("dbus-daemon")
        .args(["--session", "--fork", "--print-pid"])
        .arg(format!("--address=unix:path={}", bus.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut kill = std::process::Command::new("kill");
    kill.arg(&pid);
    let _bus = Cleanup(Some(kill));
    let address = format!("unix:path={}", bus.display());
    let ask = "dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
               org.freedesktop.DBus.GetId";
    let control = std::process::Command::new("sh")
        .args(["-c", ask])
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .output()
        .unwrap();
    assert!(
        control.status.success(),
        "the bus answers outside: {control:?}"
    );

    // ssh-agent.
    let agent_sock = p.base.join("agent.sock");
    let out = std::process::Command::new("ssh-agent")
        .arg("-a")
        .arg(&agent_sock)
        .arg("-s")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let agent_pid = text
        .split("SSH_AGENT_PID=")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap()
        .to_string();
    let mut kill = std::process::Command::new("kill");
    kill.arg(&agent_pid);
    let _agent = Cleanup(Some(kill));
    let control = std::process::Command::new("ssh-add")
        .arg("-l")
        .env("SSH_AUTH_SOCK", &agent_sock)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&control.stdout);
    assert!(
        said.contains("no identities"),
        "the agent answers outside: {said}"
    );

    let command = format!(
        "echo \"vars=[$DBUS_SESSION_BUS_ADDRESS$SSH_AUTH_SOCK]\"; \
         {ask} && echo BUS-REACHED; \
         DBUS_SESSION_BUS_ADDRESS={address} {ask} && echo BUS-REACHED; \
         SSH_AUTH_SOCK={agent} ssh-add -l; echo done",
        agent = agent_sock.display()
    );
    let sent = one_call(
        &p,
        &command,
        &[
            ("DBUS_SESSION_BUS_ADDRESS", address.clone()),
            ("SSH_AUTH_SOCK", agent_sock.display().to_string()),
        ],
        SANDBOXED,
    )
    .await;
    assert!(sent.contains("vars=[]"), "{sent}");
    assert!(sent.contains("done"), "{sent}");
    assert!(!sent.contains("BUS-REACHED"), "{sent}");
    assert!(!sent.contains("no identities"), "{sent}");
    assert!(sent.contains("Permission denied"), "{sent}");
}

#[tokio::test]
async fn metadata_changes_outside_are_refused() {
    if !namespaces_here("metadata_changes_outside_are_refused") {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let p = place();
    let f = p.outside.join("f.txt");
    fs::write(&f, "x").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    let before = fs::metadata(&f).unwrap();
    let target = f.display();
    let command = format!(
        "chmod 600 {target}; echo chmod=$?; chown $(id -u):$(id -g) {target}; echo chown=$?; \
         touch -d 2001-01-01 {target}; echo touch=$?; chmod 600 inside.txt; echo in=$?"
    );
    fs::write(p.ws.join("inside.txt"), "y").unwrap();
    let sent = one_call(&p, &command, &[], SANDBOXED).await;
    for step in ["chmod=1", "chown=1", "touch=1", "in=0"] {
        assert!(sent.contains(step), "{step}: {sent}");
    }
    let after = fs::metadata(&f).unwrap();
    assert_eq!(after.permissions().mode() & 0o777, 0o644);
    assert_eq!(after.mtime(), before.mtime());
    assert_eq!(
        fs::metadata(p.ws.join("inside.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600,
        "the workspace keeps its metadata rights"
    );
    // The header says which layers are on.
    let server = TestServer::start(vec![text_reply("hi")]).await;
    let out = pi(&p, &server)
        .args(["--model", "ollama/qwen3:8b", "--no-session", "--verbose"])
        .args(SANDBOXED)
        .args(["-p", "hi"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sandbox workspace-write (namespaces + Landlock ABI"),
        "{stderr}"
    );
}

/// Kill what `running_with` found (a failing test leaves nothing behind), then fail if
/// there was anything.
fn assert_none(left: Vec<String>, context: &str) {
    for dir in &left {
        if let Some(pid) = dir
            .strip_prefix("/proc/")
            .and_then(|p| p.parse::<i32>().ok())
        {
            // SAFETY: a plain signal to a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    assert!(left.is_empty(), "{context}: still running: {left:?}");
}

/// Wait (bounded) until no process carries `marker`; the ones left.
async fn gone(marker: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = support::running_with(marker);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn marker(tag: &str) -> String {
    format!(
        "pi-marker-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test]
async fn a_setsid_child_ends_when_the_call_returns() {
    if !namespaces_here("a_setsid_child_ends_when_the_call_returns") {
        return;
    }
    let p = place();
    for sandbox in [
        Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &p.ws),
        Sandbox::off(),
    ] {
        let m = marker("setsid");
        let sh = tool_in("bash", &p.ws, sandbox);
        let command = format!(
            "setsid bash -c 'exec -a {m} sleep 300' > /dev/null 2>&1 & \
             (exec -a {m} sleep 300) > /dev/null 2>&1 & disown; \
             for _ in $(seq 100); do [ \"$(pgrep -fc {m})\" = 2 ] && break; sleep 0.02; done; \
             echo started"
        );
        let (text, is_error) = bash(&sh, &command).await;
        assert!(!is_error && text.contains("started"), "{text}");
        // No waiting: by the time the call has returned, they are gone.
        assert_none(support::running_with(&m), &text);
    }
}

#[tokio::test]
async fn the_commands_processes_die_with_pi() {
    if !namespaces_here("the_commands_processes_die_with_pi") {
        return;
    }
    let p = place();
    for (round, args) in [SANDBOXED, &["--sandbox", "off"][..]]
        .into_iter()
        .enumerate()
    {
        let m = marker("sigkill");
        // The flag's name must not hold the marker: `touch` would count as
        // one of the command's processes while it is still exiting.
        let ready = p.ws.join(format!("round-{round}.ready"));
        let command = format!(
            "setsid bash -c 'exec -a {m} sleep 300' > /dev/null 2>&1 & \
             (exec -a {m} sleep 301) & \
             for _ in $(seq 100); do [ \"$(pgrep -fc {m})\" = 2 ] && break; sleep 0.02; done; \
             touch {ready}; exec -a {m} sleep 302",
            ready = ready.display()
        );
        let server = TestServer::start(vec![
            call_reply("c1", "bash", &json!({ "command": command }).to_string()),
            text_reply("finished"),
        ])
        .await;
        let mut child = pi(&p, &server)
            .args(["--model", "ollama/qwen3:8b", "--no-session", "-p", "go"])
            .args(args)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        assert!(
            appears(&ready, std::time::Duration::from_secs(10)).await,
            "the command never got going ({args:?})"
        );
        let before = support::running_with(&m);
        child.start_kill().unwrap();
        let _ = child.wait().await;
        let left = gone(&m).await;
        assert_eq!(before.len(), 3, "{args:?}: {before:?}");
        assert_none(left, &format!("{args:?}"));
    }
}

#[tokio::test]
async fn a_symlink_flipped_during_300_writes_never_sends_one_outside() {
    // Needs no Landlock: write and edit keep to the sandbox themselves.
    let p = place();
    let inside = p.ws.join("real");
    fs::create_dir(&inside).unwrap();
    let flip = p.ws.join("flip");
    std::os::unix::fs::symlink(&inside, &flip).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (stop, flip, inside, outside) = (
            stop.clone(),
            flip.clone(),
            inside.clone(),
            p.outside.clone(),
        );
        std::thread::spawn(move || {
            let spare = flip.with_extension("new");
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let to = if n.is_multiple_of(2) {
                    &outside
                } else {
                    &inside
                };
                let _ = fs::remove_file(&spare);
                std::os::unix::fs::symlink(to, &spare).unwrap();
                fs::rename(&spare, &flip).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut replies: Vec<_> = (0..300)
        .map(|i| {
            let (tool, args) = if i % 3 == 2 {
                (
                    "edit",
                    json!({"path": "flip/f.txt", "oldText": "v", "newText": "v"}),
                )
            } else {
                (
                    "write",
                    json!({"path": format!("flip/f{}.txt", i % 7), "content": format!("v{i}\n")}),
                )
            };
            call_reply(&format!("c{i}"), tool, &args.to_string())
        })
        .collect();
    replies.push(text_reply("finished"));
    let server = TestServer::start(replies).await;
    let out = pi(&p, &server)
        .args(["--model", "ollama/qwen3:8b", "--no-session", "-p", "write"])
        .args(SANDBOXED)
        .output()
        .await
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let landed: Vec<_> = fs::read_dir(&p.outside).unwrap().flatten().collect();
    assert!(
        landed.is_empty(),
        "{} of 300 writes landed outside: {landed:?}",
        landed.len()
    );
    // The race was real: the link flipped many times, some writes went through inside.
    let written = fs::read_dir(&inside).unwrap().count();
    assert!(flips > 300 && written > 0, "{flips} flips, {written} files");
}

/// The cost of the launch layers per call: the median of 50 `true` calls in each setup.
/// Run by `bench/sandbox_cost.sh` (ignored in the ordinary test run).
#[tokio::test]
#[ignore]
async fn bash_call_cost() {
    if !namespaces_here("bash_call_cost") {
        return;
    }
    let p = place();
    let ns = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &p.ws);
    let abi = match ns.support() {
        Support::Landlock { abi, .. } => *abi,
        Support::Missing(_) => return,
    };
    let landlock_only = ns.clone().with_support(Support::Landlock {
        abi,
        namespaces: false,
    });
    let plain = |contain: bool| {
        tools::build_with(
            &["bash"],
            Arc::new(ToolContext::new(&p.ws).with_process_namespace(contain)),
        )
        .unwrap()
        .pop()
        .unwrap()
    };
    let setups: Vec<(&str, Arc<dyn AgentTool>)> = vec![
        ("off, process group only", plain(false)),
        ("off, PID namespace", plain(true)),
        (
            "workspace-write, Landlock + seccomp",
            tool_in("bash", &p.ws, landlock_only),
        ),
        (
            "workspace-write, namespaces + Landlock + seccomp",
            tool_in("bash", &p.ws, ns),
        ),
    ];
    for (name, sh) in setups {
        let mut times = Vec::new();
        for _ in 0..50 {
            let t = std::time::Instant::now();
            let (text, is_error) = bash(&sh, "true").await;
            times.push(t.elapsed());
            assert!(!is_error, "{name}: {text}");
        }
        times.sort();
        println!(
            "{name}: median {:.2} ms, p90 {:.2} ms",
            times[25].as_secs_f64() * 1e3,
            times[45].as_secs_f64() * 1e3
        );
    }
}

//! Hooks through the real binary, in Claude Code's format: each event with scripts that
//! block, change, add context and time out; the files they are read from (Claude's and pi's
//! own); the environment they get; a project's hooks held back until the folder is trusted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::server::{TestServer, call_reply, tags, text_reply};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `hooks` for one event: one group with one command.
fn on(event: &str, matcher: &str, command: &str) -> Value {
    json!({ event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}] })
}

/// A home whose `~/.claude/settings.json` holds `hooks`.
fn home_with(tag: &str, hooks: Value) -> std::path::PathBuf {
    let h = support::binary_home(tag);
    write(
        &h.join(".claude/settings.json"),
        &json!({ "hooks": hooks }).to_string(),
    );
    h
}

fn chats(server: &TestServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .collect()
}

/// The content of the last tool result in the `n`th chat request.
fn tool_result(server: &TestServer, n: usize) -> String {
    chats(server)[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn last_user(server: &TestServer, n: usize) -> String {
    chats(server)[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

async fn pi(server: &TestServer, h: &std::path::Path, args: &[&str]) -> std::process::Output {
    support::run_pi(h, &[("OLLAMA_HOST", server.url.as_str())], args).await
}

fn bash_call(command: &str) -> support::server::Reply {
    call_reply("c1", "bash", &json!({ "command": command }).to_string())
}

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_a_command_and_the_model_reads_why() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash_call("touch made.txt"),
        text_reply("ok"),
    ])
    .await;
    let h = home_with(
        "hooks-block",
        on(
            "PreToolUse",
            "Bash",
            "grep -q touch && { echo 'touching files is not allowed here' >&2; exit 2; }; exit 0",
        ),
    );
    let out = pi(&server, &h, &["-p", "make a file"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!h.join("project/made.txt").exists());
    let result = tool_result(&server, 1);
    assert!(
        result.contains("touching files is not allowed here"),
        "{result}"
    );
}

#[tokio::test]
async fn a_pre_tool_use_hook_rewrites_the_arguments_in_claudes_names() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply(
            "c1",
            "write",
            &json!({"path": "draft.txt", "content": "hello"}).to_string(),
        ),
        text_reply("ok"),
    ])
    .await;
    let answer = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"file_path": "final.txt", "content": "rewritten"}
    }});
    let h = home_with(
        "hooks-rewrite",
        on("PreToolUse", "Write", &format!("echo '{answer}'")),
    );
    let out = pi(&server, &h, &["-p", "write it"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!h.join("project/draft.txt").exists());
    assert_eq!(
        std::fs::read_to_string(h.join("project/final.txt")).unwrap(),
        "rewritten"
    );
}

#[tokio::test]
async fn a_hook_that_times_out_is_a_warning_unless_it_fails_closed() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash_call("touch open.txt"),
        text_reply("ok"),
        tags("qwen3:8b"),
        bash_call("touch closed.txt"),
        text_reply("ok"),
    ])
    .await;
    let slow = |fail: &str| {
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "sleep 20", "timeout": 0.5, "fail": fail}
        ]}]})
    };
    let h = home_with("hooks-timeout", slow("open"));
    let out = pi(&server, &h, &["-p", "go"]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("took longer than 0.5 s"), "{err}");
    assert!(h.join("project/open.txt").exists());
    write(
        &h.join(".claude/settings.json"),
        &json!({ "hooks": slow("closed") }).to_string(),
    );
    pi(&server, &h, &["-p", "go"]).await;
    assert!(!h.join("project/closed.txt").exists());
    assert!(tool_result(&server, 3).contains("fail closed"));
}

#[tokio::test]
async fn post_tool_use_feedback_reaches_the_model_with_the_result() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash_call("echo built"),
        text_reply("ok"),
    ])
    .await;
    // pi's own settings.json may hold hooks too, and pi's tool names match.
    let h = support::binary_home("hooks-post");
    write(
        &h.join("agent/settings.json"),
        &json!({"hooks": on("PostToolUse", "bash", "echo 'lint: 2 warnings' >&2; exit 2")})
            .to_string(),
    );
    let out = pi(&server, &h, &["-p", "build"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = tool_result(&server, 1);
    assert!(result.contains("built"), "{result}");
    assert!(result.contains("lint: 2 warnings"), "{result}");
}

#[tokio::test]
async fn prompt_hooks_add_context_or_stop_the_prompt() {
    let server =
        TestServer::start(vec![tags("qwen3:8b"), text_reply("ok"), tags("qwen3:8b")]).await;
    // config.toml's [hooks], with SessionStart context as well.
    let h = support::binary_home("hooks-prompt");
    write(
        &h.join("agent/config.toml"),
        r#"
[[hooks.UserPromptSubmit]]
hooks = [{ type = "command", command = "grep -q secret && { echo 'no secrets in prompts' >&2; exit 2; }; echo 'Branch: main'" }]

[[hooks.SessionStart]]
matcher = "startup"
hooks = [{ type = "command", command = "echo 'Open issues: 3'" }]
"#,
    );
    let out = pi(&server, &h, &["-p", "hello"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = last_user(&server, 0);
    assert!(sent.starts_with("hello"), "{sent}");
    assert!(
        sent.contains("Branch: main") && sent.contains("Open issues: 3"),
        "{sent}"
    );
    let out = pi(&server, &h, &["-p", "my secret is x"]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no secrets in prompts"), "{err}");
    assert_eq!(
        chats(&server).len(),
        1,
        "the stopped prompt reached no model"
    );
}

#[tokio::test]
async fn a_stop_hook_sends_the_agent_back_once() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("done"),
        text_reply("tests pass now"),
    ])
    .await;
    let h = home_with(
        "hooks-stop",
        on(
            "Stop",
            "",
            r#"grep -q '"stop_hook_active":true' && exit 0; echo 'run the tests first' >&2; exit 2"#,
        ),
    );
    let out = pi(&server, &h, &["-p", "fix it"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "tests pass now"
    );
    assert_eq!(chats(&server).len(), 2);
    assert!(last_user(&server, 1).contains("run the tests first"));
}

#[tokio::test]
async fn hooks_get_the_tools_environment_and_session_end_runs_at_exit() {
    let server =
        TestServer::start(vec![tags("qwen3:8b"), bash_call("true"), text_reply("ok")]).await;
    let h = support::binary_home("hooks-env");
    let seen = h.join("seen");
    let hooks = json!({
        "PreToolUse": [{"hooks": [{"type": "command", "command": format!("env > {}/env.txt; cat > {}/input.json", seen.display(), seen.display())}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": format!("cat > {}/end.json", seen.display())}]}]
    });
    write(
        &h.join(".claude/settings.json"),
        &json!({ "hooks": hooks }).to_string(),
    );
    std::fs::create_dir_all(&seen).unwrap();
    let out = support::run_pi(
        &h,
        &[
            ("OLLAMA_HOST", server.url.as_str()),
            ("GITHUB_TOKEN", "ghp-test-not-for-hooks-1234"),
        ],
        &["-p", "go"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = std::fs::read_to_string(seen.join("env.txt")).unwrap();
    assert!(!env.contains("not-for-hooks"), "{env}");
    let project = h.join("project").display().to_string();
    assert!(
        env.contains(&format!("CLAUDE_PROJECT_DIR={project}")),
        "{env}"
    );
    assert!(env.contains(&format!("PI_PROJECT_DIR={project}")), "{env}");
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(seen.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "true");
    assert_eq!(input["cwd"], project);
    let session = input["transcript_path"].as_str().unwrap();
    assert!(std::path::Path::new(session).exists(), "{session}");
    let end: Value =
        serde_json::from_str(&std::fs::read_to_string(seen.join("end.json")).unwrap()).unwrap();
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["session_id"], input["session_id"]);
}

#[tokio::test]
async fn a_projects_hooks_run_only_once_the_folder_is_trusted() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        bash_call("true"),
        text_reply("ok"),
        tags("qwen3:8b"),
        bash_call("true"),
        text_reply("ok"),
    ])
    .await;
    let h = support::binary_home("hooks-trust");
    write(
        &h.join("project/.claude/settings.json"),
        &json!({"hooks": on("PreToolUse", "*", "touch \"$CLAUDE_PROJECT_DIR/hook-ran\"")})
            .to_string(),
    );
    let out = pi(&server, &h, &["-p", "go"]).await;
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!h.join("project/hook-ran").exists());
    assert!(err.contains("hook on PreToolUse runs: touch"), "{err}");
    let out = pi(&server, &h, &["--trust-project", "-p", "go"]).await;
    assert!(out.status.success());
    assert!(h.join("project/hook-ran").exists());
}

#[test]
fn the_terminal_asks_to_trust_a_projects_hooks_and_notifies_when_approval_waits() {
    use support::pty::Pty;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        bash_call("touch made.txt"),
        text_reply("All done."),
    ]));
    let h = support::binary_home("hooks-tui");
    let project = h.join("project");
    let marker = h.join("notified.json");
    write(
        &project.join(".claude/settings.json"),
        &json!({"hooks": on("Notification", "", &format!("cat > {}", marker.display()))})
            .to_string(),
    );
    let agent = h.join("agent").display().to_string();
    let home = h.display().to_string();
    let mut pi = Pty::spawn_with_env(
        &project,
        &server,
        None,
        30,
        &[("PI_CODING_AGENT_DIR", &agent), ("HOME", &home)],
        &["--approval", "ask"],
    );
    let s = pi.wait_for("Trust this folder? [y/N/q]");
    assert!(s.contains("hook on Notification runs: cat >"), "{s}");
    pi.send(b"y\r");
    pi.wait_for("approval: ask");
    pi.send(b"make the file\r");
    pi.wait_for("Run this command?");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !marker.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let said: Value = serde_json::from_str(&std::fs::read_to_string(&marker).unwrap()).unwrap();
    assert_eq!(said["hook_event_name"], "Notification");
    assert_eq!(said["message"], "pi needs your permission to use bash");
    pi.send(b"y");
    pi.wait_for("All done.");
    assert!(project.join("made.txt").exists());
    assert!(pi.quit().success());
}

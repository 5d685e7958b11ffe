//! The per-event contract with real commands: exit codes, JSON answers, matchers, timeouts.

use std::time::Duration;

use serde_json::json;

use super::settings::parse;
use super::*;

fn hooks(config: Value) -> Hooks {
    let (groups, warnings) = parse(&config, "test");
    assert!(warnings.is_empty(), "{warnings:?}");
    Hooks::new(
        groups,
        RunContext {
            cwd: std::env::temp_dir(),
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        },
    )
}

fn on(event: &str, matcher: &str, command: &str) -> Value {
    json!({ event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}] })
}

#[tokio::test]
async fn pre_tool_use_blocks_with_exit_2_and_its_stderr() {
    let h = hooks(on(
        "PreToolUse",
        "Bash",
        "grep -q 'rm -rf' && { echo 'no rm -rf here' >&2; exit 2; }; exit 0",
    ));
    let s = AbortSignal::new();
    let v = h
        .pre_tool_use("bash", "c1", &json!({"command": "rm -rf /tmp/x"}), &s)
        .await;
    assert_eq!(v.block.as_deref(), Some("Not run: no rm -rf here"));
    let v = h
        .pre_tool_use("bash", "c2", &json!({"command": "ls"}), &s)
        .await;
    assert_eq!(v, PreToolVerdict::default());
    // The matcher names Claude's tool: read is not matched.
    let v = h
        .pre_tool_use("read", "c3", &json!({"path": "rm -rf"}), &s)
        .await;
    assert_eq!(v.block, None);
}

#[tokio::test]
async fn pre_tool_use_json_denies_allows_and_rewrites_in_pis_names() {
    let answer = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"file_path": "/tmp/other.txt", "content": "x"},
        "additionalContext": "wrote elsewhere"
    }});
    let h = hooks(on("PreToolUse", "Write|Edit", &format!("echo '{answer}'")));
    let s = AbortSignal::new();
    let v = h
        .pre_tool_use("write", "c", &json!({"path": "a.txt", "content": "x"}), &s)
        .await;
    assert_eq!(v.permission, Some(Permission::Allow));
    assert_eq!(
        v.updated_input,
        Some(json!({"path": "/tmp/other.txt", "content": "x"}))
    );
    assert_eq!(v.context, ["wrote elsewhere"]);
    let deny = json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "frozen"}});
    let h = hooks(on("PreToolUse", "*", &format!("echo '{deny}'")));
    let v = h.pre_tool_use("edit", "c", &json!({"path": "a"}), &s).await;
    assert_eq!(v.block.as_deref(), Some("Not run: frozen"));
}

#[tokio::test]
async fn the_input_names_claudes_tool_and_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("input.json");
    let h = hooks(on(
        "PreToolUse",
        "Edit",
        &format!("cat > {}", out.display()),
    ));
    let s = AbortSignal::new();
    h.set_session("sess-1", Some("/tmp/s.jsonl".into()));
    h.pre_tool_use(
        "edit",
        "call-9",
        &json!({"path": "src/a.rs", "oldText": "a", "newText": "b"}),
        &s,
    )
    .await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Edit");
    assert_eq!(input["tool_use_id"], "call-9");
    assert_eq!(input["session_id"], "sess-1");
    assert_eq!(input["transcript_path"], "/tmp/s.jsonl");
    let tmp = std::env::temp_dir();
    assert_eq!(
        input["tool_input"]["file_path"],
        tmp.join("src/a.rs").display().to_string()
    );
    assert_eq!(input["tool_input"]["old_string"], "a");
    assert_eq!(input["tool_input"]["path"], "src/a.rs");
}

#[tokio::test]
async fn a_failing_hook_is_a_notice_unless_it_fails_closed() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let h = hooks(on("PreToolUse", "Bash", "echo broken >&2; exit 1"));
    h.set_notices(tx.clone());
    let s = AbortSignal::new();
    let v = h
        .pre_tool_use("bash", "c", &json!({"command": "ls"}), &s)
        .await;
    assert_eq!(v.block, None);
    let notice = rx.try_recv().unwrap();
    assert!(
        notice.contains("exit code 1") && notice.contains("broken"),
        "{notice}"
    );
    let closed = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "sleep 5", "timeout": 0.2, "fail": "closed"}
    ]}]});
    let h = hooks(closed);
    h.set_notices(tx);
    let v = h
        .pre_tool_use("bash", "c", &json!({"command": "ls"}), &s)
        .await;
    let why = v.block.unwrap();
    assert!(
        why.contains("longer than 0.2 s") && why.contains("fail closed"),
        "{why}"
    );
}

#[tokio::test]
async fn post_tool_use_feedback_and_prompt_and_stop_hooks() {
    let s = AbortSignal::new();
    let h = hooks(on(
        "PostToolUse",
        "*",
        "echo 'lint: 2 warnings' >&2; exit 2",
    ));
    let v = h
        .post_tool_use("write", "c", &json!({"path": "a"}), || json!({}), &s)
        .await;
    assert_eq!(v.feedback, ["lint: 2 warnings"]);

    let h = hooks(on("UserPromptSubmit", "", "echo 'Branch: main'"));
    let v = h.user_prompt_submit("hi", &s).await;
    assert_eq!(
        v,
        PromptVerdict {
            block: None,
            context: vec!["Branch: main".into()]
        }
    );
    let h = hooks(on(
        "UserPromptSubmit",
        "",
        "grep -q secret && { echo 'no secrets' >&2; exit 2; }; true",
    ));
    let v = h.user_prompt_submit("my secret", &s).await;
    assert_eq!(v.block.as_deref(), Some("no secrets"));

    let h = hooks(on(
        "Stop",
        "",
        r#"grep -q '"stop_hook_active":true' && exit 0; echo '{"decision":"block","reason":"run the tests"}'"#,
    ));
    assert_eq!(
        h.stop(Event::Stop, false, &s).await.as_deref(),
        Some("run the tests")
    );
    assert_eq!(h.stop(Event::Stop, true, &s).await, None);
}

#[tokio::test]
async fn session_start_matches_its_source_and_adds_context() {
    let h = hooks(on("SessionStart", "startup", "echo 'TODO: fix CI'"));
    assert_eq!(h.session_start("startup").await, ["TODO: fix CI"]);
    assert!(h.session_start("resume").await.is_empty());
    let _ = Duration::ZERO;
}

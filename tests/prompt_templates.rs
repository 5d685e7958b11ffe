//! Prompt templates through the real binary: the Node.js pi's folders and Claude Code's
//! command folders, arguments, name clashes, `--prompt-template` and `-np`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::server::{TestServer, tags, text_reply};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A home (`home/agent` the agent folder, `home/project` the working one) with templates.
fn home() -> std::path::PathBuf {
    let h = support::binary_home("templates");
    write(
        &h.join("agent/prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: \"<file> [focus]\"\n---\nReview $1, looking for ${@:2}.\n",
    );
    write(&h.join("agent/prompts/fix.md"), "User fix: $@");
    write(&h.join("project/.pi/prompts/fix.md"), "Project fix: $@");
    write(
        &h.join("project/.claude/commands/git/commit.md"),
        "---\ndescription: Write a commit message\n---\nWrite a commit message for $ARGUMENTS.",
    );
    // A template may not take a built-in command's name.
    write(&h.join("agent/prompts/model.md"), "never used");
    h
}

/// The text of the last user message of the `n`th chat request.
fn sent(server: &TestServer, n: usize) -> String {
    let reqs: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    let msgs = reqs[n].body["messages"].as_array().unwrap().clone();
    msgs.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn run(server: &TestServer, h: &std::path::Path, args: &[&str]) {
    let out = support::run_pi(h, &[("OLLAMA_HOST", server.url.as_str())], args).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn slash_names_expand_in_print_mode_with_their_arguments() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("a"),
        tags("qwen3:8b"),
        text_reply("b"),
        tags("qwen3:8b"),
        text_reply("c"),
        tags("qwen3:8b"),
        text_reply("d"),
    ])
    .await;
    let h = home();
    run(
        &server,
        &h,
        &["-p", r#"/review src/main.rs "error handling" tests"#],
    )
    .await;
    assert_eq!(
        sent(&server, 0),
        "Review src/main.rs, looking for error handling tests."
    );
    // The project's template wins over the user's of the same name.
    run(&server, &h, &["-p", "/fix the parser"]).await;
    assert_eq!(sent(&server, 1), "Project fix: the parser");
    // Claude Code's commands, a subfolder as a namespace.
    run(&server, &h, &["-p", "/git:commit the parser fix"]).await;
    assert_eq!(
        sent(&server, 2),
        "Write a commit message for the parser fix."
    );
    // -np: only --prompt-template files; anything else goes as typed.
    let extra = h.join("extra.md");
    write(&extra, "Extra: $1");
    run(
        &server,
        &h,
        &[
            "-np",
            "--prompt-template",
            extra.to_str().unwrap(),
            "-p",
            "/extra one",
        ],
    )
    .await;
    assert_eq!(sent(&server, 3), "Extra: one");
}

#[tokio::test]
async fn without_templates_a_slash_line_goes_as_typed() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("a")]).await;
    let h = home();
    run(&server, &h, &["-np", "-p", "/review x"]).await;
    assert_eq!(sent(&server, 0), "/review x");
}

#[tokio::test]
async fn settings_prompts_add_files_and_folders() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("a")]).await;
    let h = home();
    write(
        &h.join("shared/prompts/standup.md"),
        "Summarise yesterday: $@",
    );
    write(
        &h.join("agent/settings.json"),
        &format!(
            r#"{{"prompts": ["{}"]}}"#,
            h.join("shared/prompts").display()
        ),
    );
    run(&server, &h, &["-p", "/standup fast"]).await;
    assert_eq!(sent(&server, 0), "Summarise yesterday: fast");
}

#[tokio::test]
async fn the_node_pis_extension_and_tool_flags_are_accepted() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("a"),
        tags("qwen3:8b"),
        text_reply("b"),
    ])
    .await;
    let h = home();
    // -e names an extension that cannot run here: said once, and the run goes on.
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &["-e", "./my-ext.ts", "-ne", "-p", "hi"],
    )
    .await;
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not loaded: ./my-ext.ts"), "{err}");
    // -nbt: no built-in tools offered.
    run(&server, &h, &["-nbt", "-p", "hi"]).await;
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert!(chats[0].body.get("tools").is_some());
    assert!(chats[1].body.get("tools").is_none(), "{}", chats[1].body);
}

/// `/api/tags` listing two models.
fn two_models() -> support::server::Reply {
    let mut r = tags("qwen3:8b");
    r.chunks = vec![support::server::Chunk::Bytes(
        serde_json::json!({"models": [{"name": "qwen3:8b"}, {"name": "llama3.2:3b"}]})
            .to_string()
            .into_bytes(),
    )];
    r
}

#[tokio::test]
async fn a_claude_commands_allowed_tools_and_model_apply_to_its_run_only() {
    use support::server::call_reply;
    let touch = |f: &str| {
        call_reply(
            "c1",
            "bash",
            &serde_json::json!({ "command": format!("touch {f}") }).to_string(),
        )
    };
    let chats_seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = chats_seen.clone();
    let server =
        TestServer::responding(std::sync::Arc::new(move |r: &support::server::Recorded| {
            if r.path == "/api/tags" {
                return two_models();
            }
            match seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => touch("by-command.txt"),
                2 => touch("by-prompt.txt"),
                _ => text_reply("done"),
            }
        }))
        .await;
    let h = home();
    write(
        &h.join("project/.claude/commands/make.md"),
        "---\nallowed-tools: Bash(touch:*), WebFetch\nmodel: llama3.2:3b\ndescription: Make a file\n---\nMake the file.",
    );
    let ask = ["--approval", "ask", "--model", "ollama/qwen3:8b"];
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &[&ask[..], &["-p", "/make"]].concat(),
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("WebFetch"), "{err}");
    assert!(h.join("project/by-command.txt").exists(), "{err}");
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats[0].body["model"], "llama3.2:3b", "{err}");
    // A plain prompt: the person's own settings again.
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &[&ask[..], &["-p", "make another"]].concat(),
    )
    .await;
    assert!(out.status.success());
    assert!(!h.join("project/by-prompt.txt").exists());
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats[2].body["model"], "qwen3:8b");
}

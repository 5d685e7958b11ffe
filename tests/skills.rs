//! Skills through the real binary: the places they are found in (the Node pi's, the Agent
//! Skills standard's and Claude Code's), what the system prompt says of them, `/skill:name`,
//! `--skill` and `-ns`, and warnings that never stop a run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::server::{TestServer, tags, text_reply};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")
}

/// A home (`home/agent` the agent folder, `home/project` the working one) with skills in
/// each kind of place.
fn home() -> std::path::PathBuf {
    let h = support::binary_home("skills");
    write(
        &h.join("agent/skills/pdf/SKILL.md"),
        &skill(
            "pdf",
            "Fill and read PDF forms",
            "Run ./fill.sh on the form.",
        ),
    );
    write(
        &h.join(".agents/skills/changelog/SKILL.md"),
        &skill(
            "changelog",
            "Write changelog entries",
            "Keep a Changelog style.",
        ),
    );
    write(
        &h.join("project/.pi/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the site\ndisable-model-invocation: true\n---\nRun make deploy.\n",
    );
    write(
        &h.join("project/.claude/skills/review/SKILL.md"),
        &skill("review", "Review code the team's way", "Check tests first."),
    );
    // Breaks the naming rules, yet loads; has no description, so does not.
    write(
        &h.join("agent/skills/Odd_Name/SKILL.md"),
        &skill("Odd_Name", "Loads with a warning", "x"),
    );
    write(
        &h.join("agent/skills/empty/SKILL.md"),
        "---\nname: empty\n---\nx",
    );
    h
}

fn chats(server: &TestServer) -> Vec<serde_json::Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .collect()
}

fn system(body: &serde_json::Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_string()
}

fn last_user(body: &serde_json::Value) -> String {
    let msgs = body["messages"].as_array().unwrap();
    msgs.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn run(server: &TestServer, h: &std::path::Path, args: &[&str]) -> String {
    let out = support::run_pi(h, &[("OLLAMA_HOST", server.url.as_str())], args).await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

#[tokio::test]
async fn the_system_prompt_names_each_skill_and_where_its_file_is() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("ok")]).await;
    let h = home();
    let err = run(&server, &h, &["-p", "hi"]).await;
    let prompt = system(&chats(&server)[0]);
    for (name, file) in [
        ("pdf", "agent/skills/pdf/SKILL.md"),
        ("changelog", ".agents/skills/changelog/SKILL.md"),
        ("review", "project/.claude/skills/review/SKILL.md"),
        ("Odd_Name", "agent/skills/Odd_Name/SKILL.md"),
    ] {
        assert!(prompt.contains(&format!("<name>{name}</name>")), "{prompt}");
        let at = h.join(file).display().to_string();
        assert!(
            prompt.contains(&format!("<location>{at}</location>")),
            "{prompt}"
        );
    }
    assert!(prompt.contains("<description>Fill and read PDF forms</description>"));
    // Only /skill:deploy uses a skill the model may not choose; the body stays out.
    assert!(!prompt.contains("deploy"), "{prompt}");
    assert!(!prompt.contains("Run ./fill.sh"), "{prompt}");
    assert!(!prompt.contains("<name>empty</name>"), "{prompt}");
    // Warnings, and the run went on.
    assert!(
        err.contains("Odd_Name") && err.contains("lowercase"),
        "{err}"
    );
    assert!(err.contains("no description"), "{err}");
}

#[tokio::test]
async fn a_skill_command_sends_its_instructions_with_the_request() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("a"),
        tags("qwen3:8b"),
        text_reply("b"),
    ])
    .await;
    let h = home();
    run(&server, &h, &["-p", "/skill:deploy to staging"]).await;
    let sent = last_user(&chats(&server)[0]);
    assert!(sent.contains("<skill name=\"deploy\""), "{sent}");
    assert!(sent.contains("Run make deploy."), "{sent}");
    assert!(sent.ends_with("User: to staging"), "{sent}");
    // With skill commands off in settings, the line goes as typed.
    write(
        &h.join("agent/settings.json"),
        r#"{"enableSkillCommands": false}"#,
    );
    run(&server, &h, &["-p", "/skill:deploy now"]).await;
    assert_eq!(last_user(&chats(&server)[1]), "/skill:deploy now");
}

#[tokio::test]
async fn no_skills_keeps_only_those_named_by_flag_and_settings_add_folders() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply("a"),
        tags("qwen3:8b"),
        text_reply("b"),
        tags("qwen3:8b"),
        text_reply("c"),
    ])
    .await;
    let h = home();
    write(
        &h.join("extra/lint/SKILL.md"),
        &skill("lint", "Lint the project", "Run the linter."),
    );
    let extra = h.join("extra/lint");
    run(
        &server,
        &h,
        &["-ns", "--skill", extra.to_str().unwrap(), "-p", "hi"],
    )
    .await;
    let prompt = system(&chats(&server)[0]);
    assert!(prompt.contains("<name>lint</name>"), "{prompt}");
    assert!(!prompt.contains("<name>pdf</name>"), "{prompt}");
    // No read tool: the model could not open a skill, so none is listed.
    run(&server, &h, &["--tools", "bash", "-p", "hi"]).await;
    assert!(!system(&chats(&server)[1]).contains("available_skills"));
    // settings.json's `skills` adds a folder of skills.
    write(
        &h.join("agent/settings.json"),
        &format!(r#"{{"skills": ["{}"]}}"#, h.join("extra").display()),
    );
    run(&server, &h, &["-p", "hi"]).await;
    let prompt = system(&chats(&server)[2]);
    assert!(prompt.contains("<name>lint</name>"), "{prompt}");
    assert!(prompt.contains("<name>pdf</name>"), "{prompt}");
}

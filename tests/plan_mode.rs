//! Plan mode through the real binary: `--plan` refuses changing tools and asks for a plan;
//! in the terminal the plan is put to the person, and accepting it leaves plan mode and has
//! the agent act on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::pty::Pty;
use support::server::{Recorded, TestServer, call_reply, tags, text_reply};

const PLAN: &str = "1. Create hello.txt with a greeting.\n2. Read it back.";

fn chat_requests(server: &TestServer) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect()
}

fn system_prompt(r: &Recorded) -> String {
    r.body["messages"][0]["content"].to_string()
}

#[tokio::test]
async fn plan_mode_refuses_a_write_and_asks_for_a_plan() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        call_reply(
            "c1",
            "write",
            &json!({"path": "x.txt", "content": "x"}).to_string(),
        ),
        text_reply(PLAN),
    ])
    .await;
    let h = support::binary_home("plan-json");
    let out = support::run_pi(
        &h,
        &[("OLLAMA_HOST", server.url.as_str())],
        &["--plan", "--mode", "json", "-p", "greet"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!h.join("project/x.txt").exists());
    let end = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], true, "{end}");
    assert!(end["result"].to_string().contains("plan mode"), "{end}");
    let asked = chat_requests(&server);
    assert!(system_prompt(&asked[0]).contains("# Plan mode"));
}

#[test]
fn a_plan_accepted_in_the_terminal_is_carried_out() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        text_reply(PLAN),
        call_reply(
            "c1",
            "write",
            &json!({"path": "hello.txt", "content": "hello\n"}).to_string(),
        ),
        text_reply("Wrote hello.txt."),
    ]));
    let home = support::pty::temp_home("plan");
    let mut pi = Pty::spawn(&home, &server, &["--plan"]);
    pi.wait_for("plan mode · approval: auto");
    pi.send(b"add a greeting file\r");
    let s = pi.wait_for("The plan is ready");
    assert!(s.contains("Create hello.txt"), "{s}");
    pi.send(b"\r");
    pi.wait_for("Wrote hello.txt.");
    let s = pi.wait_until("plan mode off in the footer", |s| {
        s.contains("approval: auto") && !s.contains("plan mode ·")
    });
    assert!(s.contains("Plan accepted"), "{s}");
    assert_eq!(
        std::fs::read_to_string(home.join("hello.txt")).unwrap(),
        "hello\n"
    );
    let asked = chat_requests(&server);
    assert!(system_prompt(&asked[0]).contains("# Plan mode"));
    assert!(!system_prompt(&asked[1]).contains("# Plan mode"));
    let sent = asked[1].body["messages"].to_string();
    assert!(
        sent.contains("Create hello.txt") && sent.contains("Carry it out now"),
        "the plan stays in context: {sent}"
    );
    assert!(pi.quit().success());
}

//! A first run with no key and no local model server: the TUI opens on a welcome that says what
//! is missing, `/login` takes a pasted key (saved in `auth.json`, 0600, never shown) and the
//! next prompt goes out with it; print mode keeps its clear error. Also what a new user sees
//! first: the start-up header and warnings inside the TUI, and Ctrl+P over `--models`. The real
//! binary in a pseudo-terminal against the local test server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use support::pty::{Pty, temp_home};
use support::server::{Reply, TestServer, text_reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_run_opens_the_tui_and_login_saves_a_key_that_is_used() {
    // No Ollama model at the probed address: the tags request is refused.
    let server = TestServer::responding(Arc::new(|r| {
        if r.path == "/api/tags" {
            Reply::error(404, "{}")
        } else {
            text_reply("Hello via groq")
        }
    }))
    .await;
    let home = temp_home("first-run");
    // Groq's address moved to the test server, as a proxy would move it.
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(
        home.join("agent/models.json"),
        format!(
            r#"{{"providers": {{"groq": {{"baseUrl": "{}/v1"}}}}}}"#,
            server.url
        ),
    )
    .unwrap();
    let mut screen = Pty::spawn(&home, &server, &[]);
    let s = screen.wait_for("Welcome to pi. No model is ready yet.");
    assert!(s.contains("/login"), "{s}");
    assert!(
        s.contains("no model yet (/login)"),
        "the header says so too: {s}"
    );
    let footer = |s: &str| {
        s.lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        footer(&s).contains("no model"),
        "the footer names no model: {s}"
    );

    screen.send(b"/login");
    screen.wait_for("/login");
    screen.send(b"\r");
    screen.wait_for("Sign in to a provider");
    screen.send(b"GROQ_API");
    screen.send(b"\r");
    screen.wait_for("API key for groq");
    screen.send(b"\x1b[200~gsk-pty-secret-key\x1b[201~");
    screen.wait_for("18 characters");
    screen.send(b"\r");
    let s = screen.wait_for("Saved the key for groq in ~/agent/auth.json");
    assert!(s.contains("model: groq/openai/gpt-oss-120b"), "{s}");
    assert!(!s.contains("gsk-pty-secret-key"), "{s}");
    let s = screen.wait_until("the footer to name the model", |s| {
        footer(s).contains("openai/gpt-oss-120b")
    });
    assert!(!footer(&s).contains("no model"), "{s}");

    screen.send(b"hi there");
    screen.wait_for("hi there");
    screen.send(b"\r");
    screen.wait_for("Hello via groq");
    let sent = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions")
        .unwrap();
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer gsk-pty-secret-key")
    );
    assert_eq!(sent.body["model"], "openai/gpt-oss-120b");

    let auth = home.join("agent/auth.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&auth).unwrap()).unwrap();
    assert_eq!(v["groq"]["type"], "api_key");
    assert_eq!(v["groq"]["key"], "gsk-pty-secret-key");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let status = screen.quit();
    assert!(status.success(), "{status:?}");
    screen.wait_restored();
    // The key is in no session file.
    for dir in std::fs::read_dir(home.join("agent/sessions")).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            assert!(!text.contains("gsk-pty-secret-key"));
        }
    }
}

#[tokio::test]
async fn print_mode_without_any_model_keeps_its_clear_error() {
    let home = temp_home("first-run-print");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .current_dir(&home)
        .args(["-p", "hi"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("No model to talk to"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_warnings_and_the_header_show_inside_the_tui() {
    let server = TestServer::start(vec![]).await;
    let home = temp_home("start-warnings");
    let mut screen = Pty::spawn(&home, &server, &["--model", "anthropic/claude-next-9"]);
    let s = screen.wait_for("not in the catalogue");
    assert!(
        s.contains("pi 0.") && s.contains("anthropic/claude-next-9"),
        "{s}"
    );
    assert!(
        s.contains("/help commands · Esc interrupt · Ctrl+D quit"),
        "{s}"
    );
    let status = screen.quit();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_p_cycles_the_models_named_by_models_in_a_pty() {
    let server = TestServer::start(vec![]).await;
    let home = temp_home("ctrl-p");
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(
        home.join("agent/config.toml"),
        format!(
            "[providers.lab]\nbase_url = \"{}/v1\"\n[[providers.lab.models]]\nid = \"coder-a\"\n\
             [[providers.lab.models]]\nid = \"coder-b\"\n",
            server.url
        ),
    )
    .unwrap();
    let mut screen = Pty::spawn(&home, &server, &["--models", "lab/*"]);
    screen.wait_for("lab/coder-a");
    screen.send(b"\x10"); // Ctrl+P
    let s = screen.wait_for("Model: lab/coder-b");
    assert!(s.contains("coder-b"), "{s}");
    screen.send(b"\x10");
    screen.wait_for("Model: lab/coder-a");
    let status = screen.quit();
    assert!(status.success(), "{status:?}");
}

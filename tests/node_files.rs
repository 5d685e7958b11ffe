//! Moving over from the Node.js pi: its `models.json`, `settings.json` and `auth.json` in the
//! agent folder are enough to run `pi -p` with no flags, keys follow its order, and the files are
//! left as they were. The real binary against the local test server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::server::{TestServer, text_reply};

fn home() -> PathBuf {
    support::binary_home("node-files")
}

fn write(home: &Path, rel: &str, text: &str) {
    let p = home.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

async fn pi(home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    support::run_pi(home, env, args).await
}

fn session_text(home: &Path) -> String {
    let mut out = String::new();
    let root = home.join("agent").join("sessions");
    for dir in std::fs::read_dir(root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            out.push_str(&std::fs::read_to_string(f.unwrap().path()).unwrap());
        }
    }
    out
}

fn models_json(server: &TestServer) -> String {
    format!(
        r#"{{
  "providers": {{
    "lab": {{
      "baseUrl": "{}/v1",
      "api": "openai-completions",
      "apiKey": "LAB_MODELS_KEY",
      "headers": {{ "x-team": "!printf blue" }},
      "compat": {{ "supportsDeveloperRole": false, "maxTokensField": "max_tokens" }},
      "models": [
        {{ "id": "lab-coder", "name": "Lab Coder", "reasoning": true, "contextWindow": 65536 }}
      ]
    }}
  }}
}}"#,
        server.url
    )
}

#[tokio::test]
async fn the_node_pis_files_alone_answer_pi_p() {
    let server = TestServer::start(vec![text_reply("hello from the lab")]).await;
    let h = home();
    let models = models_json(&server);
    let settings = r#"{"defaultProvider": "lab", "defaultModel": "lab-coder",
        "defaultThinkingLevel": "high", "packages": ["pi-skills"], "theme": "dark"}"#;
    let auth = r#"{"lab": {"type": "api_key", "key": "sk-lab-from-auth-file"}}"#;
    write(&h, "agent/models.json", &models);
    write(&h, "agent/settings.json", settings);
    write(&h, "agent/auth.json", auth);

    let out = pi(&h, &[], &["-p", "hi"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello from the lab\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].body["model"], "lab-coder");
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer sk-lab-from-auth-file"),
        "auth.json's key wins over models.json's"
    );
    assert_eq!(reqs[0].header("x-team"), Some("blue"), "a !command header");
    assert_eq!(reqs[0].body["messages"][0]["role"], "system");

    // The key is in no output and not in the session; the Node.js pi's files are untouched.
    assert!(!stderr.contains("sk-lab-from-auth-file"));
    assert!(session_text(&h).contains("lab-coder"));
    assert!(!session_text(&h).contains("sk-lab-from-auth-file"));
    let read = |f: &str| std::fs::read_to_string(h.join("agent").join(f)).unwrap();
    assert_eq!(read("models.json"), models);
    assert_eq!(read("settings.json"), settings);
    assert_eq!(read("auth.json"), auth);
    assert!(!h.join("agent/config.toml").exists());
}

#[tokio::test]
async fn keys_follow_the_node_pis_order_and_config_toml_wins_for_the_rest() {
    // Without auth.json the environment comes before models.json's apiKey …
    let server = TestServer::start(vec![text_reply("one"), text_reply("two")]).await;
    let h = home();
    let models = models_json(&server).replace(
        "\"apiKey\": \"LAB_MODELS_KEY\"",
        "\"apiKey\": \"sk-literal-in-models-json\"",
    );
    write(&h, "agent/models.json", &models);
    write(
        &h,
        "agent/settings.json",
        r#"{"defaultModel": "lab/lab-coder"}"#,
    );
    let out = pi(&h, &[], &["-p", "hi"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-literal-in-models-json")
    );
    // … and config.toml's model and key win over settings.json and models.json.
    write(
        &h,
        "agent/config.toml",
        "model = \"lab/lab-other\"\n[providers.lab]\nkey = \"sk-from-config-toml\"\n",
    );
    let out = pi(&h, &[], &["-p", "hi"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let second = &server.requests()[1];
    assert_eq!(second.body["model"], "lab-other");
    assert_eq!(
        second.header("authorization"),
        Some("Bearer sk-from-config-toml")
    );
    assert!(
        stderr.contains("not in the catalogue"),
        "an unlisted model is named: {stderr}"
    );
}

#[tokio::test]
async fn a_groq_key_alone_gets_a_default_model() {
    let server = TestServer::start(vec![text_reply("fast")]).await;
    let h = home();
    // Route the built-in provider to the test server, as a proxy would be.
    write(
        &h,
        "agent/models.json",
        &format!(
            r#"{{"providers": {{"groq": {{"baseUrl": "{}/v1"}}}}}}"#,
            server.url
        ),
    );
    let out = pi(&h, &[("GROQ_API_KEY", "gsk-test-key")], &["-p", "hi"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.requests();
    assert_eq!(reqs[0].body["model"], "openai/gpt-oss-120b");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer gsk-test-key"));
}

#[tokio::test]
async fn a_broken_node_file_is_a_clear_error() {
    let h = home();
    write(&h, "agent/settings.json", "{\n  \"defaultModel\": \n}\n");
    let out = pi(&h, &[], &["-p", "hi"]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("settings.json:3:"), "{stderr}");
}

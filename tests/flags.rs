//! The Node.js pi's documented flags: `--model` patterns, `--models`, `--export`, `--verbose`,
//! `--offline`. The real binary against the local test server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::server::{TestServer, text_reply};

fn home() -> PathBuf {
    support::binary_home("flags")
}

/// Two local providers at the test server: `lab` with two coders, `mirror` with one.
fn config(home: &Path, server: &TestServer) {
    let text = format!(
        "[providers.lab]\napi = \"openai-completions\"\nbase_url = \"{url}/v1\"\n\
         [[providers.lab.models]]\nid = \"coder-large\"\nreasoning = true\n\
         [[providers.lab.models]]\nid = \"coder-small\"\nreasoning = true\n\
         [providers.mirror]\napi = \"openai-completions\"\nbase_url = \"{url}/v1\"\n\
         [[providers.mirror.models]]\nid = \"coder-mirror\"\n",
        url = server.url
    );
    std::fs::write(home.join("agent/config.toml"), text).unwrap();
}

async fn pi(home: &Path, args: &[&str]) -> Output {
    support::run_pi(home, &[], args).await
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn model_patterns_pick_the_best_match_or_list_the_candidates() {
    let server = TestServer::start(vec![text_reply("small"), text_reply("mirror")]).await;
    let h = home();
    config(&h, &server);
    let out = pi(&h, &["--model", "small:high", "-p", "hi"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(server.requests()[0].body["model"], "coder-small");
    let out = pi(&h, &["--model", "MIRROR", "-p", "hi"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(server.requests()[1].body["model"], "coder-mirror");
    // `coder` names models of both providers: nothing is guessed, nothing is sent.
    let out = pi(&h, &["--model", "coder", "-p", "hi"]).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("lab/coder-small") && err.contains("mirror/coder-mirror"),
        "{err}"
    );
    let out = pi(&h, &["--model", "nothing-like-it", "-p", "hi"]).await;
    assert!(text(&out.stderr).contains("no model matches"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn models_scopes_cycling_and_starts_on_the_first_match() {
    let server = TestServer::start(vec![text_reply("ok"), text_reply("ok again")]).await;
    let h = home();
    config(&h, &server);
    let out = pi(
        &h,
        &[
            "--models",
            "lab/*small*:low,coder-large",
            "--verbose",
            "-p",
            "hi",
        ],
    )
    .await;
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(server.requests()[0].body["model"], "coder-small");
    assert!(
        err.contains("model: lab/coder-small (thinking low)"),
        "{err}"
    );
    assert!(err.contains("config: ~/agent/config.toml"), "{err}");
    assert!(err.contains("session: "), "{err}");
    let out = pi(&h, &["--models", "no-such-*", "--offline", "-p", "hi"]).await;
    assert!(
        text(&out.stderr).contains("`no-such-*` matches no model"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn export_writes_a_saved_session_as_html_or_markdown() {
    let server = TestServer::start(vec![text_reply("The answer is **42**.")]).await;
    let h = home();
    config(&h, &server);
    let out = pi(&h, &["--model", "lab/coder-large", "-p", "what <is> it?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = support::only_session_file(&h.join("agent"));
    let id = support::session_id_of(&file);
    let out = pi(&h, &["--export", &id[..8], "notes.md"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Exported 2 messages to ~/project/notes.md"));
    let md = std::fs::read_to_string(h.join("project/notes.md")).unwrap();
    assert!(
        md.contains("## User\n\nwhat <is> it?") && md.contains("**42**"),
        "{md}"
    );
    let out = pi(&h, &["--export", &id]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page: Vec<PathBuf> = std::fs::read_dir(h.join("project"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    assert_eq!(page.len(), 1);
    let name = page[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("pi-session-20") && name.contains('_'),
        "{name}"
    );
    let html = std::fs::read_to_string(&page[0]).unwrap();
    assert!(html.contains("what &lt;is&gt; it?") && html.contains("<strong>42</strong>"));
    let out = pi(&h, &["--export", "no-such-session"]).await;
    assert!(!out.status.success());
    assert!(!text(&out.stderr).is_empty());
}

#[tokio::test]
async fn exported_pages_keep_only_web_and_mail_links_live() {
    let server = TestServer::start(vec![text_reply(
        "See [the docs](https://example.com/docs), [click me](javascript:alert(document.cookie)), \
         [again](JaVaScRiPt:alert(2)), [encoded](&#106;avascript:alert(3)) and \
         ![pixel](data:image/png;base64,AAAA).",
    )])
    .await;
    let h = support::binary_home("flags-export-links");
    config(&h, &server);
    let out = pi(&h, &["--model", "lab/coder-large", "-p", "links?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = support::session_id_of(&support::only_session_file(&h.join("agent")));
    let out = pi(&h, &["--export", &id, "links.html"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(h.join("project/links.html")).unwrap();
    assert!(
        html.contains("<a href=\"https://example.com/docs\">the docs</a>"),
        "{html}"
    );
    assert_eq!(html.matches("<a ").count(), 1, "{html}");
    assert!(!html.contains("<img"), "{html}");
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("href=\"javascript"), "{html}");
    assert!(
        html.contains("click me [link removed: javascript:alert(document.cookie)]"),
        "{html}"
    );
}

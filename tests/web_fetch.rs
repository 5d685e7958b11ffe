//! `web_fetch` against a local HTTP server: a page read as Markdown through the real binary,
//! a redirect loop, a huge page, a slow page, and the approval rules that let it through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use pi::tools::web_fetch::Fetcher;
use serde_json::json;
use support::server::{Chunk, Recorded, Reply, TestServer, call_reply, tags, text_reply};

fn page(content_type: &str, body: &str) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        chunks: vec![Chunk::Bytes(body.as_bytes().to_vec())],
    }
}

const HTML: &str = "<html><head><title>Install guide</title><script>steal()</script></head>\
    <body><h1>Installing</h1><p>Run <code>cargo install pi</code>.</p></body></html>";

/// A server for pages and for the model: `/page`, `/loop` (redirects to itself), `/huge`,
/// `/slow`; chat requests call web_fetch on `target` once, then answer.
fn site(target: &'static str) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    move |r: &Recorded| match r.path.as_str() {
        "/api/tags" => tags("qwen3:8b"),
        "/page" => page("text/html; charset=utf-8", HTML),
        "/loop" => Reply {
            status: 302,
            headers: vec![("location".into(), "/loop".into())],
            chunks: vec![],
        },
        "/huge" => page("text/plain", &"line of text\n".repeat(600_000)),
        "/slow" => Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
            chunks: vec![
                Chunk::Delay(Duration::from_secs(5)),
                Chunk::Bytes(b"late".to_vec()),
            ],
        },
        _ => {
            let answered = r.body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            if answered {
                text_reply("read it")
            } else {
                let host = r.header("host").unwrap_or("127.0.0.1").to_string();
                call_reply(
                    "w1",
                    "web_fetch",
                    &json!({ "url": format!("http://{host}{target}") }).to_string(),
                )
            }
        }
    }
}

fn tool_result(server: &TestServer) -> String {
    server
        .requests()
        .into_iter()
        .rfind(|r| r.path.ends_with("/chat/completions"))
        .and_then(|r| {
            r.body["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool").cloned())
        })
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

async fn run(server: &TestServer, h: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--tools", "read,web_fetch"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-p", "read the docs"]);
    support::run_pi(h, &[("OLLAMA_HOST", server.url.as_str())], &args).await
}

#[tokio::test]
async fn a_page_is_read_as_markdown_without_its_scripts() {
    let server = TestServer::responding(Arc::new(site("/page"))).await;
    let h = support::binary_home("web-page");
    let out = run(&server, &h, &[]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = tool_result(&server);
    assert!(result.starts_with("# Install guide"), "{result}");
    assert!(result.contains("# Installing"), "{result}");
    assert!(result.contains("`cargo install pi`"), "{result}");
    assert!(!result.contains("steal"), "{result}");
    // No key or cookie went with the page request.
    let get = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/page")
        .unwrap();
    assert!(get.header("authorization").is_none() && get.header("cookie").is_none());
}

#[tokio::test]
async fn a_redirect_loop_and_a_huge_page_end_in_words_the_model_can_use() {
    let server = TestServer::responding(Arc::new(site("/loop"))).await;
    let h = support::binary_home("web-loop");
    let out = run(&server, &h, &[]).await;
    assert!(out.status.success());
    let result = tool_result(&server);
    assert!(result.contains("redirects"), "{result}");

    let server = TestServer::responding(Arc::new(site("/huge"))).await;
    let out = run(&server, &h, &[]).await;
    assert!(out.status.success());
    let result = tool_result(&server);
    assert!(
        result.contains("longer than pi reads"),
        "{}",
        &result[result.len() - 300..]
    );
    assert!(
        result.contains("Cut at"),
        "{}",
        &result[result.len() - 300..]
    );
    assert!(result.len() < 60_000, "{}", result.len());
}

#[tokio::test]
async fn a_slow_page_times_out() {
    let server = TestServer::responding(Arc::new(site("/slow"))).await;
    let fetcher = pi::provider::web::HttpFetcher::with_limit(Duration::from_millis(300)).unwrap();
    let started = std::time::Instant::now();
    let err = fetcher
        .fetch(&format!("{}/slow", server.url))
        .await
        .unwrap_err();
    assert!(err.contains("no whole answer within 0.3 s"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn read_only_refuses_it_unless_a_rule_allows_the_address() {
    let server = TestServer::responding(Arc::new(site("/page"))).await;
    let h = support::binary_home("web-approval");
    let out = run(&server, &h, &["--approval", "read-only"]).await;
    assert!(out.status.success());
    assert!(
        tool_result(&server).contains("read-only"),
        "{}",
        tool_result(&server)
    );
    std::fs::write(
        h.join("agent/config.toml"),
        "[approval]\nallow = [\"web_fetch:127.0.0.1:*/page\"]\n",
    )
    .unwrap();
    let out = run(&server, &h, &["--approval", "read-only"]).await;
    assert!(out.status.success());
    assert!(
        tool_result(&server).contains("# Installing"),
        "{}",
        tool_result(&server)
    );
}

#[tokio::test]
async fn web_search_with_a_model_that_has_none_says_so() {
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("hello")]).await;
    let h = support::binary_home("web-search-none");
    std::fs::write(h.join("agent/config.toml"), "web_search = true\n").unwrap();
    let out = support::run_pi(&h, &[("OLLAMA_HOST", server.url.as_str())], &["-p", "hi"]).await;
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("web search is unavailable with ollama/qwen3:8b"),
        "{err}"
    );
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("web_search")),
        "nothing about it reaches a server that has none"
    );
}

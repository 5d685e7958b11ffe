//! MCP servers as tools: small servers built with rmcp's server side, over stdio (this test
//! binary re-run as a child) and streamable HTTP on 127.0.0.1, reached through `pi::mcp` and,
//! at the end, through the real `pi` binary in print mode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_support;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_support::{LONG_TOOL, PNG_1X1, configs, scratch, start_http, stdio_toml};
use pi::agent::policy::validate::validate_arguments;
use pi::agent::protocol::tool::{
    AgentTool, Concurrency, ProgressSink, RegisteredTool, ToolCallContext, ToolError,
    ToolInvocation, ToolOutput,
};
use pi::agent::protocol::types::ContentBlock;
use pi::mcp::manager::{Environment, McpManager, ServerState};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Not a test: the stdio MCP server, when this binary is re-run as one.
#[test]
fn stdio_server_entry() {
    if std::env::var_os(mcp_support::SERVER_ENV).is_some() {
        mcp_support::run_stdio_server();
    }
}

fn env() -> Environment {
    Environment {
        vars: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        lookup: Arc::new(|k| (k == "TEST_MCP_TOKEN").then(|| "sekrit".to_string())),
        cwd: std::env::temp_dir(),
        limits: Default::default(),
    }
}

/// Start the servers of `toml` and wait (at most 20 s) until none is starting.
async fn started(toml: &str) -> McpManager {
    let m = McpManager::start(configs(toml), env(), None);
    tokio::time::timeout(Duration::from_secs(20), m.wait_started())
        .await
        .expect("servers still starting after 20 s");
    m
}

fn tool(m: &McpManager, name: &str) -> Arc<dyn AgentTool> {
    m.tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn invocation(args: Value, cancel: CancellationToken) -> ToolInvocation {
    ToolInvocation {
        tool_call_id: "call_1".into(),
        args,
        cancel,
        steering: CancellationToken::new(),
        progress: ProgressSink::discard(),
        context: ToolCallContext {
            batch_id: "b".into(),
            index: 0,
            total: 1,
            tool_calls: Arc::from(vec![("call_1".to_string(), "t".to_string())]),
        },
    }
}

async fn call(t: &Arc<dyn AgentTool>, args: Value) -> Result<ToolOutput, ToolError> {
    t.execute(invocation(args, CancellationToken::new())).await
}

fn text_of(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn stdio_tools_are_listed_with_names_and_schemas() {
    let m = started(&stdio_toml("t", "normal", "")).await;
    let st = m.status();
    assert_eq!(st.len(), 1);
    assert_eq!(st[0].state, ServerState::Ready, "{st:?}");
    let names: Vec<String> = m.tools().iter().map(|t| t.name().to_string()).collect();
    for n in [
        "mcp__t__echo",
        "mcp__t__image",
        "mcp__t__draft7",
        "mcp__t__remote_ref",
    ] {
        assert!(names.contains(&n.to_string()), "{names:?}");
    }
    assert_eq!(names.len(), 15, "{names:?}");
    for n in &names {
        assert!(n.len() <= 64 && n.starts_with("mcp__t__"), "{n}");
        assert!(
            n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
    let long = st[0].tools.iter().find(|t| t.remote == LONG_TOOL).unwrap();
    assert_eq!(long.name.len(), 64);
    assert_eq!(long.name, pi::mcp::naming::tool_name("t", LONG_TOOL));

    let echo = tool(&m, "mcp__t__echo");
    assert_eq!(echo.description(), "Say the text back.");
    assert_eq!(echo.parameters()["required"], json!(["text"]));
    assert!(matches!(
        echo.concurrency(&json!({})),
        Ok(Concurrency::Exclusive)
    ));
    let d7 = tool(&m, "mcp__t__draft7");
    assert_eq!(
        d7.parameters()["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert!(!d7.lenient_validation());
    m.shutdown();
}

#[tokio::test]
async fn calls_map_text_images_structured_content_and_error_results() {
    let m = started(&stdio_toml("t", "normal", "")).await;
    let out = call(&tool(&m, "mcp__t__echo"), json!({"text": "ping"}))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(text_of(&out), "ping");

    let out = call(&tool(&m, "mcp__t__image"), json!({})).await.unwrap();
    assert_eq!(out.content.len(), 2);
    let ContentBlock::Image(img) = &out.content[1] else {
        panic!("not an image: {out:?}")
    };
    assert_eq!(
        (img.data.as_str(), img.mime_type.as_str()),
        (PNG_1X1, "image/png")
    );

    let out = call(&tool(&m, "mcp__t__structured"), json!({}))
        .await
        .unwrap();
    let parsed: Value = serde_json::from_str(&text_of(&out)).unwrap();
    assert_eq!(parsed, json!({"temperature": 21.5, "unit": "C"}));

    let out = call(&tool(&m, "mcp__t__fail"), json!({})).await.unwrap();
    assert!(out.is_error);
    assert_eq!(text_of(&out), "it broke");

    let out = call(&tool(&m, "mcp__t__env"), json!({})).await.unwrap();
    assert_eq!(text_of(&out), "from-config", "the server's env reaches it");
    let out = call(
        &tool(&m, &pi::mcp::naming::tool_name("t", LONG_TOOL)),
        json!({}),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&out), "long", "the server gets its own tool name");
    m.shutdown();
}

#[tokio::test]
async fn draft07_and_remote_ref_schemas_validate_without_fetching() {
    let m = started(&stdio_toml("t", "normal", "")).await;
    let d7 = RegisteredTool::new(tool(&m, "mcp__t__draft7"));
    assert!(d7.validator().is_ok());
    assert!(validate_arguments(&d7, &json!({"q": "x"})).is_ok());
    let err = validate_arguments(&d7, &json!({"q": "x", "extra": 1})).unwrap_err();
    assert!(err.contains("extra") || err.contains("additional"), "{err}");

    let remote = tool(&m, "mcp__t__remote_ref");
    assert!(remote.lenient_validation());
    assert_eq!(remote.parameters()["properties"]["cfg"], json!({}));
    let reg = RegisteredTool::new(remote.clone());
    let started = Instant::now();
    assert!(reg.validator().is_ok());
    assert!(validate_arguments(&reg, &json!({"cfg": {"a": 1}})).is_ok());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "nothing was fetched"
    );
    let out = call(&remote, json!({"cfg": {"a": 1}})).await.unwrap();
    assert_eq!(text_of(&out), "cfg={\"a\":1}");
    m.shutdown();
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_an_error_result_and_a_notice() {
    let m = started(&stdio_toml("t", "normal", "")).await;
    let mut notices = m.take_notices().unwrap();
    let t0 = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        call(&tool(&m, "mcp__t__crash"), json!({})),
    )
    .await
    .expect("the call hung")
    .unwrap();
    assert!(out.is_error, "{out:?}");
    assert!(text_of(&out).contains("stopped"), "{}", text_of(&out));
    assert!(t0.elapsed() < Duration::from_secs(5));
    let n = tokio::time::timeout(Duration::from_secs(5), notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(n.contains("`t` stopped"), "{n}");
    assert!(m.tools().is_empty(), "a dead server's tools are withdrawn");
    assert!(matches!(&m.status()[0].state, ServerState::Failed(w) if w.starts_with("stopped")));
}

/// The big tool's reply over a limit of 1 MiB fails the call at once (not after the 600 s tool
/// timeout), says so, and leaves the server working.
async fn a_reply_over_the_limit_fails_at_once(m: &McpManager, prefix: &str) {
    let big = tool(m, &format!("{prefix}big"));
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        call(&big, json!({"bytes": 2_000_000})),
    )
    .await
    .expect("the call waited instead of failing")
    .unwrap();
    assert!(out.is_error, "{out:?}");
    let text = text_of(&out);
    assert!(text.contains("max_reply_bytes"), "{text}");
    assert!(text.contains("1 MB"), "{text}");
    // Within the limit, the text is cut to the tools' output limits with the usual notice.
    let out = call(&big, json!({"bytes": 500_000})).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    let text = text_of(&out);
    assert!(text.len() < 52 * 1024, "{}", text.len());
    assert!(text.starts_with("line        1 ---"), "{text:.100}");
    assert!(
        text.ends_with(
            "[Lines 1-512 of 5000 shown (50 KB limit). The rest of the result (488.3 KB in all) \
             was left out: ask the tool for less, such as a narrower query, a page or a range.]"
        ),
        "{}",
        &text[text.len() - 300..]
    );
    let out = call(
        &tool(m, &format!("{prefix}echo")),
        json!({"text": "still here"}),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&out), "still here");
}

#[tokio::test]
async fn a_stdio_reply_over_the_size_limit_is_an_error_at_once() {
    let m = started(&stdio_toml(
        "t",
        "normal",
        "tool_timeout_sec = 600\nmax_reply_bytes = 1048576",
    ))
    .await;
    a_reply_over_the_limit_fails_at_once(&m, "mcp__t__").await;
    m.shutdown();
}

#[tokio::test]
async fn an_http_reply_over_the_size_limit_is_an_error_at_once() {
    let url = start_http().await;
    let m = started(&format!(
        "[mcp_servers.web]\nurl = \"{url}\"\ntool_timeout_sec = 600\nmax_reply_bytes = 1048576\n"
    ))
    .await;
    a_reply_over_the_limit_fails_at_once(&m, "mcp__web__").await;
    m.shutdown();
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_tool_timeout() {
    let m = started(&stdio_toml("t", "normal", "tool_timeout_sec = 0.5")).await;
    let t0 = Instant::now();
    let out = call(&tool(&m, "mcp__t__hang"), json!({})).await.unwrap();
    assert!(out.is_error);
    assert!(
        text_of(&out).contains("no answer within 0.5 s"),
        "{}",
        text_of(&out)
    );
    assert!(t0.elapsed() < Duration::from_secs(3));
    // The server is still there for the next call.
    let out = call(&tool(&m, "mcp__t__echo"), json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(text_of(&out), "still here");
    m.shutdown();
}

#[tokio::test]
async fn abort_cancels_a_running_call_promptly_and_tells_the_server() {
    let m = started(&stdio_toml("t", "normal", "")).await;
    let dir = scratch("abort");
    let marker = dir.join("marker");
    let cancel = CancellationToken::new();
    let t = tool(&m, "mcp__t__slow");
    let args = json!({"marker": marker.display().to_string()});
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { t.execute(invocation(args, cancel)).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t0 = Instant::now();
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(2), running)
        .await
        .expect("abort did not stop the call")
        .unwrap();
    assert!(out.is_err(), "{out:?}");
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
    // notifications/cancelled reached the server, which stopped its work.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !marker.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "cancelled");
    m.shutdown();
}

#[tokio::test]
async fn disabled_servers_and_tool_filters_are_honoured() {
    let toml = format!(
        "{}{}",
        stdio_toml(
            "a",
            "normal",
            "enabled_tools = [\"echo\", \"fail\", \"crash\"]\ndisabled_tools = [\"crash\"]"
        ),
        stdio_toml("b", "normal", "enabled = false"),
    );
    let m = started(&toml).await;
    let names: Vec<String> = m.tools().iter().map(|t| t.name().to_string()).collect();
    assert_eq!(names, ["mcp__a__echo", "mcp__a__fail"]);
    let st = m.status();
    assert_eq!(st[1].name, "b");
    assert_eq!(st[1].state, ServerState::Disabled);
    m.shutdown();
}

#[tokio::test]
async fn servers_that_cannot_start_are_notices_within_their_timeout() {
    let toml = format!(
        "[mcp_servers.missing]\ncommand = \"/nonexistent/pi-test-mcp\"\n{}{}",
        stdio_toml("dies", "die_at_start", ""),
        stdio_toml("slow", "slow_start", "startup_timeout_sec = 1"),
    );
    let t0 = Instant::now();
    let m = McpManager::start(configs(&toml), env(), None);
    assert!(
        t0.elapsed() < Duration::from_millis(100),
        "start never blocks"
    );
    let mut notices = m.take_notices().unwrap();
    tokio::time::timeout(Duration::from_secs(10), m.wait_started())
        .await
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let st = m.status();
    let why = |i: usize| match &st[i].state {
        ServerState::Failed(w) => w.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(st[0].name, "dies");
    assert!(
        why(0).contains("boom: the server's settings are missing"),
        "{}",
        why(0)
    );
    assert!(
        why(1).contains("cannot run `/nonexistent/pi-test-mcp`"),
        "{}",
        why(1)
    );
    assert!(why(2).contains("did not start within 1 s"), "{}", why(2));
    let mut all = Vec::new();
    while let Ok(n) = notices.try_recv() {
        all.push(n);
    }
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(m.tools().is_empty());
    m.shutdown();
}

#[tokio::test]
async fn streamable_http_servers_get_the_bearer_token_and_headers() {
    let url = start_http().await;
    let toml = format!(
        "[mcp_servers.web]\nurl = \"{url}\"\nbearer_token_env_var = \"TEST_MCP_TOKEN\"\n\
         http_headers = {{ \"X-Team\" = \"core\" }}\n\
         [mcp_servers.nokey]\nurl = \"{url}\"\nbearer_token_env_var = \"UNSET_VAR\"\n"
    );
    let m = started(&toml).await;
    let st = m.status();
    assert!(
        matches!(&st[0].state, ServerState::Failed(w) if w.contains("UNSET_VAR")),
        "{st:?}"
    );
    assert_eq!(st[1].state, ServerState::Ready, "{st:?}");
    let out = call(&tool(&m, "mcp__web__echo"), json!({"text": "over http"}))
        .await
        .unwrap();
    assert_eq!(text_of(&out), "over http");
    let out = call(&tool(&m, "mcp__web__headers"), json!({}))
        .await
        .unwrap();
    assert_eq!(text_of(&out), "auth=Bearer sekrit team=core");
    let out = call(&tool(&m, "mcp__web__image"), json!({})).await.unwrap();
    assert!(matches!(out.content[1], ContentBlock::Image(_)));
    m.shutdown();
}

/// `pi -p PROMPT` run in `home` (its agent folder `home/agent`) against the model server at
/// `url`, with nothing of this process's environment but PATH; at most 30 s.
async fn print_mode(home: &std::path::Path, url: &str, prompt: &str) -> std::process::Output {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", url)
        .current_dir(home)
        .args(["-p", prompt])
        .stdin(std::process::Stdio::null())
        .output();
    tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn print_mode_offers_mcp_tools_and_sends_their_results_back() {
    use support::server::{Reply, TestServer, chunk, raw_data, tags, text_reply};
    let call_reply = Reply::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_m", "function": {"name": "mcp__t__echo", "arguments": "{\"text\":\"ping from the model\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        raw_data("[DONE]"),
    ]);
    let server =
        TestServer::start(vec![tags("qwen3:8b"), call_reply, text_reply("all done")]).await;
    let home = scratch("print");
    std::fs::create_dir_all(home.join("agent")).unwrap();
    let toml = format!(
        "{}\n[mcp_servers.missing]\ncommand = \"/nonexistent/pi-test-mcp\"\n",
        stdio_toml("t", "normal", "")
    );
    std::fs::write(home.join("agent/config.toml"), toml).unwrap();
    let out = print_mode(&home, &server.url, "use the echo tool").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "all done\n");
    assert!(
        stderr.contains("MCP server `missing` failed to start"),
        "{stderr}"
    );
    let reqs = server.requests();
    let chats: Vec<_> = reqs
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chats.len(), 2);
    // The first request already offers the server's tools, with their schemas.
    let tools = chats[0].body["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__t__echo")
        .unwrap_or_else(|| panic!("{tools:?}"));
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));
    assert!(tools.iter().any(|t| t["function"]["name"] == "read"));
    // The result goes back with the next request.
    let msgs = chats[1].body["messages"].as_array().unwrap();
    let result = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "call_m");
    assert!(
        result["content"]
            .to_string()
            .contains("ping from the model"),
        "{result}"
    );
}

/// The tool results of the one session saved under `home/agent/sessions`.
fn saved_tool_results(home: &std::path::Path) -> Vec<Value> {
    let mut stack = vec![home.join("agent/sessions")];
    let mut results = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                for line in std::fs::read_to_string(&p).unwrap().lines() {
                    let v: Value = serde_json::from_str(line).unwrap();
                    if v["message"]["role"] == "toolResult" {
                        results.push(v["message"].clone());
                    }
                }
            }
        }
    }
    results
}

#[tokio::test]
async fn what_an_mcp_tool_changes_is_recorded_for_rewind_unless_it_is_read_only() {
    use support::server::{Reply, TestServer, chunk, raw_data, tags, text_reply};
    let home = scratch("checkpoint");
    std::fs::create_dir_all(home.join("agent")).unwrap();
    let made = home.join("made/by/mcp.txt");
    let calls = Reply::sse(vec![
        chunk(
            json!({"tool_calls": [
                {"index": 0, "id": "call_t", "function": {"name": "mcp__t__touch", "arguments": json!({"path": made}).to_string()}},
                {"index": 1, "id": "call_s", "function": {"name": "mcp__t__sneak", "arguments": json!({"path": home.join("sneaked.txt")}).to_string()}}
            ]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        raw_data("[DONE]"),
    ]);
    let server = TestServer::start(vec![tags("qwen3:8b"), calls, text_reply("made it")]).await;
    std::fs::write(
        home.join("agent/config.toml"),
        stdio_toml("t", "normal", ""),
    )
    .unwrap();
    let out = print_mode(&home, &server.url, "make a file").await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "made by mcp");
    let results = saved_tool_results(&home);
    let of = |name: &str| {
        results
            .iter()
            .find(|r| r["toolName"] == name)
            .unwrap_or_else(|| panic!("{results:?}"))
    };
    // The file the tool made, with the folders made for it.
    let files = &of("mcp__t__touch")["details"]["checkpoint"]["files"];
    let root = std::fs::canonicalize(&home).unwrap();
    assert_eq!(
        files[0]["path"].as_str(),
        Some(root.join("made/by/mcp.txt").to_str().unwrap()),
        "{files}"
    );
    assert_eq!(files[0]["before"], Value::Null, "{files}");
    if std::fs::metadata(&home).and_then(|m| m.created()).is_ok() {
        assert_eq!(
            files[0]["newFolder"].as_str(),
            Some(root.join("made").to_str().unwrap()),
            "{files}"
        );
    }
    assert_eq!(files.as_array().map(Vec::len), Some(1), "{files}");
    // A tool its server marks read-only is not watched (here the server is wrong: its write
    // is not recorded).
    assert!(home.join("sneaked.txt").exists());
    assert_eq!(of("mcp__t__sneak")["details"].get("checkpoint"), None);
}

#[tokio::test]
async fn print_mode_waits_for_a_slow_server_no_longer_than_its_startup_timeout() {
    use support::server::{TestServer, tags, text_reply};
    let server = TestServer::start(vec![tags("qwen3:8b"), text_reply("fine")]).await;
    let home = scratch("print-slow");
    std::fs::create_dir_all(home.join("agent")).unwrap();
    std::fs::write(
        home.join("agent/config.toml"),
        stdio_toml("slow", "slow_start", "startup_timeout_sec = 1"),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = print_mode(&home, &server.url, "hello").await;
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fine\n");
    assert!(
        stderr.contains("MCP server `slow` failed to start: did not start within 1 s"),
        "{stderr}"
    );
    assert!(
        took >= Duration::from_millis(900),
        "it waited for the server: {took:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "but not past its timeout: {took:?}"
    );
    let chats = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(chats, 1);
}

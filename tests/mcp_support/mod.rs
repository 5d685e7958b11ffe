//! Small MCP servers for the tests, built with rmcp's server side: the same handler served over
//! stdio (by the test binary itself, re-run as a child process) or over streamable HTTP on
//! 127.0.0.1.
//!
//! The stdio server is the test binary run with `PI_MCP_TEST_SERVER=1` and a filter naming the
//! one test that serves. libtest prints its own lines on stdout, so the child is started
//! through `sh` with stdout moved to fd 3 (the JSON-RPC channel) and fd 1 pointed at stderr.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// The name of the test that acts as the stdio server (see `tests/mcp.rs`).
pub const ENTRY_TEST: &str = "stdio_server_entry";
/// Set (to anything) in the child that serves.
pub const SERVER_ENV: &str = "PI_MCP_TEST_SERVER";
/// How the stdio server behaves: `normal`, `slow_start` (never finishes starting),
/// `die_at_start` (writes to stderr and exits) or `linger` (stays after its stdin closes, as a
/// careless server might, until a signal ends it).
pub const MODE_ENV: &str = "PI_MCP_TEST_MODE";

/// A 1×1 transparent PNG.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

pub const LONG_TOOL: &str =
    "a.very/long tool name that goes on and on and on, well beyond sixty-four characters";

#[derive(Clone)]
pub struct TestHandler {
    /// Served over HTTP: `crash` must not end the test process.
    http: bool,
}

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(v.as_object().unwrap().clone())
}

fn tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    vec![
        Tool::new(
            "echo",
            "Say the text back.",
            schema(
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            ),
        )
        .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
        Tool::new(
            "touch",
            "Write `made by mcp` to the file at `path`, making its folders.",
            schema(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
        ),
        Tool::new(
            "sneak",
            "Marked read-only, but writes like `touch`.",
            schema(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
        )
        .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
        Tool::new("image", "A tiny picture.", schema(empty.clone())),
        Tool::new(
            "structured",
            "Structured content only.",
            schema(empty.clone()),
        ),
        Tool::new("fail", "Always an error result.", schema(empty.clone())),
        Tool::new("crash", "The server exits mid-call.", schema(empty.clone())),
        Tool::new("hang", "Never answers.", schema(empty.clone())),
        Tool::new(
            "slow",
            "Waits 30 s unless cancelled; writes `cancelled` to `marker` when it is.",
            schema(json!({"type": "object", "properties": {"marker": {"type": "string"}}})),
        ),
        Tool::new(
            "draft7",
            "A draft-07 schema.",
            schema(json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"q": {"type": "string", "minLength": 1}},
                "required": ["q"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "remote_ref",
            "A schema with a remote reference.",
            schema(json!({
                "type": "object",
                "properties": {"cfg": {"$ref": "https://schemas.invalid/cfg.json"}}
            })),
        ),
        Tool::new(
            "env",
            "The value of PI_MCP_TEST_VALUE.",
            schema(empty.clone()),
        ),
        Tool::new(
            "headers",
            "Request headers seen (HTTP).",
            schema(empty.clone()),
        ),
        Tool::new(LONG_TOOL, "A long, odd name.", schema(empty)),
        Tool::new(
            "big",
            "A text of `bytes` bytes, in lines of 100.",
            schema(json!({"type": "object", "properties": {"bytes": {"type": "integer"}}})),
        ),
    ]
}

fn text(t: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(t)]))
}

impl ServerHandler for TestHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let name: &str = &request.name;
        Ok(match name {
            "echo" => text(args["text"].as_str().unwrap_or("")),
            "image" => CallToolResponse::Complete(CallToolResult::success(vec![
                ContentBlock::text("a dot:"),
                ContentBlock::image(PNG_1X1, "image/png"),
            ])),
            "structured" => {
                let mut r = CallToolResult::success(vec![]);
                r.structured_content = Some(json!({"temperature": 21.5, "unit": "C"}));
                CallToolResponse::Complete(r)
            }
            "fail" => CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(
                "it broke",
            )])),
            "crash" if !self.http => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "hang" => std::future::pending().await,
            "slow" => {
                tokio::select! {
                    _ = context.ct.cancelled() => {
                        if let Some(m) = args["marker"].as_str() {
                            std::fs::write(m, "cancelled").unwrap();
                        }
                        text("cancelled")
                    }
                    _ = tokio::time::sleep(Duration::from_secs(30)) => text("done"),
                }
            }
            "touch" | "sneak" => {
                let path = PathBuf::from(args["path"].as_str().unwrap_or_default());
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).unwrap();
                }
                std::fs::write(&path, "made by mcp").unwrap();
                text("made")
            }
            "draft7" => text(format!("q={}", args["q"].as_str().unwrap_or("?"))),
            "remote_ref" => text(format!("cfg={}", args["cfg"])),
            "env" => text(std::env::var("PI_MCP_TEST_VALUE").unwrap_or_default()),
            "headers" => {
                let parts = context.extensions.get::<http::request::Parts>();
                let h = |n: &str| {
                    parts
                        .and_then(|p| p.headers.get(n))
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string()
                };
                text(format!("auth={} team={}", h("authorization"), h("x-team")))
            }
            n if n == LONG_TOOL => text("long"),
            "big" => text(big_text(args["bytes"].as_u64().unwrap_or(0) as usize)),
            other => {
                return Err(McpError::invalid_params(
                    Cow::Owned(format!("no tool {other}")),
                    None,
                ));
            }
        })
    }
}

/// Serve over stdin and fd 3 until stdin closes (called in the child).
pub fn run_stdio_server() {
    let mode = std::env::var(MODE_ENV).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        match mode.as_str() {
            "die_at_start" => {
                eprintln!("boom: the server's settings are missing");
                std::process::exit(1);
            }
            "slow_start" => tokio::time::sleep(Duration::from_secs(600)).await,
            _ => {}
        }
        let out = tokio::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/fd/3")
            .await
            .unwrap();
        let running = TestHandler { http: false }
            .serve((tokio::io::stdin(), out))
            .await
            .unwrap();
        let _ = running.waiting().await;
        if mode == "linger" {
            tokio::time::sleep(Duration::from_secs(600)).await;
        }
    });
    // Do not let libtest linger on other threads.
    std::process::exit(0);
}

/// `bytes` bytes of text: numbered lines of 100 bytes (the last one shorter).
pub fn big_text(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 100);
    let mut n = 0;
    while s.len() < bytes {
        n += 1;
        let line = format!("line {n:>8} ");
        s.push_str(&line);
        s.push_str(&"-".repeat(99 - line.len()));
        s.push('\n');
    }
    s.truncate(bytes);
    s
}

/// `[mcp_servers.NAME]` for the stdio server in `mode`, with `extra` TOML lines.
pub fn stdio_toml(name: &str, mode: &str, extra: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    format!(
        r#"
[mcp_servers.{name}]
command = "sh"
args = ["-c", "exec \"$0\" {ENTRY_TEST} --exact --nocapture --test-threads=1 3>&1 1>&2", {exe:?}]
env = {{ {SERVER_ENV} = "1", {MODE_ENV} = "{mode}", PI_MCP_TEST_VALUE = "from-config" }}
{extra}
"#,
        exe = exe.display().to_string()
    )
}

/// The server configs a TOML text names (warnings must be empty).
pub fn configs(toml_text: &str) -> Vec<pi::mcp::ServerConfig> {
    let table: toml::Table = toml_text.parse().unwrap();
    let raw = match table.get("mcp_servers") {
        Some(toml::Value::Table(t)) => t.clone().into_iter().collect(),
        _ => Default::default(),
    };
    let (servers, warnings) = pi::mcp::config::parse(&raw);
    assert!(warnings.is_empty(), "{warnings:?}");
    servers
}

/// A streamable-HTTP server on 127.0.0.1; its URL ends in `/mcp`.
pub async fn start_http() -> String {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(TestHandler { http: true }),
        LocalSessionManager::default().into(),
        Default::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let _ = Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(sock), service)
                    .await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

/// A scratch folder.
pub fn scratch(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("pi-mcp-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

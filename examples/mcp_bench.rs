//! Measurements for MCP servers (run by `bench/mcp.sh`).
//!
//! `mcp_bench serve [DELAY_MS]`: a stdio MCP server with one `echo` tool, answering after
//! DELAY_MS of start-up (a server that takes a while to launch, as `npx` ones do).
//!
//! `mcp_bench overhead [CALLS]`: what pi's MCP path adds to a call beyond the server's own
//! time. The same echo server (in this process over an in-memory pipe, then as a stdio child)
//! is called CALLS times directly through the rmcp client and CALLS times through pi's tool
//! adapter (`pi::mcp::tool::McpTool`: argument map, timeout and abort watch, result to JSON,
//! content mapping), interleaved; medians and means are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use pi::agent::protocol::tool::{AgentTool, ProgressSink, ToolCallContext, ToolInvocation};
use pi::mcp::client::Link;
use pi::mcp::tool::McpTool;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct Echo;

fn echo_tool() -> Tool {
    let schema =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    Tool::new(
        "echo",
        "Say the text back.",
        Arc::new(schema.as_object().unwrap().clone()),
    )
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![echo_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bench", "0"),
    )
}

fn invocation(args: Value) -> ToolInvocation {
    ToolInvocation {
        tool_call_id: "c".into(),
        args,
        cancel: CancellationToken::new(),
        steering: CancellationToken::new(),
        progress: ProgressSink::discard(),
        context: ToolCallContext {
            batch_id: "b".into(),
            index: 0,
            total: 1,
            tool_calls: Arc::from(vec![("c".to_string(), "echo".to_string())]),
        },
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn mean(v: &[Duration]) -> Duration {
    v.iter().sum::<Duration>() / v.len() as u32
}

async fn measure(label: &str, peer: Peer<RoleClient>, calls: usize) {
    let link = Arc::new(Link::new(
        "bench".into(),
        Duration::from_secs(60),
        Default::default(),
        peer.clone(),
    ));
    let adapter = McpTool::new("mcp__bench__echo".into(), &echo_tool(), link);
    let args = json!({"text": "hello from the benchmark"});
    // Warm up both paths.
    for _ in 0..50 {
        let params =
            CallToolRequestParams::new("echo").with_arguments(args.as_object().unwrap().clone());
        peer.call_tool(params).await.unwrap();
        adapter.execute(invocation(args.clone())).await.unwrap();
    }
    let (mut direct, mut through) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        let t = Instant::now();
        let params =
            CallToolRequestParams::new("echo").with_arguments(args.as_object().unwrap().clone());
        let r = peer.call_tool(params).await.unwrap();
        direct.push(t.elapsed());
        assert_ne!(r.is_error, Some(true));
        let t = Instant::now();
        let out = adapter.execute(invocation(args.clone())).await.unwrap();
        through.push(t.elapsed());
        assert!(!out.is_error);
    }
    let (md, mt) = (median(direct.clone()), median(through.clone()));
    let (ad, at) = (mean(&direct), mean(&through));
    println!("{label}, {calls} calls each (interleaved):");
    println!(
        "  rmcp client directly : median {:>8.1} µs, mean {:>8.1} µs",
        us(md),
        us(ad)
    );
    println!(
        "  through pi's adapter : median {:>8.1} µs, mean {:>8.1} µs",
        us(mt),
        us(at)
    );
    println!(
        "  overhead             : median {:>+8.1} µs, mean {:>+8.1} µs   [target <= 2000 µs]",
        us(mt) - us(md),
        us(at) - us(ad)
    );
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

async fn overhead(calls: usize) {
    // In this process, over an in-memory pipe: the server costs next to nothing.
    let (a, b) = tokio::io::duplex(1 << 20);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    tokio::spawn(async move {
        let s = Echo.serve((ar, aw)).await.unwrap();
        let _ = s.waiting().await;
    });
    let client = client_config().serve((br, bw)).await.unwrap();
    measure("in-process echo server", client.peer().clone(), calls).await;

    // A stdio child process, as configured servers run.
    let exe = std::env::current_exe().unwrap();
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("serve").kill_on_drop(true);
    let child = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = client_config().serve(child).await.unwrap();
    measure(
        "stdio child process echo server",
        client.peer().clone(),
        calls,
    )
    .await;
}

async fn serve(delay_ms: u64) {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    let s = Echo
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .unwrap();
    let _ = s.waiting().await;
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    match args.first().map(String::as_str) {
        Some("serve") => serve(number(1, 0)).await,
        Some("overhead") => overhead(number(1, 2000) as usize).await,
        _ => eprintln!("usage: mcp_bench serve [DELAY_MS] | mcp_bench overhead [CALLS]"),
    }
}

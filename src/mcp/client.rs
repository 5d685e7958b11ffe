//! One connection to an MCP server through the official SDK (`rmcp`, client side).
//!
//! [`connect`] starts a stdio server as a child process ([`stdio`](super::stdio): its own process
//! group, tied to pi; its stderr is kept, never shown on the terminal: the last lines explain a
//! failure) or opens a streamable-HTTP session, does the initialize handshake and lists the
//! tools. A [`Link`] is the live connection tools call through: each call has the server's tool
//! timeout, stops at once on abort (dropping the request makes the SDK send
//! `notifications/cancelled`), fails cleanly when the server is gone, and fails at once with
//! [`CallError::TooLarge`] when the reply is over the server's `max_reply_bytes` (over stdio
//! [`reply_limit`](super::reply_limit) sees to that). Over HTTP the SDK's body limits are set to
//! the same number; the SDK then ends the reply's stream, and the call fails at once saying the
//! reply could not be read, naming the limit among the possible causes (the SDK does not tell
//! an oversized reply from a broken stream).

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, Transport};
use super::reply_limit::TooLarge;
use super::stdio;
use crate::tools::process::ProcessGroup;

/// Reads environment variables (the same shape as the provider's lookup).
pub(crate) type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How many of a server's last stderr lines are kept for error messages.
const STDERR_LINES: usize = 8;

/// The last lines a server wrote on stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut q) = self.0.lock() {
            if q.len() == STDERR_LINES {
                q.pop_front();
            }
            q.push_back(line);
        }
    }

    /// The last non-empty line, if any.
    pub(crate) fn last(&self) -> Option<String> {
        let q = self.0.lock().ok()?;
        q.iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().chars().take(300).collect())
    }
}

/// A server that answered the handshake, with its tools.
pub(crate) struct Connected {
    pub service: RunningService<RoleClient, ClientConfig>,
    pub tools: Vec<Tool>,
    pub stderr: StderrTail,
}

/// What a stdio server runs with: the environment the tools get, the server's own `env` on
/// top, in its `cwd` (relative to the session's folder).
fn command(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&Path>,
    base_env: &[(OsString, OsString)],
    session_cwd: &Path,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(base_env.iter().map(|(k, v)| (k, v)))
        .envs(env)
        .current_dir(match cwd {
            Some(c) => session_cwd.join(c),
            None => session_cwd.to_path_buf(),
        });
    cmd
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("pi", env!("CARGO_PKG_VERSION")),
    )
}

/// Start (or reach) the server and list its tools; a stdio server's process group goes to
/// `spawned` as soon as it exists. The caller bounds the time it may take.
pub(crate) async fn connect(
    config: &ServerConfig,
    base_env: &[(OsString, OsString)],
    lookup: &EnvLookup,
    session_cwd: &Path,
    spawned: &(dyn Fn(ProcessGroup) + Send + Sync),
) -> Result<Connected, String> {
    let stderr = StderrTail::default();
    let service = match &config.transport {
        Transport::Stdio {
            command: program,
            args,
            env,
            cwd,
        } => {
            let cmd = command(program, args, env, cwd.as_deref(), base_env, session_cwd);
            let stdio::Spawned {
                transport: process,
                stderr: err,
            } = stdio::spawn(cmd, config.max_reply_bytes)
                .map_err(|e| format!("cannot run `{program}`: {e}"))?;
            if let Some(g) = process.group() {
                spawned(g);
            }
            let reader = err.map(|err| {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(err).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tail.push(line);
                    }
                })
            });
            match client_config().serve(process).await {
                Ok(s) => s,
                Err(e) => {
                    // A server that exited may still have its last words in the pipe.
                    if let Some(r) = reader {
                        let _ = tokio::time::timeout(Duration::from_millis(300), r).await;
                    }
                    return Err(explain(&format!("no MCP handshake: {e}"), &stderr));
                }
            }
        }
        Transport::Http {
            url,
            bearer_token_env_var,
            headers,
        } => {
            let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_sse_event_size(config.max_reply_bytes)
                .max_json_response_size(config.max_reply_bytes);
            if let Some(var) = bearer_token_env_var {
                match lookup(var).filter(|t| !t.trim().is_empty()) {
                    Some(token) => http = http.auth_header(token.trim().to_string()),
                    None => {
                        return Err(format!(
                            "the variable {var} (bearer_token_env_var) is not set"
                        ));
                    }
                }
            }
            let mut custom = HashMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| format!("`{k}` is not a valid header name"))?;
                let value = http::HeaderValue::from_str(v)
                    .map_err(|_| format!("the value of header `{k}` is not valid"))?;
                custom.insert(name, value);
            }
            if !custom.is_empty() {
                http = http.custom_headers(custom);
            }
            client_config()
                .serve(StreamableHttpClientTransport::from_config(http))
                .await
                .map_err(|e| format!("no MCP handshake with {url}: {e}"))?
        }
    };
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| explain(&format!("cannot list its tools: {e}"), &stderr))?;
    Ok(Connected {
        service,
        tools,
        stderr,
    })
}

/// `what`, with the server's last stderr line when it said something.
pub(crate) fn explain(what: &str, stderr: &StderrTail) -> String {
    match stderr.last() {
        Some(line) => format!("{what} (stderr: {line})"),
        None => what.to_string(),
    }
}

/// Why a call produced no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallError {
    Aborted,
    TimedOut(Duration),
    /// The server is gone (crashed, exited, or the session closed).
    Stopped(String),
    /// The server answered with a protocol error.
    Failed(String),
    /// The reply was over the server's `max_reply_bytes`.
    TooLarge(TooLarge),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Aborted => f.write_str("aborted before the tool finished"),
            CallError::TimedOut(d) => write!(
                f,
                "no answer within {} s (tool_timeout_sec); the call was cancelled",
                fmt_secs(*d)
            ),
            CallError::Stopped(why) => write!(f, "the server stopped: {why}"),
            CallError::Failed(why) => f.write_str(why),
            CallError::TooLarge(t) => {
                use crate::tools::truncate::{format_size, limit_size};
                write!(
                    f,
                    "the reply was {} ({} bytes), more than the {} a reply from this server may \
                     be (max_reply_bytes in its [mcp_servers] table); none of it was read. Ask \
                     the tool for less (a narrower query, a page or a range)",
                    format_size(t.bytes as u64),
                    t.bytes,
                    limit_size(t.limit)
                )
            }
        }
    }
}

/// `1.5`, `10`: seconds without needless decimals.
pub(crate) fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s:.1}")
    }
}

/// A live connection to one server, shared by its tools.
pub struct Link {
    pub server: String,
    pub tool_timeout: Duration,
    /// The output limits results are cut to.
    pub limits: crate::tools::ToolLimits,
    /// An HTTP server's `max_reply_bytes`.
    http_reply_limit: Option<usize>,
    peer: Peer<RoleClient>,
    /// Fires when the connection ends; `stopped` then says why.
    closed: CancellationToken,
    stopped: Mutex<Option<String>>,
}

impl Link {
    pub fn new(
        server: String,
        tool_timeout: Duration,
        limits: crate::tools::ToolLimits,
        peer: Peer<RoleClient>,
    ) -> Self {
        Link {
            server,
            tool_timeout,
            limits,
            http_reply_limit: None,
            peer,
            closed: CancellationToken::new(),
            stopped: Mutex::new(None),
        }
    }

    /// The server is reached over HTTP with this reply limit.
    pub(crate) fn with_http_reply_limit(mut self, bytes: usize) -> Self {
        self.http_reply_limit = Some(bytes);
        self
    }

    /// Mark the connection as ended (the first reason is kept). Running calls fail at once.
    pub(crate) fn close(&self, why: String) {
        if let Ok(mut s) = self.stopped.lock()
            && s.is_none()
        {
            *s = Some(why);
        }
        self.closed.cancel();
    }

    fn stopped(&self) -> Option<String> {
        self.stopped.lock().ok().and_then(|s| s.clone())
    }

    /// Call `tool` with `args`; the result is the `CallToolResult` as JSON.
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        if let Some(why) = self.stopped() {
            return Err(CallError::Stopped(why));
        }
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let call = tokio::time::timeout(self.tool_timeout, self.peer.call_tool(params));
        // Dropping `call` (abort, timeout, a dead server) sends the cancellation notification.
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(CallError::Aborted),
            _ = self.closed.cancelled() => Err(CallError::Stopped(
                self.stopped().unwrap_or_else(|| "the connection closed".into()),
            )),
            r = call => match r {
                Err(_) => Err(CallError::TimedOut(self.tool_timeout)),
                Ok(Ok(result)) => serde_json::to_value(&result)
                    .map_err(|e| CallError::Failed(format!("unreadable result: {e}"))),
                Ok(Err(ServiceError::TransportClosed)) => match (self.stopped(), self.http_reply_limit) {
                    // The HTTP session is still there: only this reply's stream ended.
                    (None, Some(limit)) => Err(CallError::Failed(format!(
                        "the reply could not be read: its stream ended early (the server \
                         closed it, or the reply was over the {} limit, max_reply_bytes in its \
                         [mcp_servers] table)",
                        crate::tools::truncate::limit_size(limit)
                    ))),
                    (why, _) => Err(CallError::Stopped(
                        why.unwrap_or_else(|| "the connection closed".into()),
                    )),
                },
                Ok(Err(ServiceError::McpError(e))) => match TooLarge::from_data(e.data.as_ref()) {
                    Some(t) => Err(CallError::TooLarge(t)),
                    None => Err(CallError::Failed(ServiceError::McpError(e).to_string())),
                },
                Ok(Err(e)) => Err(CallError::Failed(e.to_string())),
            },
        }
    }
}

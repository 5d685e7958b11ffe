//! The configured MCP servers, started together in the background.
//!
//! [`McpManager::start`] returns at once: each enabled server connects on its own task within
//! its startup timeout, and when one is ready (or stops) the manager hands the whole current
//! MCP tool list to a callback (setup uses it to update the agent's tool set, which the loop
//! re-reads before every model call). Nothing waits for the servers unless it asks to
//! ([`McpManager::wait_started`], which print mode uses before its first request and which
//! returns once every server is ready or has failed). Failures (a missing command, a timeout,
//! a server that dies) become notices on [`McpManager::take_notices`] and a `failed` state in
//! [`McpManager::status`]; the rest of pi goes on.
//!
//! The manager knows each stdio server's process group from the moment it is started.
//! [`McpManager::stop`] (pi closing, however it was asked to) sends every group SIGTERM, waits
//! a moment for them to go, and kills what is left; if the manager is dropped without that,
//! whatever is left is killed then. If pi itself is killed, the kernel's death signal (see
//! [`stdio`](super::stdio)) stops each server.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::client::{self, EnvLookup, Link, fmt_secs};
use super::config::{ServerConfig, Transport};
use super::naming;
use super::tool::McpTool;
use crate::agent::protocol::tool::AgentTool;
use crate::sync::lock;
use crate::tools::process::{ProcessGroup, Signal};

/// How long [`McpManager::stop`] gives the servers' processes to leave after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// How often it looks whether they have.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Where a server stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerState {
    Disabled,
    Starting,
    Ready,
    Failed(String),
}

/// One tool as `/mcp` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolEntry {
    /// The name the model uses (`mcp__server__tool`).
    pub name: String,
    /// The name on the server.
    pub remote: String,
}

/// A server, its state and its offered tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    /// The command line or URL.
    pub endpoint: String,
    pub state: ServerState,
    pub tools: Vec<ToolEntry>,
}

/// Called with every MCP tool offered now, whenever that changes.
pub(crate) type ToolsChanged = Arc<dyn Fn(Vec<Arc<McpTool>>) + Send + Sync>;

struct Slot {
    config: ServerConfig,
    state: ServerState,
    tools: Vec<Arc<McpTool>>,
}

struct Inner {
    slots: Mutex<Vec<Slot>>,
    /// Servers still starting.
    pending: watch::Sender<usize>,
    notices: mpsc::UnboundedSender<String>,
    notices_rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    on_tools: Option<ToolsChanged>,
    /// Serialises tool-list updates so the last one sent is the current one.
    publishing: Mutex<()>,
    shutdown: CancellationToken,
    /// The process groups of the stdio servers started.
    groups: Arc<Mutex<Vec<ProcessGroup>>>,
}

impl Inner {
    fn groups(&self) -> Vec<ProcessGroup> {
        lock(&self.groups).clone()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for g in self.groups() {
            if g.alive() {
                g.signal(Signal::Kill);
            }
        }
    }
}

/// The MCP servers of a session. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

/// What a server runs with and where.
#[derive(Clone)]
pub struct Environment {
    /// The variables a stdio server starts with (before its own `env`).
    pub vars: Vec<(OsString, OsString)>,
    /// Reads variables named by the config (`bearer_token_env_var`).
    pub lookup: EnvLookup,
    /// The session's folder (a server's `cwd` is relative to it).
    pub cwd: PathBuf,
    /// The tools' output limits, which results are cut to.
    pub limits: crate::tools::ToolLimits,
}

impl McpManager {
    /// Start every enabled server in the background. Must be called inside a tokio runtime.
    pub fn start(
        servers: Vec<ServerConfig>,
        env: Environment,
        on_tools: Option<ToolsChanged>,
    ) -> Self {
        let starting = servers.iter().filter(|s| s.enabled).count();
        let (pending, _) = watch::channel(starting);
        let (notices, notices_rx) = mpsc::unbounded_channel();
        let slots = servers
            .iter()
            .map(|c| Slot {
                config: c.clone(),
                state: if c.enabled {
                    ServerState::Starting
                } else {
                    ServerState::Disabled
                },
                tools: Vec::new(),
            })
            .collect();
        let manager = McpManager {
            inner: Arc::new(Inner {
                slots: Mutex::new(slots),
                pending,
                notices,
                notices_rx: Mutex::new(Some(notices_rx)),
                on_tools,
                publishing: Mutex::new(()),
                shutdown: CancellationToken::new(),
                groups: Arc::new(Mutex::new(Vec::new())),
            }),
        };
        for (index, config) in servers.into_iter().enumerate() {
            if config.enabled {
                tokio::spawn(manager.clone().run_server(index, config, env.clone()));
            }
        }
        manager
    }

    /// Connect, offer the tools, then watch the connection until it ends or pi stops.
    async fn run_server(self, index: usize, config: ServerConfig, env: Environment) {
        let name = config.name.clone();
        let groups = self.inner.groups.clone();
        let spawned = move |g: ProcessGroup| lock(&groups).push(g);
        let connecting = client::connect(&config, &env.vars, &env.lookup, &env.cwd, &spawned);
        let connected = tokio::select! {
            _ = self.inner.shutdown.cancelled() => return,
            r = tokio::time::timeout(config.startup_timeout, connecting) => match r {
                Ok(Ok(c)) => c,
                Ok(Err(why)) => return self.fail_start(index, &name, why),
                Err(_) => return self.fail_start(
                    index,
                    &name,
                    format!(
                        "did not start within {} s (startup_timeout_sec)",
                        fmt_secs(config.startup_timeout)
                    ),
                ),
            },
        };
        let mut link = Link::new(
            name.clone(),
            config.tool_timeout,
            env.limits,
            connected.service.peer().clone(),
        );
        if matches!(config.transport, Transport::Http { .. }) {
            link = link.with_http_reply_limit(config.max_reply_bytes);
        }
        let link = Arc::new(link);
        {
            let mut slots = lock(&self.inner.slots);
            let mut taken: Vec<String> = slots
                .iter()
                .flat_map(|s| s.tools.iter().map(|t| t.name().to_string()))
                .collect();
            let mut tools = Vec::new();
            for t in connected.tools.iter().filter(|t| config.allows(&t.name)) {
                let exposed = naming::unique(naming::tool_name(&name, &t.name), &taken);
                taken.push(exposed.clone());
                tools.push(Arc::new(McpTool::new(exposed, t, link.clone())));
            }
            if let Some(slot) = slots.get_mut(index) {
                slot.state = ServerState::Ready;
                slot.tools = tools;
            }
        }
        self.publish();
        self.started_one();
        let stderr = connected.stderr.clone();
        tokio::select! {
            _ = self.inner.shutdown.cancelled() => {}
            quit = connected.service.waiting() => {
                let why = match quit {
                    Ok(_) => client::explain("the connection closed", &stderr),
                    Err(e) => format!("its client task ended: {e}"),
                };
                link.close(why.clone());
                {
                    let mut slots = lock(&self.inner.slots);
                    if let Some(slot) = slots.get_mut(index) {
                        slot.state = ServerState::Failed(format!("stopped: {why}"));
                        slot.tools.clear();
                    }
                }
                self.publish();
                self.notice(format!("MCP server `{name}` stopped: {why}; its tools are gone"));
            }
        }
    }

    fn fail_start(&self, index: usize, name: &str, why: String) {
        if let Some(slot) = lock(&self.inner.slots).get_mut(index) {
            slot.state = ServerState::Failed(why.clone());
        }
        self.notice(format!("MCP server `{name}` failed to start: {why}"));
        self.started_one();
    }

    fn started_one(&self) {
        self.inner.pending.send_modify(|n| *n = n.saturating_sub(1));
    }

    fn notice(&self, text: String) {
        let _ = self.inner.notices.send(text);
    }

    fn publish(&self) {
        let Some(on_tools) = &self.inner.on_tools else {
            return;
        };
        let _order = lock(&self.inner.publishing);
        on_tools(self.offered());
    }

    /// Every MCP tool offered now, as [`McpTool`]s.
    fn offered(&self) -> Vec<Arc<McpTool>> {
        lock(&self.inner.slots)
            .iter()
            .flat_map(|s| s.tools.iter().cloned())
            .collect()
    }

    /// Every MCP tool offered now, server by server (in name order).
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.offered()
            .into_iter()
            .map(|t| t as Arc<dyn AgentTool>)
            .collect()
    }

    /// Each server's state and tools.
    pub fn status(&self) -> Vec<ServerStatus> {
        lock(&self.inner.slots)
            .iter()
            .map(|s| ServerStatus {
                name: s.config.name.clone(),
                endpoint: s.config.endpoint(),
                state: s.state.clone(),
                tools: s
                    .tools
                    .iter()
                    .map(|t| ToolEntry {
                        name: t.name().to_string(),
                        remote: t.remote_name().to_string(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Wait until no server is still starting (each is bounded by its startup timeout).
    pub async fn wait_started(&self) {
        let mut rx = self.inner.pending.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// The notices (failures to start, servers that stopped); only the first caller gets them.
    pub fn take_notices(&self) -> Option<mpsc::UnboundedReceiver<String>> {
        lock(&self.inner.notices_rx).take()
    }

    /// Stop every server: connections close (HTTP sessions are dropped) and every stdio
    /// server's process group gets SIGTERM. [`McpManager::stop`] also waits for them.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
        for g in self.inner.groups() {
            g.signal(Signal::Term);
        }
    }

    /// [`McpManager::shutdown`], then wait (at most two seconds) until every stdio server's
    /// processes are gone, and kill those still there.
    pub(crate) async fn stop(&self) {
        self.shutdown();
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        loop {
            let left: Vec<ProcessGroup> = self
                .inner
                .groups()
                .into_iter()
                .filter(|g| g.alive())
                .collect();
            if left.is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                for g in left {
                    g.signal(Signal::Kill);
                }
                return;
            }
            tokio::time::sleep(STOP_POLL).await;
        }
    }
}

/// `/mcp`'s text: one block per server, its state, then its tools.
pub fn describe(servers: &[ServerStatus]) -> String {
    if servers.is_empty() {
        return "No MCP servers are configured. Add them to config.toml as \
                [mcp_servers.NAME] with `command` (stdio) or `url` (streamable HTTP)."
            .into();
    }
    let mut out = String::from("MCP servers:");
    for s in servers {
        let state = match &s.state {
            ServerState::Disabled => "disabled".to_string(),
            ServerState::Starting => "starting".to_string(),
            ServerState::Ready => format!(
                "ready with {} tool{}",
                s.tools.len(),
                if s.tools.len() == 1 { "" } else { "s" }
            ),
            ServerState::Failed(why) => format!("failed: {why}"),
        };
        out.push_str(&format!("\n  {} ({}): {state}", s.name, s.endpoint));
        for t in &s.tools {
            out.push_str(&format!("\n    {}", t.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_lists_states_and_tools() {
        let s = vec![
            ServerStatus {
                name: "docs".into(),
                endpoint: "docs-server".into(),
                state: ServerState::Ready,
                tools: vec![ToolEntry {
                    name: "mcp__docs__search".into(),
                    remote: "search".into(),
                }],
            },
            ServerStatus {
                name: "off".into(),
                endpoint: "x".into(),
                state: ServerState::Disabled,
                tools: vec![],
            },
            ServerStatus {
                name: "bad".into(),
                endpoint: "nope".into(),
                state: ServerState::Failed("cannot run `nope`".into()),
                tools: vec![],
            },
            ServerStatus {
                name: "slow".into(),
                endpoint: "http://127.0.0.1:1/mcp".into(),
                state: ServerState::Starting,
                tools: vec![],
            },
        ];
        let text = describe(&s);
        assert!(text.contains("docs (docs-server): ready with 1 tool\n    mcp__docs__search"));
        assert!(text.contains("off (x): disabled"));
        assert!(text.contains("bad (nope): failed: cannot run `nope`"));
        assert!(text.contains("slow (http://127.0.0.1:1/mcp): starting"));
        assert!(describe(&[]).contains("No MCP servers"));
    }

    #[tokio::test]
    async fn a_missing_command_fails_with_a_notice_and_disabled_servers_never_start() {
        use crate::mcp::config::parse;
        let raw: toml::Table = r#"
[a]
command = "/nonexistent/pi-mcp-server"
[b]
command = "/nonexistent/other"
enabled = false
"#
        .parse()
        .unwrap();
        let (servers, w) = parse(&raw.into_iter().collect());
        assert!(w.is_empty());
        let m = McpManager::start(
            servers,
            Environment {
                vars: vec![],
                lookup: Arc::new(|_| None),
                cwd: std::env::temp_dir(),
                limits: Default::default(),
            },
            None,
        );
        let mut notices = m.take_notices().unwrap();
        assert!(m.take_notices().is_none());
        tokio::time::timeout(std::time::Duration::from_secs(5), m.wait_started())
            .await
            .unwrap();
        let st = m.status();
        assert!(
            matches!(&st[0].state, ServerState::Failed(why) if why.contains("cannot run")),
            "{st:?}"
        );
        assert_eq!(st[1].state, ServerState::Disabled);
        assert!(m.tools().is_empty());
        let n = notices.recv().await.unwrap();
        assert!(n.contains("`a` failed to start"), "{n}");
    }
}

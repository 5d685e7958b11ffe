//! Shared helpers for the agent-loop tests: an event recorder, configurable test tools and a
//! one-call way to run the loop against the scripted provider.
#![allow(dead_code)]

pub mod pty;
pub mod rpc;
pub mod server;
pub mod stream;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pi::agent::engine::config::LoopConfig;
use pi::agent::engine::run::{RunFailure, RunOutcome, run_prompt};
use pi::agent::policy::soft::SoftState;
use pi::agent::protocol::abort::AbortSignal;
use pi::agent::protocol::events::{AgentEvent, EventSink};
use pi::agent::protocol::hooks::{Injected, LoopHooks, NoHooks};
use pi::agent::protocol::stream::Model;
use pi::agent::protocol::tool::{
    AgentTool, Concurrency, ToolError, ToolInvocation, ToolOutput, ToolSet,
};
use pi::agent::protocol::types::AgentMessage;
use pi::agent::scripted::{Script, ScriptedProvider};
use serde_json::{Value, json};

/// Records every event, and wakes whoever waits for one.
#[derive(Clone, Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<AgentEvent>>>,
    /// When each event arrived, on tokio's clock (exact in tests with paused time).
    times: Arc<Mutex<Vec<tokio::time::Instant>>>,
    seen: Arc<tokio::sync::Notify>,
}

impl EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
        self.times.lock().unwrap().push(tokio::time::Instant::now());
        self.seen.notify_waiters();
    }
}

impl Recorder {
    /// When the first event of this kind (as [`Recorder::kinds`] names it) arrived.
    pub fn time_of(&self, kind: &str) -> tokio::time::Instant {
        let at = self
            .kinds()
            .iter()
            .position(|k| k == kind)
            .unwrap_or_else(|| panic!("no {kind} event"));
        self.times.lock().unwrap()[at]
    }

    /// Wait (at most 5 s) until an event whose kind (as [`Recorder::kinds`] names it) is
    /// `kind` has been recorded.
    pub async fn wait_for(&self, kind: &str) {
        self.wait_until(kind, |kinds, _| kinds.iter().any(|k| k == kind))
            .await
    }

    /// Wait (at most 5 s) until `done(kinds, events)` holds for what was recorded so far.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&[String], &[AgentEvent]) -> bool) {
        let found = async {
            loop {
                let notified = self.seen.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                if done(&self.kinds(), &self.all()) {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(5), found)
            .await
            .is_err()
        {
            panic!("waited in vain for {what}; saw {:?}", self.kinds());
        }
    }

    pub fn all(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Event names, with the role for message events (`message_end:user`).
    pub fn kinds(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|e| match e {
                AgentEvent::MessageStart { message } => format!("message_start:{}", message.role()),
                AgentEvent::MessageEnd { message } => format!("message_end:{}", message.role()),
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                    format!("tool_start:{tool_call_id}")
                }
                AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                    format!("tool_end:{tool_call_id}")
                }
                other => other.kind().to_string(),
            })
            .collect()
    }

    pub fn count(&self, kind: &str) -> usize {
        self.all().iter().filter(|e| e.kind() == kind).count()
    }

    /// Tool results in emitted order: (id, text, is_error).
    pub fn tool_results(&self) -> Vec<(String, String, bool)> {
        self.all()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::MessageEnd { message } => message
                    .as_tool_result()
                    .map(|r| (r.tool_call_id.clone(), r.text(), r.is_error)),
                _ => None,
            })
            .collect()
    }

    pub fn agent_end_messages(&self) -> Vec<AgentMessage> {
        self.all()
            .iter()
            .find_map(|e| match e {
                AgentEvent::AgentEnd { messages, .. } => Some(messages.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }
}

type Behaviour = Arc<
    dyn Fn(ToolInvocation) -> futures::future::BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync,
>;

/// A tool whose behaviour is a closure.
pub struct TestTool {
    pub name: String,
    pub concurrency: Result<Concurrency, String>,
    pub interruptible: Result<bool, String>,
    pub schema: Value,
    pub calls: Arc<AtomicUsize>,
    pub behaviour: Behaviour,
}

impl TestTool {
    pub fn new<F, Fut>(name: &str, f: F) -> Self
    where
        F: Fn(ToolInvocation) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        TestTool {
            name: name.to_string(),
            concurrency: Ok(Concurrency::Shared),
            interruptible: Ok(false),
            schema: json!({"type": "object"}),
            calls: Arc::new(AtomicUsize::new(0)),
            behaviour: Arc::new(move |inv| Box::pin(f(inv))),
        }
    }

    /// Returns "<name> ok: <args>".
    pub fn echo(name: &str) -> Self {
        let n = name.to_string();
        TestTool::new(name, move |inv| {
            let n = n.clone();
            async move { Ok(ToolOutput::text(format!("{n} ok: {}", inv.args))) }
        })
    }

    /// Sleeps `ms` (or until cancelled, then fails with "cancelled").
    pub fn sleeper(name: &str, ms: u64) -> Self {
        let n = name.to_string();
        TestTool::new(name, move |inv| {
            let n = n.clone();
            async move {
                tokio::select! {
                    _ = inv.cancel.cancelled() => Err(ToolError::new("cancelled")),
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(ToolOutput::text(format!("{n} done"))),
                }
            }
        })
    }

    /// Sleeps `ms` ignoring cancellation.
    pub fn stubborn(name: &str, ms: u64) -> Self {
        let n = name.to_string();
        TestTool::new(name, move |_inv| {
            let n = n.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(ToolOutput::text(format!("{n} done")))
            }
        })
    }

    pub fn exclusive(mut self) -> Self {
        self.concurrency = Ok(Concurrency::Exclusive);
        self
    }

    pub fn interruptible(mut self) -> Self {
        self.interruptible = Ok(true);
        self
    }

    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }

    pub fn arc(self) -> Arc<dyn AgentTool> {
        Arc::new(self)
    }
}

#[async_trait]
impl AgentTool for TestTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "a test tool"
    }
    fn parameters(&self) -> &Value {
        &self.schema
    }
    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        self.concurrency.clone()
    }
    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        self.interruptible.clone()
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        (self.behaviour)(call).await
    }
}

pub fn model() -> Model {
    Model::new("scripted", "scripted", "scripted-model")
}

pub fn config(provider: &ScriptedProvider, tools: Vec<Arc<dyn AgentTool>>) -> LoopConfig {
    let mut c = LoopConfig::new(Arc::new(provider.clone()), model());
    c.tools = Arc::new(ToolSet::new(tools));
    c.hooks = Arc::new(NoHooks);
    c
}

pub fn with_hooks(mut c: LoopConfig, hooks: impl LoopHooks + 'static) -> LoopConfig {
    c.hooks = Arc::new(hooks);
    c
}

pub fn prompts(texts: &[&str]) -> Vec<Injected> {
    texts
        .iter()
        .map(|t| Injected::plain(AgentMessage::user(*t)))
        .collect()
}

/// Run a prompt to the end with a fresh signal.
pub async fn run(
    config: LoopConfig,
    prompt: &str,
    context: Vec<AgentMessage>,
) -> (Recorder, Result<RunOutcome, RunFailure>) {
    run_with_signal(config, prompt, context, AbortSignal::new()).await
}

pub async fn run_with_signal(
    config: LoopConfig,
    prompt: &str,
    context: Vec<AgentMessage>,
    signal: AbortSignal,
) -> (Recorder, Result<RunOutcome, RunFailure>) {
    run_recorded(config, prompt, context, signal, Recorder::default()).await
}

/// Run a prompt to the end, recording into `rec` (which others may be waiting on).
pub async fn run_recorded(
    config: LoopConfig,
    prompt: &str,
    context: Vec<AgentMessage>,
    signal: AbortSignal,
    rec: Recorder,
) -> (Recorder, Result<RunOutcome, RunFailure>) {
    let out = run_prompt(
        prompts(&[prompt]),
        context,
        config,
        SoftState::default(),
        signal,
        Arc::new(rec.clone()),
    )
    .await;
    (rec, out.into_result())
}

pub fn scripts(list: Vec<Script>) -> ScriptedProvider {
    ScriptedProvider::new(list)
}

/// Roles of the provider-visible messages of request `i`.
pub fn request_roles(p: &ScriptedProvider, i: usize) -> Vec<String> {
    p.requests()[i]
        .context
        .messages
        .iter()
        .map(|m| m.role().to_string())
        .collect()
}

/// Providers pointed at a test server, with a test key for every provider.
pub fn http_providers(server: &server::TestServer, provider: &str) -> pi::provider::Providers {
    let mut catalog = pi::provider::catalog::Catalog::builtin(&|_| None);
    let mut info = catalog.provider(provider).unwrap().clone();
    info.base_url = match info.api {
        pi::provider::catalog::Api::AnthropicMessages => server.url.clone(),
        _ => format!("{}/v1", server.url),
    };
    catalog.upsert_provider(info);
    let env: pi::provider::EnvLookup =
        Arc::new(|k: &str| k.ends_with("_API_KEY").then(|| "test-key-123".to_string()));
    pi::provider::Providers::new(Arc::new(catalog), None, env)
}

/// Run one provider request to its end and collect the events.
pub async fn collect(
    provider: &dyn pi::agent::protocol::stream::Provider,
    request: pi::agent::protocol::stream::ProviderRequest,
) -> Vec<pi::agent::protocol::stream::StreamEvent> {
    use futures::StreamExt;
    let stream = provider.stream(request, tokio_util::sync::CancellationToken::new());
    stream.filter_map(|r| async move { r.ok() }).collect().await
}

/// The session id in a session file's name (`<time>_<id>.jsonl`).
pub fn session_id_of(path: &std::path::Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    pi::session::layout::id_from_file_name(&name)
        .unwrap()
        .to_string()
}

/// The texts of the messages a session file resumes with (its current branch), in order.
pub fn resumed_texts(path: &std::path::Path) -> Vec<String> {
    pi::session::Session::load(path)
        .unwrap()
        .context()
        .messages
        .iter()
        .map(pi::tui::port::message_text)
        .collect()
}

/// A fresh home folder for one test of the binary, with `agent/` and `project/` in it.
pub fn binary_home(tag: &str) -> std::path::PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("pi-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("agent")).unwrap();
    std::fs::create_dir_all(d.join("project")).unwrap();
    d
}

/// Run the real binary in `home/project` with nothing of this process's environment but PATH:
/// HOME, the agent folder `home/agent`, no local server (`OLLAMA_HOST` points at a closed
/// port), and `env`.
pub async fn run_pi(
    home: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .current_dir(home.join("project"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).output().await.unwrap()
}

/// The real binary run in `home` with nothing of this process's environment but PATH: HOME,
/// the agent folder `home/agent`, and the test server as its only model (as Ollama); stdin
/// empty, stdout and stderr captured.
pub fn pi_at_server(
    server: &server::TestServer,
    home: &std::path::Path,
) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", server.url.clone())
        .current_dir(home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c
}

/// The real binary in RPC mode, run in `home/project` with nothing of this process's
/// environment but PATH: HOME, the agent folder `home/agent`, `ollama_host` as the local model
/// server (a closed port for none), stdin and stdout piped, stderr dropped, killed when
/// dropped. Add arguments, variables or another stderr before spawning.
pub fn rpc_pi(home: &std::path::Path, ollama_host: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    c.args(["--mode", "rpc"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("OLLAMA_HOST", ollama_host)
        .current_dir(home.join("project"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    c
}

/// The one session file under an agent folder's `sessions/` (the first found).
pub fn only_session_file(agent: &std::path::Path) -> std::path::PathBuf {
    let dir = std::fs::read_dir(agent.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
}

/// Processes whose command line holds `marker` and that are not zombies.
pub fn running_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = e.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(dir.display().to_string());
        }
    }
    out
}

/// Move tokio's paused clock forward by `d` without letting any other task run: a timer that
/// falls due (the run's deadline timer, say) fires only once the caller next yields. Lets a
/// hook make time pass "during" a synchronous step, deterministically.
pub fn jump_clock(d: Duration) {
    use futures::FutureExt;
    let _ = tokio::time::advance(d).now_or_never();
}

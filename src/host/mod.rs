//! The host: the task that owns the agent and the session it is recorded in.
//!
//! Front ends (print mode, the interactive UI, RPC) talk to it only through a [`Client`]: they
//! send [`Op`]s (plain data with an id, see [`protocol`]) and read one stream back, the agent's
//! events (each stamped with its run, straight from the agent, no extra hop) merged in order
//! with the host's events and the answers to operations, each carrying the id it answers.
//! Operations are carried out one at a time, in order, on this task: the agent's through
//! `engine::task::apply`, session operations (new, list, open, name, export, model and
//! thinking changes) here. File I/O never runs on a front end's task: listing, opening and
//! exporting run on the blocking pool and come back as events.
//!
//! Messages queued as a run ended (after its last look at the queues, or during a `/compact`,
//! which takes none) are the host's to run: when a run ends without an error or abort and
//! messages wait, it continues with them, the same for every front end.
//!
//! When the operation channel closes (or on [`OpBody::Shutdown`]), a running turn is aborted,
//! the session is flushed and synced, and the task ends.

pub mod export;
pub mod login;
pub mod navigation;
pub mod plan;
pub mod protocol;
pub mod rewind;
pub mod shell;
pub mod stats;
pub mod view;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::agent::engine::facade::Agent;
use crate::agent::engine::task;
use crate::agent::protocol::command::{AgentAnswer, AgentError, AgentOp};
use crate::agent::protocol::events::{AgentEvent, RunEvent, RunId};
use crate::agent::protocol::paced;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{AgentMessage, ImageContent};
use crate::attach::{self, FileRef};
use crate::provider::catalog::{Catalog, ModelInfo};
use crate::session::{
    self, ListScope, RecorderTask, SessionInfo, SessionPaths, SessionRecorder, StartFrom,
};

pub use navigation::SessionTree;
pub use protocol::{Answer, Client, Commands, FrontEvent, FrontEvents, Op, OpBody, OpId, Prompt};
pub use stats::SessionStats;

/// How long shutting down waits for an aborted run to write its last messages.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The host's answers.
#[derive(Debug)]
pub enum HostEvent {
    Sessions {
        scope: ListScope,
        sessions: Vec<SessionInfo>,
    },
    /// How many messages listed sessions hold (counted after the listing, which stays fast).
    MessageCounts(Vec<(PathBuf, usize)>),
    Opened(Box<Opened>),
    /// A new session began. Agent events of runs up to `after_run` belong to the old one.
    NewSession {
        session_id: String,
        /// Where it is saved (`None` when nothing is).
        path: Option<PathBuf>,
        after_run: RunId,
    },
    Exported(PathBuf),
    /// A tool call waits for the person's approval; answer with [`OpBody::Approve`].
    Approval(Box<crate::approval::ApprovalRequest>),
    /// The current branch's prompts, oldest first: `(entry id, full text)`.
    ForkPoints(Vec<(String, String)>),
    /// A `/login` went through (the model in use is switched already).
    LoggedIn(login::LoggedIn),
    /// What a sign-in under way needs the person to see (an address, a device code).
    SignInNotice(crate::provider::subscription::flows::Notice),
    /// A subscription sign-in went through; the front end switches to its model.
    SignedIn(Box<login::SignedIn>),
    /// The models local servers offer (empty: none answered).
    LocalModels(Vec<ModelInfo>),
    /// The server said how large a context it gives this model (see
    /// [`crate::provider::window`]); the model in use now counts against it.
    ModelWindow {
        provider: String,
        id: String,
        window: u64,
    },
    Named(String),
    /// What the queues held (steering first), now emptied.
    Queued(Vec<AgentMessage>),
    Stats(Box<SessionStats>),
    Tree(Box<SessionTree>),
    /// A `!` command finished (or was stopped).
    ShellDone(Box<shell::ShellResult>),
    /// The conversation now continues from another point of the same session.
    Navigated(Box<Navigated>),
    /// An operation could not be carried out; the text says why.
    Failed(String),
    /// Something the person should know that is not a failure (an attached image the model
    /// cannot take, a mentioned file that could not be read).
    Notice(String),
    /// Writing the session file failed (the entries stay queued and are retried with the next
    /// write). Sent once per distinct failure.
    SessionWriteFailed(String),
    /// The MCP servers (empty: none configured).
    McpStatus(Vec<crate::mcp::ServerStatus>),
    /// What a move would do to the files (answers [`OpBody::RewindPlan`]).
    RewindPlan(Box<rewind::RewindPlan>),
    /// Plan mode went on (`true`) or off.
    PlanMode(bool),
    /// What a restore of files did (answers [`OpBody::RestoreFiles`]).
    FilesRestored(Box<rewind::FilesRestored>),
    /// The id of the first entry the latest recorded compaction keeps (`None` when nothing
    /// is recorded, or it could not be named).
    CompactionRecorded(Option<String>),
}

/// A saved session, now the current one.
#[derive(Debug)]
pub struct Opened {
    pub path: PathBuf,
    pub session_id: String,
    pub messages: Vec<AgentMessage>,
    /// The model the conversation goes on with.
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub name: Option<String>,
    /// Damage found while loading, and model notes.
    pub warnings: Vec<String>,
    /// Text for the editor (the prompt a fork started before).
    pub draft: Option<String>,
    /// What made it: a resume, `/fork` or `/clone`.
    pub from: OpenedFrom,
}

/// Why a session was opened, for the words that say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenedFrom {
    /// An existing session, picked or named.
    Resumed,
    /// A new session made by `/fork`.
    Forked,
    /// A new session made by `/clone`.
    Cloned,
}

/// The conversation after a move in the tree.
#[derive(Debug)]
pub struct Navigated {
    /// The branch from its start to the new position.
    pub messages: Vec<AgentMessage>,
    /// The chosen prompt's text, to edit and send as a new branch.
    pub draft: Option<String>,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub warnings: Vec<String>,
}

/// How the host ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closed {
    pub session_id: String,
    /// The session file exists (something was said in it).
    pub saved: bool,
    /// Why part of the session could not be saved (`None`: all of it is on disk).
    pub unsaved: Option<String>,
}

/// What is said when `web_search = true` meets a model whose API has no search of its own.
pub fn web_search_unavailable(model: &ModelInfo) -> String {
    format!(
        "web search is unavailable with {}/{}: only Anthropic's Messages API and OpenAI's \
         Responses API run a search themselves (web_search = true does nothing for this model)",
        model.provider, model.id
    )
}

/// Write a new file only its owner can read (exports hold the whole conversation).
pub(crate) fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_data()
}

/// What the host starts with (built by `setup`).
pub struct HostParts {
    pub agent: Agent,
    /// `None` when nothing is saved.
    pub recorder: Option<SessionRecorder>,
    pub paths: Option<SessionPaths>,
    pub cwd: PathBuf,
    pub catalog: Arc<Catalog>,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub session_id: String,
    pub session_name: Option<String>,
    /// Send the front end the streamed updates (deltas, tool progress) too.
    pub live_updates: bool,
    /// Values masked in every session file should they appear (keys withheld from tools);
    /// shared with the tools and providers that mask with it.
    pub secrets: crate::secrets::Secrets,
    /// The bash tool `!command` runs through (`None`: `!` is refused).
    pub shell: Option<Arc<dyn crate::agent::protocol::tool::AgentTool>>,
    /// What `/login` needs (`None`: it is refused).
    pub login: Option<login::LoginParts>,
    /// The approval gate the agent's hooks consult.
    pub approval: Arc<crate::approval::Gate>,
    /// Put approval requests to the front end ([`HostEvent::Approval`]); without this, `ask`
    /// refuses what no rule allows.
    pub asks_person: bool,
    /// The MCP servers (`None`: none configured); their notices reach the front end.
    pub mcp: Option<crate::mcp::McpManager>,
    /// Other notices for the front end (a model switched to a tool-calling dialect).
    pub notices: Option<mpsc::UnboundedReceiver<String>>,
    /// The global `settings.json`, where a model or thinking level chosen is remembered for
    /// the next start (`None`: not remembered).
    pub remember_in: Option<PathBuf>,
    /// Prompt templates: a prompt `/name args` naming one is sent expanded.
    pub templates: Arc<Vec<crate::config::prompt_templates::PromptTemplate>>,
    /// Skills: a prompt `/skill:name args` is sent as the skill's file and the arguments
    /// (empty when skill commands are off).
    pub skills: Arc<Vec<crate::config::skills::Skill>>,
    /// The person's hooks (`None`: none configured); the host runs the session's, prompt's
    /// and run end's events, the loop the tool events.
    pub hooks: Option<Arc<crate::hooks::Hooks>>,
    /// Where subagents find the session file this host writes now.
    pub session_slot: Option<Arc<crate::subagent::SessionSlot>>,
    /// What the agent's changes to files are recorded with (`None`: checkpoints are off).
    pub checkpoints: Option<Arc<crate::checkpoint::Tracker>>,
    /// Start in plan mode.
    pub plan: bool,
    /// `web_search = true`: the provider's own search is offered where there is one.
    pub web_search: bool,
    /// The process ends with the host ([`crate::setup::Options::ends_process`]).
    pub ends_process: bool,
}

impl Closed {
    /// The line for stderr on the way out: what could not be saved, or how to resume.
    pub fn farewell(&self) -> Option<String> {
        match (&self.unsaved, self.saved) {
            (Some(why), false) => Some(format!("pi: nothing of this session was saved ({why})")),
            (Some(why), true) => Some(format!(
                "pi: part of this session could not be saved ({why}); its file may lack the \
                 latest messages"
            )),
            (None, true) => Some(session::resume_hint(&self.session_id)),
            (None, false) => None,
        }
    }
}

/// `message` with `images` after its text (RPC's inline images).
/// Where the context hooks add to a prompt begins.
const HOOK_CONTEXT: &str = "\n\n<hook-context>\n";

/// A prompt with what hooks added for the model (`SessionStart` and `UserPromptSubmit`
/// context) after it.
fn with_hook_context(text: String, context: &[String]) -> String {
    if context.is_empty() {
        return text;
    }
    let mut out = text;
    out.push_str(HOOK_CONTEXT);
    out.push_str(&context.join("\n\n"));
    out.push_str("\n</hook-context>");
    out
}

/// A prompt's text as the person wrote it, without the context hooks added for the model.
pub fn without_hook_context(text: &str) -> &str {
    match text.find(HOOK_CONTEXT) {
        Some(at) if text.trim_end().ends_with("</hook-context>") => &text[..at],
        _ => text,
    }
}

fn with_images(message: AgentMessage, images: Vec<ImageContent>) -> AgentMessage {
    use crate::agent::protocol::types::{ContentBlock, Message, UserContent};
    if images.is_empty() {
        return message;
    }
    let Some(Message::User(user)) = message.as_llm() else {
        return message;
    };
    let mut user = user.clone();
    let mut blocks = match std::mem::replace(&mut user.content, UserContent::Blocks(Vec::new())) {
        UserContent::Text(t) => vec![ContentBlock::text(t)],
        UserContent::Blocks(b) => b,
    };
    blocks.extend(images.into_iter().map(ContentBlock::Image));
    user.content = UserContent::Blocks(blocks);
    AgentMessage::from(Message::User(user))
}

/// Events for a front end that does not show replies as they stream.
fn settled(event: &AgentEvent) -> bool {
    !matches!(
        event,
        AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
    )
}

struct Host {
    approval: Arc<crate::approval::Gate>,
    agent: Agent,
    recorder: Option<RecorderTask>,
    paths: Option<SessionPaths>,
    cwd: PathBuf,
    catalog: Arc<Catalog>,
    model: ModelInfo,
    thinking: ThinkingLevel,
    session_id: String,
    name: Option<String>,
    secrets: crate::secrets::Secrets,
    shell: Option<Arc<dyn crate::agent::protocol::tool::AgentTool>>,
    login: Option<Arc<login::LoginParts>>,
    mcp: Option<crate::mcp::McpManager>,
    /// The retry count set aside while retries are turned off.
    configured_retries: Option<u32>,
    remember_in: Option<PathBuf>,
    templates: Arc<Vec<crate::config::prompt_templates::PromptTemplate>>,
    skills: Arc<Vec<crate::config::skills::Skill>>,
    hooks: Option<Arc<crate::hooks::Hooks>>,
    session_slot: Option<Arc<crate::subagent::SessionSlot>>,
    checkpoints: Option<Arc<crate::checkpoint::Tracker>>,
    web_search: bool,
    /// A custom command's `model` is in use for this run: the model to go back to after it.
    model_after_run: Option<ModelInfo>,
    /// A custom command's `allowed-tools` apply to this run.
    run_allowances: bool,
    ends_process: bool,
    /// Context `SessionStart` hooks gave, sent with the next prompt.
    session_context: Vec<String>,
    /// Models local servers offered last (`SetModel` can name them).
    local_models: Arc<std::sync::Mutex<Vec<ModelInfo>>>,
    /// The sign-in under way: how to stop it and where pasted lines go.
    sign_in: Option<(
        tokio_util::sync::CancellationToken,
        tokio::sync::mpsc::UnboundedSender<String>,
    )>,
    /// Windows servers have reported, by provider and model id (asked once per session).
    windows: std::collections::HashMap<(String, String), u64>,
    /// Where a window found off the command loop comes back to it.
    window_found: mpsc::UnboundedSender<WindowFound>,
    /// Models whose server gave only the window the model could take: asked again after the
    /// next run, when the server has it loaded and says what it runs it with.
    ask_window_again: std::collections::HashSet<(String, String)>,
    out: Outbox,
}

/// A window a model's server reported, on its way back to the host's loop.
struct WindowFound {
    provider: String,
    id: String,
    window: u64,
    /// What the server runs the model with (else what the model could take).
    running: bool,
}

/// Where the host's events go, each naming the operation it answers.
#[derive(Clone)]
struct Outbox {
    tx: mpsc::UnboundedSender<FrontEvent>,
    reply_to: Option<OpId>,
}

impl Outbox {
    fn tell(&self, event: HostEvent) -> bool {
        let reply_to = self.reply_to;
        self.tx.send(FrontEvent::Host { reply_to, event }).is_ok()
    }

    fn answer(&self, id: OpId, answer: Answer) {
        let _ = self.tx.send(FrontEvent::Answer { id, answer });
    }

    /// The same channel for news that answers no operation.
    fn unprompted(&self) -> Outbox {
        Outbox {
            tx: self.tx.clone(),
            reply_to: None,
        }
    }
}

/// Start the host task. Must be called inside a tokio runtime.
pub fn spawn(parts: HostParts) -> Client {
    // Paced: a front end that stops reading (an RPC client, a blocked stdout) makes the
    // model stream wait instead of the queue growing.
    let wanted: fn(&AgentEvent) -> bool = if parts.live_updates {
        |_| true
    } else {
        settled
    };
    let events = parts.agent.subscribe_paced(paced::DEFAULT_LIMIT, wanted);
    let (tx, commands) = mpsc::unbounded_channel();
    let (out, host_events) = mpsc::unbounded_channel();
    let out = Outbox {
        tx: out,
        reply_to: None,
    };
    let recorder = parts
        .recorder
        .map(|r| record(&parts.agent, &out, &parts.secrets, r));
    if parts.asks_person {
        let to_front = out.clone();
        let hooks = parts
            .hooks
            .clone()
            .filter(|h| h.has(crate::hooks::Event::Notification));
        parts.approval.set_asker(Arc::new(move |request| {
            if let Some(h) = hooks.clone() {
                let message = format!("pi needs your permission to use {}", request.tool);
                tokio::spawn(async move {
                    let fields = serde_json::json!({
                        "message": message,
                        "notification_type": "permission_prompt",
                    });
                    h.inform(
                        crate::hooks::Event::Notification,
                        "permission_prompt",
                        fields,
                    )
                    .await;
                });
            }
            to_front.tell(HostEvent::Approval(Box::new(request)));
        }));
    }
    let mcp_notices = parts
        .mcp
        .as_ref()
        .and_then(crate::mcp::McpManager::take_notices);
    if let Some(mut notices) = mcp_notices {
        let out = out.clone();
        tokio::spawn(async move {
            while let Some(text) = notices.recv().await {
                if !out.tell(HostEvent::Notice(text)) {
                    break;
                }
            }
        });
    }
    // Only the ends of runs (a `/compact` ends with its `compaction_end`), and the start of a
    // compaction (the `PreCompact` hooks of one the loop starts itself).
    let ends = parts.agent.subscribe_filtered(|e| {
        matches!(
            e,
            AgentEvent::AgentEnd { .. }
                | AgentEvent::CompactionEnd { .. }
                | AgentEvent::CompactionStart { .. }
        )
    });
    let (window_found, windows_found) = mpsc::unbounded_channel();
    let mut host = Host {
        approval: parts.approval,
        agent: parts.agent,
        recorder,
        paths: parts.paths,
        cwd: parts.cwd,
        catalog: parts.catalog,
        model: parts.model,
        thinking: parts.thinking,
        session_id: parts.session_id,
        name: parts.session_name,
        secrets: parts.secrets,
        shell: parts.shell,
        login: parts.login.map(Arc::new),
        mcp: parts.mcp,
        configured_retries: None,
        remember_in: parts.remember_in,
        templates: parts.templates,
        skills: parts.skills,
        hooks: parts.hooks.clone(),
        session_slot: parts.session_slot,
        checkpoints: parts.checkpoints,
        web_search: parts.web_search,
        model_after_run: None,
        run_allowances: false,
        ends_process: parts.ends_process,
        session_context: Vec::new(),
        local_models: Default::default(),
        sign_in: None,
        windows: Default::default(),
        window_found,
        ask_window_again: Default::default(),
        out,
    };
    if parts.plan {
        host.set_plan_mode(true);
    }
    let gone = tokio_util::sync::CancellationToken::new();
    let ended = gone.clone().drop_guard();
    tokio::spawn(async move {
        // Dropped when the task ends, however it ends: a front end waiting for an answer
        // stops waiting.
        let _ended = ended;
        host.learn_window();
        host.session_started(if host.agent.messages().is_empty() {
            "startup"
        } else {
            "resume"
        })
        .await;
        host.run(commands, ends, windows_found).await;
    });
    Client {
        commands: Commands::new(tx),
        events: match parts.notices {
            Some(n) => FrontEvents::new(events, host_events, gone).with_notices(n),
            None => FrontEvents::new(events, host_events, gone),
        },
    }
}

/// Record `agent`'s events with `recorder`: withheld secrets are masked, and write failures
/// reach the front end as they happen.
fn record(
    agent: &Agent,
    out: &Outbox,
    secrets: &crate::secrets::Secrets,
    mut recorder: SessionRecorder,
) -> RecorderTask {
    recorder.share_secrets(secrets);
    let out = out.unprompted();
    let mut last = String::new();
    recorder.set_error_reporter(Box::new(move |e| {
        let text = e.to_string();
        if text != last {
            out.tell(HostEvent::SessionWriteFailed(text.clone()));
            last = text;
        }
    }));
    RecorderTask::from_events(agent.subscribe_filtered(SessionRecorder::wants), recorder)
}

/// Whether a run has ended well with `event`, its last: a run's `agent_end` with no reply that
/// failed or was stopped, or the `compaction_end` of a `/compact` (a run of its own, which has no
/// `agent_end`) that was neither stopped nor failed. `None`: not the end of a run.
fn ended_well(event: &AgentEvent) -> Option<bool> {
    use crate::agent::protocol::events::CompactionReason;
    use crate::agent::protocol::types::StopReason;
    match event {
        AgentEvent::AgentEnd { messages, .. } => Some(
            !messages
                .iter()
                .filter_map(AgentMessage::as_assistant)
                .any(|a| matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)),
        ),
        AgentEvent::CompactionEnd {
            reason: CompactionReason::Manual,
            aborted,
            error_message,
            ..
        } => Some(!aborted && error_message.is_none()),
        _ => None,
    }
}

impl Host {
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Op>,
        mut ends: mpsc::UnboundedReceiver<RunEvent>,
        mut windows: mpsc::UnboundedReceiver<WindowFound>,
    ) {
        let mut deferred: std::collections::VecDeque<Op> = Default::default();
        loop {
            let op = match deferred.pop_front() {
                Some(op) => op,
                // A run's end first: it happened before any operation still waiting (it is
                // sent to every subscriber at once), and what was queued runs before them.
                None => tokio::select! {
                    biased;
                    Some(end) = ends.recv() => {
                        self.compaction_hooks(&end.event).await;
                        if matches!(end.event, AgentEvent::AgentEnd { .. }) {
                            self.end_command_run();
                        }
                        if let Some(well) = ended_well(&end.event) {
                            self.ask_window_once_loaded();
                            self.run_queued(well).await;
                        }
                        continue;
                    }
                    Some(found) = windows.recv() => {
                        self.use_window(found);
                        continue;
                    }
                    op = commands.recv() => match op {
                        Some(op) => op,
                        None => break,
                    },
                },
            };
            self.out.reply_to = Some(op.id);
            match op.body {
                OpBody::Shutdown => {
                    let closed = self.close().await;
                    self.out.answer(op.id, Answer::Closed(closed));
                    return;
                }
                // Summarising takes a model call: operations keep arriving meanwhile (an abort
                // stops it; the others wait their turn).
                OpBody::NavigateSummarized { target, focus } => {
                    self.navigate_summarized(target, focus, &mut commands, &mut deferred)
                        .await
                }
                OpBody::Shell { command, include } => {
                    self.shell(command, include, &mut commands, &mut deferred)
                        .await
                }
                body => self.handle(op.id, body).await,
            }
            self.out.reply_to = None;
        }
        self.close().await;
    }

    /// A run ended: messages queued after its last look at the queues (or during a `/compact`,
    /// which takes none) are run now, unless it failed or was stopped (they then wait for the
    /// person, or the next prompt).
    async fn run_queued(&self, ended_well: bool) {
        if !ended_well || !self.agent.has_queued_messages() {
            return;
        }
        // A compaction's end comes just before its run lets go; runs start only from here, so
        // this waits for that one alone.
        self.agent.wait_idle().await;
        if self.agent.has_queued_messages() {
            // Refused only when another run started meanwhile, which takes them itself.
            let _ = self.agent.continue_run();
        }
    }

    fn tell(&self, event: HostEvent) {
        self.out.tell(event);
    }

    /// Tell the hooks which session they serve, then run the `SessionStart` hooks; what they
    /// say goes with the next prompt.
    async fn session_started(&mut self, source: &str) {
        if let Some(slot) = &self.session_slot {
            slot.set(self.recorder.as_ref().map(|r| r.path().to_path_buf()));
        }
        let Some(h) = self.hooks.clone() else {
            return;
        };
        h.set_session(
            &self.session_id,
            self.recorder.as_ref().map(|r| r.path().to_path_buf()),
        );
        h.set_permission_mode(self.approval.mode());
        if h.has(crate::hooks::Event::SessionStart) {
            let context = h.session_start(source).await;
            self.session_context.extend(context);
        }
    }

    /// A custom command's `allowed-tools` and `model` for the run its prompt starts: the rules
    /// pi can map allow those calls without asking; the model (found as `--model` finds one,
    /// the current provider's first) answers this prompt only.
    fn start_command_run(&mut self, model: Option<String>, allowed: &[String], name: &str) {
        if !allowed.is_empty() {
            let (mapped, unmapped): (Vec<_>, Vec<_>) = allowed
                .iter()
                .map(|r| (r, crate::approval::rules::from_claude(r)))
                .partition(|(_, m)| m.is_some());
            let rules: Vec<String> = mapped.into_iter().filter_map(|(_, m)| m).collect();
            if !unmapped.is_empty() {
                let names: Vec<&str> = unmapped.iter().map(|(r, _)| r.as_str()).collect();
                self.tell(HostEvent::Notice(format!(
                    "/{name}: allowed-tools {} name tools pi does not have; ignored",
                    names.join(", ")
                )));
            }
            let (rules, problems) = crate::approval::rules::Rules::new(&rules, &[]);
            for p in problems {
                self.tell(HostEvent::Notice(format!("/{name}: {p}")));
            }
            self.approval.allow_for_run(rules);
            self.run_allowances = true;
        }
        let Some(wanted) = model else {
            return;
        };
        if self.agent.is_streaming() {
            return;
        }
        // Local servers' models too (what `SetModel` can name).
        let all: Vec<ModelInfo> = crate::sync::lock(&self.local_models)
            .iter()
            .chain(self.catalog.models())
            .cloned()
            .collect();
        // Else an id the current provider's server may know (as `--model provider/id`).
        let found = crate::setup::patterns::best_match_near(&wanted, &all, &self.model.provider)
            .or_else(|e| {
                if wanted.contains(char::is_whitespace) {
                    return Err(e);
                }
                self.catalog
                    .resolve(&self.model.provider, &wanted)
                    .map(|(m, _)| m)
            });
        match found {
            Ok(m) if m.id != self.model.id || m.provider != self.model.provider => {
                self.tell(HostEvent::Notice(format!(
                    "/{name} runs on {}/{} (its model); then back to {}",
                    m.provider, m.id, self.model.id
                )));
                let to = m.to_model();
                self.agent.update_settings(|s| s.model = to);
                self.model_after_run = Some(self.model.clone());
            }
            Ok(_) => {}
            Err(e) => self.tell(HostEvent::Notice(format!(
                "/{name}: its model `{wanted}` is not used: {e}"
            ))),
        }
    }

    /// A custom command's run is over: its allowances end and the model goes back.
    fn end_command_run(&mut self) {
        if std::mem::take(&mut self.run_allowances) {
            self.approval.end_run_allowances();
        }
        if let Some(m) = self.model_after_run.take() {
            let back = m.to_model();
            self.agent.update_settings(|s| s.model = back);
        }
    }

    /// `/compact`: the `PreCompact` hooks first, then the compaction.
    async fn compact(&self, id: OpId, focus: Option<String>) {
        if let Some(h) = self
            .hooks
            .as_ref()
            .filter(|h| h.has(crate::hooks::Event::PreCompact))
        {
            let fields = serde_json::json!({
                "trigger": "manual",
                "custom_instructions": focus.clone().unwrap_or_default(),
            });
            h.inform(crate::hooks::Event::PreCompact, "manual", fields)
                .await;
        }
        self.agent_op(id, AgentOp::Compact { focus }).await;
    }

    /// The `SessionEnd` hooks, for `reason`.
    async fn session_ended(&self, reason: &str) {
        if let Some(h) = self
            .hooks
            .as_ref()
            .filter(|h| h.has(crate::hooks::Event::SessionEnd))
        {
            let fields = serde_json::json!({ "reason": reason });
            h.inform(crate::hooks::Event::SessionEnd, reason, fields)
                .await;
        }
    }

    /// `PreCompact` hooks for a compaction the loop started itself (a `/compact` ran them
    /// before it began), and `SessionStart` hooks (`compact`) once one is done.
    async fn compaction_hooks(&mut self, event: &AgentEvent) {
        use crate::agent::protocol::events::CompactionReason;
        let Some(h) = self.hooks.clone() else {
            return;
        };
        match event {
            AgentEvent::CompactionStart { reason, .. }
                if *reason != CompactionReason::Manual
                    && h.has(crate::hooks::Event::PreCompact) =>
            {
                let fields = serde_json::json!({"trigger": "auto", "custom_instructions": ""});
                tokio::spawn(async move {
                    h.inform(crate::hooks::Event::PreCompact, "auto", fields)
                        .await;
                });
            }
            AgentEvent::CompactionEnd {
                aborted: false,
                error_message: None,
                ..
            } => self.session_started("compact").await,
            _ => {}
        }
    }

    /// Before a prompt goes to a model: what the session has queued must be on disk (a new
    /// session's file is made now). `Err` says why not; nothing was saved or sent then.
    async fn ready_for_prompt(&self) -> Result<(), String> {
        let Some(r) = &self.recorder else {
            return Ok(());
        };
        match r.ready_for_prompt().await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!(
                "the session cannot be saved ({e}), so nothing was sent to the model and \
                 nothing was saved. Free some space, choose another folder with --session-dir, \
                 or run with --no-session"
            )),
            Err(_) => Err("the session recorder stopped; nothing was sent to the model".into()),
        }
    }

    /// Carry out an agent operation and answer with what it returns.
    async fn agent_op(&self, id: OpId, op: AgentOp) {
        if let Some(answer) = task::apply(&self.agent, op).await {
            self.out.answer(id, Answer::Agent(answer));
        }
    }

    async fn handle(&mut self, id: OpId, body: OpBody) {
        match body {
            OpBody::Prompt(prompt) => match self.ready_for_prompt().await {
                Ok(()) => self.prompt(id, prompt).await,
                Err(why) => self.out.answer(
                    id,
                    Answer::Agent(AgentAnswer::Prompt(Err(AgentError::Refused(why)))),
                ),
            },
            OpBody::Compact { focus } => self.compact(id, focus).await,
            OpBody::Abort { reason } => self.agent_op(id, AgentOp::Abort { reason }).await,
            OpBody::AbortRetry => self.agent_op(id, AgentOp::AbortRetry).await,
            OpBody::SetPaused { paused } => self.agent_op(id, AgentOp::SetPaused { paused }).await,
            OpBody::SetSteeringMode { mode } => {
                self.agent_op(id, AgentOp::SetSteeringMode { mode }).await
            }
            OpBody::SetFollowUpMode { mode } => {
                self.agent_op(id, AgentOp::SetFollowUpMode { mode }).await
            }
            OpBody::Snapshot => self.agent_op(id, AgentOp::Snapshot).await,
            OpBody::SetModel { provider, id } => match self.find_model(&provider, &id) {
                Ok(model) => self.set_model(model),
                Err(e) => self.tell(HostEvent::Failed(format!(
                    "cannot use {provider}/{id}: {e}"
                ))),
            },
            OpBody::SetThinking { level } => self.set_thinking(level),
            OpBody::NewSession => self.new_session().await,
            OpBody::ListSessions { scope } => self.list(scope),
            OpBody::OpenSession { path } => self.open(path).await,
            OpBody::RenameSession { path, name, scope } => {
                self.rename_listed(path, name, scope).await
            }
            OpBody::DeleteSession { path, scope } => self.delete_listed(path, scope).await,
            OpBody::Export { path } => self.export(path),
            OpBody::NameSession { name } => self.name(name),
            OpBody::TakeQueued => {
                let taken = self.agent.clear_all_queues();
                self.tell(HostEvent::Queued(taken));
            }
            OpBody::Tree => self.tree().await,
            OpBody::ForkPoints => self.fork_points().await,
            OpBody::Navigate { target } => self.navigate(target).await,
            // Handled by `run`, which can keep reading operations while the model writes.
            OpBody::NavigateSummarized { target, .. } => self.navigate(target).await,
            OpBody::Shell { .. } | OpBody::AbortShell | OpBody::Shutdown => {}
            OpBody::Label { target, label } => self.label(target, label).await,
            OpBody::SetPlanMode { on } => self.set_plan_mode(on),
            body @ (OpBody::RewindPlan { .. }
            | OpBody::RestoreFiles { .. }
            | OpBody::Rewind { .. }) => self.handle_rewind(body).await,
            OpBody::Fork { target } => self.fork_at(target).await,
            OpBody::Clone => self.clone_branch().await,
            OpBody::Login { provider, key } => self.login(provider, key).await,
            OpBody::FindLocalModels => self.find_local_models(),
            body @ (OpBody::SignIn { .. }
            | OpBody::SignInPaste { .. }
            | OpBody::CancelSignIn
            | OpBody::Logout { .. }) => self.handle_sign_in(body).await,
            OpBody::Approve { request, decision } => {
                self.approval.answer(request, decision);
            }
            OpBody::SetApproval { mode } => self.approval.set_mode(mode),
            OpBody::RememberTheme { name } => {
                self.remember(crate::config::node::remember::Choice::Theme(name));
            }
            OpBody::SetAutoCompaction { enabled } => self.agent.update_settings(|s| {
                if let Some(c) = s.compaction.as_mut() {
                    c.enabled = enabled;
                }
            }),
            OpBody::SetAutoRetry { enabled } => {
                let configured = &mut self.configured_retries;
                self.agent.update_settings(|s| {
                    if enabled {
                        if let Some(n) = configured.take() {
                            s.retry.max_retries = n;
                        }
                    } else if s.retry.max_retries > 0 {
                        *configured = Some(s.retry.max_retries);
                        s.retry.max_retries = 0;
                    }
                });
            }
            OpBody::Stats => self.send_stats(),
            OpBody::RecordedCompaction => match &self.recorder {
                Some(r) => {
                    let out = self.out.clone();
                    r.with(move |r| {
                        let first_kept = r.last_compaction_kept().map(str::to_string);
                        out.tell(HostEvent::CompactionRecorded(first_kept));
                    });
                }
                None => self.tell(HostEvent::CompactionRecorded(None)),
            },
            OpBody::McpStatus => {
                let status = self
                    .mcp
                    .as_ref()
                    .map(crate::mcp::McpManager::status)
                    .unwrap_or_default();
                self.tell(HostEvent::McpStatus(status));
            }
            OpBody::McpReady => match self.mcp.clone() {
                Some(m) => {
                    let out = self.out.clone();
                    tokio::spawn(async move {
                        m.wait_started().await;
                        out.answer(id, Answer::McpReady);
                    });
                }
                None => self.out.answer(id, Answer::McpReady),
            },
        }
    }

    /// The model a `SetModel` names: the one in use, one a local server offered, or the
    /// catalogue's.
    fn find_model(&self, provider: &str, id: &str) -> Result<ModelInfo, String> {
        let same = |m: &&ModelInfo| m.provider == provider && m.id == id;
        if same(&&self.model) {
            return Ok(self.model.clone());
        }
        if let Some(m) = crate::sync::lock(&self.local_models).iter().find(same) {
            return Ok(m.clone());
        }
        self.catalog.resolve(provider, id).map(|(m, _)| m)
    }

    /// The message a prompt sends: its text, the files it names (read on the blocking pool),
    /// its images; then started or queued as it says.
    async fn prompt(&mut self, id: OpId, prompt: Prompt) {
        let Prompt {
            text,
            images,
            files,
            mentions,
            when_busy,
        } = prompt;
        // `/skill:name args` goes as the skill's file; `/name args` naming a prompt template
        // as the template's text.
        let mut command = None;
        let text = match crate::config::skills::expand(&self.skills, &text) {
            Some(Ok(expanded)) => expanded,
            Some(Err(why)) => {
                let refused = Err(AgentError::Refused(why));
                self.out
                    .answer(id, Answer::Agent(AgentAnswer::Prompt(refused)));
                return;
            }
            None => match crate::config::prompt_templates::expand_with(&self.templates, &text) {
                Some((expanded, t)) => {
                    command = Some((t.model.clone(), t.allowed_tools.clone(), t.name.clone()));
                    expanded
                }
                None => text,
            },
        };
        let mut context = std::mem::take(&mut self.session_context);
        if let Some(h) = self
            .hooks
            .clone()
            .filter(|h| h.has(crate::hooks::Event::UserPromptSubmit))
        {
            let signal = crate::agent::protocol::abort::AbortSignal::new();
            let verdict = h.user_prompt_submit(&text, &signal).await;
            if let Some(why) = verdict.block {
                // Kept for the prompt that does go.
                self.session_context = context;
                let refused = Err(AgentError::Refused(format!(
                    "A UserPromptSubmit hook stopped this prompt: {why}"
                )));
                self.out
                    .answer(id, Answer::Agent(AgentAnswer::Prompt(refused)));
                return;
            }
            context.extend(verdict.context);
        }
        let text = with_hook_context(text, &context);
        if !self.agent.is_streaming() {
            self.end_command_run();
        }
        if let Some((model, allowed, name)) = command {
            self.start_command_run(model, &allowed, &name);
        }
        let wants_files = !files.is_empty() || (mentions && attach::mentions::any(&text));
        let message = if wants_files {
            self.with_files(text, files, mentions).await
        } else {
            AgentMessage::user(text)
        };
        let message = with_images(message, images);
        self.agent_op(
            id,
            AgentOp::Prompt {
                messages: vec![message],
                when_busy,
            },
        )
        .await;
    }

    /// A prompt's message with its files: those listed, and (with `mentions`) every `@path`
    /// in the text that names a file.
    async fn with_files(
        &mut self,
        text: String,
        files: Vec<FileRef>,
        mentions: bool,
    ) -> AgentMessage {
        let cwd = self.cwd.clone();
        let typed = text.clone();
        let read = tokio::task::spawn_blocking(move || {
            let mut wanted = files;
            let named = if mentions {
                attach::mentions::files(&cwd, &typed)
            } else {
                Vec::new()
            };
            for m in named {
                if !wanted.iter().any(|f| f.path == m.path) {
                    wanted.push(m);
                }
            }
            let mut loaded = Vec::new();
            let mut problems = Vec::new();
            for f in wanted {
                match attach::load(&f.name, &f.path) {
                    Ok(a) => loaded.push(a),
                    Err(e) => problems.push(e),
                }
            }
            (loaded, problems)
        })
        .await;
        let (loaded, problems) =
            read.unwrap_or_else(|e| (Vec::new(), vec![format!("cannot attach the files: {e}")]));
        for p in problems {
            self.tell(HostEvent::Notice(format!("{p}; sent without it")));
        }
        let built = attach::build(&text, loaded, self.model.images);
        if !built.left_out.is_empty() {
            self.tell(HostEvent::Notice(format!(
                "{} does not take images, so this was sent without {}",
                self.model.id,
                built.left_out.join(", ")
            )));
        }
        built.message
    }

    /// Keep a choice for the next start (see [`crate::config::node::remember`]); a file that
    /// cannot take it is said, not overwritten.
    fn remember(&self, choice: crate::config::node::remember::Choice) {
        let Some(path) = &self.remember_in else {
            return;
        };
        if let Err(e) = crate::config::node::remember::remember(path, &choice) {
            self.tell(HostEvent::Notice(e));
        }
    }

    /// Talk to `model` from now on, recorded in the session and remembered for the next start.
    fn set_model(&mut self, model: ModelInfo) {
        self.remember(crate::config::node::remember::Choice::Model {
            provider: model.provider.clone(),
            id: model.id.clone(),
        });
        let m = model.to_model();
        self.agent.update_settings(|s| s.model = m);
        if let Some(r) = &self.recorder {
            let (provider, id) = (model.provider.clone(), model.id.clone());
            r.with(move |r| {
                r.set_model(&provider, &id);
            });
        }
        if self.web_search && !crate::provider::has_web_search(model.api) {
            self.tell(HostEvent::Notice(web_search_unavailable(&model)));
        }
        self.model = model;
        self.learn_window();
    }

    /// Ask the model's server how large a context it gives the model, off the command loop,
    /// when neither the catalogue nor the configuration knows (a local or self-hosted
    /// OpenAI-compatible server). A window already heard of this session is used at once.
    fn learn_window(&mut self) {
        let m = &self.model;
        let unknown = m.api == crate::provider::catalog::Api::OpenAiCompletions
            && m.context_window == crate::provider::catalog::DEFAULT_CONTEXT_WINDOW
            && !m.base_url.is_empty()
            && !self.catalog.window_set(&m.provider, &m.id);
        if !unknown {
            return;
        }
        let (provider, id) = (m.provider.clone(), m.id.clone());
        if let Some(&window) = self.windows.get(&(provider.clone(), id.clone())) {
            self.use_window(WindowFound {
                provider,
                id,
                window,
                running: true,
            });
            return;
        }
        self.ask_window();
    }

    /// Ask the model's server for its window off the command loop.
    fn ask_window(&self) {
        let found = self.window_found.clone();
        let m = &self.model;
        let (provider, id) = (m.provider.clone(), m.id.clone());
        let (base_url, headers) = (m.base_url.clone(), m.headers.clone());
        tokio::spawn(async move {
            if let Some(f) = crate::provider::window::discover(&base_url, &id, &headers).await {
                let _ = found.send(WindowFound {
                    provider,
                    id,
                    window: f.window,
                    running: f.running,
                });
            }
        });
    }

    /// A run ended: a model whose server said only what it could take is loaded now, so its
    /// server can say what it runs it with (Ollama serves a model with its own default window,
    /// often far below the model's, and says so once the model is loaded).
    fn ask_window_once_loaded(&mut self) {
        let key = (self.model.provider.clone(), self.model.id.clone());
        if self.ask_window_again.remove(&key) {
            self.ask_window();
        }
    }

    /// A server said how large `provider/id`'s window is: count against it if that model is
    /// still the one in use.
    fn use_window(&mut self, found: WindowFound) {
        let WindowFound {
            provider,
            id,
            window,
            running,
        } = found;
        let key = (provider.clone(), id.clone());
        if running {
            self.windows.insert(key, window);
        } else {
            self.ask_window_again.insert(key);
        }
        if self.model.provider != provider || self.model.id != id {
            return;
        }
        self.model.context_window = window;
        self.agent.update_settings(|s| {
            if s.model.provider == provider && s.model.id == id {
                s.model.context_window = window;
            }
        });
        self.out.unprompted().tell(HostEvent::ModelWindow {
            provider,
            id,
            window,
        });
    }

    /// Save and use a key, then switch to the provider's default model.
    async fn login(&mut self, provider: String, key: login::SecretKey) {
        let Some(parts) = self.login.clone() else {
            self.tell(HostEvent::Failed("signing in is not available here".into()));
            return;
        };
        match login::login(&parts, &self.catalog, &provider, &key).await {
            Ok(done) => {
                // Masked in every session file from now on, the open one included.
                if let Ok(k) = login::check_key(&key.0) {
                    self.secrets.add(&k);
                }
                if let Some(m) = &done.model {
                    self.set_model(m.clone());
                }
                self.tell(HostEvent::LoggedIn(done));
            }
            Err(e) => self.tell(HostEvent::Failed(format!("could not sign in: {e}"))),
        }
    }

    /// The session's statistics, for `/session`.
    fn send_stats(&self) {
        let stats = stats::collect(
            &self.agent.messages(),
            self.recorder.as_ref(),
            &self.session_id,
            self.name.as_deref(),
            &self.model,
        );
        self.tell(HostEvent::Stats(Box::new(stats)));
    }

    /// The subscription sign-in operations.
    async fn handle_sign_in(&mut self, body: OpBody) {
        match body {
            OpBody::SignIn { provider } => self.start_sign_in(&provider),
            OpBody::SignInPaste { line } => {
                if let Some((_, tx)) = &self.sign_in {
                    let _ = tx.send(line);
                }
            }
            OpBody::CancelSignIn => {
                if let Some((cancel, _)) = self.sign_in.take() {
                    cancel.cancel();
                }
            }
            OpBody::Logout { provider } => self.logout(&provider).await,
            _ => {}
        }
    }

    /// Start a subscription sign-in off the command loop (it waits for the person).
    fn start_sign_in(&mut self, provider: &str) {
        let Some(parts) = self.login.clone() else {
            self.tell(HostEvent::Failed("signing in is not available here".into()));
            return;
        };
        let Some(kind) = login::subscription_named(provider) else {
            self.tell(HostEvent::Failed(format!(
                "`{provider}` has no subscription to sign in to"
            )));
            return;
        };
        if let Some((cancel, _)) = self.sign_in.take() {
            cancel.cancel();
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.sign_in = Some((cancel.clone(), tx));
        let out = self.out.clone();
        let catalog = self.catalog.clone();
        tokio::spawn(async move {
            let request = crate::provider::subscription::flows::SignIn {
                kind,
                enterprise_domain: None,
                pasted: Some(rx),
                cancel,
                timeout: crate::provider::subscription::flows::BROWSER_TIMEOUT,
            };
            let subscriptions = parts.providers.subscriptions().clone();
            let notify_out = out.clone();
            let notify = move |n: crate::provider::subscription::flows::Notice| {
                if let crate::provider::subscription::flows::Notice::OpenUrl { url, .. } = &n {
                    login::open_browser(&parts.env, url);
                }
                notify_out.tell(HostEvent::SignInNotice(n));
            };
            match login::sign_in(&subscriptions, request, &notify).await {
                Ok(file) => out.tell(HostEvent::SignedIn(Box::new(login::SignedIn::new(
                    kind, file, &catalog,
                )))),
                Err(e) => out.tell(HostEvent::Failed(e)),
            }
        });
    }

    /// `/logout PROVIDER`.
    async fn logout(&mut self, provider: &str) {
        let Some(parts) = self.login.clone() else {
            self.tell(HostEvent::Failed(
                "signing out is not available here".into(),
            ));
            return;
        };
        let subscriptions = parts.providers.subscriptions().clone();
        match login::log_out(&subscriptions, parts.agent_dir.clone(), provider).await {
            Ok(m) => self.tell(HostEvent::Notice(m)),
            Err(e) => self.tell(HostEvent::Failed(format!("could not sign out: {e}"))),
        }
    }

    /// Probe the local servers off the command loop.
    fn find_local_models(&self) {
        let Some(parts) = self.login.clone() else {
            self.tell(HostEvent::LocalModels(Vec::new()));
            return;
        };
        let catalog = self.catalog.clone();
        let out = self.out.clone();
        let offered = self.local_models.clone();
        tokio::spawn(async move {
            let found = crate::provider::local::detect(&parts.env, &catalog).await;
            crate::sync::lock(&offered).clone_from(&found);
            out.tell(HostEvent::LocalModels(found));
        });
    }

    /// Think at `level` from now on, recorded in the session and remembered for the next start
    /// (`inherit` is not a level to remember).
    fn set_thinking(&mut self, level: ThinkingLevel) {
        if level != ThinkingLevel::Inherit {
            self.remember(crate::config::node::remember::Choice::Thinking(
                level.as_str().to_string(),
            ));
        }
        self.agent.update_settings(|s| s.thinking = level);
        if let Some(r) = &self.recorder {
            r.with(move |r| {
                r.set_thinking_level(level);
            });
        }
        self.thinking = level;
    }

    fn name(&mut self, name: String) {
        let name = name.trim().to_string();
        if name.is_empty() {
            self.tell(HostEvent::Failed("a session name cannot be empty".into()));
            return;
        }
        if let Some(r) = &self.recorder {
            let n = name.clone();
            r.with(move |r| {
                r.set_name(&n);
            });
        }
        self.name = Some(name.clone());
        self.tell(HostEvent::Named(name));
    }

    /// Abort any run and wait until it has ended (its last messages recorded).
    async fn settle(&self) {
        self.agent.abort(None);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.agent.wait_idle()).await;
    }

    async fn close(&mut self) -> Closed {
        self.settle().await;
        if self.ends_process {
            // One more reference to each message, never dropped: the history outlives the
            // host, and the kernel takes its memory back at exit in one go. Freeing a resumed
            // 50 MB history message by message took a twentieth of the run's CPU.
            std::mem::forget(self.agent.messages());
        }
        self.session_ended("prompt_input_exit").await;
        if let Some(m) = &self.mcp {
            m.stop().await;
        }
        let (saved, unsaved) = match self.recorder.take() {
            Some(task) => match task.finish().await {
                Some(r) => (!r.nothing_saved(), r.unsaved()),
                None => (
                    false,
                    Some("the session recorder stopped unexpectedly".into()),
                ),
            },
            None => (false, None),
        };
        Closed {
            session_id: self.session_id.clone(),
            saved,
            unsaved,
        }
    }

    async fn new_session(&mut self) {
        // Waits for the run's very end (no grace period): a command that ignores SIGTERM keeps
        // its run going until bash's own SIGKILL, and the new conversation must start after it.
        self.agent.abort(None);
        self.agent.wait_idle().await;
        self.session_ended("clear").await;
        self.agent.reset();
        let after_run = self.agent.last_run();
        if let Some(old) = self.recorder.take() {
            old.finish().await;
        }
        self.name = None;
        self.session_id = match &self.paths {
            Some(paths) => {
                let mut r = SessionRecorder::new_session(&paths.dir, &self.cwd);
                r.set_model(&self.model.provider, &self.model.id);
                r.set_thinking_level(self.thinking);
                let id = r.session_id().to_string();
                self.recorder = Some(record(&self.agent, &self.out, &self.secrets, r));
                id
            }
            None => session::ids::uuid_v7(),
        };
        self.tell(HostEvent::NewSession {
            session_id: self.session_id.clone(),
            path: self.recorder.as_ref().map(|r| r.path().to_path_buf()),
            after_run,
        });
        self.session_context.clear();
        self.session_started("clear").await;
    }

    fn list(&self, scope: ListScope) {
        let Some(paths) = self.paths.clone() else {
            self.tell(HostEvent::Failed(
                "Sessions are not saved in this run (--no-session)".into(),
            ));
            return;
        };
        let out = self.out.clone();
        // The current session is listed as it stands after the events shown so far.
        let written = self.recorder.as_ref().map(RecorderTask::written);
        tokio::spawn(async move {
            if let Some(written) = written {
                let _ = written.await;
            }
            let listed =
                tokio::task::spawn_blocking(move || session::list_sessions(&paths, scope)).await;
            let sessions = match listed {
                Ok(list) => list.sessions,
                Err(e) => {
                    out.tell(HostEvent::Failed(format!("cannot list the sessions: {e}")));
                    return;
                }
            };
            let files: Vec<PathBuf> = sessions.iter().map(|s| s.path.clone()).collect();
            out.tell(HostEvent::Sessions { scope, sessions });
            // Counting reads whole files: it follows the listing instead of delaying it.
            let counted = tokio::task::spawn_blocking(move || {
                files
                    .into_iter()
                    .filter_map(|p| session::list::count_messages(&p).map(|n| (p, n)))
                    .collect::<Vec<_>>()
            })
            .await;
            if let Ok(counts) = counted {
                out.tell(HostEvent::MessageCounts(counts));
            }
        });
    }

    /// Whether `path` is the file this session is written to.
    fn is_current(&self, path: &std::path::Path) -> bool {
        self.recorder.as_ref().is_some_and(|r| {
            let same = |a: &std::path::Path, b: &std::path::Path| {
                a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
            };
            same(r.path(), path)
        })
    }

    async fn rename_listed(&mut self, path: PathBuf, name: String, scope: ListScope) {
        if self.is_current(&path) {
            // The recorder writes this file: the name goes through it.
            self.name(name);
        } else {
            let renamed =
                tokio::task::spawn_blocking(move || session::manage::rename(&path, &name)).await;
            match renamed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => self.tell(HostEvent::Failed(format!("cannot rename: {e}"))),
                Err(e) => self.tell(HostEvent::Failed(format!("cannot rename: {e}"))),
            }
        }
        self.list(scope);
    }

    async fn delete_listed(&mut self, path: PathBuf, scope: ListScope) {
        if self.is_current(&path) {
            self.tell(HostEvent::Failed(
                "this is the session in use; start another (/new) to delete it".into(),
            ));
            return;
        }
        let agent_dir = self
            .paths
            .as_ref()
            .and_then(|p| p.root.as_ref())
            .and_then(|r| r.parent())
            .map(std::path::Path::to_path_buf);
        let deleted = tokio::task::spawn_blocking(move || {
            let kept = crate::checkpoint::cleanup::hashes_in(&path);
            session::manage::delete(&path)?;
            let sessions = path.parent();
            if let (Some(sessions), Some(agent)) = (sessions, agent_dir)
                && let Some(folder) = crate::checkpoint::folder_for(sessions, &agent)
            {
                crate::checkpoint::cleanup::forget(sessions, &folder, kept);
            }
            Ok::<(), session::SessionError>(())
        })
        .await;
        match deleted {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.tell(HostEvent::Failed(format!("cannot delete: {e}"))),
            Err(e) => self.tell(HostEvent::Failed(format!("cannot delete: {e}"))),
        }
        self.list(scope);
    }

    async fn open(&mut self, path: PathBuf) {
        self.open_with_draft(path, None, OpenedFrom::Resumed).await;
    }

    /// Go on with the model a session used, when this setup can reach it.
    fn adopt_model(&mut self, provider: &str, model_id: &str, warnings: &mut Vec<String>) {
        match self.catalog.resolve(provider, model_id) {
            Ok((info, _)) => {
                let model = info.to_model();
                self.agent.update_settings(|s| s.model = model);
                self.model = info;
                // The catalogue's entry carries no window a server reported: use the one
                // heard of this session (before the front end is told), or ask.
                self.learn_window();
            }
            Err(e) => warnings.push(format!(
                "the session used {provider}/{model_id}, which this setup cannot reach ({e}); \
                 keeping the current model"
            )),
        }
    }

    async fn open_with_draft(&mut self, path: PathBuf, draft: Option<String>, from: OpenedFrom) {
        if self.agent.is_streaming() {
            self.tell(HostEvent::Failed(
                "Cannot resume while the agent is working; press Esc first".into(),
            ));
            return;
        }
        let Some(paths) = self.paths.clone() else {
            self.tell(HostEvent::Failed(
                "Sessions are not saved in this run (--no-session)".into(),
            ));
            return;
        };
        let cwd = self.cwd.clone();
        let file = path.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let name = session::session_info(&file).and_then(|i| i.name);
            // Locked before it is read, so nothing slips in before our first entry.
            match session::open_session_to_write(&paths, &cwd, StartFrom::File(&file)) {
                Ok(opened) => Ok((opened, name)),
                Err(session::SessionError::Locked { pid, path }) => {
                    let id = session::list::header_id(&path)
                        .unwrap_or_else(|| path.display().to_string());
                    Err(format!(
                        "it is open in {}. To go on in a copy, quit \
                         and run `pi --fork {id}`; to look at it, `pi --session {id} --read-only`",
                        session::error::another_pi(pid)
                    ))
                }
                Err(e) => Err(e.to_string()),
            }
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        let (mut opened, name) = match loaded {
            Ok(o) => o,
            Err(e) => {
                self.tell(HostEvent::Failed(format!("cannot open the session: {e}")));
                return;
            }
        };
        let messages = std::mem::take(&mut opened.context.messages);
        if let Err(e) = self.agent.replace_messages(messages.clone()) {
            self.tell(HostEvent::Failed(format!("Cannot resume now: {e}")));
            return;
        }
        let mut warnings: Vec<String> = opened.warnings.iter().map(ToString::to_string).collect();
        // The conversation goes on with the model and level it used (the flags' choice only
        // applies to the session pi started with).
        if let Some(m) = opened.context.model.clone() {
            self.adopt_model(&m.provider, &m.model_id, &mut warnings);
        }
        if let Some(level) = opened.context.thinking_level {
            self.agent.update_settings(|s| s.thinking = level);
            self.thinking = level;
        }
        if let Some(old) = self.recorder.take() {
            old.finish().await;
        }
        let mut recorder = opened.recorder;
        recorder.set_model(&self.model.provider, &self.model.id);
        recorder.set_thinking_level(self.thinking);
        self.session_id = recorder.session_id().to_string();
        self.recorder = Some(record(&self.agent, &self.out, &self.secrets, recorder));
        self.name = name.clone();
        self.tell(HostEvent::Opened(Box::new(Opened {
            path,
            session_id: self.session_id.clone(),
            messages,
            model: self.model.clone(),
            thinking: self.thinking,
            name,
            warnings,
            draft,
            from,
        })));
        self.session_context.clear();
        self.session_started("resume").await;
    }

    fn export(&self, path: Option<PathBuf>) {
        let path = path.unwrap_or_else(|| {
            PathBuf::from(export::default_name(crate::agent::protocol::types::now_ms()))
        });
        let path = if path.is_absolute() {
            path
        } else {
            self.cwd.join(path)
        };
        let title = self
            .name
            .clone()
            .unwrap_or_else(|| format!("pi session {}", self.session_id));
        let markdown = export::render(
            &self.agent.messages(),
            export::Format::for_path(&path),
            &title,
        );
        let markdown = self.secrets.mask(&markdown).into_owned();
        let out = self.out.clone();
        tokio::spawn(async move {
            let target = path.clone();
            let written = tokio::task::spawn_blocking(move || write_private(&target, &markdown))
                .await
                .map_err(|e| std::io::Error::other(e.to_string()))
                .and_then(|r| r);
            let event = match written {
                Ok(()) => HostEvent::Exported(path),
                Err(e) => HostEvent::Failed(format!("cannot write {}: {e}", path.display())),
            };
            out.tell(event);
        });
    }
}

#[cfg(test)]
mod hook_context_tests {
    use super::*;

    #[test]
    fn the_person_sees_their_prompt_without_what_hooks_added() {
        let sent = with_hook_context("fix the bug".into(), &["Branch: main".into()]);
        assert_eq!(
            sent,
            "fix the bug\n\n<hook-context>\nBranch: main\n</hook-context>"
        );
        assert_eq!(without_hook_context(&sent), "fix the bug");
        assert_eq!(with_hook_context("x".into(), &[]), "x");
        // Text that merely mentions the marker is left alone.
        let typed = "explain\n\n<hook-context>\nhow it works";
        assert_eq!(without_hook_context(typed), typed);
    }
}

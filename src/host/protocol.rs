//! The host's protocol: what a front end asks ([`Op`], plain serde data with an id) and the one
//! stream it reads back ([`FrontEvents`]).
//!
//! Every front end (print mode, the interactive UI, RPC) sends [`Op`]s through [`Commands`] and
//! reads [`FrontEvent`]s: the agent's events (each stamped with its run), the host's events
//! (each naming the operation it answers, if any) and [`Answer`]s to operations that return a
//! value, carrying that operation's id. No operation carries a reply channel.
//!
//! The stream is merged in the order things happened: the agent's events come straight from
//! its paced subscription (no extra task or hop), the host's through a channel of their own,
//! and before a host event is handed out every agent event already sent is handed out first.
//! A host event is sent after what it reports on (a write failure after the message it failed
//! to save, a new session after the old run's end), so the front end never has to order the
//! two by hand.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::protocol::command::{
    Accepted, AgentAnswer, AgentError, AgentState, QueueMode, WhenBusy,
};
use crate::agent::protocol::events::RunEvent;
use crate::agent::protocol::paced::PacedReceiver;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::ImageContent;
use crate::approval::{ApprovalMode, Decision};
use crate::attach::FileRef;
use crate::session::ListScope;

use super::login::SecretKey;
use super::{Closed, HostEvent};

/// Names one operation; its answer carries it. Unique per host.
pub type OpId = u64;

/// One request from a front end.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Op {
    pub id: OpId,
    #[serde(flatten)]
    pub body: OpBody,
}

/// A prompt, the one way to send the agent a message: its text, images given inline, files to
/// read and attach, and what to do when a run is active.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Prompt {
    pub text: String,
    /// Images sent with it as they are (RPC's `images`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageContent>,
    /// Files the host reads (on the blocking pool) and sends with it. Images are left out for
    /// a model that takes none, and a file that cannot be read is left out too; each is said
    /// with a [`HostEvent::Notice`] answering the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileRef>,
    /// Also attach every file the text names with `@path`.
    #[serde(default)]
    pub mentions: bool,
    /// Start a run, or (while one is active) refuse, steer or follow up. A steered message is
    /// marked as steering.
    #[serde(default)]
    pub when_busy: WhenBusy,
}

impl Prompt {
    /// A prompt of plain text.
    pub fn text(text: impl Into<String>, when_busy: WhenBusy) -> Self {
        Prompt {
            text: text.into(),
            when_busy,
            ..Prompt::default()
        }
    }
}

/// Everything a front end can ask of the host (and, through it, of the agent).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OpBody {
    /// Start a run or queue a message; answered with [`AgentAnswer::Prompt`].
    Prompt(Prompt),
    /// Condense the conversation now, focused on `focus` if given; answered with
    /// [`AgentAnswer::Run`] (the compaction's run, or why there is none).
    Compact {
        #[serde(default)]
        focus: Option<String>,
    },
    /// Abort the current run (queued messages stay queued) and a running `!command`.
    Abort {
        #[serde(default)]
        reason: Option<String>,
    },
    /// Give up a retry whose backoff is running.
    AbortRetry,
    /// Close (`true`) or open the pause gate.
    SetPaused {
        paused: bool,
    },
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    /// The agent's state now; answered with [`AgentAnswer::State`].
    Snapshot,
    /// Empty the agent's queues; answered with [`HostEvent::Queued`] (to put the texts back
    /// in an editor).
    TakeQueued,
    /// Talk to this model from the next call on (recorded in the session, remembered for the
    /// next start). Named as the catalogue names it, or as a local server offered it.
    SetModel {
        provider: String,
        id: String,
    },
    /// Use this thinking level from the next call on (recorded in the session).
    SetThinking {
        level: ThinkingLevel,
    },
    /// End the current session file and start a new, empty conversation; answered with
    /// [`HostEvent::NewSession`].
    NewSession,
    /// List saved sessions; answered with [`HostEvent::Sessions`].
    ListSessions {
        #[serde(with = "scope")]
        scope: ListScope,
    },
    /// Continue in a saved session; answered with [`HostEvent::Opened`].
    OpenSession {
        path: PathBuf,
    },
    /// Name a saved session (the current one included); answered with a fresh listing of
    /// `scope`.
    RenameSession {
        path: PathBuf,
        name: String,
        #[serde(with = "scope")]
        scope: ListScope,
    },
    /// Delete a saved session file (not the current one); answered with a fresh listing.
    DeleteSession {
        path: PathBuf,
        #[serde(with = "scope")]
        scope: ListScope,
    },
    /// Write the conversation as markdown or HTML (default: `pi-session-<time>.md` in the
    /// folder); answered with [`HostEvent::Exported`].
    Export {
        #[serde(default)]
        path: Option<PathBuf>,
    },
    /// Name the session; answered with [`HostEvent::Named`].
    NameSession {
        name: String,
    },
    /// Answered with [`HostEvent::Stats`].
    Stats,
    /// `!command` (`include`: its output goes into the next request) or `!!command`; answered
    /// with [`HostEvent::ShellDone`]. An abort stops it.
    Shell {
        command: String,
        include: bool,
    },
    /// Stop the running `!command` (the agent's run, if any, goes on).
    AbortShell,
    /// The session's entries as a tree; answered with [`HostEvent::Tree`].
    Tree,
    /// The prompts of the current branch (where a fork can start); answered with
    /// [`HostEvent::ForkPoints`].
    ForkPoints,
    /// Continue from an entry of the tree (from its parent, for a prompt, whose text comes
    /// back as a draft); answered with [`HostEvent::Navigated`].
    Navigate {
        target: String,
    },
    /// Like `Navigate`, first summarising the branch left behind (focused on the text given,
    /// if any) into a `branch_summary` entry where the conversation goes on. An abort while
    /// the model writes it leaves everything as it was.
    NavigateSummarized {
        target: String,
        #[serde(default)]
        focus: Option<String>,
    },
    /// Plan mode on (`true`: only reading tools run, the model is asked for a plan) or off;
    /// answered with [`HostEvent::PlanMode`].
    SetPlanMode {
        on: bool,
    },
    /// What moving to `target` (as `Navigate` would) does to the files the agent changed;
    /// answered with [`HostEvent::RewindPlan`].
    RewindPlan {
        target: String,
    },
    /// Put the files the agent changed back as they were at `target` (as `Navigate` would
    /// place it); `force` also overwrites files changed since by someone else; `record` writes
    /// the restore as an entry (for a restore that leaves the conversation where it is).
    /// Answered with [`HostEvent::FilesRestored`].
    RestoreFiles {
        target: String,
        #[serde(default)]
        force: bool,
        #[serde(default)]
        record: bool,
    },
    /// Go back to `target`: the files, the conversation or both (`mode`), as one operation;
    /// answered with [`HostEvent::FilesRestored`] after the move.
    Rewind {
        target: String,
        #[serde(default)]
        mode: super::rewind::RewindMode,
        #[serde(default)]
        force: bool,
    },
    /// Set (`Some`) or clear (`None`) an entry's label; answered with a fresh tree.
    Label {
        target: String,
        #[serde(default)]
        label: Option<String>,
    },
    /// A new session file holding the branch before this prompt; answered with
    /// [`HostEvent::Opened`] (the prompt's text as its draft).
    Fork {
        target: String,
    },
    /// A new session file holding the current branch; answered with [`HostEvent::Opened`].
    Clone,
    /// Save an API key for a provider in `auth.json` and use it from now on, switching to the
    /// provider's default model; answered with [`HostEvent::LoggedIn`].
    Login {
        provider: String,
        key: SecretKey,
    },
    /// Sign in to the subscription of `provider` (`openai-codex`, `anthropic`,
    /// `github-copilot`); what to show comes as [`HostEvent::SignInNotice`], the end as
    /// [`HostEvent::SignedIn`] or [`HostEvent::Failed`].
    SignIn {
        provider: String,
    },
    /// A line the person pasted for the sign-in under way (the address the browser ended on).
    SignInPaste {
        line: String,
    },
    /// Stop the sign-in under way (answered with [`HostEvent::Failed`] saying so).
    CancelSignIn,
    /// Take `provider`'s sign-in (or stored key) out of `auth.json`; answered with
    /// [`HostEvent::Notice`] or [`HostEvent::Failed`].
    Logout {
        provider: String,
    },
    /// Look for local model servers; answered with [`HostEvent::LocalModels`].
    FindLocalModels,
    /// Compact long conversations on their own (`true`) or only when asked.
    SetAutoCompaction {
        enabled: bool,
    },
    /// Retry transient provider failures (`true`, with the configured count) or not at all.
    SetAutoRetry {
        enabled: bool,
    },
    /// The person's answer to [`HostEvent::Approval`] `request`.
    Approve {
        request: u64,
        decision: Decision,
    },
    /// Approve tool calls this way from now on.
    /// The person chose a theme in the UI: remembered for the next start.
    RememberTheme {
        name: String,
    },
    SetApproval {
        mode: ApprovalMode,
    },
    /// The MCP servers, their state and tools; answered with [`HostEvent::McpStatus`].
    McpStatus,
    /// The first kept entry of the compaction the session recorded last (after every event
    /// so far); answered with [`HostEvent::CompactionRecorded`].
    RecordedCompaction,
    /// Answered ([`Answer::McpReady`]) once no MCP server is still starting (each is bounded
    /// by its startup timeout; at once when there are none).
    McpReady,
    /// Abort what runs, flush the session and stop; answered with [`Answer::Closed`].
    Shutdown,
}

/// What an operation returns, on the event stream with its id.
#[derive(Debug)]
pub enum Answer {
    /// The agent's answer (a prompt taken or refused, a compaction's run, the state).
    Agent(AgentAnswer),
    McpReady,
    /// The host has stopped.
    Closed(Closed),
}

/// One item of a front end's stream.
#[derive(Debug)]
pub enum FrontEvent {
    /// The agent's event, with its run.
    Run(RunEvent),
    /// The host's event; `reply_to` names the operation it answers (`None`: news of its own,
    /// such as an approval request or a write failure).
    Host {
        reply_to: Option<OpId>,
        event: HostEvent,
    },
    /// The value an operation returns.
    Answer { id: OpId, answer: Answer },
}

/// Sends operations to the host. Cheap to clone; every clone numbers from the same counter.
#[derive(Clone, Debug)]
pub struct Commands {
    tx: mpsc::UnboundedSender<Op>,
    next: Arc<AtomicU64>,
}

impl Commands {
    pub(super) fn new(tx: mpsc::UnboundedSender<Op>) -> Self {
        Commands {
            tx,
            next: Arc::new(AtomicU64::new(1)),
        }
    }

    /// A sender whose operations arrive on the returned receiver instead of a host (for
    /// testing a front end on its own).
    pub fn detached() -> (Self, mpsc::UnboundedReceiver<Op>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Commands::new(tx), rx)
    }

    /// Send an operation; its id, or `None` when the host is gone.
    pub fn send(&self, body: OpBody) -> Option<OpId> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.tx.send(Op { id, body }).ok().map(|()| id)
    }
}

/// The receiving end of a front end's stream (see the module's note on the order).
pub struct FrontEvents {
    run: PacedReceiver,
    host: mpsc::UnboundedReceiver<FrontEvent>,
    /// Taken from the two channels, not yet handed out, in order.
    ready: VecDeque<FrontEvent>,
    /// Read past while waiting for an answer: handed out before `ready`.
    held: VecDeque<FrontEvent>,
    /// Cancelled when the host task has ended (or panicked), to stop waiting for an answer.
    gone: CancellationToken,
    /// Notices the provider sends while it streams (a dialect switched to, a call written as
    /// text): read before the run's events, so one sent before a reply ended is shown before
    /// the run's end.
    notices: Option<mpsc::UnboundedReceiver<String>>,
}

impl FrontEvents {
    pub(super) fn new(
        run: PacedReceiver,
        host: mpsc::UnboundedReceiver<FrontEvent>,
        gone: CancellationToken,
    ) -> Self {
        FrontEvents {
            run,
            host,
            ready: VecDeque::new(),
            held: VecDeque::new(),
            gone,
            notices: None,
        }
    }

    /// Also hand out the provider's notices, ahead of the run's events.
    pub(super) fn with_notices(mut self, notices: mpsc::UnboundedReceiver<String>) -> Self {
        self.notices = Some(notices);
        self
    }

    fn notice(text: String) -> FrontEvent {
        FrontEvent::Host {
            reply_to: None,
            event: HostEvent::Notice(text),
        }
    }

    /// Queue a host event behind every agent event sent before it.
    fn host_event(&mut self, event: FrontEvent) {
        while let Ok(e) = self.run.try_recv() {
            self.ready.push_back(FrontEvent::Run(e));
        }
        self.ready.push_back(event);
    }

    /// The next event; `None` once the agent and the host are both gone. Cancel-safe.
    pub async fn recv(&mut self) -> Option<FrontEvent> {
        match self.held.pop_front() {
            Some(e) => Some(e),
            None => self.next().await,
        }
    }

    /// The next event from the channels (past what is held).
    async fn next(&mut self) -> Option<FrontEvent> {
        if let Some(e) = self.ready.pop_front() {
            return Some(e);
        }
        let notices = &mut self.notices;
        let notice = async {
            match notices {
                Some(n) => n.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            Some(text) = notice => Some(Self::notice(text)),
            Some(e) = self.run.recv() => Some(FrontEvent::Run(e)),
            Some(h) = self.host.recv() => {
                self.host_event(h);
                self.ready.pop_front()
            }
            else => None,
        }
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Option<FrontEvent> {
        if let Some(e) = self.held.pop_front().or_else(|| self.ready.pop_front()) {
            return Some(e);
        }
        if let Some(text) = self.notices.as_mut().and_then(|n| n.try_recv().ok()) {
            return Some(Self::notice(text));
        }
        if let Ok(e) = self.run.try_recv() {
            return Some(FrontEvent::Run(e));
        }
        let h = self.host.try_recv().ok()?;
        self.host_event(h);
        self.ready.pop_front()
    }

    /// Nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.ready.is_empty() && self.run.is_empty() && self.host.is_empty()
    }

    /// Wait for the answer to operation `id`; everything that comes before it stays in the
    /// stream, in order, for the next `recv` (also when this is cancelled). `None` when the
    /// host is gone without answering.
    pub async fn answer(&mut self, id: OpId) -> Option<Answer> {
        let gone = self.gone.clone();
        loop {
            let next = tokio::select! {
                biased;
                e = self.next() => e,
                // Gone: what it sent is still read; then there is no answer.
                () = gone.cancelled() => match self.try_next() {
                    Some(e) => Some(e),
                    None => return None,
                },
            };
            match next {
                Some(FrontEvent::Answer { id: of, answer }) if of == id => return Some(answer),
                Some(e) => self.held.push_back(e),
                None => return None,
            }
        }
    }

    /// [`FrontEvents::try_recv`] past what is held.
    fn try_next(&mut self) -> Option<FrontEvent> {
        let held = std::mem::take(&mut self.held);
        let next = self.try_recv();
        self.held = held;
        next
    }
}

/// A front end's end of the host: the operations it sends and the one stream it reads.
pub struct Client {
    pub commands: Commands,
    pub events: FrontEvents,
}

impl Client {
    /// Send `body` and wait for its answer (the events before it stay in the stream).
    pub async fn ask(&mut self, body: OpBody) -> Option<Answer> {
        let id = self.commands.send(body)?;
        self.events.answer(id).await
    }

    /// Start a run with `prompt`, or queue it as its `when_busy` says while one runs.
    pub async fn prompt(&mut self, prompt: Prompt) -> Result<Accepted, AgentError> {
        match self.ask(OpBody::Prompt(prompt)).await {
            Some(Answer::Agent(AgentAnswer::Prompt(r))) => r,
            _ => Err(AgentError::Refused("the host is gone".into())),
        }
    }

    /// The agent's state now (`None` when the host is gone).
    pub async fn snapshot(&mut self) -> Option<AgentState> {
        match self.ask(OpBody::Snapshot).await {
            Some(Answer::Agent(AgentAnswer::State(s))) => Some(*s),
            _ => None,
        }
    }

    /// Wait until the MCP servers have started or failed (at once when there are none).
    pub async fn mcp_ready(&mut self) {
        self.ask(OpBody::McpReady).await;
    }

    /// Abort what runs, flush the session, stop the host.
    pub async fn shutdown(&mut self) -> Option<Closed> {
        match self.ask(OpBody::Shutdown).await {
            Some(Answer::Closed(c)) => Some(c),
            _ => None,
        }
    }
}

/// [`ListScope`] as `"current_folder"` or `"all_folders"`.
mod scope {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::session::ListScope;

    pub fn serialize<S: Serializer>(scope: &ListScope, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match scope {
            ListScope::CurrentFolder => "current_folder",
            ListScope::AllFolders => "all_folders",
        })
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ListScope, D::Error> {
        match String::deserialize(d)?.as_str() {
            "current_folder" => Ok(ListScope::CurrentFolder),
            "all_folders" => Ok(ListScope::AllFolders),
            other => Err(serde::de::Error::custom(format!(
                "unknown scope `{other}` (expected \"current_folder\" or \"all_folders\")"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip_through_json_with_their_id() {
        let op = Op {
            id: 7,
            body: OpBody::Prompt(Prompt {
                text: "look".into(),
                mentions: true,
                when_busy: WhenBusy::Steer,
                ..Prompt::default()
            }),
        };
        let text = serde_json::to_string(&op).expect("serialises");
        assert!(text.contains(r#""id":7"#) && text.contains(r#""type":"prompt""#));
        let back: Op = serde_json::from_str(&text).expect("deserialises");
        assert_eq!(back.id, 7);
        let OpBody::Prompt(p) = back.body else {
            panic!("a prompt: {back:?}");
        };
        assert_eq!((p.text.as_str(), p.mentions), ("look", true));
        assert_eq!(p.when_busy, WhenBusy::Steer);
        let listed: Op =
            serde_json::from_str(r#"{"id":2,"type":"list_sessions","scope":"all_folders"}"#)
                .expect("a listing");
        assert!(matches!(
            listed.body,
            OpBody::ListSessions {
                scope: ListScope::AllFolders
            }
        ));
        let bad = serde_json::from_str::<Op>(r#"{"id":3,"type":"list_sessions","scope":"x"}"#);
        assert!(bad.unwrap_err().to_string().contains("unknown scope `x`"));
    }

    #[tokio::test]
    async fn a_host_event_follows_the_agent_events_sent_before_it() {
        use crate::agent::protocol::events::AgentEvent;
        let (run_tx, run_rx, _gauge) = crate::agent::protocol::paced::paced_channel(16);
        let (host_tx, host_rx) = mpsc::unbounded_channel();
        let mut events = FrontEvents::new(run_rx, host_rx, CancellationToken::new());
        // The host speaks first on its channel, but only after the agent sent two events.
        run_tx.send(RunEvent {
            run: None,
            event: AgentEvent::TurnStart,
        });
        run_tx.send(RunEvent {
            run: None,
            event: AgentEvent::AgentStart,
        });
        host_tx
            .send(FrontEvent::Host {
                reply_to: Some(1),
                event: HostEvent::Named("n".into()),
            })
            .expect("open");
        // Whichever channel a reader looks at first, the order is the order of sending.
        let mut kinds = Vec::new();
        while let Some(e) = events.try_recv() {
            kinds.push(match e {
                FrontEvent::Run(r) => r.event.kind().to_string(),
                FrontEvent::Host { .. } => "host".into(),
                FrontEvent::Answer { .. } => "answer".into(),
            });
        }
        assert_eq!(kinds, ["turn_start", "agent_start", "host"]);
    }

    #[tokio::test]
    async fn waiting_for_an_answer_keeps_what_came_before_it() {
        let (run_tx, run_rx, _gauge) = crate::agent::protocol::paced::paced_channel(16);
        let (host_tx, host_rx) = mpsc::unbounded_channel();
        let mut events = FrontEvents::new(run_rx, host_rx, CancellationToken::new());
        run_tx.send(RunEvent {
            run: None,
            event: crate::agent::protocol::events::AgentEvent::AgentStart,
        });
        host_tx
            .send(FrontEvent::Host {
                reply_to: None,
                event: HostEvent::Notice("first".into()),
            })
            .expect("open");
        host_tx
            .send(FrontEvent::Answer {
                id: 4,
                answer: Answer::McpReady,
            })
            .expect("open");
        assert!(matches!(events.answer(4).await, Some(Answer::McpReady)));
        assert!(matches!(events.recv().await, Some(FrontEvent::Run(_))));
        assert!(matches!(
            events.recv().await,
            Some(FrontEvent::Host {
                event: HostEvent::Notice(_),
                ..
            })
        ));
        assert!(events.is_empty());
    }

    #[tokio::test]
    async fn a_host_gone_without_answering_ends_the_wait() {
        let (_run_tx, run_rx, _gauge) = crate::agent::protocol::paced::paced_channel(16);
        let (host_tx, host_rx) = mpsc::unbounded_channel();
        let gone = CancellationToken::new();
        let mut events = FrontEvents::new(run_rx, host_rx, gone.clone());
        host_tx
            .send(FrontEvent::Host {
                reply_to: None,
                event: HostEvent::Notice("last words".into()),
            })
            .expect("open");
        // The host task ends; the senders other tasks hold live on.
        gone.cancel();
        assert!(events.answer(9).await.is_none());
        assert!(matches!(
            events.recv().await,
            Some(FrontEvent::Host {
                event: HostEvent::Notice(_),
                ..
            })
        ));
    }
}

//! The commands a front end sends to the agent task, and what it can ask back.
//!
//! A front end never calls into the loop: it sends [`AgentCommand`]s over an mpsc channel to
//! the task that owns the agent (see `engine::task`) and reads the event stream back, each
//! event stamped with the run it belongs to (`events::RunEvent`). Commands that need an answer
//! carry a oneshot sender for it.

use std::collections::BTreeSet;

use tokio::sync::oneshot;

use crate::agent::protocol::events::RunId;

/// Default for the loop's `max_repeated_tool_turns` (a setting the configuration and front ends
/// pass in): the sixth identical request after five identical answers is refused.
pub const DEFAULT_MAX_REPEATED_TOOL_TURNS: u32 = 5;
use crate::agent::protocol::stream::Model;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::AgentMessage;

/// What a prompt does when a run is already active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenBusy {
    /// Refuse it with [`AgentError::Busy`].
    #[default]
    Refuse,
    /// Queue it as a steering message (delivered at the next tool boundary).
    Steer,
    /// Queue it as a follow-up (delivered when the agent would stop).
    FollowUp,
}

/// How a prompt was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// It started this run.
    Started(RunId),
    /// A run was active: it was queued as steering or follow-up.
    Queued,
}

/// A reply channel.
pub type Reply<T> = oneshot::Sender<T>;

/// Everything a front end can ask of the agent.
#[derive(Debug)]
pub enum AgentCommand {
    /// Start a run with these messages (see [`WhenBusy`] for an active run).
    Prompt {
        messages: Vec<AgentMessage>,
        when_busy: WhenBusy,
        reply: Option<Reply<Result<Accepted, AgentError>>>,
    },
    /// Continue from the transcript (a retry after an error), or run what is queued.
    Continue {
        reply: Option<Reply<Result<RunId, AgentError>>>,
    },
    /// Condense the conversation now (`/compact`), focused on `focus` if given. Refused while
    /// a run is active.
    Compact {
        focus: Option<String>,
        reply: Option<Reply<Result<RunId, AgentError>>>,
    },
    Steer(AgentMessage),
    FollowUp(AgentMessage),
    /// Abort the current run (queued messages stay queued).
    Abort {
        reason: Option<String>,
    },
    /// Give up a retry whose backoff is running; the failed reply ends the run. Nothing
    /// happens when no retry is waiting.
    AbortRetry,
    /// Close (`true`) or open the pause gate: a closed gate holds the run back before its
    /// next model call or tool start, without stopping what runs.
    SetPaused(bool),
    /// Empty both queues and hand back what they held (steering first).
    TakeQueued(Reply<Vec<AgentMessage>>),
    /// Use this model from the next model call on.
    SetModel(Model),
    SetThinking(ThinkingLevel),
    SetSteeringMode(QueueMode),
    SetFollowUpMode(QueueMode),
    /// Abort any run, wait until it has ended, then forget the conversation and the queues.
    Reset {
        reply: Option<Reply<()>>,
    },
    /// Replace the transcript (a resumed session). Refused while a run is active.
    ReplaceMessages {
        messages: Vec<AgentMessage>,
        reply: Reply<Result<(), AgentError>>,
    },
    /// A copy of the state now.
    Snapshot(Reply<AgentState>),
    /// Answered once no run is active.
    WaitIdle(Reply<()>),
}

/// How many queued messages one boundary takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueMode {
    /// The whole queue at once.
    All,
    /// Only the oldest message; the rest wait for later boundaries.
    #[default]
    OneAtATime,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentError {
    /// A run is in progress; queue with `steer`/`follow_up` or wait for it.
    Busy,
    /// Nothing to continue from.
    CannotContinue(String),
    /// The host would not start the run (the text says why, e.g. the session cannot be
    /// saved); nothing was sent to a model.
    Refused(String),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Busy => f.write_str(
                "The agent is still working. Queue a message with steer or follow-up, or wait until it finishes.",
            ),
            AgentError::CannotContinue(m) | AgentError::Refused(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AgentError {}

/// What a UI reads: the transcript and what is happening now.
#[derive(Clone, Debug, Default)]
pub struct AgentState {
    pub messages: Vec<AgentMessage>,
    pub is_streaming: bool,
    pub pending_tool_calls: BTreeSet<String>,
    pub error: Option<String>,
    /// Steering and follow-up messages waiting in the queues (filled in by snapshots).
    pub pending_messages: usize,
    /// The pause gate is closed (filled in by snapshots).
    pub paused: bool,
}

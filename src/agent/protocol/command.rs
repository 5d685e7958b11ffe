//! The operations the agent carries out for its host, and what they answer.
//!
//! A front end never calls into the loop: it sends operations to the host, which carries the
//! agent's part out with `engine::task::apply` on its own task and reads the event stream back,
//! each event stamped with the run it belongs to (`events::RunEvent`). An operation is plain
//! data (serde, no reply channel): what it answers is returned by `apply` as an
//! [`AgentAnswer`], which the host puts on the front end's event stream with the operation's id.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::agent::protocol::events::RunId;

/// Default for the loop's `max_repeated_tool_turns` (a setting the configuration and front ends
/// pass in): the sixth identical request after five identical answers is refused.
pub const DEFAULT_MAX_REPEATED_TOOL_TURNS: u32 = 5;
use crate::agent::protocol::types::AgentMessage;

/// What a prompt does when a run is already active: the one way to say "steer" or "follow up".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// Everything the agent itself does for a front end (through the host).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentOp {
    /// Start a run with these messages (see [`WhenBusy`] for an active run); answered with
    /// [`AgentAnswer::Prompt`].
    Prompt {
        messages: Vec<AgentMessage>,
        #[serde(default)]
        when_busy: WhenBusy,
    },
    /// Continue from the transcript (a retry after an error), or run what is queued; answered
    /// with [`AgentAnswer::Run`].
    Continue,
    /// Condense the conversation now (`/compact`), focused on `focus` if given. Refused while
    /// a run is active; answered with [`AgentAnswer::Run`].
    Compact {
        #[serde(default)]
        focus: Option<String>,
    },
    /// Abort the current run (queued messages stay queued).
    Abort {
        #[serde(default)]
        reason: Option<String>,
    },
    /// Give up a retry whose backoff is running; the failed reply ends the run. Nothing
    /// happens when no retry is waiting.
    AbortRetry,
    /// Close (`true`) or open the pause gate: a closed gate holds the run back before its
    /// next model call or tool start, without stopping what runs.
    SetPaused {
        paused: bool,
    },
    /// Empty both queues; answered with [`AgentAnswer::Queued`] (steering first).
    TakeQueued,
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    /// Abort any run, wait until it has ended, then forget the conversation and the queues;
    /// answered with [`AgentAnswer::Done`].
    Reset,
    /// Replace the transcript (a resumed session). Refused while a run is active; answered
    /// with [`AgentAnswer::Replaced`].
    ReplaceMessages {
        messages: Vec<AgentMessage>,
    },
    /// A copy of the state now; answered with [`AgentAnswer::State`].
    Snapshot,
    /// Answered ([`AgentAnswer::Done`]) once no run is active.
    WaitIdle,
}

/// What an [`AgentOp`] answers (operations not named here answer nothing).
#[derive(Clone, Debug)]
pub enum AgentAnswer {
    Prompt(Result<Accepted, AgentError>),
    /// The run a `Continue` or `Compact` started.
    Run(Result<RunId, AgentError>),
    Queued(Vec<AgentMessage>),
    Replaced(Result<(), AgentError>),
    State(Box<AgentState>),
    Done,
}

/// How many queued messages one boundary takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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

//! The event stream a run emits, and where it goes.
//!
//! Every consumer (the TUI, `--mode json`, print mode, the session recorder, tests) reads the
//! same [`AgentEvent`]s. Their JSON names and fields follow the `pi` JSON mode
//! (`agent_start`, `message_update`, `tool_execution_end`, ...). `message_update` carries only
//! the provider event (a delta); fold it into a `MessageBuilder` to see the partial message.
//! Arguments are shared through `Arc` so progress updates never copy them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::agent::protocol::stream::StreamEvent;
use crate::agent::protocol::summary::{RunCoverage, RunSummary};
use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::AgentMessage;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AgentEvent {
    AgentStart,
    AgentEnd {
        /// Every message this run added, in insertion order.
        messages: Vec<AgentMessage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        telemetry: Option<RunSummary>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        coverage: Option<RunCoverage>,
    },
    TurnStart,
    TurnEnd {
        message: AgentMessage,
        /// The turn's tool results (each an `AgentMessage` holding a tool result).
        tool_results: Vec<AgentMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    MessageUpdate {
        assistant_message_event: StreamEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Arc<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        intent: Option<String>,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Arc<Value>,
        partial_result: ToolOutput,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolOutput,
        is_error: bool,
    },
    /// A model call failed with a transient error and will be retried after `delay_ms`.
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    /// The retried call finished: it succeeded, or the last attempt failed with `final_error`.
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    /// The conversation is being condensed (`reason`: `manual`, `threshold` or `overflow`).
    CompactionStart {
        reason: CompactionReason,
    },
    /// Compaction finished: `result` when it did, `aborted` when Esc stopped it,
    /// `error_message` when the summary request failed (the conversation is then unchanged).
    /// `will_retry`: a request rejected as too long is sent again, compacted.
    CompactionEnd {
        reason: CompactionReason,
        result: Option<CompactionResult>,
        aborted: bool,
        will_retry: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// The queued steering and follow-up messages changed (emitted by the `Agent` facade).
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
}

impl AgentEvent {
    /// The event's `type` name.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::AutoRetryStart { .. } => "auto_retry_start",
            AgentEvent::AutoRetryEnd { .. } => "auto_retry_end",
            AgentEvent::QueueUpdate { .. } => "queue_update",
            AgentEvent::CompactionStart { .. } => "compaction_start",
            AgentEvent::CompactionEnd { .. } => "compaction_end",
        }
    }
}

/// Why a compaction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// `/compact`.
    Manual,
    /// The context passed `window − reserve_tokens`.
    Threshold,
    /// The provider refused a request as too long.
    Overflow,
}

/// What a compaction did (the `compaction` entry's fields; the entry id of the first kept
/// message is the session's business: it is filled in by whoever records the session).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
    pub tokens_before: u64,
    /// Estimated tokens of the condensed conversation (summary + kept messages).
    pub tokens_after: u64,
    pub details: Value,
    /// The first message kept as it is (for the recorder to find its entry).
    #[serde(skip)]
    pub first_kept: Option<AgentMessage>,
}

/// Identifies one run of an agent (counting from 1).
pub type RunId = u64;

/// An event as a front end receives it: with the run it belongs to (`None` for what happens
/// outside a run, such as a queue change while idle).
#[derive(Clone, Debug, PartialEq)]
pub struct RunEvent {
    pub run: Option<RunId>,
    pub event: AgentEvent,
}

/// Receives events in order. Must not block: the loop calls it inline.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: AgentEvent);
}

impl EventSink for mpsc::UnboundedSender<AgentEvent> {
    fn emit(&self, event: AgentEvent) {
        // A closed receiver means nobody is listening any more; the run goes on.
        let _ = self.send(event);
    }
}

impl<F: Fn(AgentEvent) + Send + Sync> EventSink for F {
    fn emit(&self, event: AgentEvent) {
        self(event)
    }
}

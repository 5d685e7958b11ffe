//! Results the loop writes for tool calls that did not run.
//!
//! Every tool call an assistant message holds must be answered before the next provider call,
//! or the provider rejects the history. When a call is not executed (the response failed, was
//! aborted, hit its token limit, broke a soft requirement, or a steer skipped it) the loop
//! answers it with one of these error results. `details.__synthetic` marks a placeholder for a
//! call that never started.

use serde_json::{Value, json};

use crate::agent::protocol::hooks::SteeringSource;
use crate::agent::protocol::types::{
    AgentMessage, ContentBlock, Message, PlaceholderDetails, ToolCall, ToolResultMessage, now_ms,
};

/// Why a call was answered with a placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceholderReason {
    /// The assistant message was aborted.
    Aborted,
    /// The provider stream ended in an error.
    Error,
    /// The turn ended without running it (soft tool requirement).
    Skipped,
    /// The response hit its output-token limit; the arguments may be cut short.
    Length,
}

impl PlaceholderReason {
    fn source(self) -> &'static str {
        match self {
            PlaceholderReason::Aborted => "assistant_stop_aborted",
            PlaceholderReason::Error => "assistant_stop_error",
            PlaceholderReason::Skipped => "assistant_stop_skipped",
            PlaceholderReason::Length => "assistant_stop_length",
        }
    }

    fn sentence(self) -> &'static str {
        match self {
            PlaceholderReason::Aborted => {
                "This tool call was not run because the request was aborted"
            }
            PlaceholderReason::Error => {
                "This tool call was not run because the model's response failed before the call could be executed"
            }
            PlaceholderReason::Skipped => {
                "This tool call was not run because the turn ended before it was executed"
            }
            PlaceholderReason::Length => {
                "This tool call was not run: the response reached its output token limit (stop_reason: length) \
                 before the arguments were complete, so they are cut short and unsafe to execute. Do not send the \
                 same large payload again; split the work into several smaller calls instead (for example write \
                 the first part of a file, then add the rest with further edit calls, or spread it over several files)"
            }
        }
    }
}

/// Label for calls skipped because a soft tool requirement was not met.
pub fn soft_skip_label(tool_name: &str) -> String {
    format!("call the `{tool_name}` tool first to settle the pending action, then use other tools")
}

fn text_with_label(sentence: &str, label: Option<&str>) -> String {
    match label.map(str::trim).filter(|l| !l.is_empty()) {
        Some(l) => format!("{sentence}: {l}"),
        None => format!("{sentence}."),
    }
}

/// A placeholder result for a call the loop never invoked.
pub fn placeholder_result(
    call: &ToolCall,
    reason: PlaceholderReason,
    label: Option<&str>,
    upstream_error: Option<&str>,
) -> ToolResultMessage {
    let details = PlaceholderDetails::new(reason.source(), upstream_error).to_value();
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![ContentBlock::text(text_with_label(
            reason.sentence(),
            label,
        ))],
        details: Some(details),
        is_error: true,
        useless: false,
        timestamp: now_ms(),
    }
}

/// The text of a result for a call a steering interrupt skipped or cut short.
pub fn interrupt_skip_text(source: SteeringSource) -> String {
    let (reason, blocker) = match source {
        SteeringSource::User => ("a message the user queued", "queued message"),
        SteeringSource::Agent => (
            "a pending steering message from the parent agent",
            "steering message",
        ),
        SteeringSource::System => ("a pending system advisory", "advisory"),
        SteeringSource::Unknown => ("a pending steering message", "queued message"),
    };
    format!(
        "Skipped because of {reason}. Do not treat this skipped call as finished work or as a check \
         that passed. Once the {blocker} has been dealt with, run the call again if it is still needed."
    )
}

/// Details of an interrupt-skipped result.
pub fn interrupt_skip_details(started: bool) -> Value {
    if started {
        json!({"__interrupted": true, "source": "interrupt_skipped", "execution": "started"})
    } else {
        PlaceholderDetails::new("interrupt_skipped", None).to_value()
    }
}

/// Text of a result for a call that was never started because the run was aborted.
pub fn not_run_aborted_text(reason: &str) -> String {
    format!("This tool call was not run because the run was aborted: {reason}.")
}

/// The calls of the transcript's last assistant message that no tool result answers yet.
///
/// Only the last assistant message can be open: every earlier one was answered before the next
/// model call. A provider rejects a history that leaves one open, so whatever ends a run answers
/// these first.
pub fn unanswered_calls(messages: &[AgentMessage]) -> Vec<&ToolCall> {
    let Some(at) = messages.iter().rposition(|m| m.as_assistant().is_some()) else {
        return Vec::new();
    };
    let Some(assistant) = messages[at].as_assistant() else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[at + 1..]
        .iter()
        .filter_map(|m| match m.as_llm() {
            Some(Message::ToolResult(r)) => Some(r.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assistant
        .tool_calls()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .collect()
}

/// Text of a result for a call a hook blocked without saying why.
pub const BLOCKED_TEXT: &str = "This tool call was blocked before it ran.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::empty_object;

    fn call() -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "write".into(),
            arguments: empty_object(),
            intent: None,
            thought_signature: None,
        }
    }

    #[test]
    fn placeholders_are_synthetic_errors_with_labels() {
        let r = placeholder_result(&call(), PlaceholderReason::Aborted, Some("stop"), None);
        assert!(r.is_error && r.is_synthetic());
        assert!(r.text().ends_with("aborted: stop"));
        let r = placeholder_result(&call(), PlaceholderReason::Error, None, Some("boom"));
        assert!(r.text().ends_with('.'));
        assert_eq!(r.details.as_ref().unwrap()["upstreamError"], "boom");
        assert_eq!(
            r.details.as_ref().unwrap()["source"],
            "assistant_stop_error"
        );
    }

    #[test]
    fn length_placeholder_explains_chunking() {
        let r = placeholder_result(&call(), PlaceholderReason::Length, None, None);
        assert!(r.text().contains("stop_reason: length"));
        assert!(r.text().contains("smaller calls"));
    }

    #[test]
    fn interrupt_wording_follows_source() {
        assert!(interrupt_skip_text(SteeringSource::User).contains("the user queued"));
        assert!(interrupt_skip_text(SteeringSource::System).contains("system advisory"));
        assert!(interrupt_skip_text(SteeringSource::Agent).contains("parent agent"));
        assert_eq!(interrupt_skip_details(true)["execution"], "started");
    }
}

//! Answering tool calls the loop did not run.

use std::sync::Arc;

use serde_json::Value;

use crate::agent::protocol::events::{AgentEvent, EventSink};
use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::{AgentMessage, ToolResultMessage};

/// Emit the full event quadruple for a result the loop wrote itself (a call that never ran):
/// `tool_execution_start`, `tool_execution_end` (error), then the result's `message_start`/`end`.
/// Returns the result as the transcript message the events carried.
pub fn emit_synthetic_result(
    sink: &dyn EventSink,
    result: ToolResultMessage,
    args: Arc<Value>,
) -> AgentMessage {
    sink.emit(AgentEvent::ToolExecutionStart {
        tool_call_id: result.tool_call_id.clone(),
        tool_name: result.tool_name.clone(),
        args,
        intent: None,
    });
    sink.emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: result.tool_call_id.clone(),
        tool_name: result.tool_name.clone(),
        result: ToolOutput {
            content: result.content.clone(),
            details: result.details.clone().unwrap_or_default(),
            is_error: true,
            useless: false,
        },
        is_error: true,
    });
    let message = AgentMessage::from(result);
    sink.emit(AgentEvent::MessageStart {
        message: message.clone(),
    });
    sink.emit(AgentEvent::MessageEnd {
        message: message.clone(),
    });
    message
}

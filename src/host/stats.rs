//! `/session`: what the current session holds, in numbers.

use std::path::PathBuf;

use crate::agent::protocol::types::{AgentMessage, Message, UsageTotals};
use crate::provider::catalog::ModelInfo;
use crate::session::RecorderTask;

/// The numbers `/session` shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionStats {
    /// The session file (`None` when nothing is saved).
    pub path: Option<PathBuf>,
    pub session_id: String,
    pub name: Option<String>,
    /// The session this one was forked from.
    pub parent_session: Option<String>,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    /// Tokens and cost, and the context size at the last reply.
    pub usage: UsageTotals,
    /// The model's context window.
    pub context_window: u64,
}

/// Count what `messages` hold.
pub fn collect(
    messages: &[AgentMessage],
    recorder: Option<&RecorderTask>,
    session_id: &str,
    name: Option<&str>,
    model: &ModelInfo,
) -> SessionStats {
    let mut s = SessionStats {
        path: recorder.map(|r| r.path().to_path_buf()),
        session_id: session_id.to_string(),
        name: name.map(str::to_string),
        parent_session: recorder.and_then(|r| r.peek(|r| r.header().parent_session.clone())),
        context_window: model.context_window,
        ..Default::default()
    };
    for m in messages {
        match m.as_llm() {
            Some(Message::User(_)) => s.user_messages += 1,
            Some(Message::Assistant(a)) => {
                s.assistant_messages += 1;
                s.tool_calls += a.tool_calls().count();
                s.usage.add(&a.usage);
            }
            Some(Message::ToolResult(r)) => {
                s.tool_results += 1;
                if let Some(u) = r.details.as_ref().and_then(crate::subagent::usage_of) {
                    s.usage.add_spent(&u);
                }
            }
            _ => {}
        }
    }
    s
}

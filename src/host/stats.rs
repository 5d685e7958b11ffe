//! `/session`: what the current session holds, in numbers.

use std::path::PathBuf;

use crate::agent::protocol::types::{AgentMessage, Message};
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
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub cost: f64,
    /// Tokens in the context at the last reply, and the model's window.
    pub context_tokens: u64,
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
                let u = &a.usage;
                s.input_tokens += u.input;
                s.output_tokens += u.output;
                s.cache_read_tokens += u.cache_read;
                s.cache_write_tokens += u.cache_write;
                s.cost += u.cost.total;
                let context = u.input + u.output + u.cache_read + u.cache_write;
                if context > 0 {
                    s.context_tokens = context;
                }
            }
            Some(Message::ToolResult(_)) => s.tool_results += 1,
            _ => {}
        }
    }
    s
}

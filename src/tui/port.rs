//! The UI's view of the agent: the few commands it sends, as a trait.
//!
//! The real implementation is [`crate::agent::engine::facade::Agent`], whose runs already live on
//! their own tokio task: every method here only takes a short lock and returns, so nothing the
//! agent or a tool does can block a keypress. Tests implement the trait with a recorder and
//! feed `AgentEvent`s by hand, so the app can be driven without a model.

use crate::agent::engine::facade::Agent;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{AgentMessage, Message, UserContent};
use crate::provider::catalog::ModelInfo;

pub trait AgentPort {
    /// Start a run; `Err` when one is already running (the app then steers instead).
    fn prompt(&self, text: String) -> Result<(), String>;
    fn steer(&self, text: String);
    fn follow_up(&self, text: String);
    fn abort(&self);
    /// Empty the steering and follow-up queues and return their texts (steering first).
    fn take_queued(&self) -> Vec<String>;
    fn is_busy(&self) -> bool;
    fn set_model(&self, model: &ModelInfo);
    fn set_thinking(&self, level: ThinkingLevel);
    /// Forget the conversation (a new session).
    fn reset(&self);
    fn messages(&self) -> Vec<AgentMessage>;
    /// Replace the conversation (a resumed session); `Err` while a run is active.
    fn replace_messages(&self, messages: Vec<AgentMessage>) -> Result<(), String>;
}

/// The text of a queued or user message.
pub fn message_text(m: &AgentMessage) -> String {
    match m.as_llm() {
        Some(Message::User(u)) => match &u.content {
            UserContent::Text(s) => s.clone(),
            c => c.joined_text(),
        },
        Some(Message::Assistant(a)) => a.text(),
        Some(Message::ToolResult(r)) => r.text(),
        _ => String::new(),
    }
}

impl AgentPort for Agent {
    fn prompt(&self, text: String) -> Result<(), String> {
        self.prompt_text(text).map_err(|e| e.to_string())
    }
    fn steer(&self, text: String) {
        self.steer_text(text);
    }
    fn follow_up(&self, text: String) {
        self.follow_up_text(text);
    }
    fn abort(&self) {
        Agent::abort(self, None);
    }
    fn take_queued(&self) -> Vec<String> {
        self.clear_all_queues().iter().map(message_text).collect()
    }
    fn is_busy(&self) -> bool {
        self.is_streaming()
    }
    fn set_model(&self, model: &ModelInfo) {
        let m = model.to_model();
        self.update_settings(|s| s.model = m);
    }
    fn set_thinking(&self, level: ThinkingLevel) {
        self.update_settings(|s| s.thinking = level);
    }
    fn reset(&self) {
        Agent::reset(self);
    }
    fn messages(&self) -> Vec<AgentMessage> {
        Agent::messages(self)
    }
    fn replace_messages(&self, messages: Vec<AgentMessage>) -> Result<(), String> {
        Agent::replace_messages(self, messages).map_err(|e| e.to_string())
    }
}

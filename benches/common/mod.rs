//! Pieces the TUI benchmarks share: an agent port that does nothing and a model to show.

use pi::agent::protocol::thinking::ThinkingLevel;
use pi::agent::protocol::types::AgentMessage;
use pi::provider::catalog::{Api, ModelInfo};
use pi::tui::port::AgentPort;

/// A port to no agent; `busy` is what the app is told about a run in progress.
pub struct Idle {
    pub busy: bool,
}

impl AgentPort for Idle {
    fn prompt(&self, _text: String) -> Result<(), String> {
        Ok(())
    }
    fn steer(&self, _text: String) {}
    fn follow_up(&self, _text: String) {}
    fn abort(&self) {}
    fn take_queued(&self) -> Vec<String> {
        Vec::new()
    }
    fn is_busy(&self) -> bool {
        self.busy
    }
    fn set_model(&self, _model: &ModelInfo) {}
    fn set_thinking(&self, _level: ThinkingLevel) {}
    fn reset(&self) {}
    fn messages(&self) -> Vec<AgentMessage> {
        Vec::new()
    }
    fn replace_messages(&self, _messages: Vec<AgentMessage>) -> Result<(), String> {
        Ok(())
    }
}

pub fn model() -> ModelInfo {
    ModelInfo {
        id: "qwen3:8b".into(),
        name: "qwen3:8b".into(),
        provider: "ollama".into(),
        api: Api::OpenAiCompletions,
        base_url: String::new(),
        context_window: 128_000,
        max_tokens: 16_384,
        reasoning: true,
        images: false,
        pricing: Default::default(),
        headers: Vec::new(),
        compat: Default::default(),
    }
}

//! Pieces the TUI benchmarks share: a port to no host and a model to show.

use pi::host::Commands;
use pi::provider::catalog::{Api, ModelInfo};
use pi::tui::port::Port;

/// A port whose commands go nowhere.
pub fn idle_port() -> Port {
    let (commands, rx) = Commands::detached();
    // Keep the receiver open so sends do not fail; nothing reads it.
    std::mem::forget(rx);
    Port::new(commands)
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

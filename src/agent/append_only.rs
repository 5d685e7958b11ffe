//! Append-only provider context (prompt-cache stabiliser). (stub: to be completed)

use std::sync::Arc;

use super::normalize::ToolNormalizeOptions;
use super::stream::LlmContext;
use super::tool::ToolSet;
use super::types::Message;

#[derive(Default)]
pub struct AppendOnlyContext {}

impl AppendOnlyContext {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sync the log with this turn's normalised messages and build the provider context.
    pub fn sync_and_build(
        &mut self,
        system_prompt: &[String],
        tools: &ToolSet,
        options: ToolNormalizeOptions,
        messages: Vec<Arc<Message>>,
    ) -> LlmContext {
        LlmContext {
            system_prompt: system_prompt.to_vec(),
            messages,
            tools: super::normalize::normalize_tools(tools, options),
        }
    }
}

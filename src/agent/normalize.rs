//! The context pipeline's pure steps: transcript → provider messages, and tools → wire specs.
//! (stub: to be completed)

use super::stream::{Model, ToolSpec};
use super::tool::ToolSet;
use super::types::{AgentMessage, Message};

/// Keep user, tool results and assistant messages (except provider refusals); drop the rest.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::User(u)) => Some(Message::User(u.clone())),
            AgentMessage::Llm(Message::ToolResult(r)) => Some(Message::ToolResult(r.clone())),
            AgentMessage::Llm(Message::Assistant(a)) if !a.is_provider_refusal() => {
                Some(Message::Assistant(a.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Provider-specific message fixes (identity for most providers).
pub fn normalize_messages_for_provider(
    messages: Vec<std::sync::Arc<Message>>,
    _model: &Model,
) -> Vec<std::sync::Arc<Message>> {
    messages
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolNormalizeOptions {
    pub inject_intent: bool,
    pub prune_descriptions: bool,
}

/// Wire specs for the tools.
pub fn normalize_tools(tools: &ToolSet, _options: ToolNormalizeOptions) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| ToolSpec {
            name: t.tool.name().to_string(),
            description: t.tool.description().to_string(),
            parameters: t.tool.parameters().clone(),
        })
        .collect()
}

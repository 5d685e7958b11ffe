//! The provider stream protocol: what the loop asks a provider for and what comes back.
//!
//! A [`Provider`] turns one [`ProviderRequest`] into a stream of [`StreamEvent`]s: `start`, then
//! per content block `*_start`, `*_delta`..., `*_end`, then exactly one terminal `done` or
//! `error`. Provider errors normally arrive in-band as an `error` event carrying an assistant
//! message with `stopReason: error`; an `Err` item is an out-of-band failure that fails the run.
//!
//! Events carry deltas, not the growing message: a consumer that wants the partial message folds
//! the events into a [`MessageBuilder`]. That keeps a 20,000-delta stream O(n) for the loop and
//! for every subscriber. Cancelling the token (or dropping the stream) must close the connection.

use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, ImageContent, Message, RedactedThinkingContent, StopReason,
    TextContent, ThinkingContent, ToolCall, empty_object,
};

/// The model a request goes to, as far as the loop needs to know it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    pub provider: String,
    /// Wire API, e.g. `anthropic-messages`, `openai-completions`, `openai-responses`.
    pub api: String,
    #[serde(default)]
    pub reasoning: bool,
    #[serde(default)]
    pub context_window: u64,
    #[serde(default)]
    pub max_tokens: u64,
}

impl Model {
    pub fn new(provider: &str, api: &str, id: &str) -> Self {
        Model {
            id: id.to_string(),
            provider: provider.to_string(),
            api: api.to_string(),
            ..Default::default()
        }
    }
}

/// A tool as a provider sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// How the model must use tools on one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type", content = "name")]
pub enum ToolChoice {
    Auto,
    None,
    Any,
    Required,
    /// Call exactly this tool.
    Tool(String),
}

/// Everything a provider sends: system prompt, conversation and tools.
///
/// Messages are shared (`Arc`): the loop appends to its list in place once the previous
/// request is gone, so building a request for a long conversation costs no copy at all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmContext {
    pub system_prompt: Vec<String>,
    pub messages: Arc<Vec<Arc<Message>>>,
    pub tools: Vec<ToolSpec>,
}

/// Per-request knobs, re-read by the loop before every provider call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamOptions {
    pub reasoning: Option<Effort>,
    pub disable_reasoning: bool,
    pub tool_choice: Option<ToolChoice>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub session_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProviderRequest {
    pub model: Model,
    pub context: LlmContext,
    pub options: StreamOptions,
}

/// An out-of-band provider failure (the stream itself broke).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderError {
    pub message: String,
}

impl ProviderError {
    pub fn new(message: impl Into<String>) -> Self {
        ProviderError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}

/// One event of a provider response. The message-carrying variants are boxed so every event
/// stays small: deltas by the thousand move through channels, and each move copies the enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum StreamEvent {
    /// The response opened. `partial` holds metadata (api, provider, model) and no content yet.
    Start {
        partial: Box<AssistantMessage>,
    },
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A whole redacted-thinking block.
    RedactedThinking {
        content_index: usize,
        data: String,
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        content_index: usize,
        id: String,
        name: String,
    },
    /// A raw fragment of the call's JSON arguments.
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        content_index: usize,
        delta: String,
    },
    /// The call is complete; `tool_call` holds the parsed arguments.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        content_index: usize,
        tool_call: ToolCall,
    },
    ImageEnd {
        content_index: usize,
        content: ImageContent,
    },
    /// Terminal: the response finished. `message` is the authoritative final message.
    Done {
        reason: StopReason,
        message: Box<AssistantMessage>,
    },
    /// Terminal: the response failed or was aborted; `error` has `errorMessage` set.
    Error {
        reason: StopReason,
        error: Box<AssistantMessage>,
    },
}

impl StreamEvent {
    pub fn is_terminal(&self) -> bool {
        matches!(self, StreamEvent::Done { .. } | StreamEvent::Error { .. })
    }
}

/// What [`Provider::stream`] returns.
pub type EventStream = BoxStream<'static, Result<StreamEvent, ProviderError>>;

/// A model backend. Implementations must stop work and close their connection as soon as
/// `cancel` fires or the returned stream is dropped.
pub trait Provider: Send + Sync {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream;
}

/// Folds stream events into the growing assistant message.
///
/// Text and thinking deltas append in place; tool-call argument fragments are buffered as raw
/// JSON (see [`MessageBuilder::partial_arguments`]) and replaced by the parsed call at its end.
#[derive(Clone, Debug, Default)]
pub struct MessageBuilder {
    message: AssistantMessage,
    tool_json: Vec<(usize, String)>,
}

impl MessageBuilder {
    pub fn new(partial: AssistantMessage) -> Self {
        MessageBuilder {
            message: partial,
            tool_json: Vec::new(),
        }
    }

    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    pub fn into_message(self) -> AssistantMessage {
        self.message
    }

    /// The raw JSON received so far for the tool call at `content_index`.
    pub fn partial_arguments(&self, content_index: usize) -> Option<&str> {
        self.tool_json
            .iter()
            .find(|(i, _)| *i == content_index)
            .map(|(_, s)| s.as_str())
    }

    fn slot(&mut self, index: usize, make: impl FnOnce() -> ContentBlock) -> &mut ContentBlock {
        let content = &mut self.message.content;
        while content.len() <= index {
            content.push(ContentBlock::text(""));
        }
        let fresh = make();
        let block = &mut content[index];
        if std::mem::discriminant(&*block) != std::mem::discriminant(&fresh) {
            *block = fresh;
        }
        block
    }

    /// Apply one event. Unknown indices grow the content; mismatched kinds are replaced.
    pub fn apply(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::Start { partial } => {
                self.message = (**partial).clone();
                self.tool_json.clear();
            }
            StreamEvent::TextStart { content_index } => {
                *self.slot(*content_index, || ContentBlock::text("")) = ContentBlock::text("");
            }
            StreamEvent::TextDelta {
                content_index,
                delta,
            } => {
                if let ContentBlock::Text(t) = self.slot(*content_index, || ContentBlock::text(""))
                {
                    t.text.push_str(delta);
                }
            }
            StreamEvent::TextEnd {
                content_index,
                content,
                signature,
            } => {
                *self.slot(*content_index, || ContentBlock::text("")) =
                    ContentBlock::Text(TextContent {
                        text: content.clone(),
                        text_signature: signature.clone(),
                        ..Default::default()
                    });
            }
            StreamEvent::ThinkingStart { content_index } => {
                *self.slot(*content_index, thinking_block) = thinking_block();
            }
            StreamEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let ContentBlock::Thinking(t) = self.slot(*content_index, thinking_block) {
                    t.thinking.push_str(delta);
                }
            }
            StreamEvent::ThinkingEnd {
                content_index,
                content,
                signature,
            } => {
                *self.slot(*content_index, thinking_block) =
                    ContentBlock::Thinking(ThinkingContent {
                        thinking: content.clone(),
                        thinking_signature: signature.clone(),
                        item_id: None,
                    });
            }
            StreamEvent::RedactedThinking {
                content_index,
                data,
            } => {
                *self.slot(*content_index, thinking_block) =
                    ContentBlock::RedactedThinking(RedactedThinkingContent { data: data.clone() });
            }
            StreamEvent::ToolCallStart {
                content_index,
                id,
                name,
            } => {
                let call = ContentBlock::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: empty_object(),
                    intent: None,
                    thought_signature: None,
                });
                *self.slot(*content_index, || call.clone()) = call.clone();
                self.tool_json.retain(|(i, _)| i != content_index);
                self.tool_json.push((*content_index, String::new()));
            }
            StreamEvent::ToolCallDelta {
                content_index,
                delta,
            } => {
                if let Some((_, buf)) = self.tool_json.iter_mut().find(|(i, _)| i == content_index)
                {
                    buf.push_str(delta);
                }
            }
            StreamEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                let call = ContentBlock::ToolCall(tool_call.clone());
                *self.slot(*content_index, || call.clone()) = call.clone();
                self.tool_json.retain(|(i, _)| i != content_index);
            }
            StreamEvent::ImageEnd {
                content_index,
                content,
            } => {
                *self.slot(*content_index, || ContentBlock::text("")) =
                    ContentBlock::Image(content.clone());
            }
            StreamEvent::Done { message, .. } => {
                self.message = (**message).clone();
                self.tool_json.clear();
            }
            StreamEvent::Error { error, .. } => {
                self.message = (**error).clone();
                self.tool_json.clear();
            }
        }
    }
}

fn thinking_block() -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builder_folds_deltas_into_blocks() {
        let mut b = MessageBuilder::new(AssistantMessage::empty("a", "p", "m"));
        b.apply(&StreamEvent::ThinkingStart { content_index: 0 });
        b.apply(&StreamEvent::ThinkingDelta {
            content_index: 0,
            delta: "hmm".into(),
        });
        b.apply(&StreamEvent::TextStart { content_index: 1 });
        for piece in ["Hel", "lo"] {
            b.apply(&StreamEvent::TextDelta {
                content_index: 1,
                delta: piece.into(),
            });
        }
        b.apply(&StreamEvent::ToolCallStart {
            content_index: 2,
            id: "c1".into(),
            name: "ls".into(),
        });
        b.apply(&StreamEvent::ToolCallDelta {
            content_index: 2,
            delta: "{\"pa".into(),
        });
        assert_eq!(b.partial_arguments(2), Some("{\"pa"));
        b.apply(&StreamEvent::ToolCallEnd {
            content_index: 2,
            tool_call: ToolCall {
                id: "c1".into(),
                name: "ls".into(),
                arguments: json!({"path": "."}),
                intent: None,
                thought_signature: None,
            },
        });
        let m = b.message();
        assert!(matches!(&m.content[0], ContentBlock::Thinking(t) if t.thinking == "hmm"));
        assert_eq!(m.content[1].as_text(), Some("Hello"));
        assert_eq!(
            m.tool_calls().next().map(|c| c.arguments.clone()),
            Some(json!({"path": "."}))
        );
        assert_eq!(b.partial_arguments(2), None);
    }

    #[test]
    fn events_serialize_with_upstream_names() {
        let v = serde_json::to_value(StreamEvent::ToolCallDelta {
            content_index: 3,
            delta: "x".into(),
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"type": "toolcall_delta", "contentIndex": 3, "delta": "x"})
        );
        let v = serde_json::to_value(StreamEvent::TextDelta {
            content_index: 0,
            delta: "y".into(),
        })
        .unwrap();
        assert_eq!(v["type"], "text_delta");
    }
}

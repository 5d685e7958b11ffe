//! Builds the loop's stream events from a wire format's pieces.
//!
//! Every wire decoder speaks in its own block identifiers (Anthropic's `index`, a Chat
//! Completions tool-call `index`, a Responses `output_index`). [`MessageStream`] maps those keys
//! to content indexes, opens and closes blocks, keeps the growing assistant message, and queues
//! the matching [`StreamEvent`]s: `start` once, `*_start`/`*_delta`/`*_end` per block, then one
//! terminal `done` or `error` carrying the final message with usage and cost.

use serde_json::{Map, Value};

use super::catalog::ModelInfo;
use crate::agent::protocol::stream::StreamEvent;
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, StopDetails, StopReason, TextContent, ThinkingContent,
    ToolCall, TransientError, Usage, empty_object, now_ms,
};
use crate::agent::protocol::types::{PARSE_ERROR_KEY, RAW_JSON_KEY};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    Tool,
}

struct Open {
    index: usize,
    kind: Kind,
    /// Raw argument JSON of a tool call.
    json: String,
}

/// The open blocks by the provider's key. A stream has one to three open at a time, so a short
/// list beats hashing the key on every delta.
#[derive(Default)]
struct OpenBlocks(Vec<(String, Open)>);

impl OpenBlocks {
    fn get(&self, key: &str) -> Option<&Open> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, o)| o)
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Open> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, o)| o)
    }

    fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn insert(&mut self, key: String, open: Open) {
        match self.get_mut(&key) {
            Some(o) => *o = open,
            None => self.0.push((key, open)),
        }
    }

    fn remove(&mut self, key: &str) -> Option<Open> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &Open)> {
        self.0.iter().map(|(k, o)| (k, o))
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The assistant message under construction and the events describing it.
pub struct MessageStream {
    message: AssistantMessage,
    model: ModelInfo,
    started: bool,
    finished: bool,
    open: OpenBlocks,
    out: Vec<StreamEvent>,
    started_at: std::time::Instant,
}

impl MessageStream {
    pub(crate) fn new(model: &ModelInfo) -> Self {
        MessageStream {
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id),
            model: model.clone(),
            started: false,
            finished: false,
            open: OpenBlocks::default(),
            out: Vec::new(),
            started_at: std::time::Instant::now(),
        }
    }

    /// Events produced since the last call.
    pub(crate) fn drain(&mut self) -> Vec<StreamEvent> {
        std::mem::take(&mut self.out)
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    pub(crate) fn set_response_id(&mut self, id: &str) {
        self.message.response_id = Some(id.to_string());
    }

    /// Emit `start` (once).
    pub(crate) fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.out.push(StreamEvent::Start {
                partial: Box::new(self.message.clone()),
            });
        }
    }

    pub(crate) fn usage_mut(&mut self) -> &mut Usage {
        &mut self.message.usage
    }

    /// Open (or reuse) a text or thinking block.
    fn open_block(&mut self, key: &str, kind: Kind) -> usize {
        self.start();
        if let Some(o) = self.open.get(key) {
            if o.kind == kind {
                return o.index;
            }
            self.close(key);
        }
        let index = self.message.content.len();
        let (block, event) = if kind == Kind::Thinking {
            (
                ContentBlock::Thinking(ThinkingContent::default()),
                StreamEvent::ThinkingStart {
                    content_index: index,
                },
            )
        } else {
            (
                ContentBlock::text(""),
                StreamEvent::TextStart {
                    content_index: index,
                },
            )
        };
        self.message.content.push(block);
        self.out.push(event);
        self.open.insert(
            key.to_string(),
            Open {
                index,
                kind,
                json: String::new(),
            },
        );
        index
    }

    pub(crate) fn text_delta(&mut self, key: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let index = self.open_block(key, Kind::Text);
        if let Some(ContentBlock::Text(t)) = self.message.content.get_mut(index) {
            t.text.push_str(delta);
        }
        self.out.push(StreamEvent::TextDelta {
            content_index: index,
            delta: delta.to_string(),
        });
    }

    /// Attach an opaque signature to a text block (replayed as `textSignature`).
    pub(crate) fn text_signature(&mut self, key: &str, signature: &str) {
        let index = self.open_block(key, Kind::Text);
        if let Some(ContentBlock::Text(t)) = self.message.content.get_mut(index) {
            t.text_signature = Some(signature.to_string());
        }
    }

    pub(crate) fn thinking_delta(&mut self, key: &str, delta: &str) {
        let index = self.open_block(key, Kind::Thinking);
        if delta.is_empty() {
            return;
        }
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking.push_str(delta);
        }
        self.out.push(StreamEvent::ThinkingDelta {
            content_index: index,
            delta: delta.to_string(),
        });
    }

    pub(crate) fn thinking_signature(&mut self, key: &str, signature: &str) {
        let index = self.open_block(key, Kind::Thinking);
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            match &mut t.thinking_signature {
                Some(s) => s.push_str(signature),
                None => t.thinking_signature = Some(signature.to_string()),
            }
        }
    }

    /// Set the provider item id of a thinking block (Responses API reasoning items).
    pub(crate) fn thinking_item_id(&mut self, key: &str, item_id: &str) {
        let index = self.open_block(key, Kind::Thinking);
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            t.item_id = Some(item_id.to_string());
        }
    }

    /// A complete redacted-thinking block.
    pub(crate) fn redacted_thinking(&mut self, data: &str) {
        self.start();
        let index = self.message.content.len();
        self.message.content.push(ContentBlock::RedactedThinking(
            crate::agent::protocol::types::RedactedThinkingContent {
                data: data.to_string(),
            },
        ));
        self.out.push(StreamEvent::RedactedThinking {
            content_index: index,
            data: data.to_string(),
        });
    }

    /// Open a tool call. A later `tool_start` with the same key is ignored.
    pub(crate) fn tool_start(&mut self, key: &str, id: &str, name: &str) {
        self.start();
        if self.open.get(key).is_some_and(|o| o.kind == Kind::Tool) {
            return;
        }
        if self.open.contains_key(key) {
            self.close(key);
        }
        let index = self.message.content.len();
        self.message.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: empty_object(),
            intent: None,
            thought_signature: None,
        }));
        self.out.push(StreamEvent::ToolCallStart {
            content_index: index,
            id: id.to_string(),
            name: name.to_string(),
        });
        self.open.insert(
            key.to_string(),
            Open {
                index,
                kind: Kind::Tool,
                json: String::new(),
            },
        );
    }

    /// Attach an opaque signature to an open tool call (Gemini's `thoughtSignature`, replayed
    /// with the call).
    pub(crate) fn tool_signature(&mut self, key: &str, signature: &str) {
        let Some(o) = self.open.get(key).filter(|o| o.kind == Kind::Tool) else {
            return;
        };
        if let Some(ContentBlock::ToolCall(c)) = self.message.content.get_mut(o.index) {
            c.thought_signature = Some(signature.to_string());
        }
    }

    /// Whether a tool call is open under `key`.
    pub(crate) fn has_tool(&self, key: &str) -> bool {
        self.open.get(key).is_some_and(|o| o.kind == Kind::Tool)
    }

    /// Fill in a tool call's id or name that arrived after its first fragment.
    pub(crate) fn tool_identity(&mut self, key: &str, id: Option<&str>, name: Option<&str>) {
        let Some(o) = self.open.get(key) else {
            return;
        };
        if let Some(ContentBlock::ToolCall(c)) = self.message.content.get_mut(o.index) {
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                c.id = id.to_string();
            }
            if let Some(name) = name.filter(|s| !s.is_empty())
                && c.name.is_empty()
            {
                c.name = name.to_string();
            }
        }
    }

    pub(crate) fn tool_delta(&mut self, key: &str, fragment: &str) {
        let Some(o) = self.open.get_mut(key) else {
            return;
        };
        if fragment.is_empty() {
            return;
        }
        o.json.push_str(fragment);
        let index = o.index;
        self.out.push(StreamEvent::ToolCallDelta {
            content_index: index,
            delta: fragment.to_string(),
        });
    }

    /// Replace a tool call's raw arguments (when a format sends them whole at the end).
    pub(crate) fn tool_arguments(&mut self, key: &str, json: &str) {
        if let Some(o) = self.open.get_mut(key) {
            o.json = json.to_string();
        }
    }

    /// Close one block, emitting its `*_end`.
    pub(crate) fn close(&mut self, key: &str) {
        let Some(o) = self.open.remove(key) else {
            return;
        };
        let Some(block) = self.message.content.get_mut(o.index) else {
            return;
        };
        match block {
            ContentBlock::Text(TextContent {
                text,
                text_signature,
                ..
            }) => self.out.push(StreamEvent::TextEnd {
                content_index: o.index,
                content: text.clone(),
                signature: text_signature.clone(),
            }),
            ContentBlock::Thinking(t) => self.out.push(StreamEvent::ThinkingEnd {
                content_index: o.index,
                content: t.thinking.clone(),
                signature: t.thinking_signature.clone(),
            }),
            ContentBlock::ToolCall(call) => {
                call.arguments = parse_arguments(&o.json);
                self.out.push(StreamEvent::ToolCallEnd {
                    content_index: o.index,
                    tool_call: call.clone(),
                });
            }
            _ => {}
        }
    }

    /// Close every open block in content order.
    pub(crate) fn close_all(&mut self) {
        let mut keys: Vec<(usize, String)> = self
            .open
            .iter()
            .map(|(k, o)| (o.index, k.clone()))
            .collect();
        keys.sort();
        for (_, k) in keys {
            self.close(&k);
        }
    }

    fn stamp(&mut self) {
        let u = &mut self.message.usage;
        if u.total_tokens == 0 {
            u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
        }
        self.message.usage.cost = self.model.pricing.cost(&self.message.usage);
        self.message.duration = Some(self.started_at.elapsed().as_millis() as u64);
        if self.message.timestamp == 0 {
            self.message.timestamp = now_ms();
        }
    }

    /// Finish normally: close blocks and emit `done`.
    pub(crate) fn finish(&mut self, reason: StopReason, details: Option<StopDetails>) {
        if self.finished {
            return;
        }
        self.start();
        self.close_all();
        self.finished = true;
        // A refusal is an error stop, kept in the transcript but never replayed.
        let refusal = details.as_ref().is_some_and(|d| {
            d.kind == crate::agent::protocol::types::STOP_REFUSAL
                || d.kind == crate::agent::protocol::types::STOP_SENSITIVE
        });
        self.message.stop_reason = if refusal { StopReason::Error } else { reason };
        self.message.stop_details = details;
        if refusal && self.message.error_message.is_none() {
            self.message.error_message =
                Some("The provider declined to answer this request.".into());
        }
        self.stamp();
        let message = self.message.clone();
        if refusal {
            self.out.push(StreamEvent::Error {
                reason: StopReason::Error,
                error: Box::new(message),
            });
        } else {
            self.out.push(StreamEvent::Done {
                reason: message.stop_reason,
                message: Box::new(message),
            });
        }
    }

    /// Finish as a refusal (`details.kind` is `refusal` or `sensitive`) whose error message is
    /// the provider's own account of it rather than the generic one.
    pub(crate) fn refuse(&mut self, message: &str, details: StopDetails) {
        if self.finished {
            return;
        }
        self.message.error_message = Some(message.to_string());
        self.finish(StopReason::Stop, Some(details));
    }

    /// Finish with an error. Tool calls still open never reached their end and are dropped by
    /// the loop; text and thinking are closed so the partial can be shown.
    pub(crate) fn fail(
        &mut self,
        message: &str,
        status: Option<u16>,
        transient: Option<TransientError>,
    ) {
        self.finish_with_error(message, status, transient, false);
    }

    /// Finish with an error because the stream itself broke (see
    /// `AssistantMessage::stream_broken`).
    pub(crate) fn fail_broken(&mut self, message: &str, transient: Option<TransientError>) {
        self.finish_with_error(message, None, transient, true);
    }

    fn finish_with_error(
        &mut self,
        message: &str,
        status: Option<u16>,
        transient: Option<TransientError>,
        broken: bool,
    ) {
        if self.finished {
            return;
        }
        let open_text: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.kind != Kind::Tool)
            .map(|(k, _)| k.clone())
            .collect();
        for k in open_text {
            self.close(&k);
        }
        self.open.clear();
        self.finished = true;
        self.message.stop_reason = StopReason::Error;
        self.message.error_message = Some(message.to_string());
        self.message.error_status = status;
        self.message.transient = transient;
        self.message.stream_broken = broken;
        self.stamp();
        self.out.push(StreamEvent::Error {
            reason: StopReason::Error,
            error: Box::new(self.message.clone()),
        });
    }
}

/// Parse a tool call's argument JSON. Empty means `{}`; invalid JSON becomes the parse-error
/// sentinel the loop turns into a clear validation error.
pub(crate) fn parse_arguments(raw: &str) -> Value {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return empty_object();
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => {
            let mut m = Map::new();
            m.insert(
                PARSE_ERROR_KEY.into(),
                Value::String(format!("arguments must be a JSON object, got {other}")),
            );
            m.insert(RAW_JSON_KEY.into(), Value::String(raw.to_string()));
            Value::Object(m)
        }
        Err(e) => {
            let mut m = Map::new();
            m.insert(PARSE_ERROR_KEY.into(), Value::String(e.to_string()));
            m.insert(RAW_JSON_KEY.into(), Value::String(raw.to_string()));
            Value::Object(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::catalog::Catalog;

    fn model() -> ModelInfo {
        Catalog::builtin(&|_| None)
            .find("anthropic", "claude-sonnet-4-5")
            .cloned()
            .unwrap()
    }

    #[test]
    fn blocks_get_indexes_in_order_and_end_with_their_content() {
        let mut s = MessageStream::new(&model());
        s.thinking_delta("0", "hmm");
        s.thinking_signature("0", "sig");
        s.text_delta("1", "Hel");
        s.text_delta("1", "lo");
        s.tool_start("2", "call_1", "read");
        s.tool_delta("2", "{\"path\":");
        s.tool_delta("2", "\"a.rs\"}");
        s.usage_mut().input = 1000;
        s.usage_mut().output = 100;
        s.finish(StopReason::ToolUse, None);
        let events = s.drain();
        let kinds: Vec<String> = events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "start",
                "thinking_start",
                "thinking_delta",
                "text_start",
                "text_delta",
                "text_delta",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_delta",
                "thinking_end",
                "text_end",
                "toolcall_end",
                "done"
            ]
        );
        let StreamEvent::Done { message, .. } = events.last().unwrap() else {
            panic!("no done")
        };
        assert_eq!(message.text(), "Hello");
        assert_eq!(
            message.tool_calls().next().unwrap().arguments["path"],
            "a.rs"
        );
        assert!(message.usage.cost.total > 0.0);
        assert_eq!(message.usage.total_tokens, 1100);
    }

    #[test]
    fn failing_keeps_text_and_leaves_open_tool_calls_unfinished() {
        let mut s = MessageStream::new(&model());
        s.text_delta("0", "partial");
        s.tool_start("1", "c", "bash");
        s.tool_delta("1", "{\"comm");
        s.fail(
            "stream read error: reset",
            None,
            Some(TransientError::default()),
        );
        let events = s.drain();
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, StreamEvent::ToolCallEnd { .. }))
        );
        let StreamEvent::Error { error, .. } = events.last().unwrap() else {
            panic!("no error")
        };
        assert_eq!(error.text(), "partial");
        assert!(error.transient.is_some());
    }

    #[test]
    fn bad_argument_json_becomes_the_parse_sentinel() {
        assert_eq!(parse_arguments(""), empty_object());
        let v = parse_arguments("{\"a\": ");
        assert!(v.get(PARSE_ERROR_KEY).is_some());
        assert_eq!(v[RAW_JSON_KEY], "{\"a\": ");
        assert!(parse_arguments("[1]").get(PARSE_ERROR_KEY).is_some());
    }

    #[test]
    fn refusals_end_as_errors_that_are_not_replayed() {
        let mut s = MessageStream::new(&model());
        s.text_delta("0", "I can't");
        s.finish(
            StopReason::Stop,
            Some(StopDetails {
                kind: crate::agent::protocol::types::STOP_REFUSAL.into(),
                ..Default::default()
            }),
        );
        let StreamEvent::Error { error, .. } = s.drain().pop().unwrap() else {
            panic!("no error")
        };
        assert!(error.is_provider_refusal());
    }
}

//! OpenAI Chat Completions, as spoken by OpenAI and by the compatible servers (Ollama,
//! llama.cpp, vLLM, OpenRouter, Groq, DeepSeek, Cerebras, ...).
//!
//! Request: the system prompt as a `system` (or, for OpenAI reasoning models, `developer`)
//! message, then user / assistant (`tool_calls`) / `tool` messages; tools as functions;
//! `max_tokens` or `max_completion_tokens` as the server wants; `reasoning_effort` where
//! supported; usage requested in the stream. Response: `choices[0].delta` chunks carrying
//! `content`, `reasoning_content`/`reasoning`, and `tool_calls` fragments keyed by `index`;
//! `finish_reason`; a final usage chunk; `data: [DONE]`. Servers differ in what they omit
//! (ids, `[DONE]`, usage), so the decoder fills the gaps instead of failing.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::body::{ElementSink, LazyItems, LazyMember, Out, prefetch};
use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::error::{DecodeError, RequestError};
use super::sse::SseEvent;
use super::wire::{HttpRequest, WireApi, WireDecoder, parse_json};
use crate::agent::protocol::stream::{ProviderRequest, ToolChoice};
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::types::has_parse_error;
use crate::agent::protocol::types::{
    ContentBlock, Message, STOP_REFUSAL, StopDetails, StopReason, TransientError, UserContent,
};

pub(crate) struct ChatCompletions;

fn image_url(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

fn user_content(content: &UserContent) -> Value {
    match content {
        UserContent::Text(t) => Value::String(t.clone()),
        UserContent::Blocks(blocks) => {
            let only_text = blocks.iter().all(|b| matches!(b, ContentBlock::Text(_)));
            if only_text {
                return Value::String(ContentBlock::joined_text(blocks).into_owned());
            }
            Value::Array(
                blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                        ContentBlock::Image(i) => Some(image_url(&i.mime_type, &i.data)),
                        _ => None,
                    })
                    .collect(),
            )
        }
    }
}

fn effort_name(e: Effort) -> &'static str {
    match e {
        Effort::Minimal => "minimal",
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High | Effort::Xhigh | Effort::Max => "high",
    }
}

/// One element of the `messages` array, borrowing from the message where it can. The field
/// order is the wire order.
#[derive(Serialize)]
#[serde(untagged)]
enum ChatItem<'a> {
    /// A system, developer or user message.
    Plain { role: &'static str, content: Value },
    Assistant {
        role: &'static str,
        /// `null` when the reply was only tool calls.
        content: Option<SentText<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CallItem<'a>>,
    },
    Tool {
        role: &'static str,
        tool_call_id: &'a str,
        content: SentText<'a>,
    },
}

/// A message's text as sent, with its length as a JSON literal when that is known already (a
/// loaded history's long texts: measuring the body then need not count them).
struct SentText<'a> {
    text: Cow<'a, str>,
    literal_len: Option<u64>,
}

impl<'a> SentText<'a> {
    fn new((text, literal_len): (Cow<'a, str>, Option<u64>)) -> Self {
        SentText { text, literal_len }
    }
}

impl Serialize for SentText<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

#[derive(Serialize)]
struct CallItem<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionItem<'a>,
}

#[derive(Serialize)]
struct FunctionItem<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
}

/// A call's arguments, sent as the text of their JSON (`{}` for arguments that did not parse).
enum Arguments<'a> {
    Json(&'a Value),
    Unparsed,
}

impl Serialize for Arguments<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Arguments::Json(v) => s.serialize_str(&v.to_string()),
            Arguments::Unparsed => s.serialize_str("{}"),
        }
    }
}

impl ChatItem<'_> {
    /// Write the element by hand: the same bytes as its `Serialize`, with the long strings
    /// (tool output, replies, call arguments) through the fast string writer.
    fn write(&self, out: &mut Out<'_>) -> std::io::Result<()> {
        let (ChatItem::Plain { role, .. }
        | ChatItem::Assistant { role, .. }
        | ChatItem::Tool { role, .. }) = self;
        out.raw(b"{\"role\":");
        out.string(role);
        match self {
            ChatItem::Plain { content, .. } => {
                out.raw(b",\"content\":");
                match content {
                    Value::String(text) => out.string(text),
                    other => out.value(other)?,
                }
            }
            ChatItem::Assistant {
                content,
                tool_calls,
                ..
            } => {
                out.raw(b",\"content\":");
                match content {
                    Some(text) => out.measured_string(&text.text, text.literal_len),
                    None => out.raw(b"null"),
                }
                if !tool_calls.is_empty() {
                    out.raw(b",\"tool_calls\":[");
                    for (i, call) in tool_calls.iter().enumerate() {
                        if i > 0 {
                            out.raw(b",");
                        }
                        out.raw(b"{\"id\":");
                        out.string(call.id);
                        out.raw(b",\"type\":");
                        out.string(call.kind);
                        out.raw(b",\"function\":{\"name\":");
                        out.string(call.function.name);
                        out.raw(b",\"arguments\":");
                        match call.function.arguments {
                            Arguments::Json(v) => out.value_as_string(v)?,
                            Arguments::Unparsed => out.string("{}"),
                        }
                        out.raw(b"}}");
                    }
                    out.raw(b"]");
                }
            }
            ChatItem::Tool {
                tool_call_id,
                content,
                ..
            } => {
                out.raw(b",\"tool_call_id\":");
                out.string(tool_call_id);
                out.raw(b",\"content\":");
                out.measured_string(&content.text, content.literal_len);
            }
        }
        out.raw(b"}");
        Ok(())
    }
}

/// The system prompt's element, if there is a system prompt.
fn system_item(model: &ModelInfo, request: &ProviderRequest) -> Option<ChatItem<'static>> {
    let system = request.context.system_prompt.join("\n\n");
    if system.trim().is_empty() {
        return None;
    }
    let role = if model.compat.supports_developer_role && model.reasoning {
        "developer"
    } else {
        "system"
    };
    Some(ChatItem::Plain {
        role,
        content: Value::String(system),
    })
}

/// The elements one message becomes (none for an empty reply; two for a tool result with
/// images, which go in a user message after it).
fn message_items<'a>(
    m: &'a Message,
    mut emit: impl FnMut(ChatItem<'a>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match m {
        Message::User(u) => emit(ChatItem::Plain {
            role: "user",
            content: user_content(&u.content),
        }),
        Message::Developer(d) => emit(ChatItem::Plain {
            role: "system",
            content: Value::String(d.content.joined_text()),
        }),
        Message::Assistant(a) => {
            let text = SentText::new(ContentBlock::joined_text_measured(&a.content));
            let tool_calls: Vec<CallItem<'a>> = a
                .tool_calls()
                .map(|c| CallItem {
                    id: &c.id,
                    kind: "function",
                    function: FunctionItem {
                        name: &c.name,
                        arguments: if has_parse_error(&c.arguments) {
                            Arguments::Unparsed
                        } else {
                            Arguments::Json(&c.arguments)
                        },
                    },
                })
                .collect();
            if text.text.is_empty() && tool_calls.is_empty() {
                return Ok(());
            }
            emit(ChatItem::Assistant {
                role: "assistant",
                content: (!text.text.is_empty()).then_some(text),
                tool_calls,
            })
        }
        Message::ToolResult(r) => {
            let text = SentText::new(ContentBlock::joined_text_measured(&r.content));
            let images: Vec<Value> = r
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Image(i) => Some(image_url(&i.mime_type, &i.data)),
                    _ => None,
                })
                .collect();
            let content = if text.text.is_empty() && !images.is_empty() {
                SentText::new((Cow::Borrowed("(see the attached image)"), None))
            } else {
                text
            };
            emit(ChatItem::Tool {
                role: "tool",
                tool_call_id: &r.tool_call_id,
                content,
            })?;
            if images.is_empty() {
                return Ok(());
            }
            let mut parts = vec![
                json!({"type": "text", "text": format!("Image output of the {} tool:", r.tool_name)}),
            ];
            parts.extend(images);
            emit(ChatItem::Plain {
                role: "user",
                content: Value::Array(parts),
            })
        }
    }
}

/// The `messages` array as JSON values (what is sent is written straight from the messages
/// by [`ChatMessages`]; this shows the same elements).
#[cfg(test)]
pub(crate) fn convert_messages(model: &ModelInfo, request: &ProviderRequest) -> Vec<Value> {
    let mut out: Vec<Value> = system_item(model, request)
        .into_iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect();
    for m in request.context.messages.iter() {
        let _ = message_items(m, |item| {
            out.extend(serde_json::to_value(item).ok());
            Ok(())
        });
    }
    out
}

/// The `messages` array, written from the conversation when the request is sent: a resumed
/// history of tens of megabytes is never copied into JSON values first.
struct ChatMessages {
    system: Option<ChatItem<'static>>,
    messages: Arc<Vec<Arc<Message>>>,
}

impl LazyItems for ChatMessages {
    fn sources(&self) -> usize {
        usize::from(self.system.is_some()) + self.messages.len()
    }

    fn write(&self, i: usize, out: &mut ElementSink<'_, '_>) -> std::io::Result<()> {
        let i = match (&self.system, i) {
            (Some(system), 0) => return out.element(|out| system.write(out)),
            (Some(_), i) => i - 1,
            (None, i) => i,
        };
        // The message eight places on is asked for now, and the blocks of the one four places
        // on (its message was asked for four steps ago).
        if let Some(ahead) = self.messages.get(i + 8) {
            prefetch(Arc::as_ptr(ahead));
        }
        if let Some(ahead) = self.messages.get(i + 4) {
            prefetch(ahead.blocks().as_ptr());
        }
        match self.messages.get(i) {
            Some(m) => message_items(m, |item| out.element(|out| item.write(out))),
            None => Ok(()),
        }
    }
}

impl WireApi for ChatCompletions {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, RequestError> {
        let mut body = Map::new();
        body.insert("model".into(), json!(model.id));
        // Written from the messages when sent (see ChatMessages); its place is kept here.
        body.insert("messages".into(), Value::Array(Vec::new()));
        let lazy = LazyMember {
            key: "messages",
            items: Arc::new(ChatMessages {
                system: system_item(model, request),
                messages: request.context.messages.clone(),
            }),
        };
        body.insert("stream".into(), json!(true));
        if model.compat.supports_usage_in_streaming {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        let tools = &request.context.tools;
        if !tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(
                    tools
                        .iter()
                        .map(|t| {
                            json!({"type": "function", "function": {
                                "name": t.name, "description": t.description, "parameters": t.parameters
                            }})
                        })
                        .collect(),
                ),
            );
            if let Some(choice) = &request.options.tool_choice {
                let v = match choice {
                    ToolChoice::Auto => json!("auto"),
                    ToolChoice::None => json!("none"),
                    ToolChoice::Any | ToolChoice::Required => json!("required"),
                    ToolChoice::Tool(name) => {
                        json!({"type": "function", "function": {"name": name}})
                    }
                };
                body.insert("tool_choice".into(), v);
            }
        }
        if let Some(max) = request.options.max_tokens {
            body.insert(model.compat.max_tokens_field.clone(), json!(max));
        }
        let reasoning = request
            .options
            .reasoning
            .filter(|_| model.reasoning && !request.options.disable_reasoning);
        if let Some(effort) = reasoning
            && model.compat.supports_reasoning_effort
        {
            body.insert("reasoning_effort".into(), json!(effort_name(effort)));
        }
        if let Some(t) = request.options.temperature
            && reasoning.is_none()
        {
            body.insert("temperature".into(), json!(t));
        }
        let headers = super::wire::merge_headers(
            key.map(|k| ("authorization", format!("Bearer {k}"))),
            &[],
            &model.headers,
        );
        Ok(HttpRequest {
            url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
            headers,
            body: Value::Object(body),
            lazy: Some(lazy),
        })
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(Decoder::default())
    }
}

#[derive(Default)]
struct Decoder {
    finish_reason: Option<String>,
    done: bool,
    saw_id: bool,
    tool_keys: Vec<String>,
    generated_ids: usize,
    /// Always take the general path (tests compare the two).
    no_fast_path: bool,
}

/// A chunk's reasoning (servers name it `reasoning_content` or `reasoning`) and text deltas.
fn text_deltas(out: &mut MessageStream, reasoning: [Option<&str>; 2], content: Option<&str>) {
    for t in reasoning.into_iter().flatten() {
        out.thinking_delta("think", t);
    }
    if let Some(t) = content {
        out.text_delta("text", t);
    }
}

/// The fields of a streamed chunk the fast path reads (unknown fields are skipped).
#[derive(serde::Deserialize)]
struct FastChunk<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    choices: Vec<FastChoice<'a>>,
    #[serde(default)]
    usage: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct FastChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<FastDelta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct FastDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<serde::de::IgnoredAny>,
}

impl Decoder {
    /// The common chunk (text or reasoning deltas, a finish reason) read into borrowed typed
    /// fields without building a JSON tree. `false` when the chunk has anything else (tool
    /// calls, usage, an error, several choices) or does not parse: the general path handles it.
    fn fast_event(&mut self, data: &str, out: &mut MessageStream) -> bool {
        let Ok(chunk) = serde_json::from_str::<FastChunk>(data) else {
            return false;
        };
        if chunk.error.is_some() || chunk.usage.is_some() || chunk.choices.len() > 1 {
            return false;
        }
        let choice = chunk.choices.first();
        if choice.is_some_and(|c| c.delta.as_ref().is_some_and(|d| d.tool_calls.is_some())) {
            return false;
        }
        self.begin(out, chunk.id.as_deref());
        if let Some(choice) = choice {
            if let Some(delta) = &choice.delta {
                text_deltas(
                    out,
                    [
                        delta.reasoning_content.as_deref(),
                        delta.reasoning.as_deref(),
                    ],
                    delta.content.as_deref(),
                );
            }
            self.note_finish(choice.finish_reason.as_deref());
        }
        true
    }

    /// Every chunk opens the message (once) and names the response (the first id seen).
    fn begin(&mut self, out: &mut MessageStream, id: Option<&str>) {
        out.start();
        if !self.saw_id
            && let Some(id) = id
        {
            out.set_response_id(id);
            self.saw_id = true;
        }
    }

    fn note_finish(&mut self, reason: Option<&str>) {
        if let Some(reason) = reason {
            self.finish_reason = Some(reason.to_string());
        }
    }

    fn complete(&mut self, out: &mut MessageStream) {
        if out.is_finished() {
            return;
        }
        let (reason, details) = match self.finish_reason.as_deref() {
            Some("length") => (StopReason::Length, None),
            Some("tool_calls") | Some("function_call") => (StopReason::ToolUse, None),
            Some("content_filter") => (
                StopReason::Stop,
                Some(StopDetails {
                    kind: STOP_REFUSAL.into(),
                    category: Some("content_filter".into()),
                    explanation: None,
                }),
            ),
            _ if !self.tool_keys.is_empty() => (StopReason::ToolUse, None),
            _ => (StopReason::Stop, None),
        };
        out.finish(reason, details);
    }

    fn usage(&mut self, usage: &Value, out: &mut MessageStream) {
        let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let prompt = n("/prompt_tokens");
        let cached = n("/prompt_tokens_details/cached_tokens");
        let u = out.usage_mut();
        u.input = prompt.saturating_sub(cached);
        u.cache_read = cached;
        u.output = n("/completion_tokens");
        u.total_tokens = n("/total_tokens");
        if let Some(r) = usage
            .pointer("/completion_tokens_details/reasoning_tokens")
            .and_then(Value::as_u64)
        {
            u.reasoning_tokens = Some(r);
        }
    }
}

impl WireDecoder for Decoder {
    fn event(&mut self, event: &SseEvent, out: &mut MessageStream) -> Result<(), DecodeError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            self.complete(out);
            return Ok(());
        }
        if !self.no_fast_path && self.fast_event(data, out) {
            return Ok(());
        }
        let chunk = parse_json(event)?;
        if let Some(err) = chunk.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the provider reported an error");
            let code = err
                .get("code")
                .map(|c| c.to_string().to_lowercase())
                .unwrap_or_default();
            let kind = err.get("type").and_then(Value::as_str).unwrap_or_default();
            let transient = code.contains("429")
                || code.contains("5")
                || kind.contains("server")
                || kind.contains("overloaded")
                || kind.contains("rate");
            out.fail(message, None, transient.then(TransientError::default));
            return Ok(());
        }
        self.begin(out, chunk.get("id").and_then(Value::as_str));
        if let Some(choice) = chunk.pointer("/choices/0") {
            if let Some(delta) = choice.get("delta") {
                let text = |field: &str| delta.get(field).and_then(Value::as_str);
                text_deltas(
                    out,
                    [text("reasoning_content"), text("reasoning")],
                    text("content"),
                );
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for (pos, call) in calls.iter().enumerate() {
                        let index = call
                            .get("index")
                            .and_then(Value::as_u64)
                            .unwrap_or(pos as u64);
                        let key = format!("tool{index}");
                        let id = call.get("id").and_then(Value::as_str);
                        let name = call.pointer("/function/name").and_then(Value::as_str);
                        if !out.has_tool(&key) {
                            // Reasoning and text come before calls; close them in order.
                            out.close("think");
                            out.close("text");
                            let id = match id.filter(|s| !s.is_empty()) {
                                Some(id) => id.to_string(),
                                None => {
                                    self.generated_ids += 1;
                                    format!("call_{}", self.generated_ids)
                                }
                            };
                            out.tool_start(&key, &id, name.unwrap_or_default());
                            self.tool_keys.push(key.clone());
                        } else {
                            out.tool_identity(&key, id, name);
                        }
                        if let Some(args) = call.pointer("/function/arguments") {
                            match args {
                                Value::String(s) => out.tool_delta(&key, s),
                                Value::Object(_) => out.tool_delta(&key, &args.to_string()),
                                _ => {}
                            }
                        }
                    }
                }
            }
            self.note_finish(choice.get("finish_reason").and_then(Value::as_str));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage(usage, out);
        }
        Ok(())
    }

    fn end(&mut self, out: &mut MessageStream) {
        // Some servers end without `[DONE]`; a finish reason is enough to call it complete.
        if self.done || self.finish_reason.is_some() {
            self.complete(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::stream::{LlmContext, ProviderRequest, StreamOptions, ToolSpec};
    use crate::agent::protocol::types::{
        AssistantMessage, ImageContent, ToolCall, ToolResultMessage, UserMessage,
    };
    use crate::provider::catalog::Catalog;

    fn model(provider: &str, id: &str) -> ModelInfo {
        Catalog::builtin(&|_| None).resolve(provider, id).unwrap().0
    }

    fn request(messages: Vec<Message>) -> ProviderRequest {
        ProviderRequest {
            model: crate::agent::protocol::stream::Model::new(
                "ollama",
                "openai-completions",
                "qwen",
            ),
            context: LlmContext {
                system_prompt: vec!["be brief".into()],
                messages: Arc::new(messages.into_iter().map(Arc::new).collect()),
                tools: vec![ToolSpec {
                    name: "read".into(),
                    description: "read a file".into(),
                    parameters: json!({"type": "object"}),
                }],
            },
            options: StreamOptions::default(),
        }
    }

    #[test]
    fn history_maps_to_chat_messages() {
        let mut a = AssistantMessage::default();
        a.content.push(ContentBlock::text("let me look"));
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a"}),
            intent: None,
            thought_signature: None,
        }));
        let r = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("file body")],
            details: None,
            is_error: false,
            useless: false,
            timestamp: 0,
        };
        let req = request(vec![
            Message::User(UserMessage::new("hi")),
            Message::Assistant(a),
            Message::ToolResult(r),
        ]);
        let m = model("ollama", "qwen");
        let msgs = convert_messages(&m, &req);
        assert_eq!(msgs[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(msgs[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(
            msgs[2]["tool_calls"][0]["function"]["arguments"],
            "{\"path\":\"a\"}"
        );
        assert_eq!(
            msgs[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "file body"})
        );
        let body = ChatCompletions.build(&m, &req, None).unwrap().full_body();
        assert_eq!(body["messages"], Value::Array(msgs));
        assert_eq!(body["max_tokens"], Value::Null);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn joined_text_is_the_messages_text_and_borrows_a_single_block() {
        let mut a = AssistantMessage::empty("openai-completions", "ollama", "qwen");
        assert_eq!(ContentBlock::joined_text(&a.content), a.text());
        a.content.push(ContentBlock::text("one"));
        assert!(matches!(
            ContentBlock::joined_text(&a.content),
            Cow::Borrowed("one")
        ));
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c".into(),
            name: "ls".into(),
            arguments: json!({}),
            intent: None,
            thought_signature: None,
        }));
        a.content.push(ContentBlock::text("two"));
        assert_eq!(ContentBlock::joined_text(&a.content), a.text());
        assert_eq!(ContentBlock::joined_text(&a.content), "one\ntwo");
    }

    /// A large history of tool results whose texts carry a literal-length note: the true
    /// length, or one byte too many.
    fn noted_history(off_by: u64) -> Vec<Message> {
        (0..300)
            .map(|n| {
                let text = format!("{}\n\"{n}\"", "y".repeat(5000));
                let len = crate::json_text::string_len(&text) + off_by;
                let literal_len = crate::agent::protocol::types::LiteralLen::new(&text, len);
                Message::ToolResult(ToolResultMessage {
                    tool_call_id: format!("c{n}"),
                    tool_name: "read".into(),
                    content: vec![ContentBlock::Text(
                        crate::agent::protocol::types::TextContent {
                            text,
                            text_signature: None,
                            literal_len,
                        },
                    )],
                    details: None,
                    is_error: false,
                    useless: false,
                    timestamp: 0,
                })
            })
            .collect()
    }

    fn measured_and_sent(history: Vec<Message>) -> (u64, std::io::Result<Vec<u8>>) {
        let built = ChatCompletions
            .build(&model("ollama", "qwen"), &request(history), None)
            .unwrap();
        match crate::provider::body::json_body(built.body, built.lazy).unwrap() {
            crate::provider::body::JsonBody::Pieces(len, pieces) => {
                let sent = pieces
                    .map(|p| p.map(|p| p.to_vec()))
                    .collect::<std::io::Result<Vec<_>>>();
                (len, sent.map(|p| p.concat()))
            }
            crate::provider::body::JsonBody::Whole(_) => panic!("a 1.5 MB body was held whole"),
        }
    }

    #[test]
    fn texts_measured_as_they_were_loaded_are_not_counted_again() {
        let (len, sent) = measured_and_sent(noted_history(0));
        let sent = sent.unwrap();
        assert_eq!(len, sent.len() as u64);
        let plain: Vec<Message> = noted_history(0)
            .into_iter()
            .map(|m| match m {
                Message::ToolResult(mut r) => {
                    let text = ContentBlock::joined_text(&r.content).into_owned();
                    r.content = vec![ContentBlock::text(text)];
                    Message::ToolResult(r)
                }
                other => other,
            })
            .collect();
        let (plain_len, plain_sent) = measured_and_sent(plain);
        assert_eq!((plain_len, plain_sent.unwrap()), (len, sent));

        // The note is what the measure used: a wrong one shows in the announced length, and
        // the body then ends in an error instead of going out longer or shorter than that.
        let (wrong_len, wrong_sent) = measured_and_sent(noted_history(1));
        assert_eq!(wrong_len, len + 300);
        let err = wrong_sent.unwrap_err().to_string();
        assert!(err.contains("where"), "{err}");
    }

    #[test]
    fn a_note_taken_for_another_text_is_not_used() {
        let note = crate::agent::protocol::types::LiteralLen::new("abc", 5);
        assert_eq!(note.of("abc"), Some(5));
        assert_eq!(note.of("abcd"), None);
        assert_eq!(
            crate::agent::protocol::types::LiteralLen::default().of(""),
            None
        );
    }

    #[test]
    fn the_messages_written_when_sent_are_the_bytes_of_the_json_values() {
        let mut history = Vec::new();
        for n in 0..400 {
            history.push(Message::User(UserMessage::new(format!(
                "question {n} \"quoted\"\n"
            ))));
            let mut a = AssistantMessage::empty("openai-completions", "ollama", "qwen");
            a.content.push(ContentBlock::text("let me look"));
            a.content.push(ContentBlock::ToolCall(ToolCall {
                id: format!("c{n}"),
                name: "read".into(),
                arguments: json!({"path": format!("f{n}.rs"), "text": "a\n\"b\"\\\u{1}"}),
                intent: None,
                thought_signature: None,
            }));
            history.push(Message::Assistant(a));
            // Every kind of escape, at shifting offsets.
            let tail = "\u{1}\u{1f}\\ \"é😀\t\r\u{8}\u{c}\u{7f}/".repeat(n % 3 + 1);
            let mut content = vec![ContentBlock::text(format!(
                "{}{tail}",
                "x".repeat(4000 + n)
            ))];
            if n % 100 == 0 {
                content.push(ContentBlock::Image(ImageContent {
                    data: "aGk=".into(),
                    mime_type: "image/png".into(),
                    detail: None,
                }));
            }
            history.push(Message::ToolResult(ToolResultMessage {
                tool_call_id: format!("c{n}"),
                tool_name: "read".into(),
                content,
                details: None,
                is_error: false,
                useless: false,
                timestamp: 0,
            }));
        }
        // Only tool calls, and an empty reply (left out).
        let mut calls_only = AssistantMessage::empty("openai-completions", "ollama", "qwen");
        calls_only.content.push(ContentBlock::ToolCall(ToolCall {
            id: "z".into(),
            name: "ls".into(),
            arguments: json!({}),
            intent: None,
            thought_signature: None,
        }));
        history.push(Message::Assistant(calls_only));
        history.push(Message::Assistant(AssistantMessage::empty(
            "openai-completions",
            "ollama",
            "qwen",
        )));
        let m = model("ollama", "qwen");
        for history in [history.clone(), history[..3].to_vec()] {
            let req = request(history);
            let built = ChatCompletions.build(&m, &req, None).unwrap();
            let mut expected = built.body.clone();
            expected["messages"] = Value::Array(convert_messages(&m, &req));
            let expected = serde_json::to_vec(&expected).unwrap();
            let sent: Vec<u8> =
                match crate::provider::body::json_body(built.body, built.lazy).unwrap() {
                    crate::provider::body::JsonBody::Whole(bytes) => {
                        assert!(expected.len() <= crate::provider::body::WHOLE);
                        bytes
                    }
                    crate::provider::body::JsonBody::Pieces(len, pieces) => {
                        assert!(expected.len() > crate::provider::body::WHOLE);
                        let bytes: Vec<u8> = pieces.flat_map(|p| p.unwrap().to_vec()).collect();
                        assert_eq!(len, bytes.len() as u64);
                        bytes
                    }
                };
            assert_eq!(
                String::from_utf8_lossy(&sent),
                String::from_utf8_lossy(&expected)
            );
        }
    }

    #[test]
    fn openai_reasoning_models_get_developer_role_and_effort() {
        let m = model("openai", "gpt-5");
        let mut req = request(vec![Message::User(UserMessage::new("hi"))]);
        req.options.reasoning = Some(Effort::High);
        req.options.max_tokens = Some(1000);
        let mut m2 = m.clone();
        m2.api = crate::provider::catalog::Api::OpenAiCompletions;
        let body = ChatCompletions.build(&m2, &req, Some("k")).unwrap();
        assert_eq!(body.full_body()["messages"][0]["role"], "developer");
        assert_eq!(body.body["reasoning_effort"], "high");
        assert_eq!(body.body["max_completion_tokens"], 1000);
        assert!(
            body.headers
                .contains(&("authorization".into(), "Bearer k".into()))
        );
    }

    #[test]
    fn the_fast_path_decodes_exactly_like_the_general_one() {
        let chunks = [
            r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning":" ok"}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hel\u00e9 \"q\""}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":null}}],"usage":null}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"read","arguments":"{\"path\":"}}]}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#,
            "[DONE]",
        ];
        let run = |no_fast_path: bool| {
            let mut d = Decoder {
                no_fast_path,
                ..Decoder::default()
            };
            let mut out = MessageStream::new(&model("openai", "gpt-4o"));
            for c in chunks {
                let ev = SseEvent {
                    event: String::new(),
                    data: c.to_string(),
                };
                d.event(&ev, &mut out).unwrap();
            }
            d.end(&mut out);
            // Timestamps and durations are the clock's; everything else must match.
            fn no_clock(v: &mut Value) {
                match v {
                    Value::Object(m) => {
                        for key in ["timestamp", "duration", "ttft"] {
                            m.remove(key);
                        }
                        m.values_mut().for_each(no_clock);
                    }
                    Value::Array(a) => a.iter_mut().for_each(no_clock),
                    _ => {}
                }
            }
            let mut v = serde_json::to_value(out.drain()).unwrap();
            no_clock(&mut v);
            v
        };
        let fast = run(false);
        assert_eq!(fast, run(true));
        assert!(fast.to_string().contains("Helé"), "{fast}");
    }
}

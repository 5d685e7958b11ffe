//! Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`.
//!
//! **Request.** The system prompt becomes text blocks; the conversation becomes alternating
//! `user`/`assistant` turns: tool results turn into `tool_result` blocks of a user turn, and
//! consecutive user turns (several tool results, a steering note after them) are merged into one,
//! `tool_result` blocks first, as the API requires. Assistant thinking is replayed only when it
//! carries a signature from this provider (the API rejects unsigned or foreign thinking; such
//! text goes back as plain text); redacted thinking is replayed as its opaque `data`. Tool calls
//! go back with their parsed arguments (`{}` when they never parsed). Prompt caching uses four
//! `ephemeral` breakpoints at most: the end of the system prompt and of the tool list (the stable
//! prefix), and the last block of the last two user turns (the moving tail: the previous request
//! wrote the cache up to the older one, so this request reads it, however many blocks the new
//! turn added). Thinking asks for the effort's token budget (`Effort::default_budget_tokens`),
//! with `max_tokens` raised so the answer still has room; it is left off when the request forces
//! a tool, which the API does not allow together with thinking. The key goes into `x-api-key`
//! and nowhere else.
//!
//! **Response.** SSE events `message_start`, `content_block_start/delta/stop`, `message_delta`,
//! `message_stop`, `ping` and `error` map onto [`MessageStream`], keyed by the block `index`.
//! Stop reasons: `end_turn`/`stop_sequence` → stop, `tool_use` → toolUse, `max_tokens` and
//! `model_context_window_exceeded` → length, `pause_turn` → stop with detail `pause_turn` (the
//! loop re-samples), `refusal` → stop with detail `refusal` (an error stop, never replayed). An
//! in-stream `overloaded_error`, `api_error`, `rate_limit_error` or `timeout_error` is transient.
//! A body that ends before `message_stop` is left unfinished, and the HTTP layer reports it as a
//! dropped stream.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::error::{DecodeError, RequestError};
use super::sse::SseEvent;
use super::wire::{HttpRequest, WireApi, WireDecoder, parse_json};
use crate::agent::protocol::stream::{ProviderRequest, ToolChoice, ToolSpec};
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::types::PARSE_ERROR_KEY;
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, ImageContent, Message, STOP_PAUSE_TURN, STOP_REFUSAL,
    StopDetails, StopReason, ToolResultMessage, TransientError, UserContent,
};

/// The `anthropic-version` header every request carries.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// The smallest thinking budget the API accepts.
pub(crate) const MIN_THINKING_BUDGET: u64 = 1024;

/// Tokens always left for the visible answer when `max_tokens` has to grow past a budget.
const ANSWER_RESERVE: u64 = 1024;

/// The most `cache_control` breakpoints one request may carry.
const MAX_CACHE_BREAKPOINTS: usize = 4;

/// The Messages API wire format.
pub struct AnthropicMessages;

impl WireApi for AnthropicMessages {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, RequestError> {
        let base = model.base_url.trim_end_matches('/');
        if base.is_empty() {
            return Err(RequestError::NoBaseUrl(model.provider.clone()));
        }
        let headers = super::wire::merge_headers(
            key.map(|k| ("x-api-key", k.to_string())),
            &[("anthropic-version", API_VERSION)],
            &model.headers,
        );
        Ok(HttpRequest {
            url: format!("{base}/v1/messages"),
            headers,
            body: request_body(model, request),
            lazy: None,
        })
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(Decoder::default())
    }
}

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/// The JSON body of one request.
fn request_body(model: &ModelInfo, request: &ProviderRequest) -> Value {
    let options = &request.options;
    let context = &request.context;
    let has_tools = !context.tools.is_empty();
    let forces_tool = has_tools
        && matches!(
            options.tool_choice,
            Some(ToolChoice::Any | ToolChoice::Required | ToolChoice::Tool(_))
        );
    let effort = options
        .reasoning
        .filter(|_| (model.reasoning || request.model.reasoning) && !options.disable_reasoning)
        .filter(|_| !forces_tool);
    let requested = options.max_tokens.unwrap_or(model.max_tokens).max(1);
    let (max_tokens, budget) = token_limits(requested, model.max_tokens, effort);

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));

    let mut breakpoints = 0;
    let mut system: Vec<Value> = context
        .system_prompt
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| json!({"type": "text", "text": s}))
        .collect();
    if let Some(last) = system.last_mut() {
        set_cache_control(last);
        breakpoints += 1;
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    let mut tools: Vec<Value> = context.tools.iter().map(tool_definition).collect();
    if model.compat.web_search {
        tools.push(json!({"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": 5}));
    }
    // The server's own search counts as a tool to send, though the loop gave none.
    let sends_tools = !tools.is_empty();
    if let Some(last) = tools.last_mut() {
        set_cache_control(last);
        breakpoints += 1;
    }

    let messages = convert_messages(
        model,
        &context.messages,
        MAX_CACHE_BREAKPOINTS - breakpoints,
    );
    body.insert("messages".into(), Value::Array(messages));

    if sends_tools {
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &options.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }

    match budget {
        Some(budget) => {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        None => {
            if let Some(t) = options.temperature {
                body.insert("temperature".into(), json!(t));
            }
        }
    }
    Value::Object(body)
}

/// `max_tokens` and the thinking budget for a request.
///
/// The API wants `max_tokens > budget_tokens`. When the requested output limit does not leave
/// room after the budget, it grows by the budget (within the model's limit); failing that, the
/// budget shrinks to leave [`ANSWER_RESERVE`] tokens, and below [`MIN_THINKING_BUDGET`] thinking
/// is left off.
fn token_limits(requested: u64, model_max: u64, effort: Option<Effort>) -> (u64, Option<u64>) {
    let Some(effort) = effort else {
        return (requested, None);
    };
    let budget = u64::from(effort.default_budget_tokens());
    if requested > budget {
        return (requested, Some(budget));
    }
    let max_tokens = requested
        .saturating_add(budget)
        .min(model_max.max(requested));
    if max_tokens > budget {
        return (max_tokens, Some(budget));
    }
    let shrunk = max_tokens.saturating_sub(ANSWER_RESERVE);
    if shrunk >= MIN_THINKING_BUDGET {
        (max_tokens, Some(shrunk))
    } else {
        (max_tokens, None)
    }
}

fn set_cache_control(block: &mut Value) {
    if let Value::Object(map) = block {
        map.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

fn tool_definition(tool: &ToolSpec) -> Value {
    let schema = match &tool.parameters {
        Value::Object(map) if map.contains_key("type") => tool.parameters.clone(),
        Value::Object(map) => {
            let mut m = map.clone();
            m.insert("type".into(), json!("object"));
            Value::Object(m)
        }
        _ => json!({"type": "object", "properties": {}}),
    };
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": schema,
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Any | ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    }
}

/// A tool-call id the API accepts (`^[a-zA-Z0-9_-]+$`, at most 64 characters). Ids from other
/// providers (`call_1|fc_2`) are mapped the same way on both sides of a pair.
fn tool_use_id(id: &str) -> String {
    let out: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() { "_".to_string() } else { out }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

struct Turn {
    role: Role,
    blocks: Vec<Value>,
}

/// The `messages` array, with up to `breakpoints` cache breakpoints on the last user turns.
fn convert_messages(
    model: &ModelInfo,
    messages: &[Arc<Message>],
    breakpoints: usize,
) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message.as_ref() {
            Message::User(u) => (Role::User, user_blocks(model, &u.content)),
            Message::Developer(d) => (Role::User, user_blocks(model, &d.content)),
            Message::Assistant(a) => (Role::Assistant, assistant_blocks(model, a)),
            Message::ToolResult(r) => (Role::User, vec![tool_result_block(model, r)]),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == Role::User && role == Role::User => {
                last.blocks.extend(blocks);
            }
            _ => turns.push(Turn { role, blocks }),
        }
    }

    for turn in turns.iter_mut().filter(|t| t.role == Role::User) {
        // Tool results must open the user turn that answers the tool calls.
        if turn.blocks.len() > 1 && turn.blocks.iter().skip(1).any(is_tool_result) {
            let (mut results, rest): (Vec<Value>, Vec<Value>) = std::mem::take(&mut turn.blocks)
                .into_iter()
                .partition(is_tool_result);
            results.extend(rest);
            turn.blocks = results;
        }
    }

    // The API rejects a final assistant turn (a prefill, e.g. a paused turn) ending in whitespace.
    if let Some(last) = turns.last_mut()
        && last.role == Role::Assistant
    {
        trim_trailing_text(&mut last.blocks);
        if last.blocks.is_empty() {
            turns.pop();
        }
    }

    for turn in turns
        .iter_mut()
        .rev()
        .filter(|t| t.role == Role::User)
        .take(breakpoints.min(2))
    {
        if let Some(block) = turn.blocks.last_mut() {
            set_cache_control(block);
        }
    }

    turns
        .into_iter()
        .map(|t| {
            let role = match t.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": t.blocks})
        })
        .collect()
}

fn is_tool_result(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_result")
}

fn trim_trailing_text(blocks: &mut Vec<Value>) {
    let Some(Value::Object(last)) = blocks.last_mut() else {
        return;
    };
    if last.get("type").and_then(Value::as_str) != Some("text") {
        return;
    }
    let trimmed = last
        .get("text")
        .and_then(Value::as_str)
        .map(|t| t.trim_end().to_string())
        .unwrap_or_default();
    if trimmed.is_empty() {
        blocks.pop();
    } else {
        last.insert("text".into(), Value::String(trimmed));
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn image_block(model: &ModelInfo, image: &ImageContent) -> Value {
    if model.images {
        json!({
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        })
    } else {
        json!({"type": "text", "text": super::wire::IMAGE_OMITTED})
    }
}

fn user_blocks(model: &ModelInfo, content: &UserContent) -> Vec<Value> {
    match content {
        UserContent::Text(text) => text_block(text).into_iter().collect(),
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => text_block(&t.text),
                ContentBlock::Image(i) => Some(image_block(model, i)),
                _ => None,
            })
            .collect(),
    }
}

fn assistant_blocks(model: &ModelInfo, message: &AssistantMessage) -> Vec<Value> {
    // Signatures are only valid for the provider that issued them.
    let own = message.api == model.api.as_str() && message.provider == model.provider;
    let mut out = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            ContentBlock::Text(t) => out.extend(text_block(&t.text)),
            ContentBlock::Thinking(t) => match t.thinking_signature.as_deref() {
                Some(signature) if own && !signature.is_empty() => out.push(json!({
                    "type": "thinking",
                    "thinking": t.thinking,
                    "signature": signature,
                })),
                _ => out.extend(text_block(&t.thinking)),
            },
            ContentBlock::RedactedThinking(r) if own => {
                out.push(json!({"type": "redacted_thinking", "data": r.data}));
            }
            ContentBlock::ToolCall(call) => {
                let input = match &call.arguments {
                    Value::Object(map) if !map.contains_key(PARSE_ERROR_KEY) => {
                        call.arguments.clone()
                    }
                    _ => json!({}),
                };
                out.push(json!({
                    "type": "tool_use",
                    "id": tool_use_id(&call.id),
                    "name": call.name,
                    "input": input,
                }));
            }
            ContentBlock::RedactedThinking(_) | ContentBlock::Image(_) => {}
        }
    }
    out
}

fn tool_result_block(model: &ModelInfo, result: &ToolResultMessage) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => text_block(&t.text),
            ContentBlock::Image(i) => Some(image_block(model, i)),
            _ => None,
        })
        .collect();
    let mut block = Map::new();
    block.insert("type".into(), json!("tool_result"));
    block.insert(
        "tool_use_id".into(),
        json!(tool_use_id(&result.tool_call_id)),
    );
    if !content.is_empty() {
        block.insert("content".into(), Value::Array(content));
    }
    block.insert("is_error".into(), json!(result.is_error));
    Value::Object(block)
}

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

/// The server-side web search tool's type.
const WEB_SEARCH_TOOL: &str = "web_search_20250305";

#[derive(Default)]
struct Decoder {
    /// From `message_delta`.
    stop: Option<(StopReason, Option<StopDetails>)>,
    /// `message_stop` arrived.
    complete: bool,
    /// Blocks of the server's own tool calls (the search's query arrives in them), by key.
    server_calls: std::collections::HashMap<String, String>,
    /// What the server searched for and what it found and cited.
    search: super::web_search::Found,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The block key of a `content_block_*` event.
fn block_key(v: &Value) -> Result<String, DecodeError> {
    v.get("index")
        .and_then(Value::as_u64)
        .map(|i| i.to_string())
        .ok_or_else(|| DecodeError::NoBlockIndex {
            kind: str_at(v, "/type").to_string(),
        })
}

/// Copy whichever token counts a `usage` object carries.
fn apply_usage(out: &mut MessageStream, usage: &Value) {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64);
    let u = out.usage_mut();
    if let Some(n) = count("input_tokens") {
        u.input = n;
    }
    if let Some(n) = count("output_tokens") {
        u.output = n;
    }
    if let Some(n) = count("cache_read_input_tokens") {
        u.cache_read = n;
    }
    if let Some(n) = count("cache_creation_input_tokens") {
        u.cache_write = n;
    }
}

/// Map a `stop_reason` to the loop's reason and detail.
fn stop_reason(reason: &str) -> (StopReason, Option<StopDetails>) {
    let detail = |kind: &str| {
        Some(StopDetails {
            kind: kind.to_string(),
            ..Default::default()
        })
    };
    match reason {
        "tool_use" => (StopReason::ToolUse, None),
        "max_tokens" | "model_context_window_exceeded" => (StopReason::Length, None),
        "pause_turn" => (StopReason::Stop, detail(STOP_PAUSE_TURN)),
        "refusal" => (StopReason::Stop, detail(STOP_REFUSAL)),
        // end_turn, stop_sequence, and anything newer.
        _ => (StopReason::Stop, None),
    }
}

/// Whether an in-stream error type is worth retrying.
fn is_transient_error_type(kind: &str) -> bool {
    matches!(
        kind,
        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
    )
}

impl Decoder {
    fn block_start(&mut self, v: &Value, out: &mut MessageStream) -> Result<(), DecodeError> {
        let key = block_key(v)?;
        let block = v.get("content_block").unwrap_or(&Value::Null);
        match str_at(block, "/type") {
            "text" => out.text_delta(&key, str_at(block, "/text")),
            "thinking" => {
                out.thinking_delta(&key, str_at(block, "/thinking"));
                let signature = str_at(block, "/signature");
                if !signature.is_empty() {
                    out.thinking_signature(&key, signature);
                }
            }
            "redacted_thinking" => out.redacted_thinking(str_at(block, "/data")),
            "server_tool_use" => {
                let input = match block.get("input") {
                    Some(Value::Object(m)) if !m.is_empty() => Value::Object(m.clone()).to_string(),
                    _ => String::new(),
                };
                self.server_calls.insert(key, input);
            }
            "web_search_tool_result" => {
                for r in block
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    self.search.result(str_at(r, "/title"), str_at(r, "/url"));
                }
            }
            "tool_use" => {
                out.tool_start(&key, str_at(block, "/id"), str_at(block, "/name"));
                if let Some(Value::Object(input)) = block.get("input")
                    && !input.is_empty()
                {
                    out.tool_arguments(&key, &Value::Object(input.clone()).to_string());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn block_delta(&mut self, v: &Value, out: &mut MessageStream) -> Result<(), DecodeError> {
        let key = block_key(v)?;
        let delta = v.get("delta").unwrap_or(&Value::Null);
        match str_at(delta, "/type") {
            "text_delta" => out.text_delta(&key, str_at(delta, "/text")),
            "thinking_delta" => out.thinking_delta(&key, str_at(delta, "/thinking")),
            "signature_delta" => out.thinking_signature(&key, str_at(delta, "/signature")),
            "input_json_delta" => match self.server_calls.get_mut(&key) {
                Some(input) => input.push_str(str_at(delta, "/partial_json")),
                None => out.tool_delta(&key, str_at(delta, "/partial_json")),
            },
            "citations_delta" => {
                let c = delta.get("citation").unwrap_or(&Value::Null);
                self.search.cited(str_at(c, "/title"), str_at(c, "/url"));
            }
            _ => {}
        }
        Ok(())
    }
}

impl WireDecoder for Decoder {
    fn event(&mut self, event: &SseEvent, out: &mut MessageStream) -> Result<(), DecodeError> {
        let v = parse_json(event)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                out.start();
                let id = str_at(&v, "/message/id");
                if !id.is_empty() {
                    out.set_response_id(id);
                }
                if let Some(usage) = v.pointer("/message/usage") {
                    apply_usage(out, usage);
                }
            }
            "content_block_start" => self.block_start(&v, out)?,
            "content_block_delta" => self.block_delta(&v, out)?,
            "content_block_stop" => {
                let key = block_key(&v)?;
                match self.server_calls.remove(&key) {
                    Some(input) => {
                        let query = serde_json::from_str::<Value>(&input).ok().and_then(|i| {
                            i.get("query").and_then(Value::as_str).map(str::to_string)
                        });
                        if let Some(q) = query {
                            self.search.searched(&q);
                        }
                    }
                    None => out.close(&key),
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = v.get("usage") {
                    apply_usage(out, usage);
                }
            }
            "message_stop" => {
                self.complete = true;
                self.search.emit(out);
                self.end(out);
            }
            "error" => {
                let error_type = str_at(&v, "/error/type");
                let message = str_at(&v, "/error/message").trim();
                let text = match (message.is_empty(), error_type.is_empty()) {
                    (false, false) => format!("{message} ({error_type})"),
                    (false, true) => message.to_string(),
                    (true, false) => error_type.to_string(),
                    (true, true) => "the provider reported an error mid-stream".to_string(),
                };
                let transient = is_transient_error_type(error_type).then(TransientError::default);
                out.fail(&text, None, transient);
            }
            // ping, and event types newer than this code.
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, out: &mut MessageStream) {
        if self.complete && !out.is_finished() {
            let (reason, details) = self.stop.take().unwrap_or((StopReason::Stop, None));
            out.finish(reason, details);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::stream::{LlmContext, Model, StreamOptions};
    use crate::agent::protocol::types::{ThinkingContent, ToolCall, UserMessage};
    use crate::provider::catalog::Catalog;

    fn sonnet() -> ModelInfo {
        Catalog::builtin(&|_| None)
            .find("anthropic", "claude-sonnet-4-5")
            .cloned()
            .unwrap()
    }

    fn request(messages: Vec<Message>, options: StreamOptions) -> ProviderRequest {
        ProviderRequest {
            model: sonnet().to_model(),
            context: LlmContext {
                system_prompt: vec!["sys".into()],
                messages: Arc::new(messages.into_iter().map(Arc::new).collect()),
                tools: vec![ToolSpec {
                    name: "read".into(),
                    description: "read a file".into(),
                    parameters: json!({"type": "object"}),
                }],
            },
            options,
        }
    }

    fn body(messages: Vec<Message>, options: StreamOptions) -> Value {
        AnthropicMessages
            .build(&sonnet(), &request(messages, options), Some("k"))
            .unwrap()
            .body
    }

    #[test]
    fn budgets_leave_room_for_the_answer() {
        assert_eq!(token_limits(64_000, 64_000, None), (64_000, None));
        assert_eq!(
            token_limits(64_000, 64_000, Some(Effort::High)),
            (64_000, Some(16_384))
        );
        // A small requested limit grows by the budget.
        assert_eq!(
            token_limits(4096, 64_000, Some(Effort::Medium)),
            (4096 + 8192, Some(8192))
        );
        // The model's limit caps the growth: the budget shrinks instead.
        assert_eq!(
            token_limits(16_384, 16_384, Some(Effort::High)),
            (16_384, Some(16_384 - ANSWER_RESERVE))
        );
        // Too little room for the smallest budget: no thinking.
        assert_eq!(
            token_limits(1500, 1500, Some(Effort::Minimal)),
            (1500, Some(1024))
        );
        assert_eq!(
            token_limits(1024, 1024, Some(Effort::Minimal)),
            (1024, None)
        );
    }

    #[test]
    fn forced_tool_choice_turns_thinking_off_and_temperature_waits_for_no_thinking() {
        let options = StreamOptions {
            reasoning: Some(Effort::Low),
            tool_choice: Some(ToolChoice::Tool("read".into())),
            temperature: Some(0.2),
            ..Default::default()
        };
        let b = body(vec![Message::User(UserMessage::new("hi"))], options);
        assert!(b.get("thinking").is_none());
        assert_eq!(b["tool_choice"], json!({"type": "tool", "name": "read"}));
        assert_eq!(b["temperature"], json!(0.2));

        let options = StreamOptions {
            reasoning: Some(Effort::Low),
            temperature: Some(0.2),
            ..Default::default()
        };
        let b = body(vec![Message::User(UserMessage::new("hi"))], options);
        assert_eq!(b["thinking"]["budget_tokens"], 4096);
        assert!(b.get("temperature").is_none());

        let options = StreamOptions {
            reasoning: Some(Effort::Low),
            disable_reasoning: true,
            ..Default::default()
        };
        let b = body(vec![Message::User(UserMessage::new("hi"))], options);
        assert!(b.get("thinking").is_none());
    }

    #[test]
    fn foreign_or_unsigned_thinking_goes_back_as_text_and_ids_are_sanitised() {
        let mut foreign = AssistantMessage::empty("openai-responses", "openai", "gpt-5");
        foreign.content = vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "pondering".into(),
                thinking_signature: Some("{\"encrypted\":1}".into()),
                item_id: None,
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "call_1|fc_2".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
                intent: None,
                thought_signature: None,
            }),
        ];
        foreign.stop_reason = StopReason::ToolUse;
        let result = Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1|fc_2".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("")],
            details: None,
            is_error: false,
            useless: false,
            timestamp: 0,
        });
        let b = body(
            vec![
                Message::User(UserMessage::new("go")),
                Message::Assistant(foreign),
                result,
            ],
            StreamOptions::default(),
        );
        let assistant = &b["messages"][1]["content"];
        assert_eq!(assistant[0], json!({"type": "text", "text": "pondering"}));
        assert_eq!(assistant[1]["id"], "call_1_fc_2");
        let tool_result = &b["messages"][2]["content"][0];
        assert_eq!(tool_result["tool_use_id"], "call_1_fc_2");
        assert!(tool_result.get("content").is_none(), "{tool_result}");
    }

    #[test]
    fn a_final_assistant_prefill_loses_trailing_whitespace() {
        let mut paused = AssistantMessage::empty("anthropic-messages", "anthropic", "m");
        paused.content = vec![ContentBlock::text("Searching… \n")];
        let b = body(
            vec![
                Message::User(UserMessage::new("go")),
                Message::Assistant(paused),
            ],
            StreamOptions::default(),
        );
        assert_eq!(b["messages"][1]["content"][0]["text"], "Searching…");
    }

    #[test]
    fn a_configured_authorization_replaces_the_api_key() {
        let mut model = sonnet();
        model.headers = vec![("Authorization".into(), "Bearer gateway".into())];
        let req = request(
            vec![Message::User(UserMessage::new("hi"))],
            StreamOptions::default(),
        );
        let b = AnthropicMessages
            .build(&model, &req, Some("sk-ant"))
            .unwrap();
        assert!(
            b.headers.iter().all(|(k, _)| k != "x-api-key"),
            "{:?}",
            b.headers
        );
        assert!(b.headers.iter().any(|(k, _)| k == "anthropic-version"));
    }

    #[test]
    fn unknown_models_still_reason_when_the_loop_says_so() {
        let mut model = sonnet();
        model.reasoning = false;
        let mut req = request(
            vec![Message::User(UserMessage::new("hi"))],
            StreamOptions {
                reasoning: Some(Effort::Minimal),
                ..Default::default()
            },
        );
        req.model = Model {
            reasoning: true,
            ..req.model
        };
        let b = AnthropicMessages.build(&model, &req, None).unwrap();
        assert_eq!(b.body["thinking"]["budget_tokens"], 1024);
        assert!(b.headers.iter().all(|(k, _)| k != "x-api-key"));
    }
}

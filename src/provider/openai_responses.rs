//! OpenAI Responses API: `POST {base_url}/responses` with `stream: true`, on OpenAI
//! ([`Responses`]) and on Azure OpenAI ([`AzureResponses`]).
//!
//! **Azure.** The body and the stream are the same; only the address, the key's header and the
//! model name differ. The address is the resource's v1 endpoint: a base URL that is only a
//! resource root (`https://x.openai.azure.com`, `https://x.cognitiveservices.azure.com`) gets
//! `/openai/v1` appended, any other path is used as given; `AZURE_OPENAI_API_VERSION`, when set,
//! is sent as the `api-version` query parameter (the v1 endpoint needs none). The key goes in
//! `api-key` (unless configured headers already carry `api-key` or `authorization`, e.g. an
//! Entra ID token). The body's `model` is the deployment name: the model id, or what
//! `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`gpt-5=my-gpt5,gpt-4o=prod-4o`) maps it to.
//!
//! **Request.** The system prompt becomes `instructions`; the conversation becomes `input`
//! items: user messages with `input_text`/`input_image` parts; assistant text as `message`
//! items (replaying the `msg_` id kept in the text signature); reasoning as the provider's own
//! `reasoning` item, which the decoder stores whole (encrypted content included) in the thinking
//! signature and which is replayed verbatim, so `store: false` still keeps the model's chain of
//! thought; tool calls as `function_call` items, whose id on our side is `call_id|item_id`; and
//! tool results as `function_call_output` items. Outputs carry only text, so images a tool
//! returned follow in one user message after the run of results. Reasoning and item ids are
//! replayed only to the model that produced them: another model rejects foreign encrypted
//! reasoning, and an `fc_` id without its reasoning item fails OpenAI's pairing check. Effort
//! levels map onto what each model family accepts (`minimal` on GPT-5, `none` on GPT-5.1 and
//! later, at least `low` on the o-series).
//!
//! **Stream.** Every output item has an `output_index`, which is the block key handed to
//! [`MessageStream`]: text deltas, reasoning summary (or raw reasoning) deltas, with a blank
//! line between summary parts, and function-call argument fragments. `output_item.done` closes
//! the block and records the item's identity. `response.completed` / `response.incomplete`
//! carry usage and finish the message at once (tool use, stop, length, or a content-filter
//! refusal); `response.failed` and `error` events end it as an error, transient when the server
//! says it failed, is overloaded or is rate limiting.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::error::{DecodeError, RequestError};
use super::sse::SseEvent;
use super::wire::{HttpRequest, WireApi, WireDecoder, parse_json, query_escape};
use crate::agent::protocol::stream::{ProviderRequest, StreamOptions, ToolChoice, ToolSpec};
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, ImageContent, Message, STOP_REFUSAL, StopDetails, StopReason,
    ThinkingContent, ToolResultMessage, TransientError, UserContent,
};

/// What `include` asks for so reasoning survives `store: false`.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// Longest item id the API accepts.
const MAX_ITEM_ID: usize = 64;

/// The Responses API on OpenAI (and any server that copies it): `Authorization: Bearer`.
pub struct Responses;

impl WireApi for Responses {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, RequestError> {
        let url = format!("{}/responses", model.base_url.trim_end_matches('/'));
        let auth = key.map(|k| ("authorization", format!("Bearer {k}")));
        Ok(http_request(model, request, url, auth, &model.id))
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(Decoder::default())
    }
}

/// The Responses API on an Azure OpenAI resource (see the module notes).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AzureResponses {
    /// Sent as `?api-version=`; the v1 endpoint needs none.
    pub api_version: Option<String>,
    /// Model id → deployment name.
    pub deployments: Vec<(String, String)>,
}

impl AzureResponses {
    /// Settings from `AZURE_OPENAI_API_VERSION` and `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`.
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let api_version = env("AZURE_OPENAI_API_VERSION")
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty());
        let deployments = env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
            .map(|map| parse_deployment_map(&map))
            .unwrap_or_default();
        AzureResponses {
            api_version,
            deployments,
        }
    }

    /// The deployment that serves `model_id` (the id itself unless mapped).
    pub(crate) fn deployment<'a>(&'a self, model_id: &'a str) -> &'a str {
        self.deployments
            .iter()
            .find(|(id, _)| id == model_id)
            .map_or(model_id, |(_, name)| name.as_str())
    }
}

/// `gpt-5=my-gpt5, gpt-4o=prod-4o` → pairs; malformed entries are skipped.
fn parse_deployment_map(map: &str) -> Vec<(String, String)> {
    map.split(',')
        .filter_map(|entry| {
            let (id, name) = entry.split_once('=')?;
            let (id, name) = (id.trim(), name.trim());
            (!id.is_empty() && !name.is_empty()).then(|| (id.to_string(), name.to_string()))
        })
        .collect()
}

/// An Azure base URL as the v1 endpoint: a bare resource root gets `/openai/v1`.
pub(crate) fn azure_endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    if after_scheme.contains('/') {
        base.to_string()
    } else {
        format!("{base}/openai/v1")
    }
}

impl WireApi for AzureResponses {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, RequestError> {
        if model.base_url.trim().is_empty() {
            return Err(RequestError::BadEndpoint(format!(
                "no Azure OpenAI endpoint for `{}`: set AZURE_OPENAI_BASE_URL (e.g. \
                 https://my-resource.openai.azure.com) or AZURE_OPENAI_RESOURCE_NAME, or \
                 base_url under [providers.{}] in config.toml",
                model.provider, model.provider
            )));
        }
        let mut url = format!("{}/responses", azure_endpoint(&model.base_url));
        if let Some(version) = &self.api_version {
            url.push_str("?api-version=");
            url.push_str(&query_escape(version));
        }
        let auth = key.map(|k| ("api-key", k.to_string()));
        let deployment = self.deployment(&model.id);
        Ok(http_request(model, request, url, auth, deployment))
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(Decoder::default())
    }
}

/// The request: `auth` (header name and value) unless the configured headers already
/// authenticate, then the configured headers; `wire_model` is the body's `model`.
fn http_request(
    model: &ModelInfo,
    request: &ProviderRequest,
    url: String,
    auth: Option<(&str, String)>,
    wire_model: &str,
) -> HttpRequest {
    let headers = super::wire::merge_headers(auth, &[], &model.headers);
    HttpRequest {
        url,
        headers,
        body: request_body(model, request, wire_model),
        lazy: None,
    }
}

/// The JSON body of one request.
fn request_body(model: &ModelInfo, request: &ProviderRequest, wire_model: &str) -> Value {
    let options = &request.options;
    let context = &request.context;
    let mut body = Map::new();
    body.insert("model".into(), json!(wire_model));
    let instructions: Vec<&str> = context
        .system_prompt
        .iter()
        .map(String::as_str)
        .filter(|s| !s.trim().is_empty())
        .collect();
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    body.insert(
        "input".into(),
        Value::Array(input_items(model, &context.messages)),
    );
    body.insert("stream".into(), json!(true));
    if model.compat.supports_store {
        body.insert("store".into(), json!(false));
    }
    if model.reasoning {
        body.insert("include".into(), json!([ENCRYPTED_REASONING]));
    }
    if !context.tools.is_empty() || model.compat.web_search {
        let mut tools: Vec<Value> = context.tools.iter().map(tool_spec).collect();
        if model.compat.web_search {
            tools.push(json!({"type": "web_search"}));
        }
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &options.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(max) = options.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if model.reasoning {
        if let Some(reasoning) = reasoning_param(&model.id, options) {
            body.insert("reasoning".into(), reasoning);
        }
    } else if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    Value::Object(body)
}

fn tool_spec(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": false,
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Any | ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

/// Model families whose accepted effort values differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// o1, o3, o4-mini, ...: `low`, `medium`, `high`.
    OSeries,
    /// gpt-5, gpt-5-mini, gpt-5-nano: `minimal` .. `high`.
    Gpt5,
    /// gpt-5.1 and later: `none` .. `high`.
    Gpt5Later,
    /// Anything else (custom servers): the values as named.
    Other,
}

impl Family {
    fn of(model_id: &str) -> Family {
        let base = model_id
            .rsplit('/')
            .next()
            .unwrap_or(model_id)
            .to_ascii_lowercase();
        if base.starts_with("gpt-5.") {
            Family::Gpt5Later
        } else if base.starts_with("gpt-5") {
            Family::Gpt5
        } else if base
            .strip_prefix('o')
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        {
            Family::OSeries
        } else {
            Family::Other
        }
    }

    fn effort(self, effort: Effort) -> &'static str {
        match effort {
            Effort::Minimal if matches!(self, Family::OSeries | Family::Gpt5Later) => "low",
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High | Effort::Xhigh | Effort::Max => "high",
        }
    }

    /// The least reasoning the family allows, sent when reasoning is turned off.
    fn off(self) -> Option<&'static str> {
        match self {
            Family::Gpt5Later => Some("none"),
            Family::Gpt5 => Some("minimal"),
            Family::OSeries => Some("low"),
            Family::Other => None,
        }
    }
}

fn reasoning_param(model_id: &str, options: &StreamOptions) -> Option<Value> {
    let family = Family::of(model_id);
    if options.disable_reasoning {
        return family.off().map(|effort| json!({"effort": effort}));
    }
    let effort = options.reasoning?;
    Some(json!({"effort": family.effort(effort), "summary": "auto"}))
}

fn input_text(text: &str) -> Value {
    json!({"type": "input_text", "text": text})
}

fn input_image(image: &ImageContent) -> Value {
    let detail = image
        .detail
        .as_deref()
        .filter(|d| matches!(*d, "low" | "high" | "auto"))
        .unwrap_or("auto");
    json!({
        "type": "input_image",
        "detail": detail,
        "image_url": format!("data:{};base64,{}", image.mime_type, image.data),
    })
}

use super::wire::IMAGE_OMITTED;

/// The conversation as `input` items.
fn input_items(model: &ModelInfo, messages: &[Arc<Message>]) -> Vec<Value> {
    let mut items = Vec::new();
    // Images returned by tools, sent in one user message after the run of tool results.
    let mut tool_images: Vec<Value> = Vec::new();
    for message in messages {
        if !matches!(**message, Message::ToolResult(_)) {
            flush_tool_images(&mut items, &mut tool_images);
        }
        match &**message {
            Message::User(u) => push_user(&mut items, "user", &u.content, model),
            Message::Developer(d) => push_user(&mut items, "developer", &d.content, model),
            Message::Assistant(a) => push_assistant(&mut items, a, model),
            Message::ToolResult(r) => push_tool_result(&mut items, &mut tool_images, r, model),
        }
    }
    flush_tool_images(&mut items, &mut tool_images);
    items
}

fn push_user(items: &mut Vec<Value>, role: &str, content: &UserContent, model: &ModelInfo) {
    let parts: Vec<Value> = match content {
        UserContent::Text(s) if s.is_empty() => Vec::new(),
        UserContent::Text(s) => vec![input_text(s)],
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) if !t.text.is_empty() => Some(input_text(&t.text)),
                ContentBlock::Image(img) if model.images => Some(input_image(img)),
                ContentBlock::Image(_) => Some(input_text(IMAGE_OMITTED)),
                _ => None,
            })
            .collect(),
    };
    if !parts.is_empty() {
        items.push(json!({"role": role, "content": parts}));
    }
}

fn push_tool_result(
    items: &mut Vec<Value>,
    tool_images: &mut Vec<Value>,
    result: &ToolResultMessage,
    model: &ModelInfo,
) {
    let (output, images) = super::wire::tool_result_output(model, result);
    tool_images.extend(images.into_iter().map(input_image));
    let (call_id, _) = split_call_id(&result.tool_call_id);
    items.push(json!({
        "type": "function_call_output",
        "call_id": call_id,
        "output": output,
    }));
}

fn flush_tool_images(items: &mut Vec<Value>, images: &mut Vec<Value>) {
    if images.is_empty() {
        return;
    }
    let mut content = vec![input_text("Image(s) returned by the tool call(s) above:")];
    content.append(images);
    items.push(json!({"role": "user", "content": content}));
}

/// `call_x|fc_y` → (`call_x`, Some(`fc_y`)); a plain id is the call id alone.
fn split_call_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once('|') {
        Some((call, item)) => (call, Some(item).filter(|s| !s.is_empty())),
        None => (id, None),
    }
}

/// The `reasoning` item a thinking block carries in its signature, if it does.
fn reasoning_item(thinking: &ThinkingContent) -> Option<Value> {
    let sig = thinking.thinking_signature.as_deref()?;
    let item: Value = serde_json::from_str(sig).ok()?;
    (item.get("type").and_then(Value::as_str) == Some("reasoning")).then_some(item)
}

/// The `msg_` id a text signature holds (plain, or the `{"v":1,"id":..}` form).
fn message_id(signature: Option<&str>) -> Option<String> {
    let sig = signature?;
    let id = if sig.starts_with('{') {
        let v: Value = serde_json::from_str(sig).ok()?;
        v.get("id")?.as_str()?.to_string()
    } else {
        sig.to_string()
    };
    (id.starts_with("msg_") && id.len() <= MAX_ITEM_ID).then_some(id)
}

fn push_assistant(items: &mut Vec<Value>, message: &AssistantMessage, model: &ModelInfo) {
    let native = message.api == model.api.as_str() && message.provider == model.provider;
    let same_model = native && message.model == model.id;
    // Item ids are replayed only when every reasoning item is too (pairing check).
    let keep_call_ids = same_model
        && message.content.iter().all(|b| match b {
            ContentBlock::Thinking(t) => reasoning_item(t).is_some(),
            _ => true,
        });
    for block in &message.content {
        match block {
            ContentBlock::Thinking(t) if same_model => {
                if let Some(item) = reasoning_item(t) {
                    items.push(item);
                }
            }
            ContentBlock::Text(t) if !t.text.is_empty() => {
                let mut item = Map::new();
                item.insert("type".into(), json!("message"));
                if native && let Some(id) = message_id(t.text_signature.as_deref()) {
                    item.insert("id".into(), json!(id));
                }
                item.insert("role".into(), json!("assistant"));
                item.insert(
                    "content".into(),
                    json!([{"type": "output_text", "text": t.text}]),
                );
                item.insert("status".into(), json!("completed"));
                items.push(Value::Object(item));
            }
            ContentBlock::ToolCall(call) => {
                let (call_id, item_id) = split_call_id(&call.id);
                let mut item = Map::new();
                item.insert("type".into(), json!("function_call"));
                if keep_call_ids && let Some(id) = item_id.filter(|id| id.len() <= MAX_ITEM_ID) {
                    item.insert("id".into(), json!(id));
                }
                item.insert("call_id".into(), json!(call_id));
                item.insert("name".into(), json!(call.name));
                item.insert("arguments".into(), json!(call.arguments.to_string()));
                items.push(Value::Object(item));
            }
            _ => {}
        }
    }
}

/// Per output item bookkeeping of the decoder.
#[derive(Default)]
struct ItemState {
    /// Text or thinking has been emitted for it.
    has_text: bool,
    /// The reasoning summary part the last delta belonged to.
    summary_index: Option<u64>,
    /// A new summary part began: separate it from the last one with a blank line.
    pending_break: bool,
}

#[derive(Default)]
struct Decoder {
    items: HashMap<String, ItemState>,
    saw_tool_call: bool,
    /// Refusal text the model streamed instead of an answer.
    refusal: Option<String>,
    /// What the server searched for and the pages it cited.
    search: super::web_search::Found,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The block key of an event: its output index (or, failing that, its item id).
fn block_key(v: &Value) -> String {
    match v.get("output_index").and_then(Value::as_u64) {
        Some(i) => i.to_string(),
        None => str_at(v, "item_id").unwrap_or("0").to_string(),
    }
}

/// Our id of a function call: `call_id|item_id`.
fn joined_call_id(item: &Value) -> String {
    let call_id = str_at(item, "call_id").unwrap_or("");
    let item_id = str_at(item, "id").unwrap_or("");
    match (call_id.is_empty(), item_id.is_empty()) {
        (false, false) => format!("{call_id}|{item_id}"),
        (false, true) => call_id.to_string(),
        (true, _) => item_id.to_string(),
    }
}

/// Error codes worth retrying.
fn is_transient_code(code: Option<&str>, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let code = code.unwrap_or("").to_ascii_lowercase();
    [
        "server_error",
        "rate_limit",
        "overloaded",
        "unavailable",
        "timeout",
        "internal",
    ]
    .iter()
    .any(|w| code.contains(w))
        || m.contains("overloaded")
        || m.contains("rate limit")
        || m.contains("try again")
}

fn with_code(message: &str, code: Option<&str>) -> String {
    match code.filter(|c| !c.is_empty()) {
        Some(c) => format!("{message} ({c})"),
        None => message.to_string(),
    }
}

impl Decoder {
    fn item(&mut self, key: &str) -> &mut ItemState {
        self.items.entry(key.to_string()).or_default()
    }

    fn text(&mut self, key: &str, delta: &str, out: &mut MessageStream) {
        if delta.is_empty() {
            return;
        }
        self.item(key).has_text = true;
        out.text_delta(key, delta);
    }

    fn thinking(&mut self, v: &Value, out: &mut MessageStream) {
        let key = block_key(v);
        let delta = str_at(v, "delta").unwrap_or("");
        let part = v.get("summary_index").and_then(Value::as_u64);
        let state = self.item(&key);
        if part.is_some() && state.summary_index.is_some() && part != state.summary_index {
            state.pending_break = state.has_text;
        }
        if part.is_some() {
            state.summary_index = part;
        }
        if delta.is_empty() {
            return;
        }
        let separate = std::mem::take(&mut state.pending_break);
        state.has_text = true;
        if separate {
            out.thinking_delta(&key, "\n\n");
        }
        out.thinking_delta(&key, delta);
    }

    fn summary_part(&mut self, v: &Value) {
        let key = block_key(v);
        let part = v.get("summary_index").and_then(Value::as_u64);
        let state = self.item(&key);
        if state.has_text && (part.is_none() || part != state.summary_index) {
            state.pending_break = true;
        }
        if part.is_some() {
            state.summary_index = part;
        }
    }

    fn item_added(&mut self, v: &Value, out: &mut MessageStream) {
        let key = block_key(v);
        let item = v.get("item").unwrap_or(&Value::Null);
        self.item(&key);
        if str_at(item, "type") == Some("function_call") {
            self.saw_tool_call = true;
            out.tool_start(
                &key,
                &joined_call_id(item),
                str_at(item, "name").unwrap_or(""),
            );
        }
    }

    fn arguments_delta(&mut self, v: &Value, out: &mut MessageStream) {
        let key = block_key(v);
        if !out.has_tool(&key) {
            // No `output_item.added` seen: open it now, the identity comes with `done`.
            self.saw_tool_call = true;
            out.tool_start(&key, str_at(v, "item_id").unwrap_or(""), "");
        }
        out.tool_delta(&key, str_at(v, "delta").unwrap_or(""));
    }

    fn item_done(&mut self, v: &Value, out: &mut MessageStream) {
        let key = block_key(v);
        let item = v.get("item").unwrap_or(&Value::Null);
        let has_text = self.items.get(&key).is_some_and(|s| s.has_text);
        match str_at(item, "type") {
            Some("reasoning") => {
                out.thinking_signature(&key, &item.to_string());
                if let Some(id) = str_at(item, "id") {
                    out.thinking_item_id(&key, id);
                }
                out.close(&key);
            }
            Some("message") => {
                for a in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("annotations").and_then(Value::as_array))
                    .flatten()
                    .filter(|a| str_at(a, "type") == Some("url_citation"))
                {
                    self.search.cited(
                        str_at(a, "title").unwrap_or(""),
                        str_at(a, "url").unwrap_or(""),
                    );
                }
                if !has_text {
                    // Nothing streamed: take the text from the finished item.
                    for part in item
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        match str_at(part, "type") {
                            Some("output_text") => {
                                self.text(&key, str_at(part, "text").unwrap_or(""), out)
                            }
                            Some("refusal") => {
                                let r = str_at(part, "refusal").unwrap_or("");
                                self.refusal.get_or_insert_default().push_str(r);
                                self.text(&key, r, out);
                            }
                            _ => {}
                        }
                    }
                }
                if self.items.get(&key).is_some_and(|s| s.has_text)
                    && let Some(id) = str_at(item, "id")
                {
                    out.text_signature(&key, id);
                }
                out.close(&key);
            }
            Some("function_call") => {
                let id = joined_call_id(item);
                let name = str_at(item, "name").unwrap_or("");
                if out.has_tool(&key) {
                    out.tool_identity(&key, Some(&id), Some(name));
                } else {
                    self.saw_tool_call = true;
                    out.tool_start(&key, &id, name);
                }
                if let Some(args) = str_at(item, "arguments") {
                    out.tool_arguments(&key, args);
                }
                out.close(&key);
            }
            Some("web_search_call") => {
                if let Some(q) = item.pointer("/action/query").and_then(Value::as_str) {
                    self.search.searched(q);
                }
            }
            _ => {}
        }
    }

    fn usage(&self, response: &Value, out: &mut MessageStream) {
        let Some(u) = response.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let n = |path: &str| u.pointer(path).and_then(Value::as_u64);
        let input = n("/input_tokens").unwrap_or(0);
        let cached = n("/input_tokens_details/cached_tokens").unwrap_or(0);
        let output = n("/output_tokens").unwrap_or(0);
        let usage = out.usage_mut();
        usage.input = input.saturating_sub(cached);
        usage.cache_read = cached;
        usage.output = output;
        usage.reasoning_tokens = n("/output_tokens_details/reasoning_tokens");
        usage.total_tokens = n("/total_tokens").unwrap_or(input + output);
    }

    /// `response.completed` / `response.incomplete` (and a final status in general).
    fn complete(&mut self, v: &Value, incomplete_event: bool, out: &mut MessageStream) {
        self.search.emit(out);
        let response = v.get("response").unwrap_or(&Value::Null);
        if let Some(id) = str_at(response, "id") {
            out.set_response_id(id);
        }
        self.usage(response, out);
        let fallback = if incomplete_event {
            "incomplete"
        } else {
            "completed"
        };
        match str_at(response, "status").unwrap_or(fallback) {
            "incomplete" => {
                match response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                {
                    Some("content_filter") => out.finish(
                        StopReason::Stop,
                        Some(StopDetails {
                            kind: STOP_REFUSAL.into(),
                            category: Some("content_filter".into()),
                            explanation: Some(
                                "The provider's content filter stopped the response.".into(),
                            ),
                        }),
                    ),
                    _ => out.finish(StopReason::Length, None),
                }
            }
            "failed" => self.failed(v, out),
            "cancelled" => out.fail("the provider cancelled the response", None, None),
            _ => {
                if let Some(refusal) = self.refusal.take() {
                    out.finish(
                        StopReason::Stop,
                        Some(StopDetails {
                            kind: STOP_REFUSAL.into(),
                            category: None,
                            explanation: Some(refusal),
                        }),
                    );
                } else if self.saw_tool_call {
                    out.finish(StopReason::ToolUse, None);
                } else {
                    out.finish(StopReason::Stop, None);
                }
            }
        }
    }

    /// `response.failed`: the error is in `response.error`.
    fn failed(&mut self, v: &Value, out: &mut MessageStream) {
        let error = v.pointer("/response/error").unwrap_or(&Value::Null);
        let code = str_at(error, "code");
        let message = str_at(error, "message")
            .filter(|m| !m.is_empty())
            .unwrap_or("the provider reported that the response failed");
        // A failure without a code is the server's own; one with a code says whether it is.
        let transient = code.is_none() || is_transient_code(code, message);
        out.fail(
            &with_code(message, code),
            None,
            transient.then(TransientError::default),
        );
    }

    /// An `error` event: `{code, message}` at the top level or under `error`.
    fn error(&mut self, v: &Value, out: &mut MessageStream) {
        let inner = v.get("error").filter(|e| e.is_object()).unwrap_or(v);
        let code = str_at(inner, "code")
            .or_else(|| str_at(v, "code"))
            .or_else(|| str_at(inner, "type").filter(|t| *t != "error"));
        let message = str_at(inner, "message")
            .or_else(|| str_at(v, "message"))
            .filter(|m| !m.is_empty())
            .unwrap_or("the provider sent an error");
        let transient = is_transient_code(code, message);
        out.fail(
            &with_code(message, code),
            None,
            transient.then(TransientError::default),
        );
    }
}

impl WireDecoder for Decoder {
    fn event(&mut self, event: &SseEvent, out: &mut MessageStream) -> Result<(), DecodeError> {
        if event.data.trim() == "[DONE]" {
            return Ok(());
        }
        let v = parse_json(event)?;
        let kind = str_at(&v, "type").unwrap_or(event.event.as_str());
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let Some(id) = v.pointer("/response/id").and_then(Value::as_str) {
                    out.set_response_id(id);
                }
                out.start();
            }
            "response.output_item.added" => self.item_added(&v, out),
            "response.output_text.delta" => {
                self.text(&block_key(&v), str_at(&v, "delta").unwrap_or(""), out)
            }
            "response.refusal.delta" => {
                let delta = str_at(&v, "delta").unwrap_or("");
                self.refusal.get_or_insert_default().push_str(delta);
                self.text(&block_key(&v), delta, out);
            }
            "response.reasoning_summary_part.added" => self.summary_part(&v),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.thinking(&v, out)
            }
            "response.function_call_arguments.delta" => self.arguments_delta(&v, out),
            "response.function_call_arguments.done" => {
                let key = block_key(&v);
                if let Some(args) = str_at(&v, "arguments") {
                    out.tool_arguments(&key, args);
                }
            }
            "response.output_item.done" => self.item_done(&v, out),
            "response.completed" => self.complete(&v, false, out),
            "response.incomplete" => self.complete(&v, true, out),
            "response.failed" => self.failed(&v, out),
            "error" => self.error(&v, out),
            _ => {}
        }
        Ok(())
    }

    /// `response.completed` and `response.incomplete` finish the message as they arrive, so
    /// there is nothing left to do here: a body that ends without either stays unfinished and
    /// the caller reports it as a dropped stream.
    fn end(&mut self, _out: &mut MessageStream) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_map_efforts_to_accepted_values() {
        assert_eq!(Family::of("gpt-5-mini"), Family::Gpt5);
        assert_eq!(Family::of("gpt-5.1"), Family::Gpt5Later);
        assert_eq!(Family::of("openai/o4-mini"), Family::OSeries);
        assert_eq!(Family::of("gpt-4.1"), Family::Other);
        assert_eq!(Family::of("ollama"), Family::Other);
        assert_eq!(Family::Gpt5.effort(Effort::Minimal), "minimal");
        assert_eq!(Family::Gpt5Later.effort(Effort::Minimal), "low");
        assert_eq!(Family::Gpt5.effort(Effort::Max), "high");
        assert_eq!(Family::Gpt5Later.off(), Some("none"));
        assert_eq!(Family::Other.off(), None);
    }

    #[test]
    fn call_ids_split_on_the_bar() {
        assert_eq!(split_call_id("call_1|fc_2"), ("call_1", Some("fc_2")));
        assert_eq!(split_call_id("toolu_1"), ("toolu_1", None));
        assert_eq!(split_call_id("call_1|"), ("call_1", None));
        assert_eq!(
            joined_call_id(&json!({"id": "fc_2", "call_id": "call_1"})),
            "call_1|fc_2"
        );
    }

    #[test]
    fn message_ids_come_from_plain_or_json_signatures() {
        assert_eq!(message_id(Some("msg_1")), Some("msg_1".into()));
        assert_eq!(
            message_id(Some(r#"{"v":1,"id":"msg_2","phase":"final_answer"}"#)),
            Some("msg_2".into())
        );
        assert_eq!(message_id(Some("sig-from-elsewhere")), None);
        assert_eq!(message_id(None), None);
    }

    #[test]
    fn azure_endpoints_deployments_and_versions() {
        assert_eq!(
            azure_endpoint("https://r.openai.azure.com/"),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            azure_endpoint("https://r.cognitiveservices.azure.com"),
            "https://r.cognitiveservices.azure.com/openai/v1"
        );
        assert_eq!(
            azure_endpoint("https://r.openai.azure.com/openai/v1/"),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            azure_endpoint("https://gw.example.com/azure/openai"),
            "https://gw.example.com/azure/openai"
        );
        let env = |k: &str| match k {
            "AZURE_OPENAI_API_VERSION" => Some(" 2025-04-01-preview ".to_string()),
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP" => {
                Some("gpt-5=prod-gpt5, gpt-4o = team-4o,broken,=x".to_string())
            }
            _ => None,
        };
        let azure = AzureResponses::from_env(&env);
        assert_eq!(azure.api_version.as_deref(), Some("2025-04-01-preview"));
        assert_eq!(azure.deployment("gpt-5"), "prod-gpt5");
        assert_eq!(azure.deployment("gpt-4o"), "team-4o");
        assert_eq!(azure.deployment("o3"), "o3");
        assert_eq!(azure.deployments.len(), 2);
        assert_eq!(
            AzureResponses::from_env(&|_| None),
            AzureResponses::default()
        );
        assert_eq!(query_escape("2024-10-21 &x"), "2024-10-21%20%26x");
    }

    #[test]
    fn transient_error_codes() {
        assert!(is_transient_code(Some("server_error"), "x"));
        assert!(is_transient_code(Some("rate_limit_exceeded"), "x"));
        assert!(is_transient_code(
            None,
            "The engine is currently overloaded"
        ));
        assert!(!is_transient_code(Some("invalid_prompt"), "bad prompt"));
    }
}

//! Google Gemini API (`google-generative-ai`): `POST {base}/models/{model}:streamGenerateContent`
//! with `?alt=sse`, which streams server-sent events.
//!
//! **Request.** The key goes in the `x-goog-api-key` header, never into the URL. The system
//! prompt becomes `systemInstruction`; the conversation becomes `contents` turns with the roles
//! `user` and `model`. User text and images become `text` and `inlineData` parts; a tool result
//! becomes a `functionResponse` part (`response.output`, or `response.error` for a failed call)
//! in the user turn after the calls, and images a tool returned follow in that turn as
//! `inlineData` parts. Consecutive turns of one role are merged. Gemini gives no call ids, so
//! none are sent and calls pair with responses by position: the responses open their user turn
//! in the order of the calls, whatever order the tools finished in. Assistant text, thinking
//! (`thought: true`) and `functionCall` parts are replayed with the `thoughtSignature` the model
//! sent, but only to the model that produced them; reasoning from another model goes back as
//! plain text, and a Gemini 3 model, which insists on signed function calls, gets Google's
//! documented placeholder signature on calls it did not make.
//!
//! **Tools.** Declarations use `parameters`, Gemini's OpenAPI-style schema subset, which every
//! Gemini model accepts (unlike `parametersJsonSchema`). Each JSON schema is rewritten into it:
//! local `$ref`s are inlined, `allOf` is merged, `oneOf` becomes `anyOf`, `["string", "null"]`
//! becomes `nullable`, a string `const` becomes a one-value `enum`, `required` keeps only
//! declared properties, and keywords Gemini rejects (`$schema`, `additionalProperties`,
//! `default`, `examples`, non-string `enum`s, unsupported `format`s, ...) are dropped. A tool
//! without parameters gets no schema at all (Gemini rejects an object without properties).
//!
//! **Thinking.** Gemini 2.5 takes a token budget (`thinkingConfig.thinkingBudget`): minimal,
//! low, medium and high ask for 1024, 4096, 8192 and 24576 tokens, xhigh and max for 32768,
//! clamped to what the model allows (2.5 Pro 128–32768, Flash up to 24576, Flash-Lite
//! 512–24576). Gemini 3 takes a level (`thinkingLevel`): Flash `minimal`/`low`/`medium`/`high`
//! as named, Pro `low` up to low effort and `high` above. Thoughts are asked for
//! (`includeThoughts`) whenever an effort is. Thinking off sends budget 0 where the model allows
//! it (2.5 Flash, Flash-Lite) and the least it allows elsewhere (128 on 2.5 Pro, level
//! `minimal`/`low` on Gemini 3); without an effort the model's own default applies. An explicit
//! output limit grows by the budget when it would not leave room for the answer, since Gemini
//! counts thoughts against `maxOutputTokens`.
//!
//! **Stream.** Every `data:` is a whole `GenerateContentResponse`. Text parts stream into a text
//! block and `thought: true` parts into a thinking block, a new block starting whenever the kind
//! changes; a `functionCall` part is a complete call, given a generated unique id. Usage comes
//! with each chunk (`promptTokenCount` includes `cachedContentTokenCount`, which is counted as
//! cache reads; `thoughtsTokenCount` is output). The chunk carrying `finishReason` ends the
//! message: `STOP` (tool use when calls came), `MAX_TOKENS` (length), the safety family
//! (`SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`, `BLOCKLIST`, `SPII`, image variants) as a
//! refusal with a message naming the reason, `MALFORMED_FUNCTION_CALL` as a transient error, any
//! other reason as an error. A prompt blocked outright (`promptFeedback.blockReason`) is a
//! refusal too, and an in-stream `error` object ends the message with its message and status.
//! A body that ends without a finish reason is left unfinished: the HTTP layer reports a dropped
//! stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::error::{DecodeError, RequestError};
use super::sse::SseEvent;
use super::wire::{HttpRequest, WireApi, WireDecoder, parse_json};
use crate::agent::protocol::stream::{ProviderRequest, StreamOptions, ToolChoice, ToolSpec};
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::types::PARSE_ERROR_KEY;
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, ImageContent, Message, STOP_REFUSAL, StopDetails, StopReason,
    ToolResultMessage, TransientError, UserContent, now_ms,
};

/// The header that carries the key.
pub(crate) const KEY_HEADER: &str = "x-goog-api-key";

/// The placeholder Google documents for function calls whose signature is unknown (history
/// from another model), which Gemini 3 accepts in place of a real one.
pub(crate) const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

use super::wire::IMAGE_OMITTED;

/// The Gemini API wire format.
pub(crate) struct Gemini;

impl WireApi for Gemini {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, RequestError> {
        let base = model.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(RequestError::NoBaseUrl(model.provider.clone()));
        }
        let id = model.id.strip_prefix("models/").unwrap_or(&model.id);
        if id.is_empty() || id.chars().any(|c| c.is_whitespace() || "?#%".contains(c)) {
            return Err(RequestError::BadEndpoint(format!(
                "`{}` is not a model id Gemini can address",
                model.id
            )));
        }
        let headers = super::wire::merge_headers(
            key.map(|k| (KEY_HEADER, k.to_string())),
            &[],
            &model.headers,
        );
        Ok(HttpRequest {
            url: format!("{base}/models/{id}:streamGenerateContent?alt=sse"),
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
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(contents(model, &context.messages)),
    );
    let system: Vec<Value> = context
        .system_prompt
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| json!({"text": s}))
        .collect();
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": system}));
    }
    if !context.tools.is_empty() {
        let declarations: Vec<Value> = context.tools.iter().map(function_declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        if let Some(choice) = &options.tool_choice {
            body.insert("toolConfig".into(), tool_config(choice));
        }
    }

    let thinking = (model.reasoning || request.model.reasoning)
        .then(|| thinking_config(&model.id, options))
        .flatten();
    let mut generation = Map::new();
    if let Some(requested) = options.max_tokens {
        let budget = thinking.as_ref().map_or(0, |t| t.budget);
        generation.insert(
            "maxOutputTokens".into(),
            json!(output_limit(requested, model.max_tokens, budget)),
        );
    }
    if let Some(t) = options.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(t) = thinking {
        generation.insert("thinkingConfig".into(), t.config);
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// `maxOutputTokens` for a requested limit: Gemini counts thoughts against it, so a limit that
/// leaves no room after the thinking budget grows by the budget (within the model's limit).
fn output_limit(requested: u64, model_max: u64, budget: u64) -> u64 {
    if budget == 0 || requested > budget {
        requested
    } else {
        requested
            .saturating_add(budget)
            .min(model_max.max(requested))
    }
}

fn tool_config(choice: &ToolChoice) -> Value {
    let config = match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Any | ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    };
    json!({"functionCallingConfig": config})
}

/// Model families whose thinking controls differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// Gemini 3 Pro: `thinkingLevel` `low` or `high`; thinking cannot be turned off.
    Gemini3Pro,
    /// Gemini 3 Flash: `thinkingLevel` `minimal` to `high`.
    Gemini3Flash,
    /// Gemini 2.5 Pro: a budget of 128 to 32768; thinking cannot be turned off.
    Pro25,
    /// Gemini 2.5 Flash: a budget up to 24576, 0 turns thinking off.
    Flash25,
    /// Gemini 2.5 Flash-Lite: a budget of 512 to 24576, 0 turns thinking off.
    FlashLite25,
    /// Anything else (aliases, Gemma, proxies): a budget as asked, nothing sent for off.
    Other,
}

impl Family {
    fn of(model_id: &str) -> Family {
        let id = model_id
            .rsplit('/')
            .next()
            .unwrap_or(model_id)
            .to_ascii_lowercase();
        if id.starts_with("gemini-3") {
            if id.contains("pro") {
                Family::Gemini3Pro
            } else {
                Family::Gemini3Flash
            }
        } else if id.starts_with("gemini-2.5-pro") {
            Family::Pro25
        } else if id.starts_with("gemini-2.5-flash-lite") {
            Family::FlashLite25
        } else if id.starts_with("gemini-2.5-flash") {
            Family::Flash25
        } else {
            Family::Other
        }
    }

    fn is_gemini3(self) -> bool {
        matches!(self, Family::Gemini3Pro | Family::Gemini3Flash)
    }

    /// The smallest and largest budget the family accepts.
    fn budget_range(self) -> (u64, u64) {
        match self {
            Family::Pro25 => (128, 32_768),
            Family::Flash25 => (1, 24_576),
            Family::FlashLite25 => (512, 24_576),
            _ => (1, 32_768),
        }
    }

    fn level(self, effort: Effort) -> &'static str {
        match (self, effort) {
            (Family::Gemini3Pro, Effort::Minimal | Effort::Low) => "low",
            (Family::Gemini3Pro, _) => "high",
            (_, Effort::Minimal) => "minimal",
            (_, Effort::Low) => "low",
            (_, Effort::Medium) => "medium",
            (_, Effort::High | Effort::Xhigh | Effort::Max) => "high",
        }
    }
}

/// The thinking budget asked for an effort (before the family's clamp).
fn effort_budget(effort: Effort) -> u64 {
    match effort {
        Effort::Minimal => 1024,
        Effort::Low => 4096,
        Effort::Medium => 8192,
        Effort::High => 24_576,
        Effort::Xhigh | Effort::Max => 32_768,
    }
}

/// `generationConfig.thinkingConfig` and the token budget it reserves.
struct Thinking {
    config: Value,
    budget: u64,
}

fn thinking_config(model_id: &str, options: &StreamOptions) -> Option<Thinking> {
    let family = Family::of(model_id);
    if options.disable_reasoning {
        let config = match family {
            Family::Flash25 | Family::FlashLite25 => json!({"thinkingBudget": 0}),
            Family::Pro25 => json!({"thinkingBudget": family.budget_range().0}),
            Family::Gemini3Flash => json!({"thinkingLevel": "minimal"}),
            Family::Gemini3Pro => json!({"thinkingLevel": "low"}),
            Family::Other => return None,
        };
        return Some(Thinking { config, budget: 0 });
    }
    let effort = options.reasoning?;
    if family.is_gemini3() {
        return Some(Thinking {
            config: json!({"thinkingLevel": family.level(effort), "includeThoughts": true}),
            budget: 0,
        });
    }
    let (least, most) = family.budget_range();
    let budget = effort_budget(effort).clamp(least, most);
    Some(Thinking {
        config: json!({"thinkingBudget": budget, "includeThoughts": true}),
        budget,
    })
}

fn function_declaration(tool: &ToolSpec) -> Value {
    let mut decl = Map::new();
    decl.insert("name".into(), json!(tool.name));
    if !tool.description.is_empty() {
        decl.insert("description".into(), json!(tool.description));
    }
    if let Some(parameters) = parameters_schema(&tool.parameters) {
        decl.insert("parameters".into(), parameters);
    }
    Value::Object(decl)
}

/// Keywords of Gemini's `Schema` copied as they are.
const KEPT_KEYWORDS: &[&str] = &[
    "title",
    "description",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
];

/// The `format` values Gemini accepts.
const KEPT_FORMATS: &[&str] = &["enum", "date-time", "int32", "int64", "float", "double"];

/// How deep a schema is followed (nesting and `$ref` hops); deeper parts become `{}`, which
/// also ends a recursive `$ref`.
const MAX_SCHEMA_DEPTH: usize = 24;

/// A tool's JSON schema as Gemini's `parameters`, or `None` when the tool takes no parameters.
fn parameters_schema(schema: &Value) -> Option<Value> {
    let converted = gemini_schema(schema, schema, 0);
    let has_properties = converted
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    (has_properties || converted.get("anyOf").is_some()).then_some(converted)
}

/// The target of a local `$ref` (`#/$defs/x`, `#/definitions/x`, any JSON pointer).
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

/// `allOf` branches merged into their parent: properties and `required` add up, other keywords
/// fill in where the parent has none.
fn merge_all_of(obj: &Map<String, Value>, root: &Value) -> Map<String, Value> {
    let mut merged = obj.clone();
    let Some(Value::Array(branches)) = merged.remove("allOf") else {
        return merged;
    };
    for branch in &branches {
        let branch = match branch.get("$ref").and_then(Value::as_str) {
            Some(r) => resolve_ref(root, r).unwrap_or(branch),
            None => branch,
        };
        let Value::Object(b) = branch else { continue };
        for (k, v) in b {
            match (k.as_str(), merged.get_mut(k)) {
                ("properties", Some(Value::Object(props))) => {
                    if let Value::Object(more) = v {
                        for (name, s) in more {
                            props.entry(name.clone()).or_insert_with(|| s.clone());
                        }
                    }
                }
                ("required", Some(Value::Array(req))) => {
                    for name in v.as_array().into_iter().flatten() {
                        if !req.contains(name) {
                            req.push(name.clone());
                        }
                    }
                }
                (_, Some(_)) => {}
                (_, None) => {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
    }
    merged
}

/// The schema's `type` into `out` (`null` dropped, a single type kept); whether `null` was
/// allowed, and one branch per type when several remain.
fn schema_type(obj: &Map<String, Value>, out: &mut Map<String, Value>) -> (bool, Vec<Value>) {
    let mut nullable = obj.get("nullable").and_then(Value::as_bool) == Some(true);
    let mut branches: Vec<Value> = Vec::new();
    match obj.get("type") {
        Some(Value::String(t)) if t == "null" => nullable = true,
        Some(Value::String(t)) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            nullable |= names.contains(&"null");
            let rest: Vec<&str> = names.into_iter().filter(|t| *t != "null").collect();
            match rest.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                many => branches = many.iter().map(|t| json!({"type": t})).collect(),
            }
        }
        _ => {}
    }
    (nullable, branches)
}

/// The schema's `properties` (with the `required` names that exist) and `items` (a tuple's
/// first), converted, into `out`.
fn schema_children(
    obj: &Map<String, Value>,
    root: &Value,
    depth: usize,
    out: &mut Map<String, Value>,
) {
    if let Some(Value::Object(props)) = obj.get("properties") {
        let converted: Map<String, Value> = props
            .iter()
            .map(|(name, s)| (name.clone(), gemini_schema(s, root, depth + 1)))
            .collect();
        if let Some(Value::Array(required)) = obj.get("required") {
            let kept: Vec<Value> = required
                .iter()
                .filter(|r| r.as_str().is_some_and(|n| converted.contains_key(n)))
                .cloned()
                .collect();
            if !kept.is_empty() {
                out.insert("required".into(), Value::Array(kept));
            }
        }
        out.insert("properties".into(), Value::Object(converted));
    }
    match obj.get("items") {
        Some(items @ Value::Object(_)) => {
            out.insert("items".into(), gemini_schema(items, root, depth + 1));
        }
        Some(Value::Array(tuple)) => {
            if let Some(first) = tuple.first() {
                out.insert("items".into(), gemini_schema(first, root, depth + 1));
            }
        }
        _ => {}
    }
}

/// One JSON schema as Gemini's schema subset (see the module notes).
fn gemini_schema(schema: &Value, root: &Value, depth: usize) -> Value {
    let Value::Object(obj) = schema else {
        return json!({});
    };
    if depth > MAX_SCHEMA_DEPTH {
        return json!({});
    }
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        let Some(target) = resolve_ref(root, reference) else {
            return json!({});
        };
        let mut resolved = gemini_schema(target, root, depth + 1);
        if let (Value::Object(r), Some(d)) = (&mut resolved, obj.get("description")) {
            r.insert("description".into(), d.clone());
        }
        return resolved;
    }
    let obj = merge_all_of(obj, root);
    let mut out = Map::new();

    let (mut nullable, type_branches) = schema_type(&obj, &mut out);

    for key in KEPT_KEYWORDS {
        if let Some(v) = obj.get(*key) {
            out.insert((*key).into(), v.clone());
        }
    }
    if let Some(format) = obj
        .get("format")
        .and_then(Value::as_str)
        .filter(|f| KEPT_FORMATS.contains(f))
    {
        out.insert("format".into(), json!(format));
    }

    let enum_values = match (obj.get("enum"), obj.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(c)) => Some(vec![c.clone()]),
        _ => None,
    };
    if let Some(values) = enum_values {
        nullable |= values.iter().any(Value::is_null);
        let strings: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
        if !strings.is_empty() && strings.iter().all(|v| v.is_string()) {
            out.insert(
                "enum".into(),
                Value::Array(strings.into_iter().cloned().collect()),
            );
            out.entry("type").or_insert_with(|| json!("string"));
        }
    }

    schema_children(&obj, root, depth, &mut out);

    let mut branches = type_branches;
    for key in ["anyOf", "oneOf"] {
        for branch in obj.get(key).and_then(Value::as_array).into_iter().flatten() {
            let null_only = branch.get("type").and_then(Value::as_str) == Some("null");
            if null_only {
                nullable = true;
            } else {
                branches.push(gemini_schema(branch, root, depth + 1));
            }
        }
    }
    match branches.len() {
        0 => {}
        1 => {
            // A union of one (`T | null`): the branch is the schema.
            if let Some(Value::Object(only)) = branches.pop() {
                for (k, v) in only {
                    out.entry(k).or_insert(v);
                }
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(branches));
        }
    }

    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Conversation
// ---------------------------------------------------------------------------------------------

struct Turn {
    role: &'static str,
    /// Each part with its place in the turn: a function response sorts by the position of its
    /// call in the model turn before, everything else after the responses, in arrival order.
    parts: Vec<(usize, Value)>,
}

/// The `contents` array.
fn contents(model: &ModelInfo, messages: &[Arc<Message>]) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::with_capacity(messages.len());
    // The call ids of the latest assistant message, in order.
    let mut calls: Vec<&str> = Vec::new();
    for message in messages {
        let (role, parts): (&'static str, Vec<(usize, Value)>) = match &**message {
            Message::User(u) => ("user", last_in_turn(user_parts(model, &u.content))),
            Message::Developer(d) => ("user", last_in_turn(user_parts(model, &d.content))),
            Message::Assistant(a) => {
                calls = a.tool_calls().map(|c| c.id.as_str()).collect();
                ("model", last_in_turn(model_parts(model, a)))
            }
            Message::ToolResult(r) => {
                let place = calls
                    .iter()
                    .position(|id| *id == r.tool_call_id)
                    .unwrap_or(calls.len());
                let mut parts = tool_result_parts(model, r).into_iter();
                let response = parts.next().map(|p| (place, p));
                let rest = last_in_turn(parts.collect());
                ("user", response.into_iter().chain(rest).collect())
            }
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => turns.push(Turn { role, parts }),
        }
    }
    turns
        .into_iter()
        .map(|mut t| {
            // Gemini pairs a step's calls and answers by position: the answers open the turn in
            // the calls' order, whatever order the tools finished in.
            t.parts.sort_by_key(|(place, _)| *place);
            let parts: Vec<Value> = t.parts.into_iter().map(|(_, p)| p).collect();
            json!({"role": t.role, "parts": parts})
        })
        .collect()
}

/// Parts that keep their arrival order after every function response.
fn last_in_turn(parts: Vec<Value>) -> Vec<(usize, Value)> {
    parts.into_iter().map(|p| (usize::MAX, p)).collect()
}

fn inline_data(image: &ImageContent) -> Value {
    json!({"inlineData": {"mimeType": image.mime_type, "data": image.data}})
}

fn user_parts(model: &ModelInfo, content: &UserContent) -> Vec<Value> {
    match content {
        UserContent::Text(text) if text.is_empty() => Vec::new(),
        UserContent::Text(text) => vec![json!({"text": text})],
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) if !t.text.is_empty() => Some(json!({"text": t.text})),
                ContentBlock::Image(i) if model.images => Some(inline_data(i)),
                ContentBlock::Image(_) => Some(json!({"text": IMAGE_OMITTED})),
                _ => None,
            })
            .collect(),
    }
}

/// An assistant message as `model` parts. Signatures go back only to the model that made them.
fn model_parts(model: &ModelInfo, message: &AssistantMessage) -> Vec<Value> {
    let same_model = message.api == model.api.as_str()
        && message.provider == model.provider
        && message.model == model.id;
    let signature = |s: Option<&str>| {
        s.filter(|s| same_model && !s.is_empty())
            .map(str::to_string)
    };
    let gemini3 = Family::of(&model.id).is_gemini3();
    let mut parts = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            ContentBlock::Text(t) => {
                let sig = signature(t.text_signature.as_deref());
                if t.text.is_empty() && sig.is_none() {
                    continue;
                }
                let mut part = Map::new();
                part.insert("text".into(), json!(t.text));
                if let Some(sig) = sig {
                    part.insert("thoughtSignature".into(), json!(sig));
                }
                parts.push(Value::Object(part));
            }
            ContentBlock::Thinking(t) if same_model => {
                let sig = signature(t.thinking_signature.as_deref());
                if t.thinking.is_empty() && sig.is_none() {
                    continue;
                }
                let mut part = Map::new();
                part.insert("thought".into(), json!(true));
                part.insert("text".into(), json!(t.thinking));
                if let Some(sig) = sig {
                    part.insert("thoughtSignature".into(), json!(sig));
                }
                parts.push(Value::Object(part));
            }
            ContentBlock::Thinking(t) => {
                if !t.thinking.trim().is_empty() {
                    parts.push(json!({"text": t.thinking}));
                }
            }
            ContentBlock::ToolCall(call) => {
                let args = match &call.arguments {
                    Value::Object(map) if !map.contains_key(PARSE_ERROR_KEY) => {
                        call.arguments.clone()
                    }
                    _ => json!({}),
                };
                let mut part = Map::new();
                part.insert(
                    "functionCall".into(),
                    json!({"name": call.name, "args": args}),
                );
                let sig = signature(call.thought_signature.as_deref())
                    .or_else(|| (gemini3 && !same_model).then(|| SKIP_SIGNATURE.to_string()));
                if let Some(sig) = sig {
                    part.insert("thoughtSignature".into(), json!(sig));
                }
                parts.push(Value::Object(part));
            }
            ContentBlock::RedactedThinking(_) | ContentBlock::Image(_) => {}
        }
    }
    parts
}

/// A tool result: its `functionResponse`, then the images it returned.
fn tool_result_parts(model: &ModelInfo, result: &ToolResultMessage) -> Vec<Value> {
    let (output, images) = super::wire::tool_result_output(model, result);
    let response = if result.is_error {
        json!({"error": output})
    } else {
        json!({"output": output})
    };
    let mut parts = vec![json!({
        "functionResponse": {"name": result.tool_name, "response": response}
    })];
    if !images.is_empty() {
        parts.push(json!({
            "text": format!("Image(s) returned by the {} tool call above:", result.tool_name)
        }));
        parts.extend(images.into_iter().map(inline_data));
    }
    parts
}

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

/// Makes tool-call ids unique within the process (with the clock, across processes).
static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh tool-call id (Gemini sends none).
fn new_call_id() -> String {
    let n = CALL_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("call_{:x}_{n}", now_ms())
}

#[derive(Default)]
struct Decoder {
    /// The open text (`false`) or thinking (`true`) block and its key.
    current: Option<(bool, String)>,
    /// The latest signature for the open thinking block, attached when it closes.
    thinking_signature: Option<String>,
    /// Blocks opened so far (their keys are numbered).
    blocks: u64,
    /// Ids given out in this response.
    call_ids: Vec<String>,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Statuses of an in-stream error worth retrying.
fn is_transient(status: Option<&str>, code: Option<u64>) -> bool {
    matches!(
        status,
        Some("UNAVAILABLE" | "RESOURCE_EXHAUSTED" | "INTERNAL" | "DEADLINE_EXCEEDED" | "ABORTED")
    ) || code.is_some_and(|c| c == 408 || c == 429 || c >= 500)
}

/// Finish reasons that mean Google's filters blocked the answer.
fn blocked_reason(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "SAFETY" => "Gemini's safety filters blocked the response",
        "RECITATION" => {
            "Gemini stopped the response because it recited existing material too closely"
        }
        "PROHIBITED_CONTENT" => {
            "Gemini stopped the response because it may hold prohibited content"
        }
        "BLOCKLIST" => "Gemini stopped the response because it contains blocked terms",
        "SPII" => "Gemini stopped the response because it may hold sensitive personal information",
        "IMAGE_SAFETY" | "IMAGE_PROHIBITED_CONTENT" | "IMAGE_RECITATION" => {
            "Gemini's safety filters blocked a generated image"
        }
        _ => return None,
    })
}

fn with_detail(message: &str, reason: &str, detail: Option<&str>) -> String {
    match detail.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => format!("{message} ({reason}): {d}"),
        None => format!("{message} ({reason})."),
    }
}

impl Decoder {
    /// The key of the open block of this kind, opening one (and closing the other) if needed.
    fn block(&mut self, thought: bool, out: &mut MessageStream) -> String {
        if let Some((t, key)) = &self.current
            && *t == thought
        {
            return key.clone();
        }
        self.close_current(out);
        let key = self.next_key();
        self.current = Some((thought, key.clone()));
        key
    }

    fn next_key(&mut self) -> String {
        self.blocks += 1;
        self.blocks.to_string()
    }

    fn close_current(&mut self, out: &mut MessageStream) {
        let signature = self.thinking_signature.take();
        if let Some((thought, key)) = self.current.take() {
            if thought && let Some(sig) = signature {
                out.thinking_signature(&key, &sig);
            }
            out.close(&key);
        }
    }

    fn call_id(&mut self, given: Option<&str>) -> String {
        let id = match given.filter(|id| !id.is_empty()) {
            Some(id) if !self.call_ids.iter().any(|x| x == id) => id.to_string(),
            _ => new_call_id(),
        };
        self.call_ids.push(id.clone());
        id
    }

    fn part(&mut self, part: &Value, out: &mut MessageStream) {
        let signature = str_at(part, "thoughtSignature").filter(|s| !s.is_empty());
        if let Some(call) = part.get("functionCall") {
            self.close_current(out);
            let key = self.next_key();
            let id = self.call_id(str_at(call, "id"));
            out.tool_start(&key, &id, str_at(call, "name").unwrap_or(""));
            let args = match call.get("args") {
                None | Some(Value::Null) => "{}".to_string(),
                Some(args) => args.to_string(),
            };
            out.tool_delta(&key, &args);
            if let Some(sig) = signature {
                out.tool_signature(&key, sig);
            }
            out.close(&key);
            return;
        }
        if let Some(text) = str_at(part, "text") {
            let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
            let key = self.block(thought, out);
            if thought {
                out.thinking_delta(&key, text);
                if let Some(sig) = signature {
                    self.thinking_signature = Some(sig.to_string());
                }
            } else {
                out.text_delta(&key, text);
                if let Some(sig) = signature {
                    out.text_signature(&key, sig);
                }
            }
            return;
        }
        // A signature on a part of another kind belongs with the block it follows.
        if let (Some(sig), Some((thought, key))) = (signature, &self.current) {
            if *thought {
                self.thinking_signature = Some(sig.to_string());
            } else {
                out.text_signature(key, sig);
            }
        }
        // inlineData, executableCode and the like are not asked for and not kept.
    }

    fn usage(&self, u: &Value, out: &mut MessageStream) {
        let count = |key: &str| u.get(key).and_then(Value::as_u64);
        let prompt =
            count("promptTokenCount").unwrap_or(0) + count("toolUsePromptTokenCount").unwrap_or(0);
        let cached = count("cachedContentTokenCount").unwrap_or(0);
        let thoughts = count("thoughtsTokenCount");
        let output = count("candidatesTokenCount").unwrap_or(0) + thoughts.unwrap_or(0);
        let usage = out.usage_mut();
        usage.input = prompt.saturating_sub(cached);
        usage.cache_read = cached;
        usage.output = output;
        usage.reasoning_tokens = thoughts;
        usage.total_tokens = count("totalTokenCount").unwrap_or(prompt + output);
    }

    /// The candidate's `finishReason` ends the message.
    fn finish(&mut self, reason: &str, detail: Option<&str>, out: &mut MessageStream) {
        self.close_current(out);
        match reason {
            "STOP" if !self.call_ids.is_empty() => out.finish(StopReason::ToolUse, None),
            "STOP" => out.finish(StopReason::Stop, None),
            "MAX_TOKENS" => out.finish(StopReason::Length, None),
            "MALFORMED_FUNCTION_CALL" => out.fail(
                &with_detail("Gemini produced a malformed function call", reason, detail),
                None,
                Some(TransientError::default()),
            ),
            _ => match blocked_reason(reason) {
                Some(message) => {
                    let message = with_detail(message, reason, detail);
                    out.refuse(
                        &message,
                        StopDetails {
                            kind: STOP_REFUSAL.into(),
                            category: Some(reason.to_string()),
                            explanation: Some(message.clone()),
                        },
                    );
                }
                None => out.fail(
                    &with_detail("Gemini stopped the response early", reason, detail),
                    None,
                    None,
                ),
            },
        }
    }

    /// An `error` object in the stream.
    fn error(&mut self, error: &Value, out: &mut MessageStream) {
        self.close_current(out);
        let status = str_at(error, "status").filter(|s| !s.is_empty());
        let code = error.get("code").and_then(Value::as_u64);
        let message = str_at(error, "message")
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .unwrap_or("Gemini reported an error mid-stream");
        let text = match status {
            Some(s) => format!("{message} ({s})"),
            None => message.to_string(),
        };
        let transient = is_transient(status, code).then(TransientError::default);
        out.fail(&text, None, transient);
    }

    /// One `GenerateContentResponse`.
    fn chunk(&mut self, v: &Value, out: &mut MessageStream) {
        if let Some(error) = v.get("error").filter(|e| e.is_object()) {
            self.error(error, out);
            return;
        }
        out.start();
        if let Some(id) = str_at(v, "responseId") {
            out.set_response_id(id);
        }
        if let Some(u) = v.get("usageMetadata").filter(|u| u.is_object()) {
            self.usage(u, out);
        }
        let candidate = v.pointer("/candidates/0");
        let parts = candidate.and_then(|c| c.pointer("/content/parts"));
        for part in parts.and_then(Value::as_array).into_iter().flatten() {
            self.part(part, out);
        }
        if let Some(c) = candidate
            && let Some(reason) = str_at(c, "finishReason")
        {
            self.finish(reason, str_at(c, "finishMessage"), out);
            return;
        }
        if candidate.is_none()
            && let Some(reason) = v
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
        {
            self.close_current(out);
            let message = format!("Gemini blocked the prompt ({reason}).");
            out.refuse(
                &message,
                StopDetails {
                    kind: STOP_REFUSAL.into(),
                    category: Some(reason.to_string()),
                    explanation: Some(message.clone()),
                },
            );
        }
    }
}

impl WireDecoder for Decoder {
    fn event(&mut self, event: &SseEvent, out: &mut MessageStream) -> Result<(), DecodeError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        match parse_json(event)? {
            Value::Array(chunks) => {
                for chunk in &chunks {
                    if !out.is_finished() {
                        self.chunk(chunk, out);
                    }
                }
            }
            chunk => self.chunk(&chunk, out),
        }
        Ok(())
    }

    /// The chunk with a finish reason finishes the message as it arrives, so there is nothing
    /// left to do: a body that ends without one stays unfinished and the caller reports a
    /// dropped stream.
    fn end(&mut self, _out: &mut MessageStream) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::stream::{LlmContext, StreamEvent};
    use crate::agent::protocol::types::{TextContent, ThinkingContent, ToolCall, UserMessage};
    use crate::provider::catalog::Catalog;

    fn model(id: &str) -> ModelInfo {
        Catalog::builtin(&|_| None)
            .resolve("google", id)
            .map(|(m, _)| m)
            .unwrap()
    }

    fn request(id: &str, messages: Vec<Message>, options: StreamOptions) -> ProviderRequest {
        ProviderRequest {
            model: model(id).to_model(),
            context: LlmContext {
                system_prompt: Vec::new(),
                messages: Arc::new(messages.into_iter().map(Arc::new).collect()),
                tools: Vec::new(),
            },
            options,
        }
    }

    fn body(id: &str, messages: Vec<Message>, options: StreamOptions) -> Value {
        Gemini
            .build(&model(id), &request(id, messages, options), Some("k"))
            .unwrap()
            .body
    }

    fn decode(chunks: &[Value]) -> Vec<StreamEvent> {
        let mut out = MessageStream::new(&model("gemini-2.5-flash"));
        let mut d = Decoder::default();
        for c in chunks {
            let ev = SseEvent {
                event: String::new(),
                data: c.to_string(),
            };
            d.event(&ev, &mut out).unwrap();
        }
        d.end(&mut out);
        out.drain()
    }

    fn last_message(events: &[StreamEvent]) -> &AssistantMessage {
        match events.last() {
            Some(StreamEvent::Done { message, .. }) => message,
            Some(StreamEvent::Error { error, .. }) => error,
            other => panic!("no terminal event: {other:?}"),
        }
    }

    #[test]
    fn families_and_thinking_settings() {
        assert_eq!(Family::of("gemini-2.5-pro"), Family::Pro25);
        assert_eq!(Family::of("models/gemini-2.5-flash"), Family::Flash25);
        assert_eq!(
            Family::of("gemini-2.5-flash-lite-preview-09-2025"),
            Family::FlashLite25
        );
        assert_eq!(Family::of("gemini-3-pro-preview"), Family::Gemini3Pro);
        assert_eq!(Family::of("gemini-3-flash-preview"), Family::Gemini3Flash);
        assert_eq!(Family::of("gemma-3-27b-it"), Family::Other);

        let with = |effort: Option<Effort>, off: bool| StreamOptions {
            reasoning: effort,
            disable_reasoning: off,
            ..Default::default()
        };
        let config = |id: &str, o: &StreamOptions| thinking_config(id, o).map(|t| t.config);
        assert_eq!(config("gemini-2.5-flash", &with(None, false)), None);
        assert_eq!(
            config("gemini-2.5-flash", &with(Some(Effort::High), false)),
            Some(json!({"thinkingBudget": 24_576, "includeThoughts": true}))
        );
        assert_eq!(
            config("gemini-2.5-flash", &with(Some(Effort::Max), false)).unwrap()["thinkingBudget"],
            24_576,
            "clamped to Flash's limit"
        );
        assert_eq!(
            config("gemini-2.5-pro", &with(Some(Effort::Max), false)).unwrap()["thinkingBudget"],
            32_768
        );
        assert_eq!(
            config("gemini-2.5-flash", &with(Some(Effort::Low), true)),
            Some(json!({"thinkingBudget": 0}))
        );
        assert_eq!(
            config("gemini-2.5-pro", &with(None, true)),
            Some(json!({"thinkingBudget": 128})),
            "2.5 Pro cannot stop thinking: the least it allows"
        );
        assert_eq!(config("gemma-3-27b-it", &with(None, true)), None);
        assert_eq!(
            config("gemini-3-pro-preview", &with(Some(Effort::Medium), false)),
            Some(json!({"thinkingLevel": "high", "includeThoughts": true}))
        );
        assert_eq!(
            config(
                "gemini-3-flash-preview",
                &with(Some(Effort::Minimal), false)
            )
            .unwrap()["thinkingLevel"],
            "minimal"
        );
        assert_eq!(
            config("gemini-3-flash-preview", &with(None, true)),
            Some(json!({"thinkingLevel": "minimal"}))
        );
        assert_eq!(output_limit(2000, 65_536, 8192), 10_192);
        assert_eq!(output_limit(20_000, 65_536, 8192), 20_000);
        assert_eq!(output_limit(2000, 4000, 8192), 4000);
        assert_eq!(output_limit(2000, 65_536, 0), 2000);
    }

    #[test]
    fn schemas_become_geminis_subset() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "description": "file", "format": "uri"},
                "mode": {"enum": ["a", "b"]},
                "kind": {"const": "x"},
                "limit": {"type": ["integer", "null"], "default": 5},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                "maybe": {"anyOf": [{"$ref": "#/$defs/item"}, {"type": "null"}]},
                "level": {"type": "integer", "enum": [1, 2]},
            },
            "required": ["path", "ghost"],
            "$defs": {"item": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}},
        });
        let p = parameters_schema(&schema).unwrap();
        let item =
            json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]});
        assert_eq!(
            p,
            json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "description": "file"},
                    "mode": {"enum": ["a", "b"], "type": "string"},
                    "kind": {"enum": ["x"], "type": "string"},
                    "limit": {"type": "integer", "nullable": true},
                    "items": {"type": "array", "items": item},
                    "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                    "maybe": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"], "nullable": true},
                    "level": {"type": "integer"},
                },
            })
        );
        assert_eq!(parameters_schema(&json!({"type": "object"})), None);
        assert_eq!(
            parameters_schema(&json!({"type": "object", "properties": {}})),
            None
        );
        // A recursive reference ends at the depth limit instead of looping.
        let recursive = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#"}},
        });
        assert!(parameters_schema(&recursive).is_some());
        // allOf branches merge.
        let merged = parameters_schema(&json!({
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
            ]
        }))
        .unwrap();
        assert_eq!(merged["required"], json!(["a", "b"]));
        assert_eq!(merged["properties"]["b"], json!({"type": "boolean"}));
    }

    #[test]
    fn tool_results_and_steering_merge_into_one_user_turn_responses_first_in_call_order() {
        let mut assistant =
            AssistantMessage::empty("google-generative-ai", "google", "gemini-2.5-flash");
        assistant.content = vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "plan".into(),
                thinking_signature: Some("c2ln".into()),
                item_id: None,
            }),
            ContentBlock::Text(TextContent {
                text: "Reading.".into(),
                text_signature: None,
                ..Default::default()
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
                intent: None,
                thought_signature: Some("c2lnMQ==".into()),
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "call_2".into(),
                name: "ls".into(),
                arguments: json!({}),
                intent: None,
                thought_signature: None,
            }),
        ];
        let result = |id: &str, name: &str, text: &str, is_error: bool| {
            Message::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: name.into(),
                content: vec![ContentBlock::text(text)],
                details: None,
                is_error,
                useless: false,
                timestamp: 0,
            })
        };
        let b = body(
            "gemini-2.5-flash",
            vec![
                Message::User(UserMessage::new("go")),
                Message::Assistant(assistant.clone()),
                // Finished out of order, with a steering note in between.
                result("call_2", "ls", "denied", true),
                Message::User(UserMessage::new("also this")),
                result("call_1", "read", "contents", false),
            ],
            StreamOptions::default(),
        );
        assert_eq!(
            b["contents"],
            json!([
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [
                    {"thought": true, "text": "plan", "thoughtSignature": "c2ln"},
                    {"text": "Reading."},
                    {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "c2lnMQ=="},
                    {"functionCall": {"name": "ls", "args": {}}},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read", "response": {"output": "contents"}}},
                    {"functionResponse": {"name": "ls", "response": {"error": "denied"}}},
                    {"text": "also this"},
                ]},
            ])
        );

        // Another model gets no signatures and the thinking as text; Gemini 3 gets the
        // placeholder on calls it did not make.
        let b = body(
            "gemini-3-pro-preview",
            vec![
                Message::User(UserMessage::new("go")),
                Message::Assistant(assistant),
            ],
            StreamOptions::default(),
        );
        assert_eq!(
            b["contents"][1]["parts"],
            json!([
                {"text": "plan"},
                {"text": "Reading."},
                {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": SKIP_SIGNATURE},
                {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": SKIP_SIGNATURE},
            ])
        );
    }

    #[test]
    fn decoder_splits_thinking_text_and_calls_and_keeps_signatures() {
        let events = decode(&[
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me", "thought": true}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": " look.", "thought": true, "thoughtSignature": "dGhpbms="}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "read", "args": {"path": "a.rs"}}, "thoughtSignature": "Y2FsbA=="},
                {"functionCall": {"name": "read", "args": {"path": "b.rs"}}},
            ]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 100, "cachedContentTokenCount": 40, "candidatesTokenCount": 20, "thoughtsTokenCount": 12, "totalTokenCount": 132},
             "responseId": "r1"}),
        ]);
        let m = last_message(&events);
        assert_eq!(m.stop_reason, StopReason::ToolUse);
        assert_eq!(m.response_id.as_deref(), Some("r1"));
        let ContentBlock::Thinking(t) = &m.content[0] else {
            panic!("{:?}", m.content)
        };
        assert_eq!(t.thinking, "Let me look.");
        assert_eq!(t.thinking_signature.as_deref(), Some("dGhpbms="));
        assert_eq!(m.content[1], ContentBlock::text("Hi"));
        let calls: Vec<&ToolCall> = m.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, json!({"path": "a.rs"}));
        assert_eq!(calls[0].thought_signature.as_deref(), Some("Y2FsbA=="));
        assert_eq!(calls[1].thought_signature, None);
        assert_ne!(calls[0].id, calls[1].id);
        assert_eq!(m.usage.input, 60);
        assert_eq!(m.usage.cache_read, 40);
        assert_eq!(m.usage.output, 32);
        assert_eq!(m.usage.reasoning_tokens, Some(12));
        assert_eq!(m.usage.total_tokens, 132);
    }

    #[test]
    fn decoder_maps_finish_reasons() {
        let finish = |reason: &str| {
            decode(&[
                json!({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}),
            ])
        };
        assert_eq!(
            last_message(&finish("MAX_TOKENS")).stop_reason,
            StopReason::Length
        );
        let e = finish("SAFETY");
        let m = last_message(&e);
        assert!(m.is_provider_refusal());
        assert!(
            m.error_message
                .as_deref()
                .unwrap()
                .contains("safety filters")
        );
        let e = finish("MALFORMED_FUNCTION_CALL");
        assert!(last_message(&e).transient.is_some());
        let e = finish("LANGUAGE");
        let m = last_message(&e);
        assert_eq!(m.stop_reason, StopReason::Error);
        assert!(m.transient.is_none());
        assert!(!m.is_provider_refusal());
        let e = decode(&[json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})]);
        let m = last_message(&e);
        assert!(m.is_provider_refusal());
        assert_eq!(
            m.error_message.as_deref(),
            Some("Gemini blocked the prompt (PROHIBITED_CONTENT).")
        );
        let e = decode(&[
            json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        ]);
        let m = last_message(&e);
        assert!(m.transient.is_some());
        assert_eq!(
            m.error_message.as_deref(),
            Some("The model is overloaded. (UNAVAILABLE)")
        );
        // No finish reason: unfinished, for the caller to report.
        let events = decode(&[json!({"candidates": [{"content": {"parts": [{"text": "x"}]}}]})]);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Done { .. } | StreamEvent::Error { .. }))
        );
    }

    #[test]
    fn the_key_goes_in_its_header_and_the_model_in_the_path() {
        let m = model("gemini-2.5-pro");
        let r = Gemini
            .build(
                &m,
                &request("gemini-2.5-pro", Vec::new(), StreamOptions::default()),
                Some("sekrit"),
            )
            .unwrap();
        assert_eq!(
            r.url,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert!(!r.url.contains("sekrit"));
        assert_eq!(
            r.headers,
            vec![(KEY_HEADER.to_string(), "sekrit".to_string())]
        );
        let mut odd = m.clone();
        odd.id = "gemini 2.5?".into();
        assert!(
            Gemini
                .build(
                    &odd,
                    &request("gemini-2.5-pro", Vec::new(), StreamOptions::default()),
                    None
                )
                .is_err()
        );
    }
}

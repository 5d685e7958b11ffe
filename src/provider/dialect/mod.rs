//! In-band ("owned") tool-calling dialects, for models whose server will not take native tools.
//!
//! With a dialect active, a request carries no `tools` and no `tool_choice`. Instead the tool
//! catalogue (names, descriptions, JSON schemas, and how to write a call in this dialect) is
//! appended to the system prompt, earlier tool calls are written back into the assistant text
//! in the dialect's own syntax, and tool results go to the model as user messages. The reply's
//! text is scanned as it streams ([`stream`]) and calls found in it become ordinary tool-call
//! events, so the loop, the front ends and the session file only ever see canonical
//! `toolCall`/`toolResult` messages and a session can move between dialect and native models.
//!
//! Each dialect is a small module: how a call and a result are written, how to tell the model
//! to call, which tags open and close a call, which tags mean the model has started writing a
//! tool result itself, and how the text between the tags becomes a call. Only the dialect's own
//! tags make a call: a call written inside a Markdown code block (any fence, any language tag)
//! is an example and stays text, and so does JSON in prose, whatever tool it names.

pub(crate) mod anthropic;
pub(crate) mod deepseek;
pub(crate) mod gemini;
pub(crate) mod gemma;
pub(crate) mod glm;
pub(crate) mod harmony;
pub(crate) mod hermes;
pub(crate) mod in_band;
pub(crate) mod invoke;
pub(crate) mod json;
pub(crate) mod kimi;
pub(crate) mod minimax;
pub(crate) mod python;
pub(crate) mod qwen3;
pub(crate) mod rewriter;
pub(crate) mod scanner;
pub(crate) mod stream;
pub(crate) mod tagged_calls;
pub(crate) mod values;
pub(crate) mod xml;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::agent::protocol::stream::{ProviderRequest, ToolSpec};
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use crate::agent::protocol::types::{PARSE_ERROR_KEY, RAW_JSON_KEY};

pub(crate) use stream::{DialectProvider, DialectSettings, Setting};

/// A tag pair that encloses tool calls in a reply.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub open: &'static str,
    pub close: &'static str,
}

/// What the text of one block turned out to be.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Parsed {
    /// A well-formed call.
    Call { name: String, arguments: Value },
    /// A call that could not be read; it becomes a call whose result explains the problem.
    Bad {
        name: String,
        error: String,
        raw: String,
    },
}

/// One in-band tool-calling syntax.
pub(crate) trait Dialect: Send + Sync {
    #[allow(dead_code, reason = "names the dialect in the tests' failure messages")]
    fn name(&self) -> &'static str;

    /// How to write a call, for the system prompt (after the tool list), with an example.
    fn instructions(&self) -> String;

    /// A call as the model would have written it.
    fn encode_call(&self, name: &str, arguments: &Value) -> String;

    /// A tool's result as the model should read it (sent inside a user message).
    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String;

    /// The tag pairs enclosing calls.
    fn blocks(&self) -> &'static [Block];

    /// Tags that mean the model has begun to write a tool result itself.
    fn result_markers(&self) -> &'static [&'static str];

    /// Whether a call is the whole reply rather than tags within it (`json`): such a reply is
    /// read at its end, not by the tag scanner.
    fn whole_reply(&self) -> bool {
        false
    }

    /// Control tokens that are removed from the text wherever they appear.
    fn dropped(&self) -> &'static [&'static str] {
        &[]
    }

    /// The tool's name, once the start of a call's text (`partial`, after `block.open`) shows
    /// it, so the call can be announced before its arguments have all arrived.
    fn peek_name(&self, _block: &Block, _partial: &str) -> Option<String> {
        None
    }

    /// Whether `body`, the text of a call so far (after `block.open`), ends inside one of its
    /// argument values: a closing or result tag found there is part of the value. By default,
    /// inside a string of a JSON object.
    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        values::json_string_open(body)
    }

    /// Whether `block.open` opens a call only at the start of a line (after blanks), as a
    /// Markdown fence does; elsewhere it is text.
    fn opens_at_line_start(&self, _block: &Block) -> bool {
        false
    }

    /// Whether a call with this text (between `block.open` and `block.close`) could have been
    /// cut short by a value holding the tags that end it: values between tags can be, JSON
    /// strings cannot. The closing tag coming again after such a call shows it was.
    fn cuttable(&self, _block: &Block, _body: &str) -> bool {
        false
    }

    /// The calls in the text between `block.open` and `block.close`.
    fn parse(&self, block: &Block, body: &str, tools: &[ToolSpec]) -> Vec<Parsed>;
}

/// Every dialect's name, as accepted by `--dialect`, `PI_DIALECT` and config.
pub(crate) const NAMES: &[&str] = &[
    "hermes",
    "qwen3",
    "xml",
    "glm",
    "deepseek",
    "harmony",
    "kimi",
    "anthropic",
    "gemini",
    "gemma",
    "minimax",
    "json",
];

/// A dialect by name (case-insensitive; `qwen` and `qwen2.5` mean hermes).
pub(crate) fn by_name(name: &str) -> Option<Arc<dyn Dialect>> {
    match name.trim().to_ascii_lowercase().as_str() {
        "hermes" | "qwen" | "qwen2.5" | "qwen2" => Some(Arc::new(hermes::HERMES)),
        "qwen3" | "qwen3-coder" | "qwen3_coder" => Some(Arc::new(qwen3::QWEN3)),
        "xml" => Some(Arc::new(xml::Xml)),
        "glm" | "glm4" | "glm-4.5" => Some(Arc::new(glm::GLM)),
        "deepseek" => Some(Arc::new(deepseek::DeepSeek)),
        "harmony" | "gpt-oss" => Some(Arc::new(harmony::Harmony)),
        "kimi" | "kimi-k2" => Some(Arc::new(kimi::Kimi)),
        "anthropic" | "claude" => Some(Arc::new(anthropic::Anthropic)),
        "gemini" => Some(Arc::new(gemini::Gemini)),
        "gemma" | "gemma4" => Some(Arc::new(gemma::Gemma)),
        "minimax" | "minimax-m2" => Some(Arc::new(minimax::MiniMax)),
        "json" => Some(Arc::new(json::Json)),
        _ => None,
    }
}

/// Read a setting: `none`/`off` (also `false`, `0`, empty) switch dialects off, `1`/`true`
/// mean `glm` (as the Node.js pi's `PI_DIALECT` does), `auto` switches by what the model does,
/// anything else must name a dialect.
pub(crate) fn parse_setting(value: &str) -> Result<Setting, String> {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "" | "none" | "off" | "false" | "0" | "native" => Ok(Setting::Off),
        "1" | "true" => Ok(Setting::On("glm".into())),
        "auto" => Ok(Setting::Auto),
        other if by_name(other).is_some() => Ok(Setting::On(other.to_string())),
        other => Err(format!(
            "unknown tool-calling dialect `{other}` (expected one of {}, auto, or none)",
            NAMES.join(", ")
        )),
    }
}

/// Whether a base URL points at this machine (a local model server).
pub(crate) fn is_local_url(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let host = rest.split('/').next().unwrap_or(rest);
    host.starts_with("127.")
        || host.starts_with("localhost")
        || host.starts_with("[::1]")
        || host.starts_with("0.0.0.0")
}

/// The system-prompt section listing the tools and how to call them.
pub(crate) fn catalog_prompt(dialect: &dyn Dialect, tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "# Tools\n\nYou can use the tools below. There is no other way to call them than to \
         write a call in your reply exactly as shown at the end of this section; the call is \
         run and its result is sent back to you in the next message.\n",
    );
    for t in tools {
        s.push_str(&format!("\n## {}\n", t.name));
        if !t.description.trim().is_empty() {
            s.push_str(t.description.trim());
            s.push('\n');
        }
        s.push_str(&format!("Parameters (JSON schema): {}\n", t.parameters));
    }
    s.push_str("\n# How to call a tool\n\n");
    s.push_str(dialect.instructions().trim());
    s.push_str(
        "\n\nWrite a call as plain text, never inside a code block: a call in a code block is \
         only shown, not run. You may make several calls in one reply. After your calls, stop \
         and wait: never write a tool's result yourself.",
    );
    s
}

/// The request as sent under `dialect`: no native tools or tool choice, the catalogue in the
/// system prompt, earlier calls and results written as text, and the roles alternating.
pub(crate) fn encode_request(dialect: &dyn Dialect, request: &ProviderRequest) -> ProviderRequest {
    let mut out = request.clone();
    let tools = std::mem::take(&mut out.context.tools);
    out.options.tool_choice = None;
    if !tools.is_empty() {
        out.context
            .system_prompt
            .push(catalog_prompt(dialect, &tools));
    }
    let mut messages: Vec<Arc<Message>> = Vec::with_capacity(request.context.messages.len());
    let mut results: Vec<&ToolResultMessage> = Vec::new();
    let flush = |results: &mut Vec<&ToolResultMessage>, messages: &mut Vec<Arc<Message>>| {
        if !results.is_empty() {
            messages.push(Arc::new(Message::User(results_message(dialect, results))));
            results.clear();
        }
    };
    for m in request.context.messages.iter() {
        match &**m {
            Message::ToolResult(r) => results.push(r),
            Message::Assistant(a) if a.has_tool_calls() => {
                flush(&mut results, &mut messages);
                messages.push(Arc::new(Message::Assistant(encode_assistant(dialect, a))));
            }
            _ => {
                flush(&mut results, &mut messages);
                messages.push(m.clone());
            }
        }
    }
    flush(&mut results, &mut messages);
    out.context.messages = Arc::new(merge_users(messages));
    out
}

/// Consecutive user messages as one (results written as a user message, then the user's own
/// words): many chat templates refuse a conversation whose roles do not alternate.
fn merge_users(messages: Vec<Arc<Message>>) -> Vec<Arc<Message>> {
    let mut out: Vec<Arc<Message>> = Vec::with_capacity(messages.len());
    for m in messages {
        if let Message::User(next) = &*m
            && let Some(last) = out.last_mut()
            && let Message::User(prev) = &**last
        {
            let joined = join_users(prev, next);
            *last = Arc::new(Message::User(joined));
            continue;
        }
        out.push(m);
    }
    out
}

/// Two user messages as one: texts joined by a blank line, blocks one after the other.
fn join_users(a: &UserMessage, b: &UserMessage) -> UserMessage {
    let blocks = |c: &UserContent| match c {
        UserContent::Text(t) => vec![ContentBlock::text(t.clone())],
        UserContent::Blocks(b) => b.clone(),
    };
    let mut out = a.clone();
    out.content = match (&a.content, &b.content) {
        (UserContent::Text(x), UserContent::Text(y)) => UserContent::Text(format!("{x}\n\n{y}")),
        (x, y) => {
            let mut all = blocks(x);
            all.extend(blocks(y));
            UserContent::Blocks(all)
        }
    };
    out.timestamp = a.timestamp.max(b.timestamp);
    out
}

/// An assistant message with its calls written as text in the dialect.
fn encode_assistant(dialect: &dyn Dialect, a: &AssistantMessage) -> AssistantMessage {
    let mut out = a.clone();
    out.content = a
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolCall(c) => {
                ContentBlock::text(dialect.encode_call(&c.name, &replay_arguments(c)))
            }
            other => other.clone(),
        })
        .collect();
    out
}

/// The arguments of a call to write back: what the model wrote when they did not parse (as
/// an object again where what it wrote was one).
fn replay_arguments(call: &ToolCall) -> Value {
    if call.arguments.get(PARSE_ERROR_KEY).is_none() {
        return call.arguments.clone();
    }
    match call.arguments.get(RAW_JSON_KEY) {
        Some(Value::String(raw)) => serde_json::from_str::<Value>(raw)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::String(raw.clone())),
        Some(other) => other.clone(),
        None => Value::Object(Map::new()),
    }
}

/// Consecutive tool results as one user message (their images kept beside the text).
fn results_message(dialect: &dyn Dialect, results: &[&ToolResultMessage]) -> UserMessage {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for r in results {
        let mut output = r.text();
        for b in &r.content {
            if let ContentBlock::Image(i) = b {
                images.push(ContentBlock::Image(i.clone()));
            }
        }
        if output.is_empty() {
            output = if images.is_empty() {
                "(no output)".into()
            } else {
                "(see the attached image)".into()
            };
        }
        text.push(dialect.encode_result(&r.tool_name, &output, r.is_error));
    }
    let joined = text.join("\n");
    let mut msg = UserMessage::new(joined.clone());
    if !images.is_empty() {
        let mut blocks = vec![ContentBlock::text(joined)];
        blocks.extend(images);
        msg.content = UserContent::Blocks(blocks);
    }
    if let Some(last) = results.last() {
        msg.timestamp = last.timestamp;
    }
    msg
}

/// The arguments of a call that could not be read, as the loop's parse-error marker.
pub(crate) fn bad_arguments(error: &str, raw: &str) -> Value {
    let mut m = Map::new();
    m.insert(PARSE_ERROR_KEY.into(), Value::String(error.to_string()));
    m.insert(RAW_JSON_KEY.into(), Value::String(raw.to_string()));
    Value::Object(m)
}

/// The schema type of a tool's parameter, if the schema says.
pub(crate) fn param_type<'a>(tools: &'a [ToolSpec], tool: &str, param: &str) -> Option<&'a str> {
    tools
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.parameters.pointer(&format!("/properties/{param}/type")))
        .and_then(Value::as_str)
}

/// Each argument as `(name, text)`: a string as it is, anything else as JSON — how the
/// text-valued forms write values (the reverse of [`typed_value`]).
pub(crate) fn text_arguments(arguments: &Value) -> Vec<(&str, String)> {
    match arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.as_str(), text)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A parameter value written as text: kept as a string where the schema wants one (or says
/// nothing), read as JSON otherwise (numbers, booleans, arrays, objects).
pub(crate) fn typed_value(tools: &[ToolSpec], tool: &str, param: &str, raw: &str) -> Value {
    let text = trim_one_newline(raw);
    match param_type(tools, tool, param) {
        None | Some("string") => Value::String(text.to_string()),
        Some(_) => serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::String(text.into())),
    }
}

/// `s` without one leading and one trailing line break (values are often written on their
/// own lines between the tags).
pub(crate) fn trim_one_newline(s: &str) -> &str {
    let s = s
        .strip_prefix("\r\n")
        .or_else(|| s.strip_prefix('\n'))
        .unwrap_or(s);
    s.strip_suffix("\r\n")
        .or_else(|| s.strip_suffix('\n'))
        .unwrap_or(s)
}

/// A JSON call object (`{"name": …, "arguments": {…}}`, also `parameters` for the arguments,
/// or arguments sent as a JSON string) as a call.
pub(crate) fn json_call(text: &str) -> Parsed {
    let raw = text.trim();
    let value: Value = match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(e) => {
            return Parsed::Bad {
                name: name_in_broken_json(raw).unwrap_or_default(),
                error: format!("the tool call is not valid JSON: {e}"),
                raw: raw.to_string(),
            };
        }
    };
    let Some(name) = value.get("name").and_then(Value::as_str) else {
        return Parsed::Bad {
            name: String::new(),
            error: "the tool call has no \"name\"".into(),
            raw: raw.to_string(),
        };
    };
    let args = value
        .get("arguments")
        .or_else(|| value.get("parameters"))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    arguments_value(name, args, raw)
}

/// The calls of a section that holds `call` blocks (each read by `one_call`), its tags found
/// only outside the JSON arguments' strings; a section with text but no call is an error
/// naming `section`.
pub(crate) fn section_calls(
    body: &str,
    call: &Block,
    section: &str,
    one_call: fn(&str) -> Parsed,
) -> Vec<Parsed> {
    let mut out = Vec::new();
    for piece in values::split_outside_json(body, call.open)
        .into_iter()
        .skip(1)
    {
        out.push(one_call(values::split_outside_json(piece, call.close)[0]));
    }
    if out.is_empty() && !body.trim().is_empty() {
        out.push(Parsed::Bad {
            name: String::new(),
            error: format!("no {} inside {section}", call.open),
            raw: body.to_string(),
        });
    }
    out
}

/// Arguments written as JSON text (nothing at all: no arguments).
pub(crate) fn json_arguments(name: &str, text: &str) -> Parsed {
    if text.is_empty() {
        return arguments_value(name, Value::Null, text);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => arguments_value(name, v, text),
        Err(e) => Parsed::Bad {
            name: name.to_string(),
            error: format!("the arguments are not valid JSON: {e}"),
            raw: text.to_string(),
        },
    }
}

/// Arguments that may have come as a JSON string holding the object.
pub(crate) fn arguments_value(name: &str, args: Value, raw: &str) -> Parsed {
    let args = match args {
        Value::String(s) if s.trim().is_empty() => Value::Object(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(v) => v,
            Err(e) => {
                return Parsed::Bad {
                    name: name.to_string(),
                    error: format!("the arguments are not valid JSON: {e}"),
                    raw: s,
                };
            }
        },
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    if !args.is_object() {
        return Parsed::Bad {
            name: name.to_string(),
            error: format!("the arguments must be a JSON object, got {args}"),
            raw: raw.to_string(),
        };
    }
    Parsed::Call {
        name: name.to_string(),
        arguments: args,
    }
}

/// The `"name": "…"` of JSON that does not parse, so a broken call still names its tool.
pub(crate) fn name_in_broken_json(raw: &str) -> Option<String> {
    let at = raw.find("\"name\"")?;
    let rest = raw[at + 6..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_string())
}

/// The text inside a Markdown code fence (```json … ```), or the text itself.
pub(crate) fn strip_fence(s: &str) -> &str {
    let t = s.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests;

//! Hermes (Qwen2.5, Hermes, many fine-tunes): `<tool_call>{"name": …, "arguments": {…}}</tool_call>`,
//! results in `<tool_response>` tags.
//!
//! The body parser here reads every body form that comes inside `<tool_call>` tags: the JSON
//! object, qwen3-coder's `<function=…>` form and GLM's `<arg_key>` form. A model that mixes
//! them up still gets its call run. Whatever the form, a tag inside an argument value is part
//! of the value (see [`super::values`]).

use serde_json::{Map, Value, json};

use super::values::{Part, Tagged, excerpt, json_string_open};
use super::{Block, Dialect, Parsed, json_arguments, json_call, typed_value};
use crate::agent::protocol::stream::ToolSpec;

/// GLM's values: `<arg_value>…</arg_value>`, each after its `<arg_key>`.
const ARG_VALUE: Tagged = Tagged {
    open: "<arg_value",
    close: "</arg_value>",
    next: &["<arg_key>"],
};

pub(crate) const TOOL_CALL: Block = Block {
    open: "<tool_call>",
    close: "</tool_call>",
};

/// What a model writing a tool result itself starts with, in the `<tool_call>` family.
pub(crate) const RESPONSE_MARKERS: &[&str] =
    &["<tool_response>", "<|im_start|>user", "<|observation|>"];

/// A result wrapped the way the `<tool_call>` family reads them.
pub(crate) fn tool_response(output: &str, is_error: bool) -> String {
    if is_error {
        format!("<tool_response>\nError: {output}\n</tool_response>")
    } else {
        format!("<tool_response>\n{output}\n</tool_response>")
    }
}

/// A dialect of the `<tool_call>` family (hermes, qwen3, glm). They differ only in how a call
/// is written; replies are read alike (every body form, see the module note) and results go
/// back in `<tool_response>` tags.
pub(crate) struct ToolCallFamily {
    pub name: &'static str,
    pub instructions: &'static str,
    pub encode_call: fn(&str, &Value) -> String,
}

pub(crate) const HERMES: ToolCallFamily = ToolCallFamily {
    name: "hermes",
    instructions: "To call a tool, write a JSON object with the tool's name and its arguments \
         inside <tool_call></tool_call> tags, one call per pair of tags:\n<tool_call>\n\
         {\"name\": \"read\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>\n\
         Results come back inside <tool_response></tool_response> tags.",
    encode_call: encode_hermes_call,
};

fn encode_hermes_call(name: &str, arguments: &Value) -> String {
    let call = json!({"name": name, "arguments": arguments});
    format!("<tool_call>\n{call}\n</tool_call>")
}

impl Dialect for ToolCallFamily {
    fn name(&self) -> &'static str {
        self.name
    }

    fn instructions(&self) -> String {
        self.instructions.to_string()
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        (self.encode_call)(name, arguments)
    }

    fn encode_result(&self, _name: &str, output: &str, is_error: bool) -> String {
        tool_response(output, is_error)
    }

    fn blocks(&self) -> &'static [Block] {
        &[TOOL_CALL]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        RESPONSE_MARKERS
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        peek_tool_call_name(partial)
    }

    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        inside_tool_call_value(body)
    }

    fn cuttable(&self, _block: &Block, body: &str) -> bool {
        tagged_values(body)
    }

    fn parse(&self, _block: &Block, body: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
        parse_tool_call_body(body, tools)
    }
}

/// The name at the start of a `<tool_call>` body in any of its forms, once it is complete.
pub(crate) fn peek_tool_call_name(partial: &str) -> Option<String> {
    let t = partial.trim_start();
    let t = t.strip_prefix("```json").unwrap_or(t).trim_start();
    let name = if t.starts_with('{') {
        super::name_in_broken_json(t)?
    } else if let Some(at) = t.find("<function=") {
        let rest = &t[at + "<function=".len()..];
        rest[..rest.find('>')?].trim().to_string()
    } else {
        t[..t.find(['\n', '<'])?].trim().to_string()
    };
    (!name.is_empty()).then_some(name)
}

/// Which form a `<tool_call>` body takes.
enum Form {
    Json,
    Functions,
    Glm,
}

fn form(t: &str) -> Form {
    if t.starts_with('{') {
        Form::Json
    } else if t.starts_with("<function=") {
        Form::Functions
    } else {
        Form::Glm
    }
}

/// Whether a `<tool_call>` body writes its values between tags (qwen3's and GLM's forms).
pub(crate) fn tagged_values(body: &str) -> bool {
    let t = body.trim_start();
    let t = t.strip_prefix("```json").unwrap_or(t).trim_start();
    match form(t) {
        Form::Json => false,
        Form::Functions => true,
        Form::Glm => !t[t.find(['\n', '<', '{']).unwrap_or(t.len())..]
            .trim_start()
            .starts_with('{'),
    }
}

/// Whether a `<tool_call>` body cut short ends inside an argument value, whichever form it
/// takes.
pub(crate) fn inside_tool_call_value(body: &str) -> bool {
    let t = body.trim_start();
    let t = t.strip_prefix("```json").unwrap_or(t).trim_start();
    match form(t) {
        Form::Json => json_string_open(t),
        Form::Functions => super::qwen3::PARAMETER.inside_value(t),
        Form::Glm => {
            let rest = &t[t.find(['\n', '<', '{']).unwrap_or(t.len())..];
            if rest.trim_start().starts_with('{') {
                json_string_open(rest)
            } else {
                ARG_VALUE.inside_value(rest)
            }
        }
    }
}

/// The calls inside one `<tool_call>` … `</tool_call>` pair, whichever form they take.
pub(crate) fn parse_tool_call_body(body: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
    let t = super::strip_fence(body);
    match form(t) {
        Form::Json => json_calls(t),
        Form::Functions => super::qwen3::parse_functions(t, tools),
        Form::Glm => vec![glm_call(t, tools)],
    }
}

/// One or more JSON call objects written one after the other.
fn json_calls(t: &str) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(t).into_iter::<Value>();
    let mut last = 0;
    while let Some(item) = stream.next() {
        match item {
            Ok(v) => {
                let end = stream.byte_offset();
                out.push(json_call(&t[last..end]));
                last = end;
                let _ = v;
            }
            Err(_) => {
                out.push(json_call(&t[last..]));
                return out;
            }
        }
    }
    if out.is_empty() {
        out.push(json_call(t));
    }
    out
}

/// GLM's form: the tool name on the first line, then `<arg_key>`/`<arg_value>` pairs (or a
/// JSON object of arguments).
pub(crate) fn glm_call(t: &str, tools: &[ToolSpec]) -> Parsed {
    let end = t.find(['\n', '<', '{']).unwrap_or(t.len());
    let name = t[..end].trim().to_string();
    let rest = t[end..].trim();
    if name.is_empty() {
        return Parsed::Bad {
            name,
            error: "the tool call does not say which tool to call".into(),
            raw: t.to_string(),
        };
    }
    if rest.starts_with('{') {
        return json_arguments(&name, rest);
    }
    let bad = |error: String| Parsed::Bad {
        name: name.clone(),
        error,
        raw: t.to_string(),
    };
    let split = ARG_VALUE.split(rest);
    if split.open.is_some() {
        return bad("an <arg_value> is not closed with </arg_value>".into());
    }
    let mut args = Map::new();
    let mut key: Option<&str> = None;
    for part in split.parts {
        match part {
            Part::Frame(frame) => {
                let mut f = frame.trim();
                while let Some(after) = f.strip_prefix("<arg_key>") {
                    let Some(end) = after.find("</arg_key>") else {
                        return bad("an <arg_key> is not closed with </arg_key>".into());
                    };
                    if let Some(k) = key {
                        return bad(format!("the argument `{}` has no <arg_value>", k.trim()));
                    }
                    key = Some(&after[..end]);
                    f = after[end + "</arg_key>".len()..].trim_start();
                }
                if !f.is_empty() {
                    return bad(format!(
                        "text outside the arguments: `{}` (does a value hold </arg_value>?)",
                        excerpt(f, 60)
                    ));
                }
            }
            Part::Value { text, .. } => {
                let Some(k) = key.take() else {
                    return bad("an <arg_value> has no <arg_key> before it".into());
                };
                let k = k.trim();
                args.insert(k.to_string(), typed_value(tools, &name, k, text));
            }
        }
    }
    if let Some(k) = key {
        return bad(format!("the argument `{}` has no <arg_value>", k.trim()));
    }
    Parsed::Call {
        name,
        arguments: Value::Object(args),
    }
}

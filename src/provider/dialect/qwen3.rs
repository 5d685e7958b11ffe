//! qwen3-coder: `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`,
//! results in `<tool_response>` tags. Values are plain text; a parameter whose schema type is
//! not `string` is read as JSON.

use serde_json::{Map, Value};

use super::hermes::ToolCallFamily;
use super::{Parsed, text_arguments, typed_value};
use crate::agent::protocol::stream::ToolSpec;

pub const QWEN3: ToolCallFamily = ToolCallFamily {
    name: "qwen3",
    instructions: "To call a tool, write it inside <tool_call></tool_call> tags: the tool's name in a \
         <function=NAME> tag and each argument in its own <parameter=NAME> tag, one call per \
         pair of <tool_call> tags:\n<tool_call>\n<function=read>\n<parameter=path>\nsrc/main.rs\n\
         </parameter>\n</function>\n</tool_call>\nWrite text values as they are (no quotes or \
         escaping); write numbers, booleans, arrays and objects as JSON. Results come back \
         inside <tool_response></tool_response> tags.",
    encode_call,
};

fn encode_call(name: &str, arguments: &Value) -> String {
    let mut s = format!("<tool_call>\n<function={name}>\n");
    for (k, text) in text_arguments(arguments) {
        s.push_str(&format!("<parameter={k}>\n{text}\n</parameter>\n"));
    }
    s.push_str("</function>\n</tool_call>");
    s
}

/// Every `<function=NAME>` … `</function>` in `t` (the closing tag may be missing on the last).
pub fn parse_functions(t: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(at) = rest.find("<function=") {
        let after = &rest[at + "<function=".len()..];
        let Some(gt) = after.find('>') else {
            out.push(Parsed::Bad {
                name: String::new(),
                error: "the <function=…> tag is not closed".into(),
                raw: t.to_string(),
            });
            break;
        };
        let name = after[..gt].trim().to_string();
        let body_and_more = &after[gt + 1..];
        let (body, next) = match body_and_more.find("</function>") {
            Some(end) => (
                &body_and_more[..end],
                &body_and_more[end + "</function>".len()..],
            ),
            None => (body_and_more, ""),
        };
        out.push(parameters(&name, body, tools));
        rest = next;
    }
    out
}

fn parameters(name: &str, body: &str, tools: &[ToolSpec]) -> Parsed {
    let mut args = Map::new();
    let mut s = body;
    while let Some(at) = s.find("<parameter=") {
        let after = &s[at + "<parameter=".len()..];
        let Some(gt) = after.find('>') else {
            return Parsed::Bad {
                name: name.to_string(),
                error: "a <parameter=…> tag is not closed".into(),
                raw: body.to_string(),
            };
        };
        let key = after[..gt].trim().to_string();
        let value_and_more = &after[gt + 1..];
        // The value runs to its closing tag, or (when that is missing) to the next parameter.
        let (value, next) = match value_and_more.find("</parameter>") {
            Some(end) => (
                &value_and_more[..end],
                &value_and_more[end + "</parameter>".len()..],
            ),
            None => match value_and_more.find("<parameter=") {
                Some(next) => (&value_and_more[..next], &value_and_more[next..]),
                None => (value_and_more, ""),
            },
        };
        args.insert(key.clone(), typed_value(tools, name, &key, value));
        s = next;
    }
    Parsed::Call {
        name: name.to_string(),
        arguments: Value::Object(args),
    }
}

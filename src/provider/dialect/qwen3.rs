//! qwen3-coder: `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`,
//! results in `<tool_response>` tags. Values are plain text; a parameter whose schema type is
//! not `string` is read as JSON. A value may hold any tag, `</tool_call>` and `</parameter>`
//! included, as long as its own `</parameter>` is followed by the next tag.

use serde_json::{Map, Value};

use super::hermes::ToolCallFamily;
use super::values::{Part, Tagged, excerpt};
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

/// qwen3-coder's values: `<parameter=KEY>…</parameter>`.
pub const PARAMETER: Tagged = Tagged {
    open: "<parameter=",
    close: "</parameter>",
    next: &["<parameter=", "</function>"],
};

/// Every `<function=NAME>` … `</function>` in `t`. A value runs to the `</parameter>` that is
/// followed by the next tag (see [`super::values`]); a call whose frame holds anything else,
/// or that is not closed, is a call that could not be read.
pub fn parse_functions(t: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut open: Option<(String, Map<String, Value>)> = None;
    let bad = |open: &Option<(String, Map<String, Value>)>, error: String| Parsed::Bad {
        name: open.as_ref().map(|(n, _)| n.clone()).unwrap_or_default(),
        error,
        raw: t.to_string(),
    };
    let split = PARAMETER.split(t);
    if let Some(tag) = split.open {
        out.push(bad(
            &open_name(t),
            format!(
                "the value of `{}` is not closed with </parameter>",
                tag.trim()
            ),
        ));
        return out;
    }
    for part in split.parts {
        match part {
            Part::Frame(frame) => {
                let mut f = frame.trim_start();
                while !f.is_empty() {
                    if let Some(after) = f.strip_prefix("<function=") {
                        let Some(gt) = after.find('>') else {
                            out.push(bad(&open, "the <function=…> tag is not closed".into()));
                            return out;
                        };
                        if open.is_some() {
                            out.push(bad(&open, "the call is not closed with </function>".into()));
                            return out;
                        }
                        open = Some((after[..gt].trim().to_string(), Map::new()));
                        f = after[gt + 1..].trim_start();
                    } else if let Some(after) = f.strip_prefix("</function>") {
                        match open.take() {
                            Some((name, args)) => out.push(Parsed::Call {
                                name,
                                arguments: Value::Object(args),
                            }),
                            None => {
                                out.push(bad(
                                    &open,
                                    "a </function> without its <function=…>".into(),
                                ));
                                return out;
                            }
                        }
                        f = after.trim_start();
                    } else {
                        // Text after a finished call was most likely part of its last value.
                        let error = format!(
                            "text outside the parameters: `{}` (does a value hold </parameter>?)",
                            excerpt(f, 60)
                        );
                        let blamed = match (&open, out.last()) {
                            (None, Some(Parsed::Call { name, .. })) => {
                                Some((name.clone(), Map::new()))
                            }
                            _ => None,
                        };
                        if blamed.is_some() {
                            out.pop();
                        }
                        out.push(bad(&blamed.or(open), error));
                        return out;
                    }
                }
            }
            Part::Value { tag, text } => {
                let Some((name, args)) = open.as_mut() else {
                    out.push(bad(
                        &open,
                        "a <parameter=…> outside any <function=…>".into(),
                    ));
                    return out;
                };
                let key = tag.trim().to_string();
                let value = typed_value(tools, name, &key, text);
                args.insert(key, value);
            }
        }
    }
    if open.is_some() {
        out.push(bad(&open, "the call is not closed with </function>".into()));
    }
    out
}

/// The function named at the start of `t`, for an error about a call that has no end.
fn open_name(t: &str) -> Option<(String, Map<String, Value>)> {
    let rest = t.trim_start().strip_prefix("<function=")?;
    Some((rest[..rest.find('>')?].trim().to_string(), Map::new()))
}

//! A generic XML form, for models without a syntax of their own:
//!
//! ```text
//! <function_call name="read">
//! <arg name="path">src/main.rs</arg>
//! <arg name="limit">20</arg>
//! </function_call>
//! ```
//!
//! Argument values are raw text (no entity escaping, so code needs none); a parameter whose
//! schema type is not `string` is read as JSON. Results come back as
//! `<function_result name="read">…</function_result>`; a reply that starts writing one is cut
//! there.

use serde_json::{Map, Value};

use super::{Block, Dialect, Parsed, text_arguments, typed_value};
use crate::agent::protocol::stream::ToolSpec;

pub struct Xml;

const CALL: Block = Block {
    open: "<function_call",
    close: "</function_call>",
};

impl Dialect for Xml {
    fn name(&self) -> &'static str {
        "xml"
    }

    fn instructions(&self) -> String {
        "To call a tool, write a <function_call> element naming the tool, with one <arg> \
         element per argument:\n<function_call name=\"read\">\n<arg name=\"path\">src/main.rs\
         </arg>\n</function_call>\nWrite text values as they are (no escaping); write numbers, \
         booleans, arrays and objects as JSON. Results come back as <function_result> elements."
            .into()
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        let mut s = format!("<function_call name=\"{name}\">\n");
        for (k, text) in text_arguments(arguments) {
            s.push_str(&format!("<arg name=\"{k}\">{text}</arg>\n"));
        }
        s.push_str("</function_call>");
        s
    }

    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String {
        let error = if is_error { " error=\"true\"" } else { "" };
        format!("<function_result name=\"{name}\"{error}>\n{output}\n</function_result>")
    }

    fn blocks(&self) -> &'static [Block] {
        &[CALL]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<function_result"]
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        attribute(&partial[..partial.find('>')?], "name").filter(|n| !n.is_empty())
    }

    fn parse(&self, _block: &Block, body: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
        // `body` starts right after `<function_call`: the attributes, `>`, then the args.
        let Some(gt) = body.find('>') else {
            return vec![Parsed::Bad {
                name: String::new(),
                error: "the <function_call> tag is not closed".into(),
                raw: body.to_string(),
            }];
        };
        let Some(name) = attribute(&body[..gt], "name") else {
            return vec![Parsed::Bad {
                name: String::new(),
                error: "the <function_call> tag has no name=\"…\"".into(),
                raw: body.to_string(),
            }];
        };
        let mut args = Map::new();
        let mut s = &body[gt + 1..];
        while let Some(at) = s.find("<arg") {
            let after = &s[at + 4..];
            let Some(gt) = after.find('>') else {
                break;
            };
            let Some(key) = attribute(&after[..gt], "name") else {
                return vec![Parsed::Bad {
                    name,
                    error: "an <arg> has no name=\"…\"".into(),
                    raw: body.to_string(),
                }];
            };
            let value_and_more = &after[gt + 1..];
            let Some(end) = value_and_more.find("</arg>") else {
                return vec![Parsed::Bad {
                    name,
                    error: format!("the <arg name=\"{key}\"> is not closed"),
                    raw: body.to_string(),
                }];
            };
            args.insert(
                key.clone(),
                typed_value(tools, &name, &key, &value_and_more[..end]),
            );
            s = &value_and_more[end + "</arg>".len()..];
        }
        vec![Parsed::Call {
            name,
            arguments: Value::Object(args),
        }]
    }
}

/// The value of `key="…"` (or `'…'`) among a tag's attributes.
fn attribute(attrs: &str, key: &str) -> Option<String> {
    let mut s = attrs;
    while let Some(at) = s.find(key) {
        let rest = s[at + key.len()..].trim_start();
        if let Some(rest) = rest.strip_prefix('=') {
            let rest = rest.trim_start();
            let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let rest = &rest[1..];
            let end = rest.find(quote)?;
            return Some(rest[..end].to_string());
        }
        s = &s[at + key.len()..];
    }
    None
}

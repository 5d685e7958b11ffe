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
//! schema type is not `string` is read as JSON. A value may hold any tag, `</arg>` and
//! `</function_call>` included, as long as its own `</arg>` is followed by the next `<arg>`
//! or the end of the call. Results come back as
//! `<function_result name="read">…</function_result>`; a reply that starts writing one is cut
//! there.

use serde_json::{Map, Value};

use super::values::{Part, Tagged, attribute, excerpt, stray};
use super::{Block, Dialect, Parsed, text_arguments, typed_value};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct Xml;

const CALL: Block = Block {
    open: "<function_call",
    close: "</function_call>",
};

/// An argument's value: `<arg name="KEY">…</arg>`.
const ARG: Tagged = Tagged {
    open: "<arg",
    close: "</arg>",
    next: &["<arg ", "<arg>", "<arg\t", "<arg\n"],
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

    fn cuttable(&self, _block: &Block, _body: &str) -> bool {
        true
    }

    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        body.find('>')
            .is_some_and(|gt| ARG.inside_value(&body[gt + 1..]))
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
        let bad = |error: String| {
            vec![Parsed::Bad {
                name: name.clone(),
                error,
                raw: body.to_string(),
            }]
        };
        let split = ARG.split(&body[gt + 1..]);
        if let Some(tag) = split.open {
            let key = attribute(tag, "name").unwrap_or_default();
            return bad(format!("the <arg name=\"{key}\"> is not closed"));
        }
        for part in split.parts {
            match part {
                Part::Frame(f) => {
                    if let Some(text) = stray(f, &[]) {
                        return bad(format!(
                            "text outside the <arg> elements: `{}` (does a value hold </arg>?)",
                            excerpt(text, 60)
                        ));
                    }
                }
                Part::Value { tag, text } => {
                    let Some(key) = attribute(tag, "name") else {
                        return bad("an <arg> has no name=\"…\"".into());
                    };
                    let value = typed_value(tools, &name, &key, text);
                    args.insert(key, value);
                }
            }
        }
        vec![Parsed::Call {
            name,
            arguments: Value::Object(args),
        }]
    }
}

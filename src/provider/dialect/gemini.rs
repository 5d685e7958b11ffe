//! Gemini's (and Gemma 3's) Python form: a ```` ```tool_code ```` fenced block holding
//! Python calls, `print(default_api.read(path="src/main.rs"))` (see [`super::python`]).
//! Results come back in ```` ```tool_outputs ```` blocks.
//!
//! The call is itself a code fence, so it counts only where a fence can start — at the start
//! of a line — and only as the fence itself: a `tool_code` block shown inside another code
//! block stays text, as every dialect's calls do. A "```" inside a Python string does not end
//! the block.

use serde_json::Value;

use super::python;
use super::{Block, Dialect, Parsed};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct Gemini;

const CALL: Block = Block {
    open: "```tool_code",
    close: "```",
};

impl Dialect for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn instructions(&self) -> String {
        format!(
            "To call tools, write a ```tool_code block, on lines of its own, holding Python calls \
             to the tools as functions of default_api with keyword arguments (Python literals: \
             quoted strings, numbers, True, False, None, lists, dicts):{}\nResults come back in \
             ```tool_outputs blocks.",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        let args = match arguments {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| format!("{k}={}", python::literal(v)))
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        };
        // On lines of its own, as a fence must be.
        format!("\n```tool_code\nprint(default_api.{name}({args}))\n```\n")
    }

    fn encode_result(&self, _name: &str, output: &str, is_error: bool) -> String {
        let output = if is_error {
            format!("Error: {output}")
        } else {
            output.to_string()
        };
        format!("```tool_outputs\n{output}\n```")
    }

    fn blocks(&self) -> &'static [Block] {
        &[CALL]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["```tool_outputs"]
    }

    fn opens_at_line_start(&self, _block: &Block) -> bool {
        true
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        // The first called name other than print, once its `(` has come.
        let mut rest = partial;
        while let Some(paren) = rest.find('(') {
            let head = rest[..paren].trim_end();
            let start = head
                .char_indices()
                .rev()
                .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
                .map_or(0, |(i, c)| i + c.len_utf8());
            let path = &head[start..];
            let name = path.rsplit('.').next().unwrap_or(path);
            if !name.is_empty() && name != "print" {
                return Some(name.to_string());
            }
            rest = &rest[paren + 1..];
        }
        None
    }

    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        python::string_open(body)
    }

    fn parse(&self, _block: &Block, body: &str, _tools: &[ToolSpec]) -> Vec<Parsed> {
        match python::calls(body) {
            Ok(calls) => calls
                .into_iter()
                .map(|(name, arguments)| Parsed::Call {
                    name,
                    arguments: Value::Object(arguments),
                })
                .collect(),
            Err(error) => vec![Parsed::Bad {
                name: self.peek_name(&CALL, body).unwrap_or_default(),
                error: format!("the tool_code block could not be read: {error}"),
                raw: body.to_string(),
            }],
        }
    }
}

//! MiniMax M2: `<minimax:tool_call>` around one or more `<invoke name="…">` elements (the same
//! body as the anthropic dialect, see [`super::invoke`]). Results come back in `<response>`
//! elements, as MiniMax's template writes them.

use serde_json::Value;

use super::{Block, Dialect, Parsed, invoke};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct MiniMax;

const CALLS: Block = Block {
    open: "<minimax:tool_call>",
    close: "</minimax:tool_call>",
};

impl Dialect for MiniMax {
    fn name(&self) -> &'static str {
        "minimax"
    }

    fn instructions(&self) -> String {
        format!(
            "To call tools, write a <minimax:tool_call> element holding one <invoke> element \
             per call, naming the tool, with one <parameter> element per argument:\n{}\nWrite \
             text values as they are (no escaping); write numbers, booleans, arrays and objects \
             as JSON. Each result comes back in a <response> element.",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "<minimax:tool_call>\n{}\n</minimax:tool_call>",
            invoke::encode(name, arguments)
        )
    }

    fn encode_result(&self, _name: &str, output: &str, is_error: bool) -> String {
        let output = if is_error {
            format!("Error: {output}")
        } else {
            output.to_string()
        };
        format!("<response>\n{output}\n</response>")
    }

    fn blocks(&self) -> &'static [Block] {
        &[CALLS]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<response>"]
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        invoke::peek_name(partial)
    }

    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        invoke::PARAMETER.inside_value(body)
    }

    fn cuttable(&self, _block: &Block, _body: &str) -> bool {
        true
    }

    fn parse(&self, _block: &Block, body: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
        invoke::parse(body, tools)
    }
}

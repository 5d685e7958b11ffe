//! The XML form Claude models were trained on before native tools, for models that know it:
//! `<function_calls>` around one or more `<invoke name="…">` elements (see [`super::invoke`]);
//! a lone `<invoke>` is read too. Results come back as
//! `<function_results><result><tool_name>…</tool_name><stdout>…</stdout></result></function_results>`.

use serde_json::Value;

use super::{Block, Dialect, Parsed, invoke};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct Anthropic;

const CALLS: Block = Block {
    open: "<function_calls>",
    close: "</function_calls>",
};

const LONE: Block = Block {
    open: "<invoke",
    close: "</invoke>",
};

impl Dialect for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn instructions(&self) -> String {
        format!(
            "To call tools, write a <function_calls> element holding one <invoke> element per \
             call, naming the tool, with one <parameter> element per argument:\n{}\nWrite text \
             values as they are (no escaping); write numbers, booleans, arrays and objects as \
             JSON. Results come back in a <function_results> element.",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "<function_calls>\n{}\n</function_calls>",
            invoke::encode(name, arguments)
        )
    }

    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String {
        let stream = if is_error { "error" } else { "stdout" };
        format!(
            "<function_results>\n<result>\n<tool_name>{name}</tool_name>\n<{stream}>\n{output}\n</{stream}>\n</result>\n</function_results>"
        )
    }

    fn blocks(&self) -> &'static [Block] {
        &[CALLS, LONE]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<function_results>"]
    }

    fn peek_name(&self, block: &Block, partial: &str) -> Option<String> {
        if block.open == LONE.open {
            return invoke::peek_name(&format!("<invoke{partial}"));
        }
        invoke::peek_name(partial)
    }

    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        invoke::PARAMETER.inside_value(body)
    }

    fn cuttable(&self, _block: &Block, _body: &str) -> bool {
        true
    }

    fn parse(&self, block: &Block, body: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
        if block.open == LONE.open {
            return invoke::parse(&format!("<invoke{body}</invoke>"), tools);
        }
        invoke::parse(body, tools)
    }
}

//! GLM-4.5/4.6: `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>`,
//! results in `<tool_response>` tags (GLM's template puts them under `<|observation|>`).

use serde_json::Value;

use super::hermes::{
    RESPONSE_MARKERS, TOOL_CALL, parse_tool_call_body, peek_tool_call_name, tool_response,
};
use super::{Block, Dialect, Parsed};
use crate::agent::protocol::stream::ToolSpec;

pub struct Glm;

impl Dialect for Glm {
    fn name(&self) -> &'static str {
        "glm"
    }

    fn instructions(&self) -> String {
        "To call a tool, write the tool's name on the first line inside <tool_call></tool_call> \
         tags, then each argument as an <arg_key> tag followed by its <arg_value> tag, one call \
         per pair of <tool_call> tags:\n<tool_call>read\n<arg_key>path</arg_key>\n\
         <arg_value>src/main.rs</arg_value>\n</tool_call>\nWrite text values as they are; \
         write numbers, booleans, arrays and objects as JSON. Results come back inside \
         <tool_response></tool_response> tags."
            .into()
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        let mut s = format!("<tool_call>{name}\n");
        if let Value::Object(map) = arguments {
            for (k, v) in map {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                s.push_str(&format!(
                    "<arg_key>{k}</arg_key>\n<arg_value>{text}</arg_value>\n"
                ));
            }
        }
        s.push_str("</tool_call>");
        s
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

    fn parse(&self, _block: &Block, body: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
        parse_tool_call_body(body, tools)
    }
}

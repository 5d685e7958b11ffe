//! GLM-4.5/4.6: `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>`,
//! results in `<tool_response>` tags (GLM's template puts them under `<|observation|>`).

use serde_json::Value;

use super::hermes::ToolCallFamily;
use super::text_arguments;

pub(crate) const GLM: ToolCallFamily = ToolCallFamily {
    name: "glm",
    instructions: "To call a tool, write the tool's name on the first line inside <tool_call></tool_call> \
         tags, then each argument as an <arg_key> tag followed by its <arg_value> tag, one call \
         per pair of <tool_call> tags:\n<tool_call>read\n<arg_key>path</arg_key>\n\
         <arg_value>src/main.rs</arg_value>\n</tool_call>\nWrite text values as they are; \
         write numbers, booleans, arrays and objects as JSON. Results come back inside \
         <tool_response></tool_response> tags.",
    encode_call,
};

fn encode_call(name: &str, arguments: &Value) -> String {
    let mut s = format!("<tool_call>{name}\n");
    for (k, text) in text_arguments(arguments) {
        s.push_str(&format!(
            "<arg_key>{k}</arg_key>\n<arg_value>{text}</arg_value>\n"
        ));
    }
    s.push_str("</tool_call>");
    s
}

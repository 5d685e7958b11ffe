//! qwen3-coder: `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`,
//! results in `<tool_response>` tags. Values are plain text; a parameter whose schema type is
//! not `string` is read as JSON. A value may hold any tag, `</tool_call>` and `</parameter>`
//! included, as long as its own `</parameter>` is followed by the next tag.

use serde_json::Value;

use super::hermes::ToolCallFamily;
use super::tagged_calls::CallTags;
use super::values::Tagged;
use super::{Parsed, text_arguments};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) const QWEN3: ToolCallFamily = ToolCallFamily {
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
pub(crate) const PARAMETER: Tagged = Tagged {
    open: "<parameter=",
    close: "</parameter>",
    next: &["<parameter=", "</function>"],
};

/// qwen3-coder's calls: `<function=NAME>` holding `<parameter=KEY>` values.
const CALLS: CallTags = CallTags {
    params: PARAMETER,
    open: "<function=",
    close: "</function>",
    call_shown: "<function=…>",
    param_shown: "<parameter=…>",
    stray_close: "a </function> without its <function=…>",
    keyless: "a <parameter=…> names no parameter",
    call_name: |name| name.trim().to_string(),
    key: |tag| Some(tag.trim().to_string()),
    first_call: open_name,
};

/// Every `<function=NAME>` … `</function>` in `t`. A value runs to the `</parameter>` that is
/// followed by the next tag (see [`super::values`]); a call whose frame holds anything else,
/// or that is not closed, is a call that could not be read.
pub(crate) fn parse_functions(t: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
    CALLS.parse(t, tools)
}

/// The function named at the start of `t`, for an error about a call that has no end.
fn open_name(t: &str) -> Option<String> {
    let rest = t.trim_start().strip_prefix("<function=")?;
    Some(rest[..rest.find('>')?].trim().to_string())
}

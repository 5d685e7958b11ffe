//! The `<invoke>` body shared by the anthropic and minimax dialects:
//!
//! ```text
//! <invoke name="read">
//! <parameter name="path">src/main.rs</parameter>
//! </invoke>
//! ```
//!
//! Values are raw text (no entity escaping); a parameter whose schema type is not `string`
//! is read as JSON. A value may hold any tag, `</parameter>` and `</invoke>` included, as long
//! as its own `</parameter>` is followed by the next `<parameter>` or `</invoke>`.

use serde_json::Value;

use super::tagged_calls::CallTags;
use super::values::{Tagged, attribute};
use super::{Parsed, text_arguments};
use crate::agent::protocol::stream::ToolSpec;

/// A parameter's value.
pub(crate) const PARAMETER: Tagged = Tagged {
    open: "<parameter",
    close: "</parameter>",
    next: &["<parameter", "</invoke>"],
};

/// One call as an `<invoke>` element.
pub(crate) fn encode(name: &str, arguments: &Value) -> String {
    let mut s = format!("<invoke name=\"{name}\">\n");
    for (k, text) in text_arguments(arguments) {
        s.push_str(&format!("<parameter name=\"{k}\">{text}</parameter>\n"));
    }
    s.push_str("</invoke>");
    s
}

/// The name of the first `<invoke name="…">` in text cut short, once its tag is complete.
pub(crate) fn peek_name(partial: &str) -> Option<String> {
    let at = partial.find("<invoke")?;
    let rest = &partial[at + "<invoke".len()..];
    attribute(&rest[..rest.find('>')?], "name").filter(|n| !n.is_empty())
}

/// `<invoke name="…">` calls holding `<parameter name="…">` values.
pub(crate) const CALLS: CallTags = CallTags {
    params: PARAMETER,
    open: "<invoke",
    close: "</invoke>",
    call_shown: "<invoke>",
    param_shown: "<parameter>",
    stray_close: "an </invoke> without its <invoke>",
    keyless: "a <parameter> has no name=\"…\"",
    call_name: |attrs| attribute(attrs, "name").unwrap_or_default(),
    key: |tag| attribute(tag, "name"),
    first_call: peek_name,
};

/// Every `<invoke>` element in `t`; a call whose frame holds anything else, or that is not
/// closed, is a call that could not be read.
pub(crate) fn parse(t: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
    CALLS.parse(t, tools)
}

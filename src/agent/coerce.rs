//! The single boundary for untrusted tool output. (stub: to be completed)

use serde_json::Value;

use super::tool::ToolOutput;

/// Text shown when an error result has nothing to say.
pub const EMPTY_ERROR_TEXT: &str = "Tool failed without any output.";

/// Strip escape sequences and control characters a terminal or provider must not see.
pub fn sanitize_text(s: &str) -> String {
    s.to_string()
}

/// Coerce a typed tool result. Returns the result and whether it was malformed.
pub fn coerce_output(output: ToolOutput) -> (ToolOutput, bool) {
    (output, false)
}

/// Coerce an untrusted JSON result (e.g. from a hook or an external tool).
pub fn coerce_value(value: Value) -> (ToolOutput, bool) {
    match serde_json::from_value::<ToolOutput>(value) {
        Ok(o) => coerce_output(o),
        Err(_) => (ToolOutput::error("invalid result"), true),
    }
}

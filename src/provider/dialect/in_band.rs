//! Noticing a tool call a model wrote as text while pi offered it native tools: small local
//! models often answer with a bare JSON object or a `<tool_call>` block instead of a real
//! call, and nothing runs. This module only recognises the shape; the caller says once which
//! dialect would read it. A reply counts only when it *is* such a call, or ends with one on
//! lines of its own: prose, a call quoted mid-explanation and any fenced example among other
//! text are never taken (calls inside fenced blocks are text, as everywhere in pi).

use serde_json::Value;

use crate::agent::protocol::stream::ToolSpec;

/// The dialect whose form the reply `text` is (or ends with), naming one of `tools`.
pub(crate) fn shape_of(text: &str, tools: &[ToolSpec]) -> Option<&'static str> {
    let declared = |name: &str| tools.iter().any(|t| t.name == name);
    let t = text.trim();
    // The whole reply is JSON calls, bare or as the only thing in one fenced block.
    if super::json::calls_in(t, tools).is_some() {
        return Some("json");
    }
    // The reply ends with `<tool_call>{…}</tool_call>` on lines of its own.
    if let Some(body) = t
        .strip_suffix("</tool_call>")
        .and_then(|rest| rest.rsplit_once("<tool_call>"))
        .filter(|(before, _)| before.is_empty() || before.ends_with('\n'))
        .map(|(_, body)| body.trim())
    {
        if let Ok(v) = serde_json::from_str::<Value>(body)
            && names_declared_call(&v, &declared)
        {
            return Some("hermes");
        }
        if let Some(name) = function_tag_name(body)
            && declared(name)
        {
            return Some("qwen3");
        }
    }
    // qwen3-coder's `<function=name>…</function>` at the end, on lines of its own.
    if let Some(rest) = t.strip_suffix("</function>")
        && let Some((before, call)) = rest.rsplit_once("<function=")
        && (before.is_empty() || before.ends_with('\n'))
        && let Some(name) = call.split('>').next()
        && declared(name.trim())
    {
        return Some("qwen3");
    }
    None
}

/// `{"name": <declared tool>, "arguments"|"parameters": {…}}`.
fn names_declared_call(v: &Value, declared: &dyn Fn(&str) -> bool) -> bool {
    let name = v.get("name").and_then(Value::as_str);
    let args = v.get("arguments").or_else(|| v.get("parameters"));
    name.is_some_and(declared) && args.is_some_and(Value::is_object)
}

/// `NAME` of a `<function=NAME>` tag inside a `<tool_call>` block.
fn function_tag_name(body: &str) -> Option<&str> {
    let rest = body.strip_prefix("<function=")?;
    rest.split('>').next().map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        ["read", "bash"]
            .iter()
            .map(|n| ToolSpec {
                name: (*n).into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            })
            .collect()
    }

    #[test]
    fn calls_written_as_the_reply_are_recognised() {
        let t = tools();
        // Seen from Qwen2.5-Coder 0.5B on llama.cpp without a tools template.
        let bare =
            r#"{ "name": "read", "arguments": { "path": "/tmp/try/a.txt", "offset": 2000 } }"#;
        assert_eq!(shape_of(bare, &t), Some("json"));
        let fenced = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```";
        assert_eq!(shape_of(fenced, &t), Some("json"));
        let tagged = "I'll look.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>";
        assert_eq!(shape_of(tagged, &t), Some("hermes"));
        let qwen = "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(shape_of(qwen, &t), Some("qwen3"));
        let coder =
            "Running it.\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>";
        assert_eq!(shape_of(coder, &t), Some("qwen3"));
    }

    #[test]
    fn prose_examples_and_undeclared_tools_are_not_calls() {
        let t = tools();
        for text in [
            "To read a file, call read with a path.",
            // A labelled example inside an explanation.
            "Example:\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```\nThat is how it looks.",
            // A fenced example after prose.
            "You could send:\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```",
            // Mentioned mid-line.
            "The tag <tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call>",
            // A tool pi did not offer.
            r#"{"name": "browse", "arguments": {"url": "x"}}"#,
            // JSON that is data, not a call.
            r#"{"name": "read", "version": 2}"#,
        ] {
            assert_eq!(shape_of(text, &t), None, "{text}");
        }
    }
}

//! An MCP `tools/call` result as a tool result.
//!
//! Text blocks stay text; images become image blocks; an embedded text resource becomes its
//! text, a binary one or a resource link a line naming it; audio is named, not sent. When the
//! result has no text at all, its `structuredContent` goes in as JSON text. `isError` makes an
//! error result. The mapping works on the result's JSON form, so it follows the protocol's
//! field names rather than one SDK version's types.

use serde_json::{Value, json};

use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::{ContentBlock, ImageContent};

/// `result` (a `CallToolResult` as JSON) from `server`'s tool `tool`.
pub fn to_output(server: &str, tool: &str, result: &Value) -> ToolOutput {
    let mut content = Vec::new();
    let mut has_text = false;
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let str_of = |k: &str| block.get(k).and_then(Value::as_str);
        match kind {
            "text" => {
                content.push(ContentBlock::text(str_of("text").unwrap_or_default()));
                has_text = true;
            }
            "image" => match (str_of("data"), str_of("mimeType")) {
                (Some(data), Some(mime)) => content.push(ContentBlock::Image(ImageContent {
                    data: data.to_string(),
                    mime_type: mime.to_string(),
                    detail: None,
                })),
                _ => {
                    content.push(ContentBlock::text("[an image without data]"));
                    has_text = true;
                }
            },
            "resource" => {
                let r = block.get("resource").unwrap_or(&Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
                let line = match r.get("text").and_then(Value::as_str) {
                    Some(text) => text.to_string(),
                    None => format!("[binary resource {uri}]"),
                };
                content.push(ContentBlock::text(line));
                has_text = true;
            }
            "resource_link" => {
                let uri = str_of("uri").unwrap_or("?");
                let line = match str_of("name") {
                    Some(name) => format!("[resource {name}: {uri}]"),
                    None => format!("[resource {uri}]"),
                };
                content.push(ContentBlock::text(line));
                has_text = true;
            }
            "audio" => {
                let mime = str_of("mimeType").unwrap_or("audio");
                content.push(ContentBlock::text(format!("[{mime} audio, not shown]")));
                has_text = true;
            }
            other => {
                content.push(ContentBlock::text(format!(
                    "[a `{other}` block pi cannot show]"
                )));
                has_text = true;
            }
        }
    }
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if !has_text && let Some(s) = structured {
        content.insert(
            0,
            ContentBlock::text(serde_json::to_string_pretty(s).unwrap_or_default()),
        );
    }
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if content.is_empty() {
        content.push(ContentBlock::text(if is_error {
            "The tool failed without saying why."
        } else {
            "(no output)"
        }));
    }
    let mut details = json!({ "server": server, "tool": tool });
    if let Some(s) = structured {
        details["structuredContent"] = s.clone();
    }
    ToolOutput {
        content,
        details,
        is_error,
        useless: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_images_structured_and_errors_map() {
        let out = to_output(
            "s",
            "t",
            &json!({"content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ]}),
        );
        assert!(!out.is_error);
        assert_eq!(out.content.len(), 4);
        assert_eq!(out.content[0].as_text(), Some("hello"));
        let ContentBlock::Image(img) = &out.content[1] else {
            panic!("image expected")
        };
        assert_eq!(img.mime_type, "image/png");
        assert_eq!(out.content[2].as_text(), Some("inside"));
        assert_eq!(out.content[3].as_text(), Some("[resource b: file:///b]"));
        assert_eq!(out.details["server"], "s");

        let out = to_output(
            "s",
            "t",
            &json!({"content": [], "structuredContent": {"n": 1}}),
        );
        assert!(out.content[0].as_text().unwrap().contains("\"n\": 1"));
        assert_eq!(out.details["structuredContent"]["n"], 1);

        let with_text = to_output(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": "{\"n\":1}"}], "structuredContent": {"n": 1}}),
        );
        assert_eq!(with_text.content.len(), 1, "text already carries it");

        let err = to_output(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
        );
        assert!(err.is_error);
        let empty = to_output("s", "t", &json!({"isError": true}));
        assert!(empty.is_error && empty.content.len() == 1);
        assert_eq!(
            to_output("s", "t", &json!({})).content[0].as_text(),
            Some("(no output)")
        );
    }
}

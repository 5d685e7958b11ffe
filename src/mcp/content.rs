//! An MCP `tools/call` result as a tool result.
//!
//! Text blocks stay text; images become image blocks; an embedded text resource becomes its
//! text, a binary one or a resource link a line naming it; audio is named, not sent. When the
//! result has no text at all, its `structuredContent` goes in as JSON text. `isError` makes an
//! error result. The mapping works on the result's JSON form, so it follows the protocol's
//! field names rather than one SDK version's types.
//!
//! [`fit`] then holds the text to the tools' output limits (`[tools] max_lines` and
//! `max_bytes`, over all text blocks together): the first lines are kept and a notice in the
//! usual brackets says how much was shown and that the rest was left out.

use serde_json::{Value, json};

use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::{ContentBlock, ImageContent};
use crate::tools::truncate::{ToolLimits, count_lines, format_size, limit_size, truncate_head};

/// `result` (a `CallToolResult` as JSON) from `server`'s tool `tool`.
pub(crate) fn to_output(server: &str, tool: &str, result: &Value) -> ToolOutput {
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

/// Cut the text of `out` to `limits`, as the module note says. Images are kept as they are.
pub(crate) fn fit(out: &mut ToolOutput, limits: &ToolLimits) {
    let texts = || out.content.iter().filter_map(ContentBlock::as_text);
    let total_bytes: usize = texts().map(str::len).sum();
    let total_lines: usize = texts().map(count_lines).sum();
    if total_bytes <= limits.max_bytes && total_lines <= limits.max_lines {
        return;
    }
    let (mut lines_left, mut bytes_left) = (limits.max_lines, limits.max_bytes);
    let mut shown_lines = 0;
    // Set once a block was cut: the text after it is left out.
    let mut cut_by: Option<&str> = None;
    let mut partial_line = false;
    let mut kept = Vec::with_capacity(out.content.len());
    for block in std::mem::take(&mut out.content) {
        let Some(text) = block.as_text() else {
            kept.push(block);
            continue;
        };
        if cut_by.is_some() {
            continue;
        }
        let t = truncate_head(text, lines_left, bytes_left);
        if !t.truncated() {
            lines_left -= t.output_lines;
            bytes_left = bytes_left.saturating_sub(t.output_bytes + 1);
            shown_lines += t.output_lines;
            kept.push(block);
            continue;
        }
        let mut part = t.content;
        if t.first_line_exceeds_limit && shown_lines == 0 {
            // One line bigger than the whole limit (a JSON document on one line): its start.
            let mut end = bytes_left.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            part = text.get(..end).unwrap_or_default().to_string();
            partial_line = true;
        }
        shown_lines += t.output_lines;
        cut_by = Some(t.truncated_by.map_or("bytes", |l| l.as_str()));
        if !part.is_empty() {
            kept.push(ContentBlock::text(part));
        }
    }
    let why = match cut_by {
        Some("lines") => format!("{}-line limit", limits.max_lines),
        _ => format!("{} limit", limit_size(limits.max_bytes)),
    };
    let shown = if partial_line {
        format!(
            "The first {} of a line of {} shown ({why})",
            limit_size(limits.max_bytes),
            format_size(total_bytes as u64)
        )
    } else {
        format!("Lines 1-{shown_lines} of {total_lines} shown ({why})")
    };
    kept.push(ContentBlock::text(format!(
        "[{shown}. The rest of the result ({} in all) was left out: ask the tool for less, \
         such as a narrower query, a page or a range.]",
        format_size(total_bytes as u64)
    )));
    out.content = kept;
    if out.details.is_object() {
        out.details["truncation"] = json!({
            "truncatedBy": if cut_by == Some("lines") { "lines" } else { "bytes" },
            "totalLines": total_lines,
            "totalBytes": total_bytes,
            "outputLines": shown_lines,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> ToolLimits {
        ToolLimits {
            max_lines,
            max_bytes,
            ..ToolLimits::default()
        }
    }

    fn texts(out: &ToolOutput) -> Vec<String> {
        out.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_result_within_the_limits_is_untouched() {
        let mut out = to_output(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": "a\nb"}]}),
        );
        let before = out.clone();
        fit(&mut out, &limits(2, 3));
        assert_eq!(out, before);
    }

    #[test]
    fn long_results_keep_their_first_lines_and_say_so() {
        let body: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let mut out = to_output(
            "s",
            "t",
            &json!({"content": [
                {"type": "text", "text": "head"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": body},
                {"type": "text", "text": "never shown"}
            ]}),
        );
        fit(&mut out, &limits(4, 1000));
        let t = texts(&out);
        assert_eq!(t[0], "head");
        assert_eq!(t[1], "line 1\nline 2\nline 3");
        assert!(
            t[2].starts_with("[Lines 1-4 of 12 shown (4-line limit). The rest of the result"),
            "{t:?}"
        );
        assert_eq!(t.len(), 3);
        assert!(
            matches!(out.content[1], ContentBlock::Image(_)),
            "images stay"
        );
        assert_eq!(out.details["truncation"]["truncatedBy"], "lines");
        assert_eq!(out.details["server"], "s");

        let mut out = to_output(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": body}]}),
        );
        fit(&mut out, &limits(100, 20));
        let t = texts(&out);
        assert_eq!(t[0], "line 1\nline 2\nline 3");
        assert!(t[1].contains("Lines 1-3 of 10 shown (20 B limit)"), "{t:?}");
    }

    #[test]
    fn one_huge_line_keeps_its_start() {
        let line = format!("é{}", "x".repeat(5000));
        let mut out = to_output(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": line}]}),
        );
        fit(&mut out, &limits(100, 1024));
        let t = texts(&out);
        assert_eq!(t[0].len(), 1024);
        assert!(t[0].starts_with('é'));
        assert!(
            t[1].starts_with("[The first 1 KB of a line of 4.9 KB shown (1 KB limit)."),
            "{t:?}"
        );
    }

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

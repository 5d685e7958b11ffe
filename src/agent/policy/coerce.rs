//! The one gate every tool result passes before the loop trusts it.
//!
//! Tools, hooks and external processes can hand back anything: terminal colour codes, stray
//! control characters, thinking or tool-call blocks that have no business in a tool result, or
//! JSON that is not a result at all. This module turns any of that into a well-formed
//! [`ToolOutput`]:
//!
//! * text is cleaned by [`sanitize_text`] (escape sequences and control characters removed);
//! * only text and image blocks survive; every other block is dropped, counted, and reported in
//!   an extra text block, which also turns the result into an error;
//! * an error that says nothing (no image, no non-blank text) gets [`EMPTY_ERROR_TEXT`], because
//!   some providers reject empty error results;
//! * `useless` is only kept on successful results.
//!
//! [`coerce_output`] handles typed results; [`coerce_value`] handles untrusted JSON. Both return
//! the result and whether it was malformed. Cleaning is a byte scan that allocates nothing when
//! the text is already clean, since it runs on every tool output and every progress update.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::{ContentBlock, ImageContent, TextContent, empty_object};

/// Text shown when an error result has nothing to say.
pub const EMPTY_ERROR_TEXT: &str = "Tool failed without any output.";

/// Text of the error result made for JSON that has no `content` array.
pub const MISSING_CONTENT_TEXT: &str =
    "The tool's result was malformed: it has no content array, so nothing could be shown.";

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// Strip escape sequences and control characters a terminal or provider must not see.
///
/// Removes CSI (`ESC [ … final`), OSC/DCS/SOS/PM/APC strings (`ESC ] … BEL` or `… ESC \`),
/// other short `ESC` sequences, C0 controls except TAB and LF (so CR goes too), DEL, and the C1
/// controls U+0080–U+009F (an 8-bit CSI takes its parameters with it). Rust strings cannot hold
/// lone surrogates, so there are none to drop.
pub fn sanitize_text(s: &str) -> String {
    sanitize_text_cow(s).into_owned()
}

/// [`sanitize_text`] without the copy: borrows the input when it is already clean.
pub fn sanitize_text_cow(s: &str) -> Cow<'_, str> {
    match first_unsafe_byte(s.as_bytes()) {
        None => Cow::Borrowed(s),
        Some(start) => Cow::Owned(sanitize_from(s, start)),
    }
}

/// Sanitize an owned string, replacing it only when something had to be removed.
pub fn sanitize_in_place(s: &mut String) {
    if let Some(start) = first_unsafe_byte(s.as_bytes()) {
        let clean = sanitize_from(s, start);
        *s = clean;
    }
}

/// A C0 control other than TAB/LF, or DEL.
fn is_plain_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t' && b != b'\n') || b == 0x7f
}

/// The second byte of a C1 control's UTF-8 encoding (`0xC2 0x80..=0x9F`).
fn is_c1_tail(b: Option<&u8>) -> bool {
    matches!(b, Some(0x80..=0x9f))
}

fn first_unsafe_byte(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if is_plain_control(b) || (b == 0xc2 && is_c1_tail(bytes.get(i + 1))) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Cleans `s`, known to be clean before `start`.
///
/// Every sequence removed starts and ends on an ASCII byte or a whole two-byte C1 character, so
/// every cut lands on a character boundary.
fn sanitize_from(s: &str, start: usize) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut run = 0;
    let mut i = start;
    while let Some(&b) = bytes.get(i) {
        let skip_to = if b == ESC {
            Some(skip_escape(bytes, i))
        } else if b == 0xc2 && is_c1_tail(bytes.get(i + 1)) {
            if bytes.get(i + 1) == Some(&0x9b) {
                Some(skip_csi_body(bytes, i + 2))
            } else {
                Some(i + 2)
            }
        } else if is_plain_control(b) {
            Some(i + 1)
        } else {
            None
        };
        match skip_to {
            Some(end) => {
                out.push_str(s.get(run..i).unwrap_or_default());
                i = end.max(i + 1);
                run = i;
            }
            None => i += 1,
        }
    }
    out.push_str(s.get(run..).unwrap_or_default());
    out
}

/// End (exclusive) of the escape sequence whose `ESC` is at `i`.
fn skip_escape(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i + 1) {
        Some(b'[') => skip_csi_body(bytes, i + 2),
        // OSC, DCS, SOS, PM, APC: a string up to a terminator. Without one, only ESC goes,
        // so a stray ESC never swallows the rest of the output.
        Some(b']' | b'P' | b'X' | b'^' | b'_') => skip_string_body(bytes, i + 2).unwrap_or(i + 1),
        // Intermediate bytes, then a final byte (e.g. `ESC ( B`).
        Some(0x20..=0x2f) => {
            let mut j = i + 1;
            while matches!(bytes.get(j), Some(0x20..=0x2f)) {
                j += 1;
            }
            if matches!(bytes.get(j), Some(0x30..=0x7e)) {
                j + 1
            } else {
                i + 1
            }
        }
        // A two-byte sequence (`ESC 7`, `ESC M`, `ESC c`, ...).
        Some(0x30..=0x7e) => i + 2,
        _ => i + 1,
    }
}

/// Skips CSI parameter and intermediate bytes and the final byte. A sequence cut short is
/// dropped up to the byte that broke it.
fn skip_csi_body(bytes: &[u8], mut j: usize) -> usize {
    while let Some(&c) = bytes.get(j) {
        match c {
            0x20..=0x3f => j += 1,
            0x40..=0x7e => return j + 1,
            _ => return j,
        }
    }
    j
}

/// End of a control string starting at `j`: after BEL, `ESC \` or an 8-bit ST; at any other
/// `ESC` (which starts a new sequence). `None` when the string never ends.
fn skip_string_body(bytes: &[u8], mut j: usize) -> Option<usize> {
    while let Some(&c) = bytes.get(j) {
        match c {
            BEL => return Some(j + 1),
            ESC if bytes.get(j + 1) == Some(&b'\\') => return Some(j + 2),
            ESC => return Some(j),
            0xc2 if bytes.get(j + 1) == Some(&0x9c) => return Some(j + 2),
            _ => j += 1,
        }
    }
    None
}

/// The note appended when `n` blocks were dropped.
fn invalid_blocks_text(n: usize) -> String {
    if n == 1 {
        "The tool's result was malformed: 1 content block had an unsupported shape and was dropped."
            .to_string()
    } else {
        format!(
            "The tool's result was malformed: {n} content blocks had an unsupported shape and were dropped."
        )
    }
}

/// True when the content carries an image or any non-blank text.
fn has_output(content: &[ContentBlock]) -> bool {
    content.iter().any(|b| match b {
        ContentBlock::Image(_) => true,
        ContentBlock::Text(t) => !t.text.trim().is_empty(),
        _ => false,
    })
}

/// Applies the rules shared by both entry points to already-filtered blocks.
fn finish(
    mut content: Vec<ContentBlock>,
    invalid: usize,
    details: Value,
    is_error: bool,
    useless: bool,
) -> (ToolOutput, bool) {
    let malformed = invalid > 0;
    if malformed {
        content.push(ContentBlock::text(invalid_blocks_text(invalid)));
    }
    let is_error = is_error || malformed;
    if is_error && !has_output(&content) {
        content = vec![ContentBlock::text(EMPTY_ERROR_TEXT)];
    }
    let output = ToolOutput {
        content,
        details,
        is_error,
        useless: useless && !is_error,
    };
    (output, malformed)
}

/// Coerce a typed tool result. Returns the result and whether it was malformed.
pub fn coerce_output(output: ToolOutput) -> (ToolOutput, bool) {
    let ToolOutput {
        content,
        details,
        is_error,
        useless,
    } = output;
    let mut kept = Vec::with_capacity(content.len());
    let mut invalid = 0usize;
    for block in content {
        match block {
            ContentBlock::Text(mut t) => {
                sanitize_in_place(&mut t.text);
                kept.push(ContentBlock::Text(t));
            }
            ContentBlock::Image(img) => kept.push(ContentBlock::Image(img)),
            ContentBlock::Thinking(_)
            | ContentBlock::RedactedThinking(_)
            | ContentBlock::ToolCall(_) => invalid += 1,
        }
    }
    finish(kept, invalid, details, is_error, useless)
}

/// Coerce an untrusted JSON result (e.g. from a hook or an external tool).
pub fn coerce_value(value: Value) -> (ToolOutput, bool) {
    let Value::Object(mut map) = value else {
        return (missing_content(empty_object()), true);
    };
    let details = map.remove("details").unwrap_or_else(empty_object);
    let blocks = match map.remove("content") {
        Some(Value::Array(blocks)) => blocks,
        _ => return (missing_content(details), true),
    };
    let is_error = map.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let useless = map.get("useless").and_then(Value::as_bool).unwrap_or(false);
    let mut kept = Vec::with_capacity(blocks.len());
    let mut invalid = 0usize;
    for block in blocks {
        match block_from_value(block) {
            Some(b) => kept.push(b),
            None => invalid += 1,
        }
    }
    finish(kept, invalid, details, is_error, useless)
}

fn missing_content(details: Value) -> ToolOutput {
    ToolOutput::error(MISSING_CONTENT_TEXT).with_details(details)
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

enum BlockKind {
    Text,
    Image,
}

/// A text or image block from untrusted JSON; `None` for anything else.
fn block_from_value(value: Value) -> Option<ContentBlock> {
    let Value::Object(mut map) = value else {
        return None;
    };
    let kind = match map.get("type").and_then(Value::as_str) {
        Some("text") => BlockKind::Text,
        Some("image") => BlockKind::Image,
        _ => return None,
    };
    match kind {
        BlockKind::Text => {
            let mut text = take_string(&mut map, "text")?;
            sanitize_in_place(&mut text);
            Some(ContentBlock::Text(TextContent {
                text,
                text_signature: take_string(&mut map, "textSignature"),
                ..Default::default()
            }))
        }
        BlockKind::Image => {
            let data = take_string(&mut map, "data")?;
            let mime_type = take_string(&mut map, "mimeType")?;
            Some(ContentBlock::Image(ImageContent {
                data,
                mime_type,
                detail: take_string(&mut map, "detail"),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{RedactedThinkingContent, ThinkingContent, ToolCall};
    use serde_json::json;

    fn texts(o: &ToolOutput) -> Vec<&str> {
        o.content.iter().filter_map(ContentBlock::as_text).collect()
    }

    fn image() -> ContentBlock {
        ContentBlock::Image(ImageContent {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
            detail: None,
        })
    }

    fn thinking() -> ContentBlock {
        ContentBlock::Thinking(ThinkingContent {
            thinking: "hmm".into(),
            ..Default::default()
        })
    }

    fn output(content: Vec<ContentBlock>, is_error: bool, useless: bool) -> ToolOutput {
        ToolOutput {
            content,
            details: json!({"k": 1}),
            is_error,
            useless,
        }
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        let s = "plain\ttext\nwith ünïcödé ✓ and emoji 🦀";
        assert!(matches!(sanitize_text_cow(s), Cow::Borrowed(_)));
        assert_eq!(sanitize_text(s), s);
        assert_eq!(sanitize_text(""), "");
        let mut owned = s.to_string();
        let before = owned.as_ptr();
        sanitize_in_place(&mut owned);
        assert_eq!(owned.as_ptr(), before);
    }

    #[test]
    fn csi_sequences_are_removed() {
        assert_eq!(sanitize_text("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(sanitize_text("a\x1b[1;32;48;5;200mb\x1b[Kc"), "abc");
        assert_eq!(sanitize_text("\x1b[?25lhidden\x1b[?25h"), "hidden");
        // cut short at the end: the fragment goes, nothing else
        assert_eq!(sanitize_text("ok\x1b[12"), "ok");
        // broken by a non-CSI byte: that byte survives
        assert_eq!(sanitize_text("\x1b[12ü"), "ü");
    }

    #[test]
    fn osc_and_string_sequences_are_removed() {
        assert_eq!(sanitize_text("\x1b]0;title\x07after"), "after");
        assert_eq!(
            sanitize_text("\x1b]8;;https://e.x/ü\x1b\\link\x1b]8;;\x1b\\"),
            "link"
        );
        assert_eq!(sanitize_text("\x1bPq#0;1\x1b\\x"), "x");
        assert_eq!(sanitize_text("\x1b]2;t\u{9c}y"), "y");
        // unterminated: only ESC goes, the text stays
        assert_eq!(sanitize_text("a\x1b]not closed"), "a]not closed");
    }

    #[test]
    fn short_escape_sequences_are_removed() {
        assert_eq!(sanitize_text("a\x1b7b\x1b8c"), "abc");
        assert_eq!(sanitize_text("\x1b(Bx"), "x");
        assert_eq!(sanitize_text("x\x1b"), "x");
        assert_eq!(sanitize_text("x\x1b\x1b[0my"), "xy");
    }

    #[test]
    fn c0_del_and_cr_are_dropped_tab_and_lf_kept() {
        assert_eq!(sanitize_text("a\r\nb\rc"), "a\nbc");
        assert_eq!(sanitize_text("x\u{0}y\u{7}z\u{8}\u{7f}w"), "xyzw");
        assert_eq!(sanitize_text("t\tl\n"), "t\tl\n");
    }

    #[test]
    fn c1_controls_are_dropped() {
        assert_eq!(sanitize_text("a\u{80}b\u{85}c\u{9f}d"), "abcd");
        // 8-bit CSI takes its parameters along
        assert_eq!(sanitize_text("\u{9b}31mred\u{9b}0m"), "red");
        // U+00A0 and other Latin-1 characters are not controls
        assert_eq!(sanitize_text("\u{a0}é"), "\u{a0}é");
    }

    #[test]
    fn text_is_sanitized_and_images_kept() {
        let (o, malformed) = coerce_output(output(
            vec![ContentBlock::text("\x1b[1mbold\x1b[0m\r\n"), image()],
            false,
            false,
        ));
        assert!(!malformed);
        assert!(!o.is_error);
        assert_eq!(texts(&o), vec!["bold\n"]);
        assert!(matches!(o.content[1], ContentBlock::Image(_)));
        assert_eq!(o.details, json!({"k": 1}));
    }

    #[test]
    fn one_invalid_block_is_reported_in_the_singular() {
        let (o, malformed) = coerce_output(output(
            vec![ContentBlock::text("fine"), thinking()],
            false,
            true,
        ));
        assert!(malformed);
        assert!(o.is_error);
        assert!(!o.useless);
        let t = texts(&o);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0], "fine");
        assert!(t[1].contains("1 content block had"), "{}", t[1]);
    }

    #[test]
    fn several_invalid_blocks_are_reported_in_the_plural() {
        let call = ContentBlock::ToolCall(ToolCall {
            id: "c".into(),
            name: "x".into(),
            arguments: json!({}),
            intent: None,
            thought_signature: None,
        });
        let redacted = ContentBlock::RedactedThinking(RedactedThinkingContent { data: "z".into() });
        let (o, malformed) = coerce_output(output(vec![thinking(), call, redacted], false, false));
        assert!(malformed);
        assert!(o.is_error);
        assert_eq!(o.content.len(), 1);
        assert!(texts(&o)[0].contains("3 content blocks had"));
    }

    #[test]
    fn empty_error_gets_fallback_text() {
        let (o, malformed) = coerce_output(output(vec![], true, false));
        assert!(!malformed);
        assert!(o.is_error);
        assert_eq!(texts(&o), vec![EMPTY_ERROR_TEXT]);
    }

    #[test]
    fn whitespace_only_error_gets_fallback_text() {
        let (o, _) = coerce_output(output(
            vec![
                ContentBlock::text("  \n\t"),
                ContentBlock::text("\x1b[0m\r"),
            ],
            true,
            false,
        ));
        assert_eq!(o.content, vec![ContentBlock::text(EMPTY_ERROR_TEXT)]);
    }

    #[test]
    fn an_image_counts_as_error_output() {
        let (o, _) = coerce_output(output(vec![image()], true, false));
        assert_eq!(o.content, vec![image()]);
    }

    #[test]
    fn empty_success_is_left_empty() {
        let (o, malformed) = coerce_output(output(vec![], false, false));
        assert!(!malformed && !o.is_error);
        assert!(o.content.is_empty());
    }

    #[test]
    fn useless_kept_on_success_dropped_on_error() {
        let (ok, _) = coerce_output(output(vec![ContentBlock::text("x")], false, true));
        assert!(ok.useless);
        let (err, _) = coerce_output(output(vec![ContentBlock::text("x")], true, true));
        assert!(!err.useless);
    }

    #[test]
    fn value_without_content_array_is_malformed() {
        for v in [
            json!("text"),
            json!(null),
            json!([1, 2]),
            json!({}),
            json!({"content": "x"}),
        ] {
            let (o, malformed) = coerce_value(v.clone());
            assert!(malformed, "{v}");
            assert!(o.is_error);
            assert_eq!(texts(&o), vec![MISSING_CONTENT_TEXT]);
            assert_eq!(o.details, json!({}));
        }
        let (o, _) = coerce_value(json!({"content": 3, "details": {"a": 1}}));
        assert_eq!(o.details, json!({"a": 1}));
    }

    #[test]
    fn value_details_default_and_explicit() {
        let (o, _) = coerce_value(json!({"content": [{"type": "text", "text": "hi"}]}));
        assert_eq!(o.details, json!({}));
        let (o, _) = coerce_value(json!({"content": [], "details": null}));
        assert_eq!(o.details, Value::Null);
    }

    #[test]
    fn value_blocks_are_checked_by_shape() {
        let (o, malformed) = coerce_value(json!({
            "content": [
                {"type": "text", "text": "\x1b[32mok\x1b[0m"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": 5},
                {"type": "image", "data": "AAAA"},
                {"type": "thinking", "thinking": "x"},
                "bare string",
                {"text": "no type"}
            ],
            "useless": true
        }));
        assert!(malformed);
        assert!(o.is_error);
        assert!(!o.useless);
        assert_eq!(o.content[0], ContentBlock::text("ok"));
        assert_eq!(o.content[1], image());
        assert_eq!(o.content.len(), 3);
        assert!(texts(&o)[1].contains("5 content blocks had"));
    }

    #[test]
    fn value_is_error_and_useless_flags() {
        let (o, malformed) = coerce_value(json!({
            "content": [{"type": "text", "text": "done"}],
            "useless": true
        }));
        assert!(!malformed && !o.is_error && o.useless);
        let (o, malformed) = coerce_value(json!({"content": [], "isError": true}));
        assert!(!malformed);
        assert!(o.is_error);
        assert_eq!(texts(&o), vec![EMPTY_ERROR_TEXT]);
        // a non-boolean isError is not an error flag
        let (o, _) =
            coerce_value(json!({"content": [{"type": "text", "text": "a"}], "isError": "yes"}));
        assert!(!o.is_error);
    }

    #[test]
    fn long_clean_and_dirty_texts_round_trip() {
        let clean = "line of output\n".repeat(10_000);
        assert_eq!(sanitize_text(&clean), clean);
        let dirty = "\x1b[31mline\x1b[0m\r\n".repeat(1_000);
        assert_eq!(sanitize_text(&dirty), "line\n".repeat(1_000));
    }
}

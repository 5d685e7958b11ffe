//! Where an argument value really ends, so a call is read whole.
//!
//! An argument may hold any text, including the dialect's own tags (a file that documents
//! `</tool_call>`, an XML file with `</arg>` in it). While the text of a call streams in, a
//! closing or result tag found inside a value is part of the value, not the end of the call;
//! and once the call is complete its values are cut at the same places. Two kinds of value:
//!
//! - JSON strings (hermes, deepseek, harmony, kimi): a tag inside a string literal of a JSON
//!   object is part of the string ([`json_string_open`]).
//! - Values between tags ([`Tagged`]: qwen3's `<parameter=…>`, GLM's `<arg_value>`, the XML
//!   form's `<arg …>`, the `<invoke>` forms' `<parameter …>`): a value's closing tag ends it
//!   only when what follows (after blanks) is the end of the call or a tag that may follow a
//!   value; any other closing tag is part of the value. A value that holds its own closing tag
//!   followed by such a tag cannot be told apart from the end of the value: the text after it
//!   is then read as the call's frame, where it does not fit, and the call becomes a call whose
//!   result tells the model it could not be read — never a shortened call that runs.

/// Follows JSON objects through text: outside them text is ignored; each `{` there starts an
/// object whose strings (with their escapes) are followed to its end.
#[derive(Default)]
struct JsonScan {
    depth: usize,
    inside: bool,
    escaped: bool,
}

impl JsonScan {
    fn step(&mut self, c: char) {
        if self.inside {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.inside = false;
            }
            return;
        }
        match c {
            '{' => self.depth += 1,
            '[' if self.depth > 0 => self.depth += 1,
            '}' | ']' if self.depth > 0 => self.depth -= 1,
            '"' if self.depth > 0 => self.inside = true,
            _ => {}
        }
    }
}

/// Whether `body` ends inside a string literal of a JSON object.
pub(crate) fn json_string_open(body: &str) -> bool {
    let mut scan = JsonScan::default();
    body.chars().for_each(|c| scan.step(c));
    scan.inside
}

/// `s` cut at each `pat` that is not inside a string of a JSON object.
pub(crate) fn split_outside_json<'a>(s: &'a str, pat: &str) -> Vec<&'a str> {
    let mut scan = JsonScan::default();
    let mut out = Vec::new();
    let mut last = 0;
    let mut skip_to = 0;
    for (i, c) in s.char_indices() {
        if i < skip_to {
            continue;
        }
        if !scan.inside && s[i..].starts_with(pat) {
            out.push(&s[last..i]);
            last = i + pat.len();
            skip_to = last;
            continue;
        }
        scan.step(c);
    }
    out.push(&s[last..]);
    out
}

/// A form whose values sit between tags, like `<parameter=path>VALUE</parameter>`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tagged {
    /// The start of a value's opening tag (`<parameter=`); the tag runs to the next `>`.
    pub open: &'static str,
    /// The value's closing tag.
    pub close: &'static str,
    /// What may follow a value's closing tag (after blanks) when it really ends the value,
    /// besides the end of the call's text.
    pub next: &'static [&'static str],
}

/// A piece of a call's text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Part<'a> {
    /// Text between values: the call's own tags, names, blanks.
    Frame(&'a str),
    /// A value: what is inside its opening tag (`path`, ` name="path"`) and its text.
    Value { tag: &'a str, text: &'a str },
}

/// A call's text cut into frames and values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Split<'a> {
    pub parts: Vec<Part<'a>>,
    /// The tag of a value whose closing tag has not come (the text ends inside it).
    pub open: Option<&'a str>,
}

impl Tagged {
    /// Where the value that starts at `from` ends: the position of the closing tag that ends
    /// it, if one has come.
    pub(crate) fn value_end(&self, body: &str, from: usize) -> Option<usize> {
        let mut at = from;
        while let Some(p) = body.get(at..)?.find(self.close) {
            let end = at + p;
            let rest = body[end + self.close.len()..].trim_start();
            if rest.is_empty() || self.next.iter().any(|n| rest.starts_with(n)) {
                return Some(end);
            }
            at = end + self.close.len();
        }
        None
    }

    /// `body` cut into frames and values.
    pub(crate) fn split<'a>(&self, body: &'a str) -> Split<'a> {
        let mut parts = Vec::new();
        let mut at = 0;
        while let Some(p) = body[at..].find(self.open) {
            let tag_start = at + p + self.open.len();
            let Some(gt) = body[tag_start..].find('>') else {
                // An opening tag not finished yet: still frame.
                break;
            };
            if p > 0 {
                parts.push(Part::Frame(&body[at..at + p]));
            }
            let tag = &body[tag_start..tag_start + gt];
            let value_start = tag_start + gt + 1;
            match self.value_end(body, value_start) {
                Some(end) => {
                    parts.push(Part::Value {
                        tag,
                        text: &body[value_start..end],
                    });
                    at = end + self.close.len();
                }
                None => {
                    parts.push(Part::Value {
                        tag,
                        text: &body[value_start..],
                    });
                    return Split {
                        parts,
                        open: Some(tag),
                    };
                }
            }
        }
        if at < body.len() {
            parts.push(Part::Frame(&body[at..]));
        }
        Split { parts, open: None }
    }

    /// Whether `body` ends inside a value (a tag found there belongs to the value).
    pub(crate) fn inside_value(&self, body: &str) -> bool {
        self.split(body).open.is_some()
    }
}

/// `frame` with every `open`…`close` span (and the blanks) taken out: what is left is text
/// that has no place between values.
pub(crate) fn stray<'a>(frame: &'a str, spans: &[(&str, &str)]) -> Option<&'a str> {
    let mut rest = frame.trim();
    'outer: while !rest.is_empty() {
        for (open, close) in spans {
            if let Some(after) = rest.strip_prefix(open)
                && let Some(end) = after.find(close)
            {
                rest = after[end + close.len()..].trim_start();
                continue 'outer;
            }
        }
        return Some(rest);
    }
    None
}

/// The value of `key="…"` (or `'…'`) among a tag's attributes.
pub(crate) fn attribute(attrs: &str, key: &str) -> Option<String> {
    let mut s = attrs;
    while let Some(at) = s.find(key) {
        let rest = s[at + key.len()..].trim_start();
        if let Some(rest) = rest.strip_prefix('=') {
            let rest = rest.trim_start();
            let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let rest = &rest[1..];
            let end = rest.find(quote)?;
            return Some(rest[..end].to_string());
        }
        s = &s[at + key.len()..];
    }
    None
}

/// The start of `s`, cut to about `max` bytes for an error message.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const QWEN: Tagged = Tagged {
        open: "<parameter=",
        close: "</parameter>",
        next: &["<parameter=", "</function>"],
    };

    #[test]
    fn json_strings_are_followed_across_objects_and_escapes() {
        assert!(json_string_open(r#"{"a": "x"#));
        assert!(!json_string_open(r#"{"a": "x"}"#));
        assert!(json_string_open(r#"{"a": "say \"hi"#));
        assert!(!json_string_open(r#"{"a": "c:\\"}"#));
        assert!(json_string_open(r#"{"a": 1} then {"b": ["x"#));
        // Quotes outside any object are prose.
        assert!(!json_string_open(r#"function "read" "#));
    }

    #[test]
    fn tags_inside_json_strings_do_not_cut_the_text() {
        let s = r#"A<end>{"x": "<end>"}<end>B"#;
        assert_eq!(
            split_outside_json(s, "<end>"),
            ["A", r#"{"x": "<end>"}"#, "B"]
        );
    }

    #[test]
    fn a_closing_tag_ends_a_value_only_before_the_frame() {
        let body = "<parameter=content>\na </parameter> b\n</parameter>\n</function>";
        let s = QWEN.split(body);
        assert_eq!(s.open, None);
        assert_eq!(
            s.parts[0],
            Part::Value {
                tag: "content",
                text: "\na </parameter> b\n"
            }
        );
        assert!(QWEN.inside_value("<parameter=content>\na </parameter> b"));
        assert!(!QWEN.inside_value("<parameter=content>\na\n</parameter>\n"));
        assert!(!QWEN.inside_value("<parameter=cont"));
    }

    #[test]
    fn stray_text_is_what_the_frame_cannot_hold() {
        let spans = [("<arg_key>", "</arg_key>")];
        assert_eq!(stray("\n<arg_key>a</arg_key>\n", &spans), None);
        assert_eq!(
            stray(" x <arg_key>a</arg_key>", &spans),
            Some("x <arg_key>a</arg_key>")
        );
    }
}

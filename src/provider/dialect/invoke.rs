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

use serde_json::{Map, Value};

use super::values::{Part, Tagged, attribute, excerpt};
use super::{Parsed, text_arguments, typed_value};
use crate::agent::protocol::stream::ToolSpec;

/// A parameter's value.
pub const PARAMETER: Tagged = Tagged {
    open: "<parameter",
    close: "</parameter>",
    next: &["<parameter", "</invoke>"],
};

/// One call as an `<invoke>` element.
pub fn encode(name: &str, arguments: &Value) -> String {
    let mut s = format!("<invoke name=\"{name}\">\n");
    for (k, text) in text_arguments(arguments) {
        s.push_str(&format!("<parameter name=\"{k}\">{text}</parameter>\n"));
    }
    s.push_str("</invoke>");
    s
}

/// The name of the first `<invoke name="…">` in text cut short, once its tag is complete.
pub fn peek_name(partial: &str) -> Option<String> {
    let at = partial.find("<invoke")?;
    let rest = &partial[at + "<invoke".len()..];
    attribute(&rest[..rest.find('>')?], "name").filter(|n| !n.is_empty())
}

/// Every `<invoke>` element in `t`; a call whose frame holds anything else, or that is not
/// closed, is a call that could not be read.
pub fn parse(t: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut open: Option<(String, Map<String, Value>)> = None;
    let bad = |open: &Option<(String, Map<String, Value>)>, error: String| Parsed::Bad {
        name: open.as_ref().map(|(n, _)| n.clone()).unwrap_or_default(),
        error,
        raw: t.to_string(),
    };
    let split = PARAMETER.split(t);
    if let Some(tag) = split.open {
        let key = attribute(tag, "name").unwrap_or_default();
        let name = peek_name(t).map(|n| (n, Map::new()));
        out.push(bad(
            &name,
            format!("the value of `{key}` is not closed with </parameter>"),
        ));
        return out;
    }
    for part in split.parts {
        match part {
            Part::Frame(frame) => {
                let mut f = frame.trim_start();
                while !f.is_empty() {
                    if let Some(after) = f.strip_prefix("<invoke") {
                        let Some(gt) = after.find('>') else {
                            out.push(bad(&open, "the <invoke> tag is not closed".into()));
                            return out;
                        };
                        if open.is_some() {
                            out.push(bad(&open, "the call is not closed with </invoke>".into()));
                            return out;
                        }
                        let name = attribute(&after[..gt], "name").unwrap_or_default();
                        open = Some((name, Map::new()));
                        f = after[gt + 1..].trim_start();
                    } else if let Some(after) = f.strip_prefix("</invoke>") {
                        match open.take() {
                            Some((name, args)) => out.push(Parsed::Call {
                                name,
                                arguments: Value::Object(args),
                            }),
                            None => {
                                out.push(bad(&open, "an </invoke> without its <invoke>".into()));
                                return out;
                            }
                        }
                        f = after.trim_start();
                    } else {
                        // Text after a finished call was most likely part of its last value.
                        let error = format!(
                            "text outside the parameters: `{}` (does a value hold </parameter>?)",
                            excerpt(f, 60)
                        );
                        let blamed = match (&open, out.last()) {
                            (None, Some(Parsed::Call { name, .. })) => {
                                Some((name.clone(), Map::new()))
                            }
                            _ => None,
                        };
                        if blamed.is_some() {
                            out.pop();
                        }
                        out.push(bad(&blamed.or(open), error));
                        return out;
                    }
                }
            }
            Part::Value { tag, text } => {
                let Some((name, args)) = open.as_mut() else {
                    out.push(bad(&open, "a <parameter> outside any <invoke>".into()));
                    return out;
                };
                let Some(key) = attribute(tag, "name") else {
                    out.push(bad(&open, "a <parameter> has no name=\"…\"".into()));
                    return out;
                };
                let value = typed_value(tools, name, &key, text);
                args.insert(key, value);
            }
        }
    }
    if open.is_some() {
        out.push(bad(&open, "the call is not closed with </invoke>".into()));
    }
    out
}

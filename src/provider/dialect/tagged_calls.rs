//! One reader for the dialects whose calls are tagged elements holding tagged parameters:
//! anthropic's and minimax's `<invoke name="…">` and qwen3-coder's `<function=…>`. They
//! differ only in how a call and a parameter are named ([`CallTags`]); the walk over the
//! values (see [`super::values`]), the checks on the frame around them and the errors for a
//! call that could not be read are the same.

use serde_json::{Map, Value};

use super::values::{Part, Tagged, excerpt};
use super::{Parsed, typed_value};
use crate::agent::protocol::stream::ToolSpec;

/// How one dialect writes a call and its parameters.
pub(crate) struct CallTags {
    /// The parameters' tags.
    pub params: Tagged,
    /// How a call's tag starts (`<invoke`, `<function=`); the tag runs to the next `>`.
    pub open: &'static str,
    /// How a call ends (`</invoke>`).
    pub close: &'static str,
    /// The call's and a parameter's tags as the errors show them.
    pub call_shown: &'static str,
    pub param_shown: &'static str,
    /// The error for a call's end with no call open.
    pub stray_close: &'static str,
    /// The error for a parameter tag that names no key.
    pub keyless: &'static str,
    /// The call's name from what stands between `open` and `>`.
    pub call_name: fn(&str) -> String,
    /// A parameter's key from what stands inside its tag.
    pub key: fn(&str) -> Option<String>,
    /// The call named in `t` (for the error about a value that never ends).
    pub first_call: fn(&str) -> Option<String>,
}

type Open = Option<(String, Map<String, Value>)>;

impl CallTags {
    /// Every call in `t`; a call whose frame holds anything else, or that is not closed, is a
    /// call that could not be read.
    pub(crate) fn parse(&self, t: &str, tools: &[ToolSpec]) -> Vec<Parsed> {
        let mut out = Vec::new();
        let mut open: Open = None;
        let bad = |open: &Open, error: String| Parsed::Bad {
            name: open.as_ref().map(|(n, _)| n.clone()).unwrap_or_default(),
            error,
            raw: t.to_string(),
        };
        let split = self.params.split(t);
        if let Some(tag) = split.open {
            let key = (self.key)(tag).unwrap_or_default();
            let name = (self.first_call)(t).map(|n| (n, Map::new()));
            out.push(bad(
                &name,
                format!(
                    "the value of `{key}` is not closed with {}",
                    self.params.close
                ),
            ));
            return out;
        }
        for part in split.parts {
            match part {
                Part::Frame(frame) => {
                    let mut f = frame.trim_start();
                    while !f.is_empty() {
                        if let Some(after) = f.strip_prefix(self.open) {
                            let Some(gt) = after.find('>') else {
                                let error = format!("the {} tag is not closed", self.call_shown);
                                out.push(bad(&open, error));
                                return out;
                            };
                            if open.is_some() {
                                let error = format!("the call is not closed with {}", self.close);
                                out.push(bad(&open, error));
                                return out;
                            }
                            open = Some(((self.call_name)(&after[..gt]), Map::new()));
                            f = after[gt + 1..].trim_start();
                        } else if let Some(after) = f.strip_prefix(self.close) {
                            let Some((name, args)) = open.take() else {
                                out.push(bad(&open, self.stray_close.into()));
                                return out;
                            };
                            out.push(Parsed::Call {
                                name,
                                arguments: Value::Object(args),
                            });
                            f = after.trim_start();
                        } else {
                            // Text after a finished call was most likely part of its last value.
                            let error = format!(
                                "text outside the parameters: `{}` (does a value hold {}?)",
                                excerpt(f, 60),
                                self.params.close
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
                        let error =
                            format!("a {} outside any {}", self.param_shown, self.call_shown);
                        out.push(bad(&open, error));
                        return out;
                    };
                    let Some(key) = (self.key)(tag) else {
                        out.push(bad(&open, self.keyless.into()));
                        return out;
                    };
                    let value = typed_value(tools, name, &key, text);
                    args.insert(key, value);
                }
            }
        }
        if open.is_some() {
            out.push(bad(
                &open,
                format!("the call is not closed with {}", self.close),
            ));
        }
        out
    }
}

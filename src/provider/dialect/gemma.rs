//! Gemma 4's tokens: `<|tool_call>call:NAME{key:value,…}<tool_call|>`, where a string value is
//! wrapped in `<|"|>` tokens (no escaping inside) and numbers, booleans, `null`, lists
//! `[…]` and objects `{…}` are written bare. Results come back as
//! `<|tool_response>response:NAME{output:<|"|>…<|"|>}<tool_response|>`. Tags inside a string
//! are part of it; only a string holding the `<|"|>` token itself cannot be written.

use serde_json::{Map, Number, Value};

use super::{Block, Dialect, Parsed};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct Gemma;

const CALL: Block = Block {
    open: "<|tool_call>",
    close: "<tool_call|>",
};

/// What wraps a string.
const QUOTE: &str = "<|\"|>";

impl Dialect for Gemma {
    fn name(&self) -> &'static str {
        "gemma"
    }

    fn instructions(&self) -> String {
        format!(
            "To call a tool, write <|tool_call>call:NAME{{…}}<tool_call|> with the arguments \
             as key:value pairs separated by commas; wrap each text value in {QUOTE} (nothing \
             is escaped inside), and write numbers, true, false, null, lists [..] and objects \
             {{..}} as they are:\n{}\nResults come back between <|tool_response> and \
             <tool_response|>.",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        let args = match arguments {
            Value::Object(map) => fields(map),
            _ => String::new(),
        };
        format!("<|tool_call>call:{name}{{{args}}}<tool_call|>")
    }

    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String {
        let key = if is_error { "error" } else { "output" };
        format!("<|tool_response>response:{name}{{{key}:{QUOTE}{output}{QUOTE}}}<tool_response|>")
    }

    fn blocks(&self) -> &'static [Block] {
        &[CALL]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<|tool_response>"]
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        let t = partial.trim_start();
        let t = t.strip_prefix("call:").unwrap_or(t);
        let name = t[..t.find('{')?].trim();
        (!name.is_empty()).then(|| name.to_string())
    }

    fn inside_value(&self, _block: &Block, body: &str) -> bool {
        body.matches(QUOTE).count() % 2 == 1
    }

    fn parse(&self, _block: &Block, body: &str, _tools: &[ToolSpec]) -> Vec<Parsed> {
        let t = body.trim();
        let t = t.strip_prefix("call:").unwrap_or(t);
        let Some(brace) = t.find('{') else {
            return vec![Parsed::Bad {
                name: t.to_string(),
                error: "the call has no {…} with its arguments".into(),
                raw: body.to_string(),
            }];
        };
        let name = t[..brace].trim().to_string();
        let mut reader = Reader {
            s: &t[brace..],
            at: 0,
        };
        let parsed = reader.value().and_then(|v| {
            reader.blanks();
            match reader.rest() {
                "" => Ok(v),
                rest => Err(format!("unexpected text after the arguments: `{rest}`")),
            }
        });
        vec![match parsed {
            Ok(arguments @ Value::Object(_)) => Parsed::Call { name, arguments },
            Ok(other) => Parsed::Bad {
                name,
                error: format!("the arguments must be an object, got {other}"),
                raw: body.to_string(),
            },
            Err(error) => Parsed::Bad {
                name,
                error: format!("the arguments could not be read: {error}"),
                raw: body.to_string(),
            },
        }]
    }
}

/// An object's fields as Gemma writes them.
fn fields(map: &Map<String, Value>) -> String {
    map.iter()
        .map(|(k, v)| format!("{k}:{}", value(v)))
        .collect::<Vec<_>>()
        .join(",")
}

fn value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{QUOTE}{s}{QUOTE}"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => format!("{{{}}}", fields(map)),
        other => other.to_string(),
    }
}

/// Reads Gemma's values.
struct Reader<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    fn blanks(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.blanks();
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        self.blanks();
        if self.eat(QUOTE) {
            let end = self
                .rest()
                .find(QUOTE)
                .ok_or("a text value is not closed with <|\"|>")?;
            let text = self.rest()[..end].to_string();
            self.at += end + QUOTE.len();
            return Ok(Value::String(text));
        }
        if self.eat("{") {
            let mut map = Map::new();
            if self.eat("}") {
                return Ok(Value::Object(map));
            }
            loop {
                let key = self.key()?;
                if !self.eat(":") {
                    return Err(format!("`{key}` has no `:` after it"));
                }
                let v = self.value()?;
                map.insert(key, v);
                if self.eat(",") {
                    continue;
                }
                if self.eat("}") {
                    return Ok(Value::Object(map));
                }
                return Err("expected `,` or `}` in an object".into());
            }
        }
        if self.eat("[") {
            let mut items = Vec::new();
            if self.eat("]") {
                return Ok(Value::Array(items));
            }
            loop {
                items.push(self.value()?);
                if self.eat(",") {
                    continue;
                }
                if self.eat("]") {
                    return Ok(Value::Array(items));
                }
                return Err("expected `,` or `]` in a list".into());
            }
        }
        let rest = self.rest();
        let end = rest.find([',', '}', ']']).unwrap_or(rest.len());
        let word = rest[..end].trim();
        self.at += end;
        bare(word).ok_or_else(|| format!("`{word}` is not a value (wrap text in <|\"|>)"))
    }

    fn key(&mut self) -> Result<String, String> {
        self.blanks();
        if self.eat(QUOTE) {
            let end = self.rest().find(QUOTE).ok_or("a key is not closed")?;
            let key = self.rest()[..end].to_string();
            self.at += end + QUOTE.len();
            return Ok(key);
        }
        let rest = self.rest();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        if end == 0 {
            return Err(format!(
                "expected a key at `{}`",
                super::values::excerpt(rest, 20)
            ));
        }
        let key = rest[..end].to_string();
        self.at += end;
        Ok(key)
    }
}

/// A bare word: a number, a boolean or null.
fn bare(word: &str) -> Option<Value> {
    match word {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" | "none" | "None" => Some(Value::Null),
        _ => {
            if let Ok(n) = word.parse::<i64>() {
                return Some(Value::Number(n.into()));
            }
            let f = word.parse::<f64>().ok()?;
            Number::from_f64(f).map(Value::Number)
        }
    }
}

//! A small reader and writer of Python call expressions, for the gemini dialect's
//! `default_api.read(path="src/main.rs")`: keyword arguments only, values as Python
//! literals (strings with any quotes, prefixes and escapes, numbers, `True`/`False`/`None`,
//! lists, tuples and dicts). A call may be wrapped in `print(…)`, and several may come as a
//! list or one per line.

use serde_json::{Map, Number, Value};

/// One call: the function's last name (`read` for `default_api.read`) and its arguments.
pub(crate) type Call = (String, Map<String, Value>);

/// The calls in `src`.
pub(crate) fn calls(src: &str) -> Result<Vec<Call>, String> {
    let mut r = Reader { s: src, at: 0 };
    let mut out = Vec::new();
    loop {
        r.blanks();
        if r.rest().is_empty() {
            return Ok(out);
        }
        if r.eat(";") || r.eat(",") {
            continue;
        }
        r.calls(&mut out)?;
    }
}

/// Whether `src` ends inside a string literal (a one-quote string ends with its line).
pub(crate) fn string_open(src: &str) -> bool {
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                i += b[i..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .unwrap_or(b.len() - i)
            }
            q @ (b'"' | b'\'') => {
                let triple = b[i..].starts_with(&[q, q, q]);
                i += if triple { 3 } else { 1 };
                loop {
                    if i >= b.len() {
                        return true;
                    }
                    if b[i] == b'\\' {
                        i += 2;
                    } else if triple && b[i..].starts_with(&[q, q, q]) {
                        i += 3;
                        break;
                    } else if !triple && (b[i] == q || b[i] == b'\n') {
                        i += 1;
                        break;
                    } else {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// A JSON value as a Python literal.
pub(crate) fn literal(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string_literal(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(literal).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", string_literal(k), literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A string as a double-quoted Python literal.
fn string_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Reader<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    /// Skip blanks, line breaks (and `\` line joins) and comments.
    fn blanks(&mut self) {
        loop {
            let rest = self.rest();
            let t = rest.trim_start();
            self.at += rest.len() - t.len();
            if t.starts_with('#') {
                self.at += t.find('\n').unwrap_or(t.len());
            } else if let Some(after) = t.strip_prefix("\\\n") {
                self.at += t.len() - after.len();
            } else {
                return;
            }
        }
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

    fn name(&mut self) -> Option<String> {
        self.blanks();
        let rest = self.rest();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        if end == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        self.at += end;
        Some(rest[..end].to_string())
    }

    /// A call, `print(…)` around calls, or a list or tuple of them.
    fn calls(&mut self, out: &mut Vec<Call>) -> Result<(), String> {
        self.blanks();
        for (open, close) in [("[", "]"), ("(", ")")] {
            if self.eat(open) {
                loop {
                    if self.eat(close) {
                        return Ok(());
                    }
                    self.calls(out)?;
                    if !self.eat(",") && !self.rest().trim_start().starts_with(close) {
                        return Err(format!("expected `,` or `{close}` between calls"));
                    }
                }
            }
        }
        let start = self.at;
        let Some(path) = self.name() else {
            return Err(format!(
                "expected a call such as default_api.NAME(key=value), found `{}`",
                super::values::excerpt(&self.s[start..], 30)
            ));
        };
        if !self.eat("(") {
            return Err(format!("`{path}` is not called: add (key=value, …)"));
        }
        let name = path.rsplit('.').next().unwrap_or(&path).to_string();
        if name == "print" {
            loop {
                if self.eat(")") {
                    return Ok(());
                }
                self.calls(out)?;
                self.eat(",");
            }
        }
        let mut args = Map::new();
        loop {
            if self.eat(")") {
                break;
            }
            let key = self
                .name()
                .ok_or_else(|| format!("the arguments of `{name}` must be written key=value"))?;
            if !self.eat("=") {
                return Err(format!(
                    "the arguments of `{name}` must be written key=value (at `{key}`)"
                ));
            }
            let value = self.value()?;
            args.insert(key, value);
            if !self.eat(",") && !self.rest().trim_start().starts_with(')') {
                return Err(format!("expected `,` or `)` in the call to `{name}`"));
            }
        }
        out.push((name, args));
        Ok(())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.blanks();
        let rest = self.rest();
        let prefix = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .filter(|&n| n <= 2 && rest[n..].starts_with(['"', '\'']))
            .filter(|&n| rest[..n].chars().all(|c| "rRuUbBfF".contains(c)));
        if prefix.is_some() {
            // One or more string literals side by side make one string.
            let mut text = String::new();
            loop {
                text.push_str(&self.string()?);
                self.blanks();
                let rest = self.rest();
                let next = rest
                    .find(|c: char| !c.is_ascii_alphabetic())
                    .filter(|&n| n <= 2 && rest[n..].starts_with(['"', '\'']));
                if next.is_none() {
                    break;
                }
            }
            return Ok(Value::String(text));
        }
        for (open, close) in [("[", "]"), ("(", ")")] {
            if self.eat(open) {
                let mut items = Vec::new();
                loop {
                    if self.eat(close) {
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value()?);
                    if !self.eat(",") && !self.rest().trim_start().starts_with(close) {
                        return Err(format!("expected `,` or `{close}` in a list"));
                    }
                }
            }
        }
        if self.eat("{") {
            let mut map = Map::new();
            loop {
                if self.eat("}") {
                    return Ok(Value::Object(map));
                }
                let key = match self.value()? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                if !self.eat(":") {
                    return Err(format!("the key `{key}` has no `:` after it"));
                }
                let v = self.value()?;
                map.insert(key, v);
                if !self.eat(",") && !self.rest().trim_start().starts_with('}') {
                    return Err("expected `,` or `}` in a dict".into());
                }
            }
        }
        let rest = self.rest();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')))
            .unwrap_or(rest.len());
        let word = &rest[..end];
        self.at += end;
        match word {
            "True" | "true" => Ok(Value::Bool(true)),
            "False" | "false" => Ok(Value::Bool(false)),
            "None" | "null" => Ok(Value::Null),
            _ => number(word).ok_or_else(|| {
                format!(
                    "`{}` is not a value (quote text)",
                    super::values::excerpt(if word.is_empty() { rest } else { word }, 30)
                )
            }),
        }
    }

    /// A string literal (with its prefix) starting here, decoded.
    fn string(&mut self) -> Result<String, String> {
        let rest = self.rest();
        let n = rest.find(['"', '\'']).ok_or("expected a string")?;
        let raw = rest[..n].contains(['r', 'R']);
        self.at += n;
        let rest = self.rest();
        let q = &rest[..1];
        let quote = if rest.starts_with(&q.repeat(3)) {
            q.repeat(3)
        } else {
            q.to_string()
        };
        self.at += quote.len();
        let body_start = self.at;
        let bytes = self.s.as_bytes();
        let mut i = body_start;
        while i < self.s.len() {
            if bytes[i] == b'\\' {
                i += 2;
                continue;
            }
            if bytes[i..].starts_with(quote.as_bytes()) {
                let body = &self.s[body_start..i];
                self.at = i + quote.len();
                return Ok(if raw {
                    body.to_string()
                } else {
                    unescape(body)
                });
            }
            if quote.len() == 1 && bytes[i] == b'\n' {
                return Err("a string is not closed on its line".into());
            }
            i += 1;
        }
        self.at = self.s.len();
        Err("a string is not closed".into())
    }
}

/// A Python number as JSON.
fn number(word: &str) -> Option<Value> {
    let clean: String = word.chars().filter(|c| *c != '_').collect();
    if let Ok(n) = clean.parse::<i64>() {
        return Some(Value::Number(n.into()));
    }
    let f = clean.parse::<f64>().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// A string literal's body with its escapes read.
fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars>, n: usize| {
            let digits: String = (0..n).filter_map(|_| chars.next()).collect();
            u32::from_str_radix(&digits, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or(digits)
        };
        match e {
            '\n' => {}
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.extend(char::from_u32(v));
            }
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                match hex(&mut chars, n) {
                    Ok(c) => out.push(c),
                    Err(digits) => {
                        out.push('\\');
                        out.push(e);
                        out.push_str(&digits);
                    }
                }
            }
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' => out.push(e),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_in_their_usual_shapes() {
        let got = calls(
            "print(default_api.read(path=\"a.rs\", offset=3))\n[default_api.bash(command='ls -l'), \
             default_api.write(path=r'C:\\x', content=\"\"\"two\nlines\"\"\")]",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                (
                    "read".into(),
                    json!({"path": "a.rs", "offset": 3})
                        .as_object()
                        .unwrap()
                        .clone()
                ),
                (
                    "bash".into(),
                    json!({"command": "ls -l"}).as_object().unwrap().clone()
                ),
                (
                    "write".into(),
                    json!({"path": "C:\\x", "content": "two\nlines"})
                        .as_object()
                        .unwrap()
                        .clone()
                ),
            ]
        );
        let v = json!({"a": [1, 2.5, true, null, "x\"y\\\n\u{1}é"], "b": {"c": false}});
        let text = format!("f(v={})", literal(&v));
        assert_eq!(calls(&text).unwrap()[0].1["v"], v);
        assert!(calls("f(1)").is_err());
        assert!(calls("f(a=\"x").is_err());
    }

    #[test]
    fn strings_hide_what_looks_like_the_end() {
        assert!(string_open("f(a=\"```"));
        assert!(string_open("f(a='''x\n```"));
        assert!(!string_open("f(a=\"```\")\n"));
        assert!(!string_open("# it's\nf()"));
        assert!(string_open("f(a=\"\\\"```"));
    }
}

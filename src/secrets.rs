//! The values pi knows to be secret, and the one masker that keeps them out of everything the
//! model, the screen or a file could see.
//!
//! Keys reach pi from many places — the environment, `--api-key`, `auth.json`, config files,
//! MCP bearer tokens and headers, `/login` — and can leak back through many more: a tool's
//! output (`cat /proc/$PPID/environ`, a `grep` over a dotfile), an event a front end prints, an
//! export, the session file. Rather than each of those paths carrying its own list, setup
//! builds one [`Secrets`] and hands clones of it to every place text leaves pi's hands; a value
//! learnt later (`/login`) is [`add`](Secrets::add)ed once and every holder sees it.
//!
//! Matching is exact (one Aho–Corasick automaton, leftmost-longest, rebuilt when a value is
//! added), over the value as written and its JSON-escaped form. Values shorter than
//! [`MIN_LEN`] characters are ignored: they would mask ordinary words.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this (after trimming) are not treated as secrets.
pub const MIN_LEN: usize = 8;

/// Whether an HTTP header of this name carries a credential (its value is then a secret).
pub fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization"
        || n == "proxy-authorization"
        || n == "cookie"
        || ["key", "token", "secret", "auth", "password"]
            .iter()
            .any(|w| n.contains(w))
}

#[derive(Default)]
struct Inner {
    values: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl Inner {
    fn rebuild(&mut self) {
        let mut patterns: Vec<String> = self.values.clone();
        for v in &self.values {
            // The same value as it appears inside a JSON string (a session line, an event).
            if let Ok(quoted) = serde_json::to_string(v) {
                let inner = &quoted[1..quoted.len().saturating_sub(1)];
                if inner != v && !patterns.iter().any(|p| p == inner) {
                    patterns.push(inner.to_string());
                }
            }
        }
        self.matcher = if patterns.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .ok()
        };
    }
}

/// The secret values of one pi process; clones share them.
#[derive(Clone, Default)]
pub struct Secrets {
    inner: Arc<RwLock<Inner>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values themselves.
        f.debug_struct("Secrets")
            .field("count", &self.len())
            .finish()
    }
}

impl Secrets {
    /// A masker for these values (short and repeated ones are dropped).
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let s = Secrets::default();
        s.extend(values);
        s
    }

    /// Learn more values.
    pub fn extend<I, S>(&self, values: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut inner = crate::sync::write(&self.inner);
        let mut changed = false;
        for v in values {
            let v = v.as_ref().trim();
            if v.chars().count() >= MIN_LEN && !inner.values.iter().any(|x| x == v) {
                inner.values.push(v.to_string());
                changed = true;
            }
        }
        if changed {
            // Longest first, so a key that contains another is masked whole.
            inner
                .values
                .sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
            inner.rebuild();
        }
    }

    /// Learn every value `other` holds.
    pub fn absorb(&self, other: &Secrets) {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return;
        }
        let values = crate::sync::read(&other.inner).values.clone();
        self.extend(values);
    }

    /// Learn one value.
    pub fn add(&self, value: &str) {
        self.extend([value]);
    }

    /// How many values are known.
    pub fn len(&self) -> usize {
        crate::sync::read(&self.inner).values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `text` holds a known value.
    pub fn found_in(&self, text: &str) -> bool {
        let inner = crate::sync::read(&self.inner);
        inner.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// `text` with every known value replaced by [`REDACTED`] (borrowed when nothing matched).
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let inner = crate::sync::read(&self.inner);
        let Some(m) = inner.matcher.as_ref() else {
            return Cow::Borrowed(text);
        };
        if !m.is_match(text) {
            return Cow::Borrowed(text);
        }
        let replacements = vec![REDACTED; m.patterns_len()];
        Cow::Owned(m.replace_all(text, &replacements))
    }

    /// Mask `text` in place; true when something was masked.
    pub fn mask_in_place(&self, text: &mut String) -> bool {
        match self.mask(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(masked) => {
                *text = masked;
                true
            }
        }
    }

    /// Mask every string (and object key) inside a JSON value.
    pub fn mask_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                self.mask_in_place(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask_json(v)),
            Value::Object(map) => {
                if map.keys().any(|k| self.found_in(k)) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.mask(&k).into_owned(), v);
                    }
                }
                map.values_mut().for_each(|v| self.mask_json(v));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_every_known_value_and_leaves_the_rest() {
        let s = Secrets::new(["sk-ant-0123456789", "short", "ghp_abcdefghijkl"]);
        assert_eq!(
            s.len(),
            2,
            "values under {MIN_LEN} characters are not secrets"
        );
        let text = "key=sk-ant-0123456789\nGITHUB=ghp_abcdefghijkl short";
        assert_eq!(
            s.mask(text),
            "key=[redacted]\nGITHUB=[redacted] short".to_string()
        );
        assert!(matches!(s.mask("nothing here"), Cow::Borrowed(_)));
        assert!(s.found_in("xx sk-ant-0123456789 yy"));
        assert!(!s.found_in("sk-ant-012345678"));
    }

    #[test]
    fn a_longer_value_containing_another_is_masked_whole() {
        let s = Secrets::new(["abcdefgh", "abcdefgh-ijklmnop"]);
        assert_eq!(s.mask("[abcdefgh-ijklmnop]"), "[[redacted]]");
        assert_eq!(s.mask("abcdefgh!"), "[redacted]!");
    }

    #[test]
    fn clones_share_values_learnt_later() {
        let s = Secrets::default();
        let held = s.clone();
        assert_eq!(held.mask("token-1234567890"), "token-1234567890");
        s.add("token-1234567890");
        assert_eq!(held.mask("a token-1234567890 b"), "a [redacted] b");
    }

    #[test]
    fn json_escaped_forms_and_json_values_are_masked() {
        let s = Secrets::new(["pa\"ss\\word-42"]);
        let line = serde_json::to_string(&serde_json::json!({"t": "x pa\"ss\\word-42 y"})).unwrap();
        assert!(!s.mask(&line).contains("word-42"), "{line}");
        let mut v = serde_json::json!({"a": ["pa\"ss\\word-42"], "pa\"ss\\word-42": 1});
        s.mask_json(&mut v);
        assert!(!v.to_string().contains("word-42"), "{v}");
    }

    #[test]
    fn credential_headers_are_told_apart() {
        for h in [
            "Authorization",
            "x-api-key",
            "X-Auth-Token",
            "api-secret",
            "Cookie",
        ] {
            assert!(is_credential_header(h), "{h}");
        }
        for h in [
            "anthropic-version",
            "HTTP-Referer",
            "X-Title",
            "content-type",
        ] {
            assert!(!is_credential_header(h), "{h}");
        }
    }

    #[test]
    fn debug_never_shows_a_value() {
        let s = Secrets::new(["sk-live-abcdefgh"]);
        assert!(!format!("{s:?}").contains("sk-live"));
    }
}

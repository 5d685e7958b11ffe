//! The `---` front matter of Markdown files people bring (prompt templates, Claude commands,
//! skills, agent definitions): split from the body, and its fields read leniently.
//!
//! Only the YAML these files use is understood: `key: value` with an optional quote, and a block
//! scalar (`key: >` or `key: |`, its indented lines following). Anything else is left alone,
//! never an error.

/// (front matter, body): the front matter lies between a first line `---` and the next line
/// `---`; without both, it is empty and the whole text is body.
pub(crate) fn split(text: &str) -> (&str, &str) {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = t
        .strip_prefix("---\n")
        .or_else(|| t.strip_prefix("---\r\n"))
    else {
        return ("", t);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..offset], &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    ("", t)
}

/// The value of a top-level `key`, unquoted; a block scalar's lines are joined (with spaces
/// for `>`, with newlines for `|`).
pub(crate) fn field(front: &str, key: &str) -> Option<String> {
    let lines: Vec<&str> = front.lines().collect();
    let at = lines.iter().position(|l| key_of(l) == Some(key))?;
    let value = lines[at].split_once(':').map_or("", |(_, v)| v).trim();
    let block = value.trim_end_matches(['-', '+']);
    if block == ">" || block == "|" {
        let body: Vec<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || l.starts_with([' ', '\t']))
            .map(|l| l.trim())
            .collect();
        let joined = if block == ">" {
            body.iter()
                .filter(|l| !l.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            body.join("\n")
        };
        return Some(joined.trim().to_string());
    }
    Some(unquote(value).to_string())
}

/// The key of a top-level `key: …` line.
fn key_of(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    line.split_once(':').map(|(k, _)| k.trim())
}

pub(crate) fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_plain_quoted_and_block() {
        let text = "---\nname: pdf\ndescription: >\n  Reads PDFs.\n  Use for forms.\nhint: \"<a>\"\nbody: |\n  one\n  two\ntools: Read, Grep\nlist:\n  - a\n  - 'b'\ninline: [x, y]\n---\nBody\n";
        let (front, body) = split(text);
        assert_eq!(body, "Body\n");
        assert_eq!(field(front, "name").as_deref(), Some("pdf"));
        assert_eq!(
            field(front, "description").as_deref(),
            Some("Reads PDFs. Use for forms.")
        );
        assert_eq!(field(front, "hint").as_deref(), Some("<a>"));
        assert_eq!(field(front, "body").as_deref(), Some("one\ntwo"));
        assert_eq!(field(front, "missing"), None);
    }

    #[test]
    fn no_front_matter_is_all_body() {
        assert_eq!(split("plain"), ("", "plain"));
        assert_eq!(split("---\nnot closed"), ("", "---\nnot closed"));
    }
}

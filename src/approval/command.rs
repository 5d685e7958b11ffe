//! Reading a shell command well enough to match it against approval rules: its simple commands
//! (split at `;`, `&&`, `||`, `|`, `&` and line breaks outside quotes), and whether one starts
//! with a remembered prefix (what a prefix is: [`super::scope`]).
//!
//! A command that substitutes other commands (`$(…)`, backquotes, `<(…)`) or redirects output
//! into a file (`>`) is never matched by a pattern: what it runs or writes cannot be read off
//! its words, so it is always asked about (and a `deny` pattern still refuses it when its
//! whole text matches).

/// The simple commands of `command`, trimmed, or `None` when it cannot be matched safely.
pub(crate) fn segments(command: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = command.chars().peekable();
    let (mut single, mut double, mut escaped) = (false, false, false);
    while let Some(c) = chars.next() {
        if escaped {
            current.push(c);
            escaped = false;
            continue;
        }
        if single {
            single = c != '\'';
            current.push(c);
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                current.push(c);
            }
            '\'' if !double => {
                single = true;
                current.push(c);
            }
            '"' => {
                double = !double;
                current.push(c);
            }
            '`' => return None,
            '$' if chars.peek() == Some(&'(') => return None,
            '<' | '>' if !double && chars.peek() == Some(&'(') => return None,
            '>' if !double => return None,
            ';' | '\n' | '|' | '&' if !double => {
                if matches!(chars.peek(), Some('|') | Some('&')) && c != ';' && c != '\n' {
                    chars.next();
                }
                push_segment(&mut out, &mut current);
            }
            _ => current.push(c),
        }
    }
    if single || double {
        return None;
    }
    push_segment(&mut out, &mut current);
    Some(out)
}

fn push_segment(out: &mut Vec<String>, current: &mut String) {
    let s = current.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
    current.clear();
}

/// Whether `segment` starts with `prefix` as whole words.
pub(crate) fn starts_with_words(segment: &str, prefix: &str) -> bool {
    let seg: Vec<&str> = segment.split_whitespace().collect();
    let pre: Vec<&str> = prefix.split_whitespace().collect();
    !pre.is_empty() && seg.len() >= pre.len() && seg[..pre.len()] == pre[..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_operators_outside_quotes() {
        assert_eq!(
            segments("git status && cargo test -q; ls | wc -l").unwrap(),
            ["git status", "cargo test -q", "ls", "wc -l"]
        );
        assert_eq!(
            segments("echo 'a; b' \"c && d\"").unwrap(),
            ["echo 'a; b' \"c && d\""]
        );
        assert_eq!(segments("a || b & c\nd").unwrap(), ["a", "b", "c", "d"]);
        assert_eq!(segments("echo \\; x").unwrap(), ["echo \\; x"]);
    }

    #[test]
    fn substitutions_and_redirects_cannot_be_matched() {
        assert!(segments("git status $(rm -rf ~)").is_none());
        assert!(segments("git status `rm x`").is_none());
        assert!(segments("git log > notes.txt").is_none());
        assert!(segments("diff <(ls) b").is_none());
        assert!(segments("echo 'unclosed").is_none());
        assert!(segments("echo '$(literal)'").is_some());
        assert!(segments("echo \"a > b\"").is_some());
    }

    #[test]
    fn prefixes_match_whole_words() {
        assert!(starts_with_words("git status -s", "git status"));
        assert!(!starts_with_words("git statusx", "git status"));
        assert!(!starts_with_words("git", "git status"));
    }
}

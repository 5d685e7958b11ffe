//! `@path` in a prompt: the person names a file and it is attached when the prompt is sent.
//!
//! A mention is an `@` at the start of the text or after whitespace, followed by the path up
//! to the next whitespace, or by a quoted path (`@"my notes.txt"`). Only mentions that name an
//! existing regular file are attached, so `@team` or an e-mail address stays plain text;
//! punctuation that ends a sentence (`see @src/main.rs.`) is not taken as part of the path
//! unless a file by that name exists.

use std::path::Path;

use super::{FileRef, resolve};

/// Characters a sentence may put right after a path.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"'];

/// The raw paths mentioned in `text`, in order (not checked against the disk).
pub(crate) fn find(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev_space = true;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '@' && prev_space {
            let rest = &text[i + 1..];
            let (token, used) = match rest.strip_prefix('"') {
                Some(quoted) => match quoted.find('"') {
                    Some(end) => (&quoted[..end], end + 2),
                    None => (quoted, quoted.len() + 1),
                },
                None => {
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    (&rest[..end], end)
                }
            };
            if !token.is_empty() {
                out.push(token.to_string());
            }
            // Skip what the mention used.
            while chars.peek().is_some_and(|(j, _)| *j < i + 1 + used) {
                chars.next();
            }
            prev_space = false;
            continue;
        }
        prev_space = c.is_whitespace();
    }
    out
}

/// Whether `text` mentions anything that could be a file (no disk access).
pub(crate) fn any(text: &str) -> bool {
    !find(text).is_empty()
}

/// The mentions in `text` that name existing files (relative paths from `cwd`), once each.
pub(crate) fn files(cwd: &Path, text: &str) -> Vec<FileRef> {
    let mut out: Vec<FileRef> = Vec::new();
    for raw in find(text) {
        let mut name = raw.as_str();
        let found = loop {
            let path = resolve(cwd, name);
            if path.is_file() {
                break Some(path);
            }
            match name.strip_suffix(TRAILING) {
                Some(shorter) if !shorter.is_empty() => name = shorter,
                _ => break None,
            }
        };
        if let Some(path) = found
            && !out.iter().any(|f| f.path == path)
        {
            out.push(FileRef {
                name: name.to_string(),
                path,
                image: false,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_mentions_at_word_starts_only() {
        assert_eq!(
            find("@a.rs and @src/b.rs, not bob@example.com; @\"my notes.txt\" @"),
            ["a.rs", "src/b.rs,", "my notes.txt"]
        );
        assert_eq!(find("line\n@x"), ["x"]);
        assert!(!any("mail bob@example.com"));
        assert!(any("see @x"));
    }

    #[test]
    fn only_existing_files_are_attached_once_each() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.path().join("v1."), "odd name").unwrap();
        let found = files(
            dir.path(),
            "explain @src/main.rs. Then @team, @src and @src/main.rs again; @v1.",
        );
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["src/main.rs", "v1."]);
        assert_eq!(found[0].path, dir.path().join("src/main.rs"));
    }
}

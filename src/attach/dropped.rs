//! A pasted or dropped file path: terminals paste a file dropped on them as its path, quoted
//! or with its spaces escaped, sometimes as a `file://` address.
//!
//! [`tokens`] splits a paste the way a shell would (single and double quotes, backslash
//! escapes, white space between paths); [`images`] says whether the paste is nothing but paths
//! of images (PNG, JPEG, GIF or WebP, told by their first bytes), which are then attached
//! instead of pasted as text.

use std::path::Path;

use super::load::sniff;
use super::{FileRef, resolve};

/// Longer pastes are text, not dropped files.
const MAX_PASTE: usize = 4096;
/// More paths than this in one paste is text too.
const MAX_PATHS: usize = 32;

/// The words of `text` as a shell splits them; `None` for an unclosed quote.
pub(crate) fn tokens(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    Some(out)
}

/// `file:///a%20b.png` → `/a b.png`; anything else as it is.
fn from_file_url(word: &str) -> String {
    let Some(rest) = word
        .strip_prefix("file://localhost")
        .or_else(|| word.strip_prefix("file://"))
    else {
        return word.to_string();
    };
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = || {
            let h = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            u8::from_str_radix(h, 16).ok()
        };
        match (bytes[i], hex()) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A word that could name a file: it has a folder separator or an extension.
fn looks_like_path(word: &str) -> bool {
    word.contains('/')
        || word
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty())
}

/// The images a paste names, if it is nothing but paths of images (relative ones from
/// `cwd`); `None` when it is text to paste.
pub(crate) fn images(cwd: &Path, text: &str) -> Option<Vec<FileRef>> {
    if text.len() > MAX_PASTE || text.trim().is_empty() {
        return None;
    }
    let words = tokens(text.trim())?;
    if words.is_empty() || words.len() > MAX_PATHS {
        return None;
    }
    let words: Vec<String> = words.iter().map(|w| from_file_url(w)).collect();
    if !words.iter().all(|w| looks_like_path(w)) {
        return None;
    }
    let mut out = Vec::new();
    for word in words {
        let path = resolve(cwd, &word);
        if !path.is_file() || sniff(&path).is_none() {
            return None;
        }
        let name = match path.strip_prefix(cwd) {
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => word,
        };
        out.push(FileRef {
            name,
            path,
            image: true,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            tokens(r#"/a/b.png '/c d/e.png' "/f g/h.png" /i\ j.png"#).unwrap(),
            ["/a/b.png", "/c d/e.png", "/f g/h.png", "/i j.png"]
        );
        assert_eq!(tokens(r"'it'\''s.png'").unwrap(), ["it's.png"]);
        assert_eq!(tokens("'open").as_deref(), None);
        assert_eq!(
            from_file_url("file:///tmp/my%20shot.png"),
            "/tmp/my shot.png"
        );
        assert_eq!(from_file_url("file://localhost/x.png"), "/x.png");
    }

    #[test]
    fn a_paste_of_image_paths_attaches_them_and_anything_else_is_text() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("my shot.png");
        std::fs::write(&shot, PNG).unwrap();
        std::fs::write(dir.path().join("notes.png"), "text, named like an image").unwrap();
        let abs = shot.display().to_string();
        for paste in [
            format!("'{abs}'"),
            format!("\"{abs}\""),
            abs.replace(' ', "\\ "),
            format!("file://{}", abs.replace(' ', "%20")),
            format!("  '{abs}' \n"),
        ] {
            let found = images(dir.path(), &paste).unwrap_or_else(|| panic!("{paste}"));
            assert_eq!(found.len(), 1, "{paste}");
            assert_eq!(found[0].path, shot);
            assert_eq!(found[0].name, "my shot.png");
            assert!(found[0].image);
        }
        assert!(images(dir.path(), "'my shot.png'").is_some(), "relative");
        assert!(
            images(dir.path(), "notes.png").is_none(),
            "not an image by its bytes"
        );
        assert!(images(dir.path(), "hello world").is_none());
        assert!(images(dir.path(), &format!("'{abs}' and more")).is_none());
        assert!(images(dir.path(), "/no/such.png").is_none());
    }
}

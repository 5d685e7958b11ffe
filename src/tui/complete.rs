//! Tab in the editor: complete the path before the cursor, as a shell does.
//!
//! The word before the cursor (an `@` in front of it is kept) is taken as a path, relative to
//! the session's folder (or absolute, or from `~/`). One entry of its folder that starts with
//! it: the word becomes that entry, with `/` after a folder and a space after a file. Several:
//! the word grows to what they have in common, or, when it cannot grow, they are listed (the
//! app shows them as a hint). Hidden entries are offered only when the word's last part starts
//! with a dot. One folder is read per Tab, at most [`MAX_ENTRIES`] entries of it.

use std::path::Path;

use crate::attach::resolve;

/// Entries of one folder looked at.
const MAX_ENTRIES: usize = 10_000;
/// Candidates listed when the word cannot grow.
pub const MAX_LISTED: usize = 12;

/// What Tab does to a word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Nothing starts with it.
    None,
    /// Replace the word with this.
    Replace(String),
    /// Several entries start with it and have nothing more in common (at most
    /// [`MAX_LISTED`], folders with a `/`).
    Choices(Vec<String>),
}

/// Complete `word` (no `@`) against the folder it names, relative paths from `cwd`.
pub fn complete(cwd: &Path, word: &str) -> Completion {
    let (dir_part, prefix) = match word.rfind('/') {
        Some(i) => word.split_at(i + 1),
        None => ("", word),
    };
    let folder = if dir_part.is_empty() {
        cwd.to_path_buf()
    } else {
        resolve(cwd, dir_part)
    };
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return Completion::None;
    };
    let hidden = prefix.starts_with('.');
    let mut found: Vec<(String, bool)> = entries
        .take(MAX_ENTRIES)
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !hidden) {
                return None;
            }
            // Through symlinks: a link to a folder completes as a folder.
            let dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
            Some((name, dir))
        })
        .collect();
    found.sort();
    match found.as_slice() {
        [] => Completion::None,
        [(name, dir)] => {
            Completion::Replace(format!("{dir_part}{name}{}", if *dir { "/" } else { " " }))
        }
        [(first, _), rest @ ..] => {
            let common = rest.iter().fold(first.as_str(), |acc, (name, _)| {
                let end = acc
                    .char_indices()
                    .zip(name.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(acc.len().min(name.len()), |((i, _), _)| i);
                &acc[..end.min(acc.len())]
            });
            if common.len() > prefix.len() {
                Completion::Replace(format!("{dir_part}{common}"))
            } else {
                Completion::Choices(
                    found
                        .iter()
                        .take(MAX_LISTED)
                        .map(|(n, dir)| if *dir { format!("{n}/") } else { n.clone() })
                        .collect(),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_like_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/tui")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("src/mod_a.rs"), "").unwrap();
        std::fs::write(root.join("src/mod_b.rs"), "").unwrap();
        std::fs::write(root.join(".hidden"), "").unwrap();
        std::fs::write(root.join("README.md"), "").unwrap();
        assert_eq!(complete(root, "sr"), Completion::Replace("src/".into()));
        assert_eq!(
            complete(root, "src/ma"),
            Completion::Replace("src/main.rs ".into())
        );
        assert_eq!(
            complete(root, "src/mo"),
            Completion::Replace("src/mod_".into())
        );
        assert_eq!(
            complete(root, "src/mod_"),
            Completion::Choices(vec!["mod_a.rs".into(), "mod_b.rs".into()])
        );
        assert_eq!(
            complete(root, "src/"),
            Completion::Choices(vec![
                "main.rs".into(),
                "mod_a.rs".into(),
                "mod_b.rs".into(),
                "tui/".into()
            ])
        );
        assert_eq!(complete(root, "zz"), Completion::None);
        assert_eq!(complete(root, ".h"), Completion::Replace(".hidden ".into()));
        assert_eq!(
            complete(root, "R"),
            Completion::Replace("README.md ".into())
        );
        let abs = format!("{}/src/t", root.display());
        assert_eq!(
            complete(root, &abs),
            Completion::Replace(format!("{}/src/tui/", root.display()))
        );
        assert_eq!(complete(root, "nowhere/x"), Completion::None);
    }
}

//! `@path` arguments on the command line (`pi @src/main.rs "explain"`,
//! `pi -p @shot.png "what is in this image?"`), as the Node.js `pi` documents them.
//!
//! Every message argument that starts with `@` names a file; the files go with the first
//! message. They are all read before anything else happens, so a file that is missing or
//! cannot be attached stops `pi` with its reason and no request is made.

use std::path::Path;

use super::load::{Attachment, load};
use super::{FileRef, resolve};

/// The message arguments split into file names (the `@` removed, in order) and messages.
pub(crate) fn split(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    let mut messages = Vec::new();
    for a in args {
        match a.strip_prefix('@') {
            Some(name) => files.push(name.to_string()),
            None => messages.push(a.clone()),
        }
    }
    (files, messages)
}

/// Read every named file (relative names from `cwd`); the first that cannot be attached
/// stops all with its reason.
pub(crate) fn load_all(cwd: &Path, names: &[String]) -> Result<Vec<(FileRef, Attachment)>, String> {
    names
        .iter()
        .map(|name| {
            if name.is_empty() {
                return Err(
                    "an `@` argument names no file (write @path, e.g. @src/main.rs)".into(),
                );
            }
            let path = resolve(cwd, name);
            let attachment = load(name, &path)?;
            let file = FileRef {
                name: name.clone(),
                path,
                image: attachment.is_image(),
            };
            Ok((file, attachment))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_arguments_are_files_and_the_rest_messages() {
        let args: Vec<String> = ["@a.rs", "explain", "@b.png", "then this"]
            .map(String::from)
            .to_vec();
        let (files, messages) = split(&args);
        assert_eq!(files, ["a.rs", "b.png"]);
        assert_eq!(messages, ["explain", "then this"]);
    }

    #[test]
    fn every_file_is_read_or_the_first_failure_stops_all() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
        let ok = load_all(dir.path(), &["a.txt".into()]).unwrap();
        assert_eq!(ok[0].0.name, "a.txt");
        assert!(!ok[0].0.image);
        let err = load_all(dir.path(), &["a.txt".into(), "gone.txt".into()]).unwrap_err();
        assert_eq!(err, "cannot attach gone.txt: no such file");
        assert!(load_all(dir.path(), &[String::new()]).is_err());
    }
}

//! The home folder in paths a person types and reads: `~` and `~/…` expanded, paths under the
//! home folder shown as `~/…`. One rule for the whole program: only `~` alone and `~/` at the
//! start mean the home folder (`~user/x`, `a/~/b` and `~x` are names like any other), and a
//! path is under the home folder by whole components (`/home/meow` is not under `/home/me`). A
//! leaf: it imports nothing else in the crate.

use std::path::{Path, PathBuf};

/// The home folder, if one is known (an empty `$HOME` counts as none).
pub fn home() -> Option<PathBuf> {
    dirs::home_dir().filter(|h| !h.as_os_str().is_empty())
}

/// What follows the home folder in `raw`: `Some("")` for `~`, `Some("x")` for `~/x`, `None`
/// when `raw` does not start from the home folder.
pub fn home_relative(raw: &str) -> Option<&str> {
    if raw == "~" {
        Some("")
    } else {
        raw.strip_prefix("~/")
    }
}

/// `raw` with `~` or a leading `~/` made the home folder; as written when it has neither, or
/// when no home folder is known.
pub fn expand_home(raw: &str) -> PathBuf {
    expand_home_in(raw, home().as_deref())
}

/// [`expand_home`] with the home folder given.
pub fn expand_home_in(raw: &str, home: Option<&Path>) -> PathBuf {
    let home = home.filter(|h| !h.as_os_str().is_empty());
    match (home_relative(raw), home) {
        (Some(""), Some(h)) => h.to_path_buf(),
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(raw),
    }
}

/// `path` as a person reads it: `~` for the home folder, `~/…` below it, else as it is.
pub fn short_home(path: &Path) -> String {
    short_home_in(path, home().as_deref())
}

/// [`short_home`] with the home folder given.
pub fn short_home_in(path: &Path, home: Option<&Path>) -> String {
    let home = home.filter(|h| !h.as_os_str().is_empty());
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".into(),
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lone_or_leading_tilde_is_the_home_folder() {
        let home = Some(Path::new("/home/me"));
        assert_eq!(expand_home_in("~", home), Path::new("/home/me"));
        assert_eq!(expand_home_in("~/", home), Path::new("/home/me/"));
        assert_eq!(expand_home_in("~/s/x", home), Path::new("/home/me/s/x"));
        assert_eq!(expand_home_in("~other/s", home), Path::new("~other/s"));
        assert_eq!(expand_home_in("~x", home), Path::new("~x"));
        assert_eq!(expand_home_in("a/~/b", home), Path::new("a/~/b"));
        assert_eq!(expand_home_in("/abs", home), Path::new("/abs"));
        assert_eq!(expand_home_in("rel", home), Path::new("rel"));
        assert_eq!(home_relative("~user"), None);
        assert_eq!(home_relative("~"), Some(""));
        assert_eq!(home_relative("~/a"), Some("a"));
    }

    #[test]
    fn without_a_home_folder_the_tilde_stays() {
        assert_eq!(expand_home_in("~/s", None), Path::new("~/s"));
        assert_eq!(expand_home_in("~", None), Path::new("~"));
        assert_eq!(expand_home_in("~", Some(Path::new(""))), Path::new("~"));
        assert_eq!(short_home_in(Path::new("/tmp/x"), None), "/tmp/x");
        assert_eq!(short_home_in(Path::new("/x"), Some(Path::new(""))), "/x");
    }

    #[test]
    fn a_home_with_a_trailing_slash_is_the_same_home() {
        let home = Some(Path::new("/home/me/"));
        assert_eq!(expand_home_in("~", home), Path::new("/home/me/"));
        assert_eq!(expand_home_in("~/a", home), Path::new("/home/me/a"));
        assert_eq!(short_home_in(Path::new("/home/me"), home), "~");
        assert_eq!(short_home_in(Path::new("/home/me/a/b"), home), "~/a/b");
    }

    #[test]
    fn paths_under_home_are_shortened_by_whole_components() {
        let home = Some(Path::new("/home/me"));
        assert_eq!(short_home_in(Path::new("/home/me"), home), "~");
        assert_eq!(short_home_in(Path::new("/home/me/"), home), "~");
        assert_eq!(
            short_home_in(Path::new("/home/me/a/b.md"), home),
            "~/a/b.md"
        );
        assert_eq!(
            short_home_in(Path::new("/home/meow/x"), home),
            "/home/meow/x"
        );
        assert_eq!(short_home_in(Path::new("/tmp/x"), home), "/tmp/x");
        assert_eq!(short_home_in(Path::new("home/me/x"), home), "home/me/x");
    }

    #[test]
    fn expanding_then_shortening_gives_the_typed_path_back() {
        let home = Some(Path::new("/home/me"));
        for typed in ["~", "~/a", "~/a/b c"] {
            assert_eq!(short_home_in(&expand_home_in(typed, home), home), typed);
        }
    }
}

//! Files that decide what pi (or another agent) trusts, which the model's `write` and `edit`
//! calls may only create or change with the person's explicit yes, whatever the mode.
//!
//! A model that could write `.pi/config.toml` could plant an MCP server or a `!command` key for
//! the next run, so these are guarded: a project's `.pi/config.toml`, `.pi/settings.json`,
//! `.pi/models.json`, `.claude/settings.json`, `.claude/settings.local.json` and `.mcp.json`
//! in any folder (pi may be started in a subfolder later), and everything in the agent folder
//! (the person's own config, keys and `trusted-projects.json`). Git's `.git/config` and
//! `.git/hooks/` are guarded too: what is written there runs at the person's next `git`
//! command, outside pi altogether.
//!
//! The path is checked as the tool will open it (lexically cleaned, like the tools do) and
//! again with every symlink on it followed, even a dangling one (a link to a file not yet
//! written still writes there). Names compare case-insensitively, since macOS and Windows
//! file systems usually do. `bash` is not covered: a command can write anything; the trust
//! hash then changes and the person is asked again at the next start.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Guarded names, as the last path components.
const GUARDED: &[&[&str]] = &[
    &[".pi", "config.toml"],
    &[".pi", "settings.json"],
    &[".pi", "models.json"],
    &[".claude", "settings.json"],
    &[".claude", "settings.local.json"],
    &[".mcp.json"],
    &[".git", "config"],
];

/// Guarded folders: anything inside them.
const GUARDED_DIRS: &[&[&str]] = &[&[".git", "hooks"]];

/// How many symlinks are followed before giving up (as the kernel's limit).
const MAX_LINKS: usize = 40;

/// Whether writing `path` (absolute, as the tool resolved it) touches a guarded file.
pub(crate) fn is_guarded(path: &Path, agent_dir: Option<&Path>) -> bool {
    let resolved = follow_links(path);
    let agent = agent_dir.map(|d| (lexical(d), follow_links(d)));
    [path.to_path_buf(), resolved].iter().any(|p| {
        guarded_name(p)
            || agent
                .as_ref()
                .is_some_and(|(a, b)| under(p, a) || under(p, b))
    })
}

fn lower(c: &std::ffi::OsStr) -> String {
    c.to_string_lossy().to_lowercase()
}

fn guarded_name(path: &Path) -> bool {
    let names: Vec<String> = path.components().map(|c| lower(c.as_os_str())).collect();
    let same = |names: &[String], want: &[&str]| names.iter().zip(want).all(|(a, b)| a == b);
    let file = GUARDED
        .iter()
        .any(|tail| names.len() >= tail.len() && same(&names[names.len() - tail.len()..], tail));
    // A folder's components anywhere but last (something inside it is written).
    let inside = GUARDED_DIRS.iter().any(|dir| {
        names.len() > dir.len()
            && (0..names.len() - dir.len()).any(|i| same(&names[i..i + dir.len()], dir))
    });
    file || inside
}

/// `path` is `dir` or inside it (names compared case-insensitively).
fn under(path: &Path, dir: &Path) -> bool {
    let p: Vec<String> = path.components().map(|c| lower(c.as_os_str())).collect();
    let d: Vec<String> = dir.components().map(|c| lower(c.as_os_str())).collect();
    !d.is_empty() && p.len() >= d.len() && p[..d.len()] == d[..]
}

/// `..` and `.` removed without looking at the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` with every symlink on it followed, component by component, as far as they go;
/// the rest (not yet existing) is appended as it is.
fn follow_links(path: &Path) -> PathBuf {
    let mut pending: Vec<OsString> = Vec::new();
    let mut out = PathBuf::new();
    let mut followed = 0;
    push_components(path, &mut pending);
    while let Some(part) = pending.pop() {
        if part == ".." {
            out.pop();
            continue;
        }
        if part == "." {
            continue;
        }
        out.push(&part);
        let is_link = std::fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link || followed >= MAX_LINKS {
            continue;
        }
        let Ok(target) = std::fs::read_link(&out) else {
            continue;
        };
        followed += 1;
        out.pop();
        if target.is_absolute() {
            out = PathBuf::new();
        }
        push_components(&target, &mut pending);
    }
    out
}

/// Put `path`'s components on the stack so they pop in order.
fn push_components(path: &Path, stack: &mut Vec<OsString>) {
    let parts: Vec<OsString> = path
        .components()
        .map(|c| match c {
            Component::ParentDir => OsString::from(".."),
            Component::CurDir => OsString::from("."),
            other => other.as_os_str().to_os_string(),
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guarded_names_match_in_any_folder_and_any_case() {
        for p in [
            "/w/.pi/config.toml",
            "/w/sub/.pi/settings.json",
            "/w/.PI/Config.TOML",
            "/w/.claude/settings.local.json",
            "/w/.mcp.json",
            "/w/.pi/models.json",
            "/w/.git/config",
            "/w/.git/hooks/pre-commit",
        ] {
            assert!(is_guarded(Path::new(p), None), "{p}");
        }
        for p in [
            "/w/pi/config.toml",
            "/w/.pi/notes.md",
            "/w/config.toml",
            "/w/x.mcp.json",
            "/w/.git/hooks",
            "/w/src/config",
            "/w/hooks/x",
        ] {
            assert!(!is_guarded(Path::new(p), None), "{p}");
        }
        let agent = Path::new("/home/me/.pi/agent");
        assert!(is_guarded(
            Path::new("/home/me/.pi/agent/auth.json"),
            Some(agent)
        ));
        assert!(is_guarded(
            Path::new("/home/me/.pi/agent/trusted-projects.json"),
            Some(agent)
        ));
        assert!(!is_guarded(Path::new("/home/me/src/a.rs"), Some(agent)));
    }

    #[test]
    fn symlinks_are_followed_even_dangling_ones() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join(".pi")).unwrap();
        // A folder link to .pi, and a link to a config file not yet written.
        std::os::unix::fs::symlink(w.join(".pi"), w.join("dots")).unwrap();
        std::os::unix::fs::symlink(".pi/config.toml", w.join("notes.toml")).unwrap();
        std::os::unix::fs::symlink("sub/../.claude/settings.json", w.join("s.json")).unwrap();
        assert!(is_guarded(&w.join("dots/config.toml"), None));
        assert!(is_guarded(&w.join("notes.toml"), None));
        assert!(is_guarded(&w.join("s.json"), None));
        assert!(!is_guarded(&w.join("dots/readme.md"), None));
        // A loop of links ends.
        std::os::unix::fs::symlink(w.join("b"), w.join("a")).unwrap();
        std::os::unix::fs::symlink(w.join("a"), w.join("b")).unwrap();
        assert!(!is_guarded(&w.join("a"), None));
        // The agent folder reached through a link.
        let agent = w.join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::os::unix::fs::symlink(&agent, w.join("ag")).unwrap();
        assert!(is_guarded(&w.join("ag/config.toml"), Some(&agent)));
    }
}

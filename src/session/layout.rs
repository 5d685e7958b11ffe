//! Where session files live, named exactly as the Node.js `pi` names them.
//!
//! `<agent dir>/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl`, where `<cwd>` is the working
//! directory without its leading `/` (or `\`) and with every `/`, `\` and `:` replaced by `-`
//! (`/tmp/mock` → `--tmp-mock--`), and `<timestamp>` is the header's ISO time with `:` and `.`
//! replaced by `-`. `--session-dir` (or `PI_CODING_AGENT_SESSION_DIR`, or `session_dir` in
//! config.toml) replaces the per-folder directory: files are then written straight into that
//! directory.

use std::path::{Path, PathBuf};

use super::time::file_stamp;

/// Environment variable that overrides the session directory (below `--session-dir`).
pub(crate) const SESSION_DIR_ENV: &str = "PI_CODING_AGENT_SESSION_DIR";

/// `--<cwd>--` for a working directory, e.g. `/tmp/mock` → `--tmp-mock--`.
pub fn encode_cwd(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let trimmed = text
        .strip_prefix('/')
        .or_else(|| text.strip_prefix('\\'))
        .unwrap_or(&text);
    let body: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// `<timestamp with : and . as ->_<id>.jsonl`.
pub fn session_file_name(iso_timestamp: &str, session_id: &str) -> String {
    format!("{}_{session_id}.jsonl", file_stamp(iso_timestamp))
}

/// The session id part of a file name made by [`session_file_name`], if it has one.
pub fn id_from_file_name(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".jsonl")?;
    stem.split_once('_')
        .map(|(_, id)| id)
        .filter(|id| !id.is_empty())
}

/// The session folders a program run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPaths {
    /// New sessions of this working directory go here; `--continue` looks here.
    pub dir: PathBuf,
    /// The folder holding every project's session folder (`<agent dir>/sessions`), for listing
    /// all projects. `None` when no agent directory is known.
    pub root: Option<PathBuf>,
}

impl SessionPaths {
    /// The default layout: `<agent dir>/sessions/--<cwd>--/`.
    pub fn for_cwd(agent_dir: &Path, cwd: &Path) -> Self {
        let root = agent_dir.join("sessions");
        SessionPaths {
            dir: root.join(encode_cwd(cwd)),
            root: Some(root),
        }
    }

    /// Sessions kept in one explicit directory (`--session-dir`); `root` stays the agent's
    /// sessions folder when known, so "all projects" still finds the others.
    pub fn in_dir(dir: impl Into<PathBuf>, agent_dir: Option<&Path>) -> Self {
        SessionPaths {
            dir: dir.into(),
            root: agent_dir.map(|a| a.join("sessions")),
        }
    }

    /// `--session-dir` > `PI_CODING_AGENT_SESSION_DIR` > `session_dir` in config.toml >
    /// `<agent dir>/sessions/--<cwd>--`. The variable and the config value may start with `~`;
    /// a relative one is taken from `cwd`. `None` only when there is no override and no agent
    /// directory (no home folder).
    pub(crate) fn resolve(
        agent_dir: Option<&Path>,
        cwd: &Path,
        session_dir_flag: Option<&Path>,
        config_dir: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Self> {
        if let Some(dir) = session_dir_flag {
            return Some(Self::in_dir(dir, agent_dir));
        }
        let chosen = env(SESSION_DIR_ENV)
            .filter(|d| !d.trim().is_empty())
            .or_else(|| {
                config_dir
                    .filter(|d| !d.trim().is_empty())
                    .map(str::to_string)
            });
        if let Some(dir) = chosen {
            let dir = crate::paths::expand_home(&dir);
            return Some(Self::in_dir(cwd.join(dir), agent_dir));
        }
        agent_dir.map(|a| Self::for_cwd(a, cwd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding_matches_node_pi() {
        assert_eq!(encode_cwd(Path::new("/tmp/mock")), "--tmp-mock--");
        assert_eq!(
            encode_cwd(Path::new("/home/me/my project")),
            "--home-me-my project--"
        );
        assert_eq!(encode_cwd(Path::new("C:\\Users\\me")), "--C--Users-me--");
        assert_eq!(encode_cwd(Path::new("\\\\srv\\x")), "---srv-x--");
        assert_eq!(encode_cwd(Path::new("/")), "----");
    }

    #[test]
    fn file_names_carry_stamp_and_id() {
        let name = session_file_name(
            "2026-12-02T09:34:49.681Z",
            "01a2361b-5150-7635-b3fd-ab0404bb9f84",
        );
        assert_eq!(
            name,
            "2026-12-02T09-34-49-681Z_01a2361b-5150-7635-b3fd-ab0404bb9f84.jsonl"
        );
        assert_eq!(
            id_from_file_name(&name),
            Some("01a2361b-5150-7635-b3fd-ab0404bb9f84")
        );
        assert_eq!(id_from_file_name("notes.txt"), None);
    }

    #[test]
    fn resolution_order() {
        let agent = Path::new("/a");
        let cwd = Path::new("/w/p");
        let none = |_: &str| None;
        let p = SessionPaths::resolve(Some(agent), cwd, None, None, &none).unwrap();
        assert_eq!(p.dir, Path::new("/a/sessions/--w-p--"));
        assert_eq!(p.root.as_deref(), Some(Path::new("/a/sessions")));
        // The config value beats the default...
        let p = SessionPaths::resolve(Some(agent), cwd, None, Some("/c"), &none).unwrap();
        assert_eq!(p.dir, Path::new("/c"));
        assert_eq!(p.root.as_deref(), Some(Path::new("/a/sessions")));
        // ...and works without an agent directory; a relative one is taken from the cwd.
        let p = SessionPaths::resolve(None, cwd, None, Some("rel/s"), &none).unwrap();
        assert_eq!(p.dir, Path::new("/w/p/rel/s"));
        // An empty value counts as unset.
        let p = SessionPaths::resolve(Some(agent), cwd, None, Some(" "), &none).unwrap();
        assert_eq!(p.dir, Path::new("/a/sessions/--w-p--"));
        // The environment beats the config, the flag beats both.
        let env = |k: &str| (k == SESSION_DIR_ENV).then(|| "/e".to_string());
        let p = SessionPaths::resolve(Some(agent), cwd, None, Some("/c"), &env).unwrap();
        assert_eq!(p.dir, Path::new("/e"));
        let p = SessionPaths::resolve(Some(agent), cwd, Some(Path::new("/f")), Some("/c"), &env)
            .unwrap();
        assert_eq!(p.dir, Path::new("/f"));
        assert!(SessionPaths::resolve(None, cwd, None, None, &none).is_none());
    }

    #[test]
    fn home_is_expanded() {
        if let Some(h) = dirs::home_dir() {
            let p = SessionPaths::resolve(None, Path::new("/w"), None, Some("~/pi-s"), &|_| None)
                .unwrap();
            assert_eq!(p.dir, h.join("pi-s"));
        }
    }
}

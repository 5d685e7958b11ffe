//! Errors and warnings of the session store.
//!
//! A [`SessionError`] is something the caller must act on: a file that cannot be opened, an id
//! prefix that matches nothing or several sessions, a write the disk refused. Damage inside a
//! session file is never an error: it becomes a [`LoadWarning`] (with the line number) and the
//! rest of the file loads.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What went wrong with a session operation.
#[derive(Debug)]
pub enum SessionError {
    /// An I/O operation on `path` failed; `action` says what was being done ("open", "write", ...).
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// `--session`/`--fork` named something that is neither a file nor a known session id.
    NotFound(String),
    /// An id or file name prefix matched more than one session.
    Ambiguous {
        query: String,
        matches: Vec<Candidate>,
    },
    /// The file exists but is not a session file (no session header and no entries).
    NotASession(PathBuf),
    /// Another running pi writes this session (its lock file names `pid`; 0 when it had not
    /// written its id yet).
    Locked { path: PathBuf, pid: u32 },
    /// A session name that is empty or only whitespace.
    EmptyName,
    /// `--continue`: the newest session file has no valid header (the choices are in it).
    UnreadableNewest(Box<super::list::UnreadableNewest>),
}

/// One of the sessions an ambiguous `--session`/`--fork` text matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    /// The start of its id that tells it apart from the other matches.
    pub short_id: String,
    /// When it was started (`YYYY-MM-DD HH:MM`, UTC), empty if unknown.
    pub started: String,
    /// Its name, else its first message.
    pub title: String,
}

impl SessionError {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        SessionError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Io {
                action,
                path,
                source,
            } => write!(
                f,
                "cannot {action} session file {}: {source}",
                path.display()
            ),
            SessionError::NotFound(q) => write!(
                f,
                "no session matches `{q}` (give a session file path or the start of a session id)"
            ),
            SessionError::Ambiguous { query, matches } => {
                write!(f, "`{query}` matches {} sessions:", matches.len())?;
                let wide = matches.iter().map(|m| m.short_id.len()).max().unwrap_or(0);
                for m in matches.iter().take(10) {
                    let title: String = m.title.chars().take(60).collect();
                    write!(
                        f,
                        "\n  {:wide$}  {}  {}",
                        crate::visible::visible(&m.short_id),
                        crate::visible::visible(&m.started),
                        crate::visible::visible(&title)
                    )?;
                }
                if matches.len() > 10 {
                    write!(f, "\n  ... and {} more", matches.len() - 10)?;
                }
                write!(
                    f,
                    "\ngive more of the id (as listed) or the session file's path"
                )
            }
            SessionError::Locked { path, pid } => write!(
                f,
                "session {} is open in {}",
                path.display(),
                another_pi(*pid)
            ),
            SessionError::EmptyName => {
                f.write_str("a session name needs at least one visible character")
            }
            SessionError::UnreadableNewest(found) => write!(f, "{found}"),
            SessionError::NotASession(p) => write!(
                f,
                "{} is not a pi session file (its first line is not a session header)",
                p.display()
            ),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// "another pi (process 4242)", or without the id when the holder had not written it yet.
pub fn another_pi(pid: u32) -> String {
    if pid == 0 {
        "another pi".into()
    } else {
        format!("another pi (process {pid})")
    }
}

/// A problem found while loading a session file; the load went on without the damaged part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadWarning {
    /// 1-based line number in the file (0 when the warning is about the file as a whole).
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

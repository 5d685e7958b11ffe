//! One call from the command line's session flags to a ready recorder and context.
//!
//! [`open_session`] resolves `--continue`, `--session`, `--fork` and a `--resume` pick into a
//! [`SessionRecorder`] (new entries go to the right file) and a [`SessionContext`] (what the
//! agent resumes with), plus the load warnings to show. `--no-session` is simply not calling
//! it. On exit, print [`resume_hint`] when [`SessionRecorder::is_persisted`].
//!
//! [`open_session_to_write`] does the same for a run that will write the session: it takes the
//! session's lock ([`super::lock`]) before reading the file, so what it resumes from is still
//! the end of the file when it appends (another pi cannot slip entries in between).
//!
//! `--continue` never starts a new session while one is there to go on with: when the newest
//! file of the folder has no valid header, the answer is [`SessionError::UnreadableNewest`],
//! which names the file and the ways on (the next newest session, a repaired copy, a new
//! session) for the front end to offer.

use std::path::Path;

use super::branch_context::SessionContext;
use super::error::{LoadWarning, SessionError};
use super::fork::fork;
use super::layout::SessionPaths;
use super::list::{Newest, find_session, is_path_query, newest_candidate};
use super::load::Session;
use super::lock::SessionLock;
use super::recorder::SessionRecorder;

/// Where a run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartFrom<'a> {
    /// A new session (the default).
    New,
    /// `-c/--continue`: the newest session of this folder, else a new one.
    Continue,
    /// `--session <path|id-prefix|file-name-prefix|name>`: that session; a path that does not
    /// exist yet (and is no session's file name) starts a new session stored at that path.
    Session(&'a str),
    /// `--fork <path|id-prefix>`: a copy of that session, stored in this folder.
    Fork(&'a str),
    /// A file chosen in the `--resume` picker.
    File(&'a Path),
}

/// A session ready to run.
#[derive(Debug)]
pub struct OpenedSession {
    pub recorder: SessionRecorder,
    /// Empty for a new session. Its `origins` are given to the recorder (which names the
    /// entries a later compaction keeps) and are empty here.
    pub context: SessionContext,
    /// Damage found while loading (show them; the session is usable).
    pub warnings: Vec<LoadWarning>,
    /// An existing session was opened (or forked), not a new one started.
    pub resumed: bool,
    /// `--session` matched a session of another project's folder (the Node.js `pi` offers to
    /// fork it instead; here it is opened in place and the caller may warn).
    pub other_folder: bool,
    /// The working directory the session was started in, if it differs from `cwd`.
    pub recorded_cwd: Option<String>,
}

/// Whether opening takes the session's lock first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claim {
    Lock,
    ReadOnly,
}

fn resumed_from(
    path: &Path,
    cwd: &Path,
    other_folder: bool,
    dest_dir: &Path,
    claim: Claim,
) -> Result<OpenedSession, SessionError> {
    // Locked before it is read: nobody appends between the read and our first write.
    let mut lock = match claim {
        Claim::Lock => Some(SessionLock::acquire(path)?),
        Claim::ReadOnly => None,
    };
    let mut session = Session::load(path)?;
    let mut warnings = session.warnings.clone();
    if session.header_missing() && !session.entries.is_empty() {
        // Continue in a copy with a proper header rather than appending to a broken file.
        let copy = fork(path, dest_dir, cwd)?;
        warnings.push(LoadWarning {
            line: 0,
            message: format!(
                "{} has no session header; continuing in a repaired copy: {}",
                path.display(),
                copy.path.display()
            ),
        });
        if claim == Claim::Lock {
            lock = Some(SessionLock::acquire(&copy.path)?);
        }
        session = Session::load(&copy.path)?;
    }
    let recorded = session.cwd().to_string();
    let recorded_cwd = (!recorded.is_empty() && Path::new(&recorded) != cwd).then_some(recorded);
    // The recorder needs the loaded ids and the context takes them; the context finds the
    // model and level at the leaf, which the recorder starts with.
    let mut recorder = SessionRecorder::resume_unset(&session)?;
    let mut context = session.into_context();
    recorder.resumed_settings(context.model.clone(), context.thinking_level);
    if let Some(lock) = lock {
        recorder.adopt_lock(lock);
    }
    recorder.remember(&context.messages, std::mem::take(&mut context.origins));
    Ok(OpenedSession {
        recorder,
        context,
        warnings,
        resumed: true,
        other_folder,
        recorded_cwd,
    })
}

fn fresh(recorder: SessionRecorder) -> OpenedSession {
    OpenedSession {
        recorder,
        context: SessionContext::default(),
        warnings: Vec::new(),
        resumed: false,
        other_folder: false,
        recorded_cwd: None,
    }
}

/// Resolve the session flags (see [`StartFrom`]) without taking the session's lock (to look
/// at a session, or when the caller locks it).
pub fn open_session(
    paths: &SessionPaths,
    cwd: &Path,
    from: StartFrom<'_>,
) -> Result<OpenedSession, SessionError> {
    open_with(paths, cwd, from, Claim::ReadOnly)
}

/// Resolve the session flags for a run that writes the session: an existing session is
/// locked before it is read ([`SessionError::Locked`] when another pi writes it).
pub fn open_session_to_write(
    paths: &SessionPaths,
    cwd: &Path,
    from: StartFrom<'_>,
) -> Result<OpenedSession, SessionError> {
    open_with(paths, cwd, from, Claim::Lock)
}

fn open_with(
    paths: &SessionPaths,
    cwd: &Path,
    from: StartFrom<'_>,
    claim: Claim,
) -> Result<OpenedSession, SessionError> {
    match from {
        StartFrom::New => Ok(fresh(SessionRecorder::new_session(&paths.dir, cwd))),
        StartFrom::Continue => match newest_candidate(&paths.dir) {
            Newest::Session(path) => resumed_from(&path, cwd, false, &paths.dir, claim),
            Newest::None => Ok(fresh(SessionRecorder::new_session(&paths.dir, cwd))),
            Newest::Unreadable(found) => Err(SessionError::UnreadableNewest(Box::new(found))),
        },
        StartFrom::File(path) => resumed_from(path, cwd, false, &paths.dir, claim),
        StartFrom::Session(query) => {
            let found = match find_session(paths, query) {
                // A path that is not there yet (and no session's file name): a new session
                // stored there.
                Err(SessionError::NotFound(_))
                    if is_path_query(query) && !Path::new(query).exists() =>
                {
                    return Ok(fresh(SessionRecorder::new_at(Path::new(query), cwd)));
                }
                other => other?,
            };
            resumed_from(
                &found.path,
                cwd,
                !found.in_current_folder,
                &paths.dir,
                claim,
            )
        }
        StartFrom::Fork(query) => {
            let found = find_session(paths, query)?;
            let forked = fork(&found.path, &paths.dir, cwd)?;
            resumed_from(&forked.path, cwd, false, &paths.dir, claim)
        }
    }
}

/// The line printed on exit: `pi -c` right here (it is the newest session of this folder), or
/// its id from anywhere.
pub fn resume_hint(session_id: &str) -> String {
    format!("To resume this session: pi -c here, or pi --session {session_id}")
}

//! One writer per session file.
//!
//! The pi writing a session keeps `<session file>.lock` beside it, holding its process id and
//! a random token (`4242 5f3a…`). A second pi that wants to write the same session finds the
//! lock, sees the holder still running, and is refused with [`SessionError::Locked`]; its front
//! end then offers to fork the session or open it read-only. Without this, two `pi -c` in one
//! folder would both append to one file and split the conversation into two branches silently.
//!
//! A lock whose holder is gone (a crash, `kill -9`) is stale and taken over. A holder counts as
//! gone when no process has its id, or when that id now belongs to a program with another name
//! (the id was reused). A lock held by this very process (the same session opened again from
//! the picker) is taken over too. The lock is removed when its [`SessionLock`] is dropped, but
//! only while it still holds this lock's token, so a takeover is never undone by the old owner.
//!
//! A short edit of a file that is not open here — a rename or a delete from the picker — takes
//! the lock with [`SessionLock::acquire_unshared`], which also refuses when a recorder of this
//! very process holds it (the process keeps the tokens of the locks it holds, so a lock left
//! behind by an earlier process that had the same id still counts as stale).

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::error::SessionError;

/// The contents of the lock files this process holds now.
static HELD: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn held() -> MutexGuard<'static, Vec<String>> {
    // The list stays valid even if a thread panicked while holding the guard.
    HELD.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a lock held by this process means to a new claim.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnLock {
    /// Take it over (the same session opened again in this process).
    TakeOver,
    /// Count it as held (a recorder of this process is writing the file).
    Refuse,
}

/// A held lock on a session file; released on drop.
#[derive(Debug)]
pub struct SessionLock {
    path: PathBuf,
    content: String,
}

/// The lock file of `session`.
pub fn lock_path(session: &Path) -> PathBuf {
    let mut name = session.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

impl SessionLock {
    /// Take the lock of `session`, or say which live process holds it.
    pub fn acquire(session: &Path) -> Result<SessionLock, SessionError> {
        Self::acquire_with(session, running_pi)
    }

    /// Take the lock of `session` for a short edit by code that does not have the session open
    /// (renaming or deleting it from a picker). Unlike [`SessionLock::acquire`], a lock this
    /// process holds is refused too ([`SessionError::Locked`] with this process's id): some
    /// recorder here is writing that file.
    pub fn acquire_unshared(session: &Path) -> Result<SessionLock, SessionError> {
        Self::claim(session, running_pi, OwnLock::Refuse)
    }

    /// [`SessionLock::acquire`], with `live` telling whether a holder still runs.
    fn acquire_with(session: &Path, live: fn(u32) -> bool) -> Result<SessionLock, SessionError> {
        Self::claim(session, live, OwnLock::TakeOver)
    }

    fn claim(
        session: &Path,
        live: fn(u32) -> bool,
        own: OwnLock,
    ) -> Result<SessionLock, SessionError> {
        let path = lock_path(session);
        let me = std::process::id();
        let content = format!("{me} {}\n", super::ids::uuid_v7());
        // Twice at most: once more after clearing a stale lock.
        for _ in 0..2 {
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    // Known as ours before anyone can read it, so an unshared claim in another
                    // thread never mistakes it for a leftover.
                    held().push(content.clone());
                    if let Err(e) = f.write_all(content.as_bytes()) {
                        held().retain(|c| *c != content);
                        return Err(SessionError::io("lock", session, e));
                    }
                    return Ok(SessionLock { path, content });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let found = std::fs::read_to_string(&path).unwrap_or_default();
                    let held_here = own == OwnLock::Refuse
                        && holder(&found) == Some(me)
                        && held().contains(&found);
                    match holder(&found) {
                        Some(pid) if held_here || (pid != me && live(pid)) => {
                            return Err(SessionError::Locked {
                                path: session.to_path_buf(),
                                pid,
                            });
                        }
                        // Stale, unreadable, or ours: clear it and try again.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(SessionError::io("lock", session, e)),
            }
        }
        Err(SessionError::io(
            "lock",
            session,
            io::Error::other("the lock file keeps coming back"),
        ))
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        held().retain(|c| *c != self.content);
        if std::fs::read_to_string(&self.path).is_ok_and(|c| c == self.content) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The process id a lock file names.
fn holder(content: &str) -> Option<u32> {
    content.split_whitespace().next()?.parse().ok()
}

/// Whether `pid` is a running process of the same program as this one.
fn running_pi(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    // SAFETY: signal 0 only asks whether the process exists.
    let rc = unsafe { libc::kill(raw, 0) };
    let exists = rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    // Where /proc tells the program's name, a reused id shows as another program.
    let comm = |p: &str| std::fs::read_to_string(format!("/proc/{p}/comm")).ok();
    match (comm(&pid.to_string()), comm("self")) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session_in(dir: &Path) -> PathBuf {
        dir.join("s.jsonl")
    }

    #[test]
    fn a_lock_is_exclusive_while_its_holder_runs_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        let lock = SessionLock::acquire(&s).unwrap();
        assert!(lock_path(&s).exists());
        // Our own lock is taken over (the same session reopened in this process)...
        let again = SessionLock::acquire(&s).unwrap();
        // ...and the first owner's drop leaves the new lock alone.
        drop(lock);
        assert!(lock_path(&s).exists());
        drop(again);
        assert!(!lock_path(&s).exists());
    }

    #[test]
    fn a_live_holder_refuses_and_a_dead_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        // Any live process stands in for another pi here (the name check has its own test).
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                st.rsplit_once(')')
                    .is_some_and(|(_, r)| !r.starts_with(" Z"))
            })
        };
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = other.id();
        std::fs::write(lock_path(&s), format!("{pid} token\n")).unwrap();
        match SessionLock::acquire_with(&s, alive) {
            Err(SessionError::Locked { pid: held, path }) => {
                assert_eq!(held, pid);
                assert_eq!(path, s);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let _ = other.kill();
        other.wait().unwrap();
        let lock = SessionLock::acquire_with(&s, alive).expect("a dead holder's lock is stale");
        drop(lock);

        // Garbage in the file is stale too.
        std::fs::write(lock_path(&s), "???").unwrap();
        assert!(SessionLock::acquire(&s).is_ok());
    }

    #[test]
    fn an_unshared_claim_respects_this_process_s_own_locks_but_not_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        let lock = SessionLock::acquire(&s).unwrap();
        match SessionLock::acquire_unshared(&s) {
            Err(SessionError::Locked { pid, .. }) => assert_eq!(pid, std::process::id()),
            other => panic!("expected a refusal, got {other:?}"),
        }
        // The refusal left the holder's lock alone.
        drop(lock);
        assert!(!lock_path(&s).exists());

        // A file naming this process with a token it does not hold is left from an earlier
        // process that had the same id.
        std::fs::write(
            lock_path(&s),
            format!(
                "{} 0190a000-0000-7000-8000-000000000000\n",
                std::process::id()
            ),
        )
        .unwrap();
        let edit = SessionLock::acquire_unshared(&s).expect("a leftover is stale");
        assert!(SessionLock::acquire_unshared(&s).is_err());
        drop(edit);
        assert!(!lock_path(&s).exists());
    }

    #[test]
    fn only_a_process_of_this_program_counts_as_a_holder() {
        assert!(running_pi(std::process::id()));
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(!running_pi(sleeper.id()), "a `sleep` is not a pi");
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(!running_pi(0));
    }

    #[test]
    fn a_reused_id_of_another_program_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(lock_path(&s), format!("{} token\n", sleeper.id())).unwrap();
        let acquired = SessionLock::acquire(&s);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(acquired.is_ok(), "a `sleep` is not a pi");
    }
}

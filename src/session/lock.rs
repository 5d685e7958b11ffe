//! One writer per session file.
//!
//! The pi writing a session keeps `<session file>.lock` beside it, open and held with an
//! advisory `flock`, and writes its process id into it (`4242`) for the message a second pi
//! shows. Taking the lock is one atomic step of the kernel's: of two pi that start at the same
//! instant (two `pi -c` in one folder) exactly one gets it, and the other is refused with
//! [`SessionError::Locked`]; its front end then offers to fork the session or open it
//! read-only. Without this, both would append to one file and split the conversation into two
//! branches silently.
//!
//! The kernel drops the `flock` when its holder ends, however it ends (a crash, `kill -9`), so
//! a lock file left behind is simply taken by the next pi; no process id is ever guessed at.
//! The file is removed when its [`SessionLock`] is dropped, but only while the path still names
//! the file this lock holds; a claim that opened a file which was removed meanwhile notices
//! (the path names another file, or none) and starts over. A lock file whose process id cannot
//! be written (a full disk) is removed again and the claim fails: no empty lock is left.
//!
//! Within one process the kernel's lock cannot tell two claims apart, so the process keeps a
//! list of the locks it holds. A lock held here is shared by a second [`SessionLock::acquire`]
//! (the same session opened again from the picker: the lock lives until both are dropped). A
//! short edit of a file that is not open here — a rename or a delete from the picker — takes the
//! lock with [`SessionLock::acquire_unshared`], which is refused while a recorder of this very
//! process holds it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::error::SessionError;

/// The locks this process holds now.
static HELD: Mutex<Vec<Weak<Held>>> = Mutex::new(Vec::new());

fn held() -> MutexGuard<'static, Vec<Weak<Held>>> {
    // The list stays valid even if a thread panicked while holding the guard.
    crate::sync::lock(&HELD)
}

/// What a lock held by this process means to a new claim.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnLock {
    /// Share it (the same session opened again in this process).
    Share,
    /// Count it as held (a recorder of this process is writing the file).
    Refuse,
}

/// An open lock file with the `flock` on it.
#[derive(Debug)]
struct Held {
    path: PathBuf,
    /// Kept open: closing it releases the `flock`.
    file: File,
    /// Device and inode of the file, to tell it from a file made later at the same path.
    id: (u64, u64),
}

impl Drop for Held {
    fn drop(&mut self) {
        // Only while the path still names this file: another pi may own a new one there.
        if file_id(&self.path).is_some_and(|id| id == self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
        // The `flock` goes when `file` is closed, after the removal.
    }
}

/// A held lock on a session file; released when the last holder of it in this process drops.
#[derive(Debug)]
pub struct SessionLock {
    // Only held: the lock lives as long as some `SessionLock` has it.
    _held: Arc<Held>,
}

/// The lock file of `session`.
pub fn lock_path(session: &Path) -> PathBuf {
    let mut name = session.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// How many times a claim starts over after the file it opened was removed under it.
const ATTEMPTS: usize = 8;

impl SessionLock {
    /// Take the lock of `session`, or say which other process holds it.
    pub fn acquire(session: &Path) -> Result<SessionLock, SessionError> {
        Self::claim(session, OwnLock::Share)
    }

    /// Take the lock of `session` for a short edit by code that does not have the session open
    /// (renaming or deleting it from a picker). Unlike [`SessionLock::acquire`], a lock this
    /// process holds is refused too ([`SessionError::Locked`] with this process's id): some
    /// recorder here is writing that file.
    pub(crate) fn acquire_unshared(session: &Path) -> Result<SessionLock, SessionError> {
        Self::claim(session, OwnLock::Refuse)
    }

    fn claim(session: &Path, own: OwnLock) -> Result<SessionLock, SessionError> {
        let path = lock_path(session);
        let me = std::process::id();
        // One claim at a time in this process: the list and the kernel's lock agree.
        let mut list = held();
        list.retain(|w| w.strong_count() > 0);
        if let Some(id) = file_id(&path)
            && let Some(mine) = list.iter().filter_map(Weak::upgrade).find(|h| h.id == id)
        {
            return match own {
                OwnLock::Share => Ok(SessionLock { _held: mine }),
                OwnLock::Refuse => Err(SessionError::Locked {
                    path: session.to_path_buf(),
                    pid: me,
                }),
            };
        }
        let io_err = |e: io::Error| SessionError::io("lock", session, e);
        for _ in 0..ATTEMPTS {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(io_err)?;
            if !try_flock(&file).map_err(io_err)? {
                return Err(SessionError::Locked {
                    path: session.to_path_buf(),
                    pid: holder_of(&mut file).unwrap_or(0),
                });
            }
            let meta = file.metadata().map_err(io_err)?;
            let id = (meta.dev(), meta.ino());
            if file_id(&path) != Some(id) {
                // Its holder removed it between our open and our lock: start over.
                continue;
            }
            let held = Held { path, file, id };
            if let Err(e) = write_pid(&held.file, me) {
                // Dropping `held` removes the file: no empty lock stays behind.
                drop(held);
                return Err(io_err(e));
            }
            let held = Arc::new(held);
            list.push(Arc::downgrade(&held));
            return Ok(SessionLock { _held: held });
        }
        Err(io_err(io::Error::other(
            "the lock file keeps being replaced by another process",
        )))
    }
}

/// Take the `flock` without waiting: `false` when another open file holds it.
fn try_flock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: the descriptor is open for as long as `file` lives.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(code) if code == libc::EWOULDBLOCK || code == libc::EAGAIN => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Replace the file's contents with this process's id.
fn write_pid(mut file: &File, pid: u32) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{pid}\n").as_bytes())?;
    Ok(())
}

/// The process id a held lock file names (`None` while its holder has not written it yet).
fn holder_of(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session_in(dir: &Path) -> PathBuf {
        dir.join("s.jsonl")
    }

    #[test]
    fn a_lock_is_shared_within_the_process_and_removed_when_the_last_holder_drops() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        let lock = SessionLock::acquire(&s).unwrap();
        assert!(lock_path(&s).exists());
        assert_eq!(
            std::fs::read_to_string(lock_path(&s)).unwrap(),
            format!("{}\n", std::process::id())
        );
        // The same session opened again in this process shares it...
        let again = SessionLock::acquire(&s).unwrap();
        // ...and the first owner's drop leaves it in place for the second.
        drop(lock);
        assert!(lock_path(&s).exists());
        drop(again);
        assert!(!lock_path(&s).exists());
    }

    #[test]
    fn a_lock_held_by_another_open_file_refuses_and_a_released_one_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        // Another process's hold, as the kernel sees it: a separate open file with the flock.
        let other = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_path(&s))
            .unwrap();
        assert!(try_flock(&other).unwrap());
        std::fs::write(lock_path(&s), "4242\n").unwrap();
        match SessionLock::acquire(&s) {
            Err(SessionError::Locked { pid, path }) => {
                assert_eq!(pid, 4242);
                assert_eq!(path, s);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // The holder ends (the kernel releases its flock); its file stays behind.
        drop(other);
        assert!(lock_path(&s).exists());
        let lock = SessionLock::acquire(&s).expect("a released lock is free");
        assert_eq!(
            std::fs::read_to_string(lock_path(&s)).unwrap(),
            format!("{}\n", std::process::id()),
            "the old holder's id is replaced"
        );
        drop(lock);
        assert!(!lock_path(&s).exists());

        // Garbage in a file nobody holds is no obstacle either.
        std::fs::write(lock_path(&s), "???").unwrap();
        assert!(SessionLock::acquire(&s).is_ok());
    }

    #[test]
    fn an_unshared_claim_is_refused_while_this_process_holds_the_lock() {
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

        // A file naming this process that nobody holds is left from an earlier process that
        // had the same id.
        std::fs::write(lock_path(&s), format!("{}\n", std::process::id())).unwrap();
        let edit = SessionLock::acquire_unshared(&s).expect("a leftover is free");
        assert!(SessionLock::acquire_unshared(&s).is_err());
        drop(edit);
        assert!(!lock_path(&s).exists());
    }

    #[test]
    fn of_claims_made_at_the_same_instant_exactly_one_wins() {
        // Each round, two threads claim one session at once, unshared (as two processes
        // would: neither may share the other's). Exactly one may hold it.
        let dir = tempfile::tempdir().unwrap();
        for round in 0..200 {
            let s = dir.path().join(format!("s{round}.jsonl"));
            let barrier = std::sync::Barrier::new(2);
            let results: Vec<bool> = std::thread::scope(|scope| {
                let claims: Vec<_> = (0..2)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            SessionLock::acquire_unshared(&s).ok()
                        })
                    })
                    .collect();
                let locks: Vec<_> = claims.into_iter().map(|c| c.join().unwrap()).collect();
                locks.iter().map(Option::is_some).collect()
            });
            assert_eq!(
                results.iter().filter(|won| **won).count(),
                1,
                "round {round}: {results:?}"
            );
            assert!(!lock_path(&s).exists(), "released after the round");
        }
    }

    #[test]
    fn a_claim_that_opened_a_removed_file_starts_over_on_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let s = session_in(dir.path());
        let first = SessionLock::acquire(&s).unwrap();
        // A stale handle to the first file, as a slow claimant would have opened it.
        let stale = File::open(lock_path(&s)).unwrap();
        drop(first);
        assert!(!lock_path(&s).exists());
        // The flock on the removed file is free, but the path names nothing: a new claim makes
        // and holds a new file.
        assert!(try_flock(&stale).unwrap());
        let second = SessionLock::acquire(&s).unwrap();
        assert!(lock_path(&s).exists());
        let other = File::open(lock_path(&s)).unwrap();
        assert!(!try_flock(&other).unwrap(), "the new file is held");
        drop(second);
    }
}

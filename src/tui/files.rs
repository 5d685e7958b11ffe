//! The project's files for the `@` picker, listed in the background.
//!
//! Nothing is listed until the first `@` is typed. Then a walk of the session's folder starts
//! on its own threads: ripgrep's `ignore` crate with the rules `grep` and `find` use
//! (`.gitignore`, `.ignore` and git's excludes honoured, hidden files listed, `.git` skipped).
//! The picker reads what has arrived while the walk goes on, so it opens at once even on
//! 100,000 files. Each later opening lists again in the background and keeps showing the
//! previous list until the new one is complete. Paths are kept relative to the folder, with
//! `/` between parts; at most [`MAX_FILES`] are kept.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ignore::WalkState;

use crate::sync::lock;

/// More files than this are not listed (the picker says so).
pub const MAX_FILES: usize = 500_000;
/// Paths a walking thread gathers before handing them over.
const BATCH: usize = 1024;
/// A list younger than this is not listed again when the picker opens.
const FRESH: Duration = Duration::from_secs(5);

/// One listing: the paths found so far and whether the walk has ended.
#[derive(Debug, Default)]
pub struct Listing {
    pub paths: Vec<String>,
    pub done: bool,
    /// The walk stopped at [`MAX_FILES`].
    pub truncated: bool,
    /// Which walk made it (each has its own number).
    pub id: usize,
    /// Set when nobody wants the result any more: the walk stops.
    stop: Arc<AtomicBool>,
    finished: Option<Instant>,
}

type Shared = Arc<Mutex<Listing>>;

/// Numbers the listings.
static LISTINGS: AtomicUsize = AtomicUsize::new(1);

fn next_id() -> usize {
    LISTINGS.fetch_add(1, Ordering::Relaxed)
}

/// The files of one folder, listed on demand.
#[derive(Debug)]
pub struct FileIndex {
    root: PathBuf,
    /// The list shown (complete, or the first one still growing).
    shown: Option<Shared>,
    /// A newer list being made; it replaces `shown` when complete.
    next: Option<Shared>,
}

impl FileIndex {
    /// An index of `root`, listed when first asked.
    pub fn lazy(root: PathBuf) -> Self {
        FileIndex {
            root,
            shown: None,
            next: None,
        }
    }

    /// An index holding these paths, complete (for tests and benchmarks).
    pub fn fixed(paths: Vec<String>) -> Self {
        let listing = Listing {
            paths,
            id: next_id(),
            done: true,
            finished: Some(Instant::now()),
            ..Default::default()
        };
        FileIndex {
            root: PathBuf::new(),
            shown: Some(Arc::new(Mutex::new(listing))),
            next: None,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The picker opened: list the folder if that was never done or the list is not fresh.
    pub fn refresh(&mut self) {
        match &self.shown {
            None => self.shown = Some(walk(self.root.clone())),
            Some(shown) => {
                let stale = {
                    let l = lock(shown);
                    l.done && l.finished.is_some_and(|t| t.elapsed() >= FRESH)
                };
                if stale && self.next.is_none() && !self.root.as_os_str().is_empty() {
                    self.next = Some(walk(self.root.clone()));
                }
            }
        }
    }

    /// Take a newer list once it is complete.
    fn promote(&mut self) {
        if let Some(next) = &self.next
            && lock(next).done
        {
            self.shown = self.next.take();
        }
    }

    /// A listing is under way.
    pub fn is_listing(&self) -> bool {
        self.shown
            .iter()
            .chain(self.next.iter())
            .any(|s| !lock(s).done)
    }

    /// Look at the current list.
    pub fn with<R>(&mut self, f: impl FnOnce(&Listing) -> R) -> R {
        self.promote();
        match &self.shown {
            Some(s) => f(&lock(s)),
            None => f(&Listing::default()),
        }
    }

    /// A key that changes whenever the list does (which listing, how long, complete), for
    /// caching what is computed from it.
    pub fn version(&mut self) -> (usize, usize, bool) {
        self.with(|l| (l.id, l.paths.len(), l.done))
    }
}

impl Drop for FileIndex {
    fn drop(&mut self) {
        for s in self.shown.iter().chain(self.next.iter()) {
            lock(s).stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Paths one walking thread found, handed over in batches and when the thread ends.
struct Batch {
    paths: Vec<String>,
    shared: Shared,
    stop: Arc<AtomicBool>,
}

impl Batch {
    /// Hand the paths over; false when no more are wanted.
    fn flush(&mut self) -> bool {
        let mut l = lock(&self.shared);
        let room = MAX_FILES.saturating_sub(l.paths.len());
        if self.paths.len() > room {
            self.paths.truncate(room);
            l.truncated = true;
            self.stop.store(true, Ordering::Relaxed);
        }
        l.paths.append(&mut self.paths);
        !self.stop.load(Ordering::Relaxed)
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Start listing `root` on background threads.
fn walk(root: PathBuf) -> Shared {
    let shared: Shared = Arc::new(Mutex::new(Listing {
        id: next_id(),
        ..Default::default()
    }));
    let stop = lock(&shared).stop.clone();
    let out = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("pi-files".into())
        .spawn(move || {
            crate::host::view::walk_folder(&root, None).run(|| {
                let mut batch = Batch {
                    paths: Vec::with_capacity(BATCH),
                    shared: out.clone(),
                    stop: stop.clone(),
                };
                let root = root.clone();
                Box::new(move |entry| {
                    if batch.stop.load(Ordering::Relaxed) {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    if !entry.file_type().is_some_and(|t| t.is_file()) {
                        return WalkState::Continue;
                    }
                    if let Ok(rel) = entry.path().strip_prefix(&root)
                        && let Some(text) = rel.to_str()
                    {
                        batch.paths.push(text.to_string());
                    }
                    if batch.paths.len() >= BATCH && !batch.flush() {
                        return WalkState::Quit;
                    }
                    WalkState::Continue
                })
            });
            let mut l = lock(&out);
            l.done = true;
            l.finished = Some(Instant::now());
        });
    if spawned.is_err() {
        // No thread, no list: the picker shows none rather than waiting forever.
        let mut l = lock(&shared);
        l.done = true;
        l.finished = Some(Instant::now());
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_honouring_ignore_rules_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("src/deep/x.rs"), "").unwrap();
        std::fs::write(root.join("target/out.rs"), "").unwrap();
        std::fs::write(root.join("debug.log"), "").unwrap();
        std::fs::write(root.join(".env.example"), "").unwrap();
        let mut index = FileIndex::lazy(root.to_path_buf());
        assert!(!index.is_listing(), "nothing listed before it is asked for");
        index.refresh();
        let deadline = Instant::now() + Duration::from_secs(10);
        while index.is_listing() {
            assert!(Instant::now() < deadline, "the listing never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut paths = index.with(|l| l.paths.clone());
        paths.sort();
        assert_eq!(
            paths,
            [".env.example", ".gitignore", "src/deep/x.rs", "src/main.rs"]
        );
    }
}

//! Watching the working folder for the changes a tool call makes.
//!
//! The tracker keeps what it last knew of every file under the working folder (metadata and
//! content hash, the content itself in the [`BlobStore`]). The first time it is needed — or
//! at once in the background, see [`Tracker::warm`] — it saves every file's content (a file
//! whose metadata matches the folder's index of an earlier session is not read again).
//!
//! - A `bash` call (or a subagent's whole task) is bracketed by [`Tracker::begin`] and
//!   [`Tracker::finish`]: a metadata scan before (taking in what the person changed
//!   meanwhile, which is theirs and not recorded) and after; each file whose metadata moved is
//!   read, and recorded if its content or mode did change.
//! - A `write` or `edit` is bracketed by [`Tracker::before_file`] and [`Tracker::after_file`]:
//!   the one file is read before and after; nothing is scanned.
//!
//! Outside the working folder nothing is tracked; neither are the files the walk leaves out
//! (ignored by `.gitignore` and the like, `.git` itself) nor symlinks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::sync::lock;

use super::record::{ChangeSet, FileChange, Version};
use super::scan::{Change, Meta, Scanner};
use super::store::{BlobStore, PutError, hash_of};

/// The bounds a tracker works within.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A file larger than this is not saved: its changes cannot be undone.
    pub max_file_bytes: u64,
    /// The store holds at most this much.
    pub max_store_bytes: u64,
    /// A working folder with more files than this is not scanned: `bash` is not tracked.
    pub max_files: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 4 << 20,
            max_store_bytes: 512 << 20,
            max_files: 100_000,
        }
    }
}

/// What the tracker knows of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Known {
    meta: Meta,
    /// `None`: not saved (too large, unreadable, store full).
    hash: Option<String>,
}

impl Known {
    fn version(&self) -> Version {
        Version {
            hash: self.hash.clone(),
            mode: Some(self.meta.mode),
        }
    }
}

#[derive(Default)]
struct State {
    /// Shared with the calls under way ([`Begin`]); copied only when one still holds it.
    known: Arc<HashMap<PathBuf, Known>>,
    scanner: Option<Scanner>,
    /// What scans found while calls were under way (each [`Begin`] reads from its mark on).
    log: Vec<Change>,
    /// Scanned calls under way.
    open_calls: usize,
    /// Every file's content is saved.
    ready: bool,
    /// Why scans are off (too many files); said once.
    off: Option<String>,
}

/// The changes a tool makes to the working folder.
pub struct Tracker {
    root: PathBuf,
    store: Arc<BlobStore>,
    index: PathBuf,
    limits: Limits,
    /// pi's own folders inside the working folder, never scanned.
    skip: Vec<PathBuf>,
    state: Mutex<State>,
    notices: Box<dyn Fn(String) + Send + Sync>,
    /// [`Tracker::warm`] has started.
    warming: std::sync::atomic::AtomicBool,
}

/// The start of a scanned call: what was known when it began.
pub struct Begin {
    known: Arc<HashMap<PathBuf, Known>>,
    /// Where in the log this call's changes start.
    mark: usize,
    /// When it began (a folder born after this is the call's own).
    started: SystemTime,
}

/// The start of a one-file call.
pub struct FileBegin {
    path: PathBuf,
    before: Option<Known>,
    /// The outermost folder on the way to the file that did not exist yet.
    missing: Option<PathBuf>,
}

/// How much earlier than the clock a new folder's birth time may read: the kernel stamps
/// files from a clock that is updated once per tick, so a folder made just after a call
/// began can carry a time from just before.
const BIRTH_SLACK: Duration = Duration::from_millis(20);

impl Tracker {
    /// A tracker of `root` keeping contents in `dir` (`dir/blobs`, `dir/index`); `notices`
    /// hears what the person should know (a file too large to undo, a folder too large to
    /// scan).
    pub fn new(
        root: &Path,
        dir: &Path,
        limits: Limits,
        notices: Box<dyn Fn(String) + Send + Sync>,
    ) -> Self {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Tracker {
            root,
            store: Arc::new(BlobStore::new(dir.join("blobs"), limits.max_store_bytes)),
            index: dir.join("index"),
            limits,
            skip: Vec::new(),
            state: Mutex::new(State::default()),
            notices,
            warming: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Never scan these folders (pi's own: the agent folder, the sessions).
    #[must_use]
    pub fn skipping(mut self, folders: impl IntoIterator<Item = PathBuf>) -> Self {
        self.skip = folders
            .into_iter()
            .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
            .collect();
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn store(&self) -> &Arc<BlobStore> {
        &self.store
    }

    /// Save every file's content now, on a thread of its own, so the first `bash` call does
    /// not wait for it (once; later calls do nothing).
    pub fn warm(self: &Arc<Self>) {
        if self
            .warming
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let me = self.clone();
        let _ = std::thread::Builder::new()
            .name("pi-checkpoints".into())
            .spawn(move || {
                let mut st = lock(&me.state);
                me.ensure_ready(&mut st);
            });
    }

    fn ensure_ready(&self, st: &mut State) {
        if st.ready || st.off.is_some() {
            return;
        }
        let Some(found) = self.changes(st) else {
            return;
        };
        let cached = read_index(&self.index);
        let known = Arc::make_mut(&mut st.known);
        for (path, meta) in found {
            let Some(meta) = meta else { continue };
            let k = match cached.get(&path) {
                Some(k)
                    if k.meta == meta && k.hash.as_deref().is_some_and(|h| self.store.has(h)) =>
                {
                    k.clone()
                }
                _ => self.capture(&path, meta),
            };
            known.insert(path, k);
        }
        st.ready = true;
        write_index(&self.index, &st.known);
    }

    /// What changed since the last scan, kept in the log while calls are under way. `None`
    /// when the folder is too large to scan: scans stay off from then on, said once.
    fn changes(&self, st: &mut State) -> Option<Vec<Change>> {
        let scanner = st.scanner.get_or_insert_with(|| {
            Scanner::new(&self.root, self.skip.clone(), self.limits.max_files)
        });
        let changes = match scanner.changes() {
            Ok(c) => c,
            Err(too) => {
                let msg = format!(
                    "checkpoints: the working folder has more than {} files, so what bash \
                     commands change is not tracked (edits and writes still are)",
                    too.0
                );
                st.off = Some(msg.clone());
                (self.notices)(msg);
                return None;
            }
        };
        if st.open_calls > 0 {
            st.log.extend(changes.iter().cloned());
        }
        Some(changes)
    }

    /// Read and save one file's content.
    fn capture(&self, path: &Path, meta: Meta) -> Known {
        let hash = if meta.len > self.limits.max_file_bytes || self.store.is_full() {
            None
        } else {
            std::fs::read(path).ok().and_then(|bytes| {
                let h = hash_of(&bytes);
                match self.store.put(&h, &bytes) {
                    Ok(()) => Some(h),
                    Err(PutError::Full) | Err(PutError::Io(_)) => None,
                }
            })
        };
        Known { meta, hash }
    }

    /// Before a scanned call: take in what changed since (the person's doing), and remember
    /// the state it starts from. `None` when scans are off.
    pub fn begin(&self) -> Option<Begin> {
        let mut st = lock(&self.state);
        self.ensure_ready(&mut st);
        if st.off.is_some() {
            return None;
        }
        let changes = self.changes(&mut st)?;
        if !changes.is_empty() {
            let known = Arc::make_mut(&mut st.known);
            for (path, meta) in changes {
                match meta {
                    Some(m) if known.get(&path).is_some_and(|k| k.meta == m) => {}
                    Some(m) => {
                        let k = self.capture(&path, m);
                        known.insert(path, k);
                    }
                    None => {
                        known.remove(&path);
                    }
                }
            }
        }
        st.open_calls += 1;
        Some(Begin {
            known: st.known.clone(),
            mark: st.log.len(),
            started: SystemTime::now(),
        })
    }

    /// After a scanned call: what it changed.
    pub fn finish(&self, begin: Begin) -> ChangeSet {
        let mut st = lock(&self.state);
        let scanned = self.changes(&mut st);
        st.open_calls = st.open_calls.saturating_sub(1);
        if scanned.is_none() {
            return ChangeSet::default();
        }
        // The latest of each path changed since the call began.
        let mut latest: HashMap<PathBuf, Option<Meta>> = HashMap::new();
        for (path, meta) in st.log.get(begin.mark..).unwrap_or_default() {
            latest.insert(path.clone(), *meta);
        }
        if st.open_calls == 0 {
            st.log.clear();
        }
        let mut files = Vec::new();
        let mut now_known: Vec<(PathBuf, Option<Known>)> = Vec::new();
        for (path, meta) in latest {
            let before = begin.known.get(&path);
            let now = meta.map(|m| match st.known.get(&path) {
                // Read already as it is now (by an edit inside the call).
                Some(k) if k.meta == m => k.clone(),
                _ => self.capture(&path, m),
            });
            if let Some(mut change) = self.change(&path, before, now.as_ref()) {
                if change.before.is_none() {
                    change.new_folder = self.folder_born_since(&path, begin.started);
                }
                files.push(change);
            }
            now_known.push((path, now));
        }
        drop(begin);
        if !now_known.is_empty() {
            let known = Arc::make_mut(&mut st.known);
            for (path, k) in now_known {
                match k {
                    Some(k) => known.insert(path, k),
                    None => known.remove(&path),
                };
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        ChangeSet { files }
    }

    /// Before a call that changes the file at `path` (as the tool resolved it). `None` when
    /// the file is not tracked.
    pub fn before_file(&self, path: &Path) -> Option<FileBegin> {
        let (path, missing) = self.inside(path)?;
        let before = match std::fs::symlink_metadata(&path) {
            Ok(md) if md.is_file() => Some(self.capture(&path, Meta::of(&md))),
            Ok(_) => return None,
            Err(_) => None,
        };
        Some(FileBegin {
            path,
            before,
            missing,
        })
    }

    /// After that call: its change, if it made one.
    pub fn after_file(&self, begin: FileBegin) -> Option<FileChange> {
        let now = match std::fs::symlink_metadata(&begin.path) {
            Ok(md) if md.is_file() => Some(self.capture(&begin.path, Meta::of(&md))),
            _ => None,
        };
        {
            let mut st = lock(&self.state);
            if st.ready {
                let known = Arc::make_mut(&mut st.known);
                match &now {
                    Some(k) => {
                        known.insert(begin.path.clone(), k.clone());
                    }
                    None => {
                        known.remove(&begin.path);
                    }
                }
            }
        }
        let mut change = self.change(&begin.path, begin.before.as_ref(), now.as_ref())?;
        if change.before.is_none() {
            change.new_folder = begin.missing.filter(|folder| folder.is_dir());
        }
        Some(change)
    }

    /// The outermost folder between the root and the file at `path` that was born after
    /// `started` (`None` when there is none, or the file system keeps no birth times).
    fn folder_born_since(&self, path: &Path, started: SystemTime) -> Option<PathBuf> {
        let since = started.checked_sub(BIRTH_SLACK).unwrap_or(started);
        let rel = path.strip_prefix(&self.root).ok()?.parent()?;
        let mut folder = self.root.clone();
        for part in rel.components() {
            folder.push(part);
            let born = std::fs::symlink_metadata(&folder).and_then(|md| md.created());
            if born.is_ok_and(|t| t >= since) {
                return Some(folder);
            }
        }
        None
    }

    /// The change from `before` to `now` (`None`: none that matters), said in a notice when
    /// it cannot be undone.
    fn change(
        &self,
        path: &Path,
        before: Option<&Known>,
        now: Option<&Known>,
    ) -> Option<FileChange> {
        let same = match (before, now) {
            (Some(b), Some(n)) => {
                b.hash.is_some() && b.hash == n.hash && b.meta.mode == n.meta.mode
            }
            (None, None) => true,
            _ => false,
        };
        if same {
            return None;
        }
        if before.is_some_and(|b| b.hash.is_none()) {
            (self.notices)(format!(
                "checkpoints: {} was changed but its earlier content was not saved (over {} \
                 KB, unreadable, or the store is full), so /rewind cannot put it back",
                self.shown(path),
                self.limits.max_file_bytes / 1024
            ));
        }
        Some(FileChange {
            path: path.to_path_buf(),
            before: before.map(Known::version),
            after: now.map(Known::version),
            new_folder: None,
        })
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// `path` with its folder's symlinks resolved, if that lies under the root, and the
    /// outermost of its folders that does not exist yet (a write makes them).
    fn inside(&self, path: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
        let name = path.file_name()?;
        let mut folder = path.parent()?;
        let mut missing = Vec::new();
        let found = loop {
            match std::fs::canonicalize(folder) {
                Ok(found) => break found,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // `file_name` is `None` for `..`: such a path is not followed.
                    missing.push(folder.file_name()?);
                    folder = folder.parent()?;
                }
                Err(_) => return None,
            }
        };
        let outermost = missing.last().map(|m| found.join(m));
        let mut full = found;
        full.extend(missing.iter().rev());
        full.push(name);
        full.starts_with(&self.root).then_some((full, outermost))
    }
}

/// The folder's index: one line per file, `hash len mtime ctime inode mode path`.
fn read_index(path: &Path) -> HashMap<PathBuf, Known> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    for line in text.lines() {
        let mut parts = line.splitn(7, ' ');
        let mut next = || parts.next();
        let (Some(hash), Some(len), Some(mtime), Some(ctime), Some(ino), Some(mode), Some(p)) =
            (next(), next(), next(), next(), next(), next(), next())
        else {
            continue;
        };
        let (Ok(len), Ok(mtime_ns), Ok(ctime_ns), Ok(ino), Ok(mode)) = (
            len.parse(),
            mtime.parse(),
            ctime.parse(),
            ino.parse(),
            mode.parse(),
        ) else {
            continue;
        };
        if !super::store::is_hash(hash) {
            continue;
        }
        out.insert(
            PathBuf::from(p),
            Known {
                meta: Meta {
                    len,
                    mtime_ns,
                    ctime_ns,
                    ino,
                    mode,
                },
                hash: Some(hash.to_string()),
            },
        );
    }
    out
}

fn write_index(path: &Path, known: &HashMap<PathBuf, Known>) {
    let mut text = String::with_capacity(known.len() * 120);
    for (p, k) in known {
        let (Some(h), Some(s)) = (&k.hash, p.to_str()) else {
            continue;
        };
        if s.contains('\n') {
            continue;
        }
        let m = &k.meta;
        text.push_str(&format!(
            "{h} {} {} {} {} {} {s}\n",
            m.len, m.mtime_ns, m.ctime_ns, m.ino, m.mode
        ));
    }
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let _ = super::store::write_new(path, text.as_bytes());
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tracker(root: &Path, store: &Path, limits: Limits) -> (Tracker, Arc<Mutex<Vec<String>>>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        let t = Tracker::new(
            root,
            store,
            limits,
            Box::new(move |n| h.lock().unwrap().push(n)),
        );
        (t, heard)
    }

    fn names(set: &ChangeSet, root: &Path) -> Vec<(String, bool, bool)> {
        set.files
            .iter()
            .map(|f| {
                (
                    f.path.strip_prefix(root).unwrap().display().to_string(),
                    f.before.is_some(),
                    f.after.is_some(),
                )
            })
            .collect()
    }

    #[test]
    fn a_scanned_call_records_what_it_changed_and_not_what_the_person_did() {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a"), "a").unwrap();
        std::fs::write(root.join("b"), "b").unwrap();
        std::fs::write(root.join("same"), "same").unwrap();
        let (t, _) = tracker(&root, store.path(), Limits::default());
        let begin = t.begin().unwrap();
        std::fs::write(root.join("a"), "a2").unwrap();
        std::fs::rename(root.join("b"), root.join("c")).unwrap();
        // Rewritten with the same bytes: nothing to record.
        std::fs::write(root.join("same"), "same").unwrap();
        let set = t.finish(begin);
        assert_eq!(
            names(&set, &root),
            [
                ("a".into(), true, true),
                ("b".into(), true, false),
                ("c".into(), false, true)
            ]
        );
        // The person's own change between calls is taken in, not recorded.
        std::fs::write(root.join("a"), "person").unwrap();
        let begin = t.begin().unwrap();
        let set = t.finish(begin);
        assert!(set.is_empty(), "{set:?}");
        // The earlier content is in the store.
        let before = set_hash(&t, &root, "a");
        assert_eq!(t.store().get(&before).unwrap(), b"person");
    }

    fn set_hash(t: &Tracker, root: &Path, name: &str) -> String {
        lock(&t.state).known[&root.join(name)].hash.clone().unwrap()
    }

    #[test]
    fn a_file_over_the_limit_is_recorded_as_not_saved_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("big"), vec![b'x'; 2048]).unwrap();
        let limits = Limits {
            max_file_bytes: 1024,
            ..Limits::default()
        };
        let (t, heard) = tracker(&root, store.path(), limits);
        let begin = t.begin().unwrap();
        std::fs::write(root.join("big"), vec![b'y'; 2048]).unwrap();
        let set = t.finish(begin);
        assert_eq!(set.files[0].before.as_ref().unwrap().hash, None);
        assert!(heard.lock().unwrap()[0].contains("big"), "{heard:?}");
    }

    #[test]
    fn a_one_file_call_reads_only_that_file_and_skips_paths_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (t, _) = tracker(&root, store.path(), Limits::default());
        assert!(t.before_file(&outside.path().join("x")).is_none());
        let b = t.before_file(&root.join("new.txt")).unwrap();
        std::fs::write(root.join("new.txt"), "hi").unwrap();
        let change = t.after_file(b).unwrap();
        assert!(change.before.is_none());
        let h = change.after.unwrap().hash.unwrap();
        assert_eq!(t.store().get(&h).unwrap(), b"hi");
        let b = t.before_file(&root.join("new.txt")).unwrap();
        assert!(t.after_file(b).is_none(), "unchanged");
    }

    #[test]
    fn a_write_into_folders_not_made_yet_is_tracked_with_the_outermost_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("kept")).unwrap();
        let (t, _) = tracker(&root, store.path(), Limits::default());
        let file = root.join("kept/new/deep/a.txt");
        let b = t.before_file(&file).unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "hi").unwrap();
        let change = t.after_file(b).unwrap();
        assert_eq!(change.path, file);
        assert_eq!(change.new_folder, Some(root.join("kept/new")));
        // Into a folder that was there: none is named.
        let b = t.before_file(&root.join("kept/b.txt")).unwrap();
        std::fs::write(root.join("kept/b.txt"), "b").unwrap();
        assert_eq!(t.after_file(b).unwrap().new_folder, None);
        // A path that climbs out through a folder not made yet is not followed.
        assert!(t.before_file(&root.join("nope/../../x.txt")).is_none());
    }

    #[test]
    fn a_scanned_call_names_the_outermost_folder_born_during_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (t, _) = tracker(&root, store.path(), Limits::default());
        let file = root.join("x/y/f");
        let begin = t.begin().unwrap();
        std::fs::create_dir_all(root.join("x/y")).unwrap();
        std::fs::write(&file, "f").unwrap();
        let Ok(born) = std::fs::metadata(root.join("x")).and_then(|m| m.created()) else {
            // No birth times on this file system: nothing can be named.
            assert_eq!(t.finish(begin).files[0].new_folder, None);
            return;
        };
        // Folders born after the call began count, the outermost is named; older ones don't.
        assert_eq!(t.folder_born_since(&file, born), Some(root.join("x")));
        assert_eq!(
            t.folder_born_since(&file, born + Duration::from_secs(60)),
            None
        );
        let set = t.finish(begin);
        assert_eq!(set.files[0].new_folder, Some(root.join("x")));
        // A file made in a folder that was there before the call: none.
        std::fs::write(root.join("x/g"), "g").unwrap();
        let mut begin = t.begin().unwrap();
        begin.started = born + Duration::from_secs(60);
        std::fs::write(root.join("x/y/h"), "h").unwrap();
        let set = t.finish(begin);
        assert_eq!(names(&set, &root), [("x/y/h".into(), false, true)]);
        assert_eq!(set.files[0].new_folder, None);
    }

    #[test]
    fn too_many_files_turn_scans_off_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        let limits = Limits {
            max_files: 3,
            ..Limits::default()
        };
        let (t, heard) = tracker(dir.path(), store.path(), limits);
        assert!(t.begin().is_none());
        assert!(t.begin().is_none());
        assert_eq!(heard.lock().unwrap().len(), 1);
    }

    #[test]
    fn the_index_spares_a_second_tracker_reading_unchanged_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a"), "a").unwrap();
        let (t, _) = tracker(&root, store.path(), Limits::default());
        drop(t.begin());
        let index = std::fs::read_to_string(store.path().join("index")).unwrap();
        assert!(
            index.ends_with(&format!(" {}\n", root.join("a").display())),
            "{index}"
        );
        let cached = read_index(&store.path().join("index"));
        assert_eq!(cached.len(), 1);
    }
}

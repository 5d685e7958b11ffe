//! A metadata scan of the working folder: every file the walk of `grep` and `find` sees
//! (ignored files and `.git` left out, symlinks not followed), with what tells a change
//! without reading it — size, modification and change times, inode and mode.
//!
//! The first scan walks the folder with the ignore rules. Later ones walk only what may have
//! changed: a folder whose own times are unchanged has the same entries (creating, deleting or
//! renaming in it would have touched them), so only its files are looked at again, one
//! `lstat` each; a folder that did change is listed again, and a new folder walked. A change
//! to an ignore file (`.gitignore`, `.ignore`) may change what is seen anywhere, so it brings
//! a whole walk.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use ignore::WalkState;

/// What a scan records of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
    pub mode: u32,
}

impl Meta {
    pub fn of(md: &std::fs::Metadata) -> Self {
        Meta {
            len: md.len(),
            mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
            ctime_ns: i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec()),
            ino: md.ino(),
            mode: md.mode() & 0o7777,
        }
    }
}

/// The scan stopped at `max_files` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooMany(pub usize);

/// What a scan knows of one folder: its own metadata and the entries the rules let through
/// (each file with its path and what the last scan saw of it).
#[derive(Debug, Default)]
struct Dir {
    meta: Option<Meta>,
    files: Vec<(OsString, PathBuf, Meta)>,
    dirs: Vec<OsString>,
}

/// One file that is new, changed (`Some`: what it is now) or gone (`None`) since the last scan.
pub type Change = (PathBuf, Option<Meta>);

/// Scans one working folder, remembering its folders between scans.
#[derive(Debug)]
pub struct Scanner {
    root: PathBuf,
    skip: Vec<PathBuf>,
    max_files: usize,
    dirs: HashMap<PathBuf, Dir>,
}

/// One entry a walk yielded.
struct Found {
    path: PathBuf,
    is_dir: bool,
    meta: Meta,
    depth: usize,
}

fn is_ignore_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == ".gitignore" || n == ".ignore")
}

impl Scanner {
    /// A scanner of `root` that never enters the folders in `skip` (pi's own, when they lie
    /// inside the working folder) and gives up past `max_files` files.
    pub fn new(root: &Path, skip: Vec<PathBuf>, max_files: usize) -> Self {
        Scanner {
            root: root.to_path_buf(),
            skip,
            max_files,
            dirs: HashMap::new(),
        }
    }

    /// Every file the last scan saw, with what it saw of it.
    pub fn files(&self) -> impl Iterator<Item = (&Path, Meta)> {
        self.dirs
            .values()
            .flat_map(|d| d.files.iter().map(|(_, p, m)| (p.as_path(), *m)))
    }

    /// What changed since the last scan (every file, the first time).
    pub fn changes(&mut self) -> Result<Vec<Change>, TooMany> {
        if self.dirs.is_empty() {
            return self.full();
        }
        let mut changes = self.incremental()?;
        if changes.iter().any(|(p, _)| is_ignore_file(p)) {
            // What is ignored may have changed anywhere: walk it all again.
            changes.extend(self.full()?);
        }
        Ok(changes)
    }

    /// Walk everything again; the changes from what was known.
    fn full(&mut self) -> Result<Vec<Change>, TooMany> {
        let old: HashMap<PathBuf, Meta> = self.files().map(|(p, m)| (p.to_path_buf(), m)).collect();
        self.dirs.clear();
        let found = self.walk(&self.root.clone(), None, true);
        let found = match found {
            Ok(f) => f,
            Err(e) => {
                self.dirs.clear();
                return Err(e);
            }
        };
        self.absorb(found);
        let mut changes: Vec<Change> = Vec::new();
        let mut seen = 0usize;
        for (p, m) in self.files() {
            seen += 1;
            if old.get(p) != Some(&m) {
                changes.push((p.to_path_buf(), Some(m)));
            }
        }
        if seen > self.max_files {
            self.dirs.clear();
            return Err(TooMany(self.max_files));
        }
        let now: std::collections::HashSet<&Path> = self.files().map(|(p, _)| p).collect();
        let gone: Vec<Change> = old
            .into_keys()
            .filter(|p| !now.contains(p.as_path()))
            .map(|p| (p, None))
            .collect();
        changes.extend(gone);
        Ok(changes)
    }

    /// Walk `start` (to `depth` levels), with the rules and the skipped folders.
    fn walk(
        &self,
        start: &Path,
        depth: Option<usize>,
        parallel: bool,
    ) -> Result<Vec<Found>, TooMany> {
        let skip = self.skip.clone();
        let mut b = crate::tools::walk::builder(start);
        b.max_depth(depth)
            .filter_entry(move |e| e.file_name() != ".git" && !skip.iter().any(|s| s == e.path()));
        let max = self.max_files;
        let keep = |entry: Result<ignore::DirEntry, ignore::Error>| -> Option<Found> {
            let entry = entry.ok()?;
            let kind = entry.file_type()?;
            if !kind.is_dir() && !kind.is_file() {
                return None;
            }
            let meta = Meta::of(&entry.metadata().ok()?);
            Some(Found {
                is_dir: kind.is_dir(),
                depth: entry.depth(),
                path: entry.into_path(),
                meta,
            })
        };
        if !parallel {
            let mut out = Vec::new();
            for f in b.build().filter_map(keep) {
                out.push(f);
                if out.len() > max.saturating_mul(2) {
                    return Err(TooMany(max));
                }
            }
            return Ok(out);
        }
        let (tx, rx) = mpsc::channel::<Vec<Found>>();
        let count = std::sync::atomic::AtomicUsize::new(0);
        b.threads(crate::tools::walk::threads())
            .build_parallel()
            .run(|| {
                let mut batch = Batch {
                    items: Vec::with_capacity(256),
                    tx: tx.clone(),
                };
                let count = &count;
                Box::new(move |entry| {
                    let Some(found) = keep(entry) else {
                        return WalkState::Continue;
                    };
                    if !found.is_dir
                        && count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= max
                    {
                        return WalkState::Quit;
                    }
                    batch.items.push(found);
                    if batch.items.len() == batch.items.capacity() {
                        let full = std::mem::replace(&mut batch.items, Vec::with_capacity(256));
                        let _ = batch.tx.send(full);
                    }
                    WalkState::Continue
                })
            });
        drop(tx);
        if count.load(std::sync::atomic::Ordering::Relaxed) > max {
            return Err(TooMany(max));
        }
        Ok(rx.into_iter().flatten().collect())
    }

    /// Take in what a walk found (entries below its start): folders and files under their
    /// parents. Returns the files.
    fn absorb(&mut self, found: Vec<Found>) -> Vec<(PathBuf, Meta)> {
        let mut files = Vec::new();
        for f in &found {
            if f.is_dir {
                let d = self.dirs.entry(f.path.clone()).or_default();
                d.meta = Some(f.meta);
            }
        }
        for f in found {
            if f.depth == 0 {
                continue;
            }
            let (Some(parent), Some(name)) = (f.path.parent(), f.path.file_name()) else {
                continue;
            };
            let name = name.to_os_string();
            let d = self.dirs.entry(parent.to_path_buf()).or_default();
            if f.is_dir {
                d.dirs.push(name);
            } else {
                files.push((f.path.clone(), f.meta));
                d.files.push((name, f.path, f.meta));
            }
        }
        files
    }

    /// Remove the folder at `dir` and everything below it; its files are gone.
    fn drop_tree(&mut self, dir: &Path, changes: &mut Vec<Change>) {
        let below: Vec<PathBuf> = self
            .dirs
            .keys()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for p in below {
            if let Some(d) = self.dirs.remove(&p) {
                changes.extend(d.files.into_iter().map(|(_, path, _)| (path, None)));
            }
        }
    }

    fn incremental(&mut self) -> Result<Vec<Change>, TooMany> {
        let mut changes = Vec::new();
        // Which folders moved (or went).
        let listed: Vec<PathBuf> = self.dirs.keys().cloned().collect();
        let now = stat_all(&listed);
        let mut relist = Vec::new();
        for (path, meta) in listed.into_iter().zip(now) {
            match meta {
                Some((m, true)) if self.dirs.get(&path).and_then(|d| d.meta) == Some(m) => {}
                Some((m, true)) => {
                    if let Some(d) = self.dirs.get_mut(&path) {
                        d.meta = Some(m);
                    }
                    relist.push(path);
                }
                // Gone, or no longer a folder (its parent's listing finds what is there now).
                _ => self.drop_tree(&path, &mut changes),
            }
        }
        for dir in relist {
            if !self.dirs.contains_key(&dir) {
                continue; // went with a folder above it
            }
            self.relist(&dir, &mut changes)?;
        }
        // The files of every folder, looked at again.
        let total: usize = self.dirs.values().map(|d| d.files.len()).sum();
        if total > self.max_files {
            self.dirs.clear();
            return Err(TooMany(self.max_files));
        }
        let listed: Vec<(&PathBuf, Vec<&std::ffi::OsStr>)> = self
            .dirs
            .iter()
            .map(|(p, d)| (p, d.files.iter().map(|(n, _, _)| n.as_os_str()).collect()))
            .collect();
        let answers = stat_dirs(&listed, total);
        drop(listed);
        // Walked in the same order as collected: each folder gets its own answers.
        for (d, answers) in self.dirs.values_mut().zip(answers) {
            let mut answers = answers.into_iter();
            d.files.retain_mut(|(_, p, old)| match answers.next() {
                Some(Some((m, false))) => {
                    if m != *old {
                        *old = m;
                        changes.push((p.clone(), Some(m)));
                    }
                    true
                }
                Some(_) => {
                    changes.push((p.clone(), None));
                    false
                }
                None => true,
            });
        }
        Ok(changes)
    }

    /// List `dir` again: files added, removed or changed there; folders added (walked) or
    /// removed.
    fn relist(&mut self, dir: &Path, changes: &mut Vec<Change>) -> Result<(), TooMany> {
        let found = self.walk(dir, Some(1), false)?;
        let Some(d) = self.dirs.get_mut(dir) else {
            return Ok(());
        };
        let old_files: HashMap<OsString, Meta> =
            d.files.drain(..).map(|(n, _, m)| (n, m)).collect();
        let old_dirs: Vec<OsString> = std::mem::take(&mut d.dirs);
        let now_dirs: Vec<PathBuf> = found
            .iter()
            .filter(|f| f.is_dir && f.depth == 1)
            .map(|f| f.path.clone())
            .collect();
        let files = self.absorb(found);
        let mut seen = std::collections::HashSet::new();
        for (path, meta) in files {
            let name = path.file_name().map(std::ffi::OsStr::to_os_string);
            if let Some(n) = &name {
                seen.insert(n.clone());
            }
            if name.and_then(|n| old_files.get(&n).copied()) != Some(meta) {
                changes.push((path, Some(meta)));
            }
        }
        for name in old_files.keys() {
            if !seen.contains(name) {
                changes.push((dir.join(name), None));
            }
        }
        for name in &old_dirs {
            let sub = dir.join(name);
            if !now_dirs.contains(&sub) {
                self.drop_tree(&sub, changes);
            }
        }
        for sub in now_dirs {
            if sub
                .file_name()
                .is_some_and(|n| old_dirs.iter().any(|o| o == n))
            {
                continue;
            }
            // A new folder: everything in it is new.
            let deeper: Vec<Found> = self
                .walk(&sub, None, false)?
                .into_iter()
                .filter(|f| f.depth > 0)
                .collect();
            for (path, meta) in self.absorb(deeper) {
                changes.push((path, Some(meta)));
            }
        }
        Ok(())
    }
}

/// `lstat` of each path, and whether it is a folder (`None`: gone, or no longer a file or
/// folder), on two threads.
fn stat_all<P: AsRef<Path> + Sync>(paths: &[P]) -> Vec<Option<(Meta, bool)>> {
    let one = |p: &P| {
        std::fs::symlink_metadata(p.as_ref())
            .ok()
            .filter(|m| m.is_file() || m.is_dir())
            .map(|m| (Meta::of(&m), m.is_dir()))
    };
    if paths.len() < 2048 {
        return paths.iter().map(one).collect();
    }
    let half = paths.len() / 2;
    let (a, b) = paths.split_at(half);
    std::thread::scope(|s| {
        let other = s.spawn(|| b.iter().map(one).collect::<Vec<_>>());
        let mut out: Vec<Option<(Meta, bool)>> = a.iter().map(one).collect();
        match other.join() {
            Ok(rest) => out.extend(rest),
            Err(_) => out.extend(b.iter().map(one)),
        }
        out
    })
}

/// `lstat` of the files `names` of each folder, relative to the folder (opened once), the
/// folders split between two threads by the files they hold.
fn stat_dirs(
    listed: &[(&PathBuf, Vec<&std::ffi::OsStr>)],
    total: usize,
) -> Vec<Vec<Option<(Meta, bool)>>> {
    let one = |(dir, names): &(&PathBuf, Vec<&std::ffi::OsStr>)| stat_in(dir, names);
    if total < 2048 {
        return listed.iter().map(one).collect();
    }
    let mut acc = 0;
    let split = listed
        .iter()
        .position(|(_, n)| {
            acc += n.len();
            acc >= total / 2
        })
        .map_or(listed.len(), |i| i + 1);
    let (a, b) = listed.split_at(split);
    std::thread::scope(|s| {
        let other = s.spawn(|| b.iter().map(one).collect::<Vec<_>>());
        let mut out: Vec<_> = a.iter().map(one).collect();
        match other.join() {
            Ok(rest) => out.extend(rest),
            Err(_) => out.extend(b.iter().map(one)),
        }
        out
    })
}

/// `lstat` of each of `names` in `dir`, through one open handle of the folder.
fn stat_in(dir: &Path, names: &[&std::ffi::OsStr]) -> Vec<Option<(Meta, bool)>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let Ok(handle) = std::fs::File::open(dir) else {
        return vec![None; names.len()];
    };
    let fd = handle.as_raw_fd();
    names
        .iter()
        .map(|name| {
            let c = std::ffi::CString::new(name.as_bytes()).ok()?;
            let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: `fd` is an open folder for as long as `handle` lives (past this call),
            // `c` is a NUL-terminated name, and `st` is writable memory of the size fstatat
            // fills; it is read only when the call says it succeeded.
            let rc = unsafe {
                libc::fstatat(fd, c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW)
            };
            if rc != 0 {
                return None;
            }
            // SAFETY: fstatat returned 0, so it wrote the whole struct.
            let st = unsafe { st.assume_init() };
            let kind = st.st_mode & libc::S_IFMT;
            if kind != libc::S_IFREG && kind != libc::S_IFDIR {
                return None;
            }
            let meta = Meta {
                len: u64::try_from(st.st_size).unwrap_or(0),
                mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
                ctime_ns: i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
                ino: st.st_ino,
                mode: st.st_mode & 0o7777,
            };
            Some((meta, kind == libc::S_IFDIR))
        })
        .collect()
}

/// A walker thread's pending entries, sent when full and when the thread ends.
struct Batch {
    items: Vec<Found>,
    tx: mpsc::Sender<Vec<Found>>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        if !self.items.is_empty() {
            let _ = self.tx.send(std::mem::take(&mut self.items));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under the root, by absolute path.
    type Snapshot = HashMap<PathBuf, Meta>;

    /// One scan of `root` from nothing.
    fn scan(root: &Path, max_files: usize, skip: &[PathBuf]) -> Result<Snapshot, TooMany> {
        let mut s = Scanner::new(root, skip.to_vec(), max_files);
        s.changes()?;
        Ok(s.files().map(|(p, m)| (p.to_path_buf(), m)).collect())
    }

    fn names(snap: &Snapshot, root: &Path) -> Vec<String> {
        let mut names: Vec<_> = snap
            .keys()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_scan_sees_files_but_not_ignored_ones_or_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/deep/a.rs"), "a").unwrap();
        std::fs::write(root.join(".env"), "x").unwrap();
        std::fs::write(root.join(".git/config"), "c").unwrap();
        std::fs::write(root.join("target/out"), "o").unwrap();
        std::fs::create_dir_all(root.join(".pi/agent")).unwrap();
        std::fs::write(root.join(".pi/agent/s.jsonl"), "{}").unwrap();
        let snap = scan(root, 100, &[root.join(".pi")]).unwrap();
        assert_eq!(names(&snap, root), [".env", ".gitignore", "src/deep/a.rs"]);
        assert_eq!(scan(root, 2, &[]), Err(TooMany(2)));
    }

    #[test]
    fn a_later_scan_sees_new_changed_moved_and_removed_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("old/inner")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "1").unwrap();
        std::fs::write(root.join("old/inner/g.txt"), "g").unwrap();
        std::fs::write(root.join("top.txt"), "t").unwrap();
        let mut s = Scanner::new(root, Vec::new(), 100);
        let first = s.changes().unwrap();
        assert_eq!(first.len(), 3);
        let first: Snapshot = s.files().map(|(p, m)| (p.to_path_buf(), m)).collect();
        std::fs::write(root.join("a/b/f.txt"), "22").unwrap();
        std::fs::create_dir_all(root.join("new/deeper")).unwrap();
        std::fs::write(root.join("new/deeper/h.txt"), "h").unwrap();
        std::fs::remove_dir_all(root.join("old")).unwrap();
        std::fs::rename(root.join("top.txt"), root.join("a/moved.txt")).unwrap();
        let mut changed: Vec<(String, bool)> = s
            .changes()
            .unwrap()
            .into_iter()
            .map(|(p, m)| {
                (
                    p.strip_prefix(root).unwrap().display().to_string(),
                    m.is_some(),
                )
            })
            .collect();
        changed.sort();
        assert_eq!(
            changed,
            [
                ("a/b/f.txt".to_string(), true),
                ("a/moved.txt".to_string(), true),
                ("new/deeper/h.txt".to_string(), true),
                ("old/inner/g.txt".to_string(), false),
                ("top.txt".to_string(), false),
            ]
        );
        assert!(s.changes().unwrap().is_empty());
        let second: Snapshot = s.files().map(|(p, m)| (p.to_path_buf(), m)).collect();
        assert_eq!(
            names(&second, root),
            ["a/b/f.txt", "a/moved.txt", "new/deeper/h.txt"]
        );
        assert_ne!(
            first[&root.join("a/b/f.txt")],
            second[&root.join("a/b/f.txt")]
        );
        // What a fresh walk sees, the incremental scan sees.
        assert_eq!(second, scan(root, 100, &[]).unwrap());
        // A new ignore rule applies at once.
        std::fs::write(root.join(".gitignore"), "new/\n").unwrap();
        s.changes().unwrap();
        let third: Snapshot = s.files().map(|(p, m)| (p.to_path_buf(), m)).collect();
        assert_eq!(
            names(&third, root),
            [".gitignore", "a/b/f.txt", "a/moved.txt"]
        );
    }
}

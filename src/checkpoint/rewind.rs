//! Putting files back: from the change sets between where the conversation stands and where
//! it is going, what each file should become, whether it is safe to do, and doing it.
//!
//! Going from one point of the session tree to another undoes the changes recorded on the
//! way up to their common ancestor (newest first) and makes again those on the way down. For
//! each file that nets out to two contents: the one pi expects to find now (the newest
//! change's after, or for a redo the oldest's before) and the one it should become. A file
//! found as expected is put back; a file already as wanted needs nothing; any other content
//! is the person's own change since, reported and left alone unless they say otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::record::{ChangeSet, FileChange, Version};
use super::store::{BlobStore, hash_of};

/// One change set on the way, and which way it is taken.
pub struct Step<'a> {
    pub set: &'a ChangeSet,
    pub undo: bool,
}

/// What a file is found as and what it becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Net {
    expected: Option<Version>,
    wanted: Option<Version>,
    /// When it is to be deleted as the undoing of its creation: the folder made with it.
    made_folder: Option<PathBuf>,
}

/// What a rewind would do to one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFile {
    pub path: PathBuf,
    pub action: Action,
    /// Whether it can be done as things stand.
    pub state: FileState,
    /// A unified diff from the file as it is to what it becomes (text files only).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// What it becomes (`None`: deleted).
    #[serde(skip)]
    pub wanted: Option<Version>,
    /// A folder made with the file, removed after it as far as it is left empty (only for a
    /// file to delete).
    #[serde(skip)]
    pub made_folder: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Write the earlier content (the file changed or was deleted).
    Restore,
    /// Delete it (it was created).
    Delete,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    Ready,
    /// Its content is neither what pi left nor what it would restore: someone changed it.
    ChangedSince,
    /// The content to put back was never saved (too large) or is gone.
    Unavailable,
}

/// What a rewind of files would do.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Plan {
    pub files: Vec<PlannedFile>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn conflicts(&self) -> usize {
        self.files
            .iter()
            .filter(|f| f.state == FileState::ChangedSince)
            .count()
    }
}

/// What a rewind of files did.
#[derive(Clone, Debug, Default)]
pub struct Restored {
    pub restored: Vec<PathBuf>,
    /// Changed by someone since, left alone.
    pub kept: Vec<PathBuf>,
    /// Could not be done, with why.
    pub failed: Vec<(PathBuf, String)>,
    /// What was done, as a change set (to record as a redo point).
    pub record: ChangeSet,
}

fn net(steps: &[Step<'_>]) -> BTreeMap<PathBuf, Net> {
    let mut out: BTreeMap<PathBuf, Net> = BTreeMap::new();
    for step in steps {
        let files: Box<dyn Iterator<Item = &FileChange>> = if step.undo {
            Box::new(step.set.files.iter().rev())
        } else {
            Box::new(step.set.files.iter())
        };
        for f in files {
            let (from, to) = if step.undo {
                (&f.after, &f.before)
            } else {
                (&f.before, &f.after)
            };
            let made_folder = if step.undo && to.is_none() {
                f.new_folder.clone()
            } else {
                None
            };
            out.entry(f.path.clone())
                .and_modify(|n| {
                    n.wanted = to.clone();
                    n.made_folder = made_folder.clone();
                })
                .or_insert_with(|| Net {
                    expected: from.clone(),
                    wanted: to.clone(),
                    made_folder,
                });
        }
    }
    out
}

/// The file at `path` as a version: `Ok(None)` when absent.
fn on_disk(path: &Path) -> std::io::Result<Option<(Vec<u8>, u32)>> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_file() => {
            let bytes = std::fs::read(path)?;
            Ok(Some((bytes, md.permissions().mode() & 0o7777)))
        }
        Ok(_) => Err(std::io::Error::other("it is no longer a regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn same(found: Option<&(Vec<u8>, String, u32)>, v: Option<&Version>) -> bool {
    match (found, v) {
        (None, None) => true,
        (Some((_, h, _)), Some(v)) => v.hash.as_deref() == Some(h.as_str()),
        _ => false,
    }
}

/// What going through `steps` would do to the files, checked against the disk and `store`.
pub fn plan(steps: &[Step<'_>], store: &BlobStore) -> Plan {
    let mut files = Vec::new();
    for (path, n) in net(steps) {
        let found = match on_disk(&path) {
            Ok(f) => f.map(|(bytes, mode)| {
                let h = hash_of(&bytes);
                (bytes, h, mode)
            }),
            Err(_) => {
                files.push(PlannedFile {
                    path,
                    action: Action::Restore,
                    state: FileState::ChangedSince,
                    diff: String::new(),
                    wanted: n.wanted,
                    made_folder: None,
                });
                continue;
            }
        };
        let at_wanted = same(found.as_ref(), n.wanted.as_ref())
            && match (&found, &n.wanted) {
                (Some((_, _, mode)), Some(v)) => v.mode.is_none_or(|m| m == *mode),
                _ => true,
            };
        if at_wanted {
            continue;
        }
        let action = if n.wanted.is_some() {
            Action::Restore
        } else {
            Action::Delete
        };
        let wanted_bytes = match &n.wanted {
            Some(v) => v.hash.as_deref().and_then(|h| store.get(h).ok()),
            None => Some(Vec::new()),
        };
        let state = if wanted_bytes.is_none() {
            FileState::Unavailable
        } else if same(found.as_ref(), n.expected.as_ref())
            || same(found.as_ref(), n.wanted.as_ref())
        {
            FileState::Ready
        } else {
            FileState::ChangedSince
        };
        let diff = match (&wanted_bytes, &found) {
            (Some(w), Some((f, _, _))) => text_diff(&path, f, w),
            (Some(w), None) => text_diff(&path, b"", w),
            _ => String::new(),
        };
        files.push(PlannedFile {
            path,
            action,
            state,
            diff,
            wanted: n.wanted,
            made_folder: n.made_folder,
        });
    }
    Plan { files }
}

const MAX_DIFF: usize = 64 * 1024;

fn text_diff(path: &Path, from: &[u8], to: &[u8]) -> String {
    let (Ok(a), Ok(b)) = (std::str::from_utf8(from), std::str::from_utf8(to)) else {
        return String::new();
    };
    let name = path.display().to_string();
    let mut out = similar::TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string();
    if out.len() > MAX_DIFF {
        let mut cut = MAX_DIFF;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("\n[diff cut]\n");
    }
    out
}

/// Do `plan`: every ready file, and those changed since when `force`.
pub fn apply(plan: &Plan, store: &BlobStore, force: bool) -> Restored {
    let mut done = Restored::default();
    for f in &plan.files {
        match f.state {
            FileState::Unavailable => {
                done.failed
                    .push((f.path.clone(), "its earlier content was not saved".into()));
                continue;
            }
            FileState::ChangedSince if !force => {
                done.kept.push(f.path.clone());
                continue;
            }
            _ => {}
        }
        let before = on_disk(&f.path)
            .ok()
            .flatten()
            .map(|(bytes, mode)| Version {
                hash: Some(hash_of(&bytes)).filter(|h| store.put(h, &bytes).is_ok()),
                mode: Some(mode),
            });
        match put_back(&f.path, f.wanted.as_ref(), store) {
            Ok(new_folder) => {
                if let Some(folder) = &f.made_folder {
                    remove_empty_folders(&f.path, folder);
                }
                done.restored.push(f.path.clone());
                done.record.files.push(FileChange {
                    path: f.path.clone(),
                    before,
                    after: f.wanted.clone(),
                    new_folder,
                });
            }
            Err(e) => done.failed.push((f.path.clone(), e.to_string())),
        }
    }
    done
}

/// Make the file at `path` what `wanted` says (`None`: delete it). Returns the outermost
/// folder it had to make for the file, if any.
fn put_back(
    path: &Path,
    wanted: Option<&Version>,
    store: &BlobStore,
) -> std::io::Result<Option<PathBuf>> {
    use std::os::unix::fs::PermissionsExt;
    let Some(v) = wanted else {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(None),
        };
    };
    let hash = v
        .hash
        .as_deref()
        .ok_or_else(|| std::io::Error::other("its earlier content was not saved"))?;
    let bytes = store.get(hash)?;
    let mut made = None;
    if let Some(parent) = path.parent() {
        made = parent
            .ancestors()
            .take_while(|folder| std::fs::symlink_metadata(folder).is_err())
            .last()
            .map(Path::to_path_buf);
        std::fs::create_dir_all(parent)?;
    }
    crate::tools::fsutil::write_atomic(path, &bytes)?;
    if let Some(mode) = v.mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(made)
}

/// Remove the folders from `path`'s up to `outermost`, innermost first, while they are empty
/// (a folder with anything in it — the person's files, another of pi's — stays, and so do
/// those around it).
fn remove_empty_folders(path: &Path, outermost: &Path) {
    for folder in path.ancestors().skip(1) {
        if !folder.starts_with(outermost) || std::fs::remove_dir(folder).is_err() {
            return;
        }
        if folder == outermost {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each set taken the same way, in this order.
    fn steps<'a>(sets: &[&'a ChangeSet], undo: bool) -> Vec<Step<'a>> {
        sets.iter().map(|&set| Step { set, undo }).collect()
    }

    fn v(store: &BlobStore, text: &str) -> Option<Version> {
        let h = hash_of(text.as_bytes());
        store.put(&h, text.as_bytes()).unwrap();
        Some(Version {
            hash: Some(h),
            mode: Some(0o644),
        })
    }

    #[test]
    fn undo_puts_back_the_oldest_before_and_keeps_what_the_person_changed() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"), 1 << 20);
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.txt");
        let c = dir.path().join("c.txt");
        let first = ChangeSet {
            files: vec![
                FileChange {
                    path: a.clone(),
                    before: v(&store, "one\n"),
                    after: v(&store, "two\n"),
                    new_folder: None,
                },
                FileChange {
                    path: c.clone(),
                    before: None,
                    after: v(&store, "new\n"),
                    new_folder: None,
                },
            ],
        };
        let second = ChangeSet {
            files: vec![
                FileChange {
                    path: a.clone(),
                    before: v(&store, "two\n"),
                    after: v(&store, "three\n"),
                    new_folder: None,
                },
                FileChange {
                    path: b.clone(),
                    before: v(&store, "bee\n"),
                    after: v(&store, "bee2\n"),
                    new_folder: None,
                },
            ],
        };
        std::fs::write(&a, "three\n").unwrap();
        std::fs::write(&b, "the person's\n").unwrap();
        std::fs::write(&c, "new\n").unwrap();
        let undo = steps(&[&second, &first], true);
        let p = plan(&undo, &store);
        let states: Vec<_> = p.files.iter().map(|f| (f.action, f.state)).collect();
        assert_eq!(
            states,
            [
                (Action::Restore, FileState::Ready),
                (Action::Restore, FileState::ChangedSince),
                (Action::Delete, FileState::Ready),
            ]
        );
        assert!(
            p.files[0].diff.contains("-three\n+one\n"),
            "{}",
            p.files[0].diff
        );
        let done = apply(&p, &store, false);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "one\n");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "the person's\n");
        assert!(!c.exists());
        assert_eq!(done.kept, std::slice::from_ref(&b));
        // Redoing what was undone brings it all back.
        let p = plan(&steps(&[&first, &second], false), &store);
        apply(&p, &store, false);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "three\n");
        assert_eq!(std::fs::read_to_string(&c).unwrap(), "new\n");
        // A forced rewind overwrites the person's change.
        let p = plan(&undo[..1], &store);
        apply(&p, &store, true);
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "bee\n");
    }

    #[test]
    fn undoing_a_creation_removes_the_folders_made_for_it_while_they_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"), 1 << 20);
        let root = dir.path().join("w");
        let made = |name: &str, folder: &str| ChangeSet {
            files: vec![FileChange {
                path: root.join(name),
                before: None,
                after: v(&store, "x\n"),
                new_folder: Some(root.join(folder)),
            }],
        };
        let first = made("new/deep/a.txt", "new");
        let second = made("other/deep/b.txt", "other");
        for name in ["new/deep/a.txt", "other/deep/b.txt"] {
            std::fs::create_dir_all(root.join(name).parent().unwrap()).unwrap();
            std::fs::write(root.join(name), "x\n").unwrap();
        }
        // The person put a file of their own in `other`.
        std::fs::write(root.join("other/mine.txt"), "mine").unwrap();
        let done = apply(
            &plan(&steps(&[&second, &first], true), &store),
            &store,
            false,
        );
        assert_eq!(done.restored.len(), 2);
        assert!(!root.join("new").exists());
        assert!(!root.join("other/deep").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("other/mine.txt")).unwrap(),
            "mine"
        );
        // Its record names the folder a redo makes again, so undoing that removes it too.
        let again = apply(&plan(&steps(&[&done.record], true), &store), &store, false);
        assert!(root.join("new/deep/a.txt").exists());
        let remade: Vec<_> = again.record.files.iter().map(|f| &f.new_folder).collect();
        assert_eq!(
            remade,
            [&Some(root.join("new")), &Some(root.join("other/deep"))]
        );
        apply(&plan(&steps(&[&again.record], true), &store), &store, false);
        assert!(!root.join("new").exists());
        assert!(!root.join("other/deep").exists());
        assert!(root.join("other/mine.txt").exists());
    }
}

//! `trusted-projects.json` in the agent folder: per project folder, the hash of the held
//! settings the person answered for, and whether they trusted them.
//!
//! ```json
//! { "version": 1, "projects": { "/home/me/src/app": { "hash": "sha256:…", "trusted": true } } }
//! ```
//!
//! Folders are stored as their canonical path (symlinks resolved), so one folder has one
//! entry however it was reached. The file is written whole to a temporary file (mode 0600)
//! and renamed over the old one, so a crash never leaves half a file. A file that cannot be
//! read or parsed trusts nothing and is never overwritten: pi says so and leaves it for the
//! person to fix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the agent folder.
pub(crate) const FILE_NAME: &str = "trusted-projects.json";

/// What the store says about a folder's current held settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Trusted with exactly these settings.
    Trusted,
    /// The person chose to go on without these exact settings.
    Declined,
    /// Answered for other settings (the files changed since).
    Changed,
    /// Never answered.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Entry {
    hash: String,
    trusted: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileForm {
    version: u32,
    projects: BTreeMap<String, Entry>,
}

/// The store as read at start.
#[derive(Debug)]
pub(crate) struct Store {
    path: Option<PathBuf>,
    projects: BTreeMap<String, Entry>,
    /// Why the file could not be read (then nothing is written over it).
    broken: Option<String>,
}

/// The key a folder is stored under.
pub(crate) fn folder_key(folder: &Path) -> String {
    std::fs::canonicalize(folder)
        .unwrap_or_else(|_| folder.to_path_buf())
        .display()
        .to_string()
}

impl Store {
    /// Read the store of `agent_dir` (none: an empty store that cannot be written).
    pub(crate) fn load(agent_dir: Option<&Path>) -> Store {
        let path = agent_dir.map(|d| d.join(FILE_NAME));
        let mut store = Store {
            path: path.clone(),
            projects: BTreeMap::new(),
            broken: None,
        };
        let Some(path) = path else { return store };
        match super::super::node::read_json(&path) {
            Ok(None) => {}
            Ok(Some(v)) => match serde_json::from_value::<FileForm>(v) {
                Ok(f) => store.projects = f.projects,
                Err(e) => {
                    store.broken = Some(format!("{}: {e}", path.display()));
                }
            },
            Err(e) => store.broken = Some(e.to_string()),
        }
        store
    }

    /// Why the file could not be used, if it could not.
    pub(crate) fn problem(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub(crate) fn standing(&self, folder: &Path, hash: &str) -> Standing {
        match self.projects.get(&folder_key(folder)) {
            None => Standing::Unknown,
            Some(e) if e.hash != hash => Standing::Changed,
            Some(e) if e.trusted => Standing::Trusted,
            Some(_) => Standing::Declined,
        }
    }

    /// Remember the person's answer for `folder` and write the file.
    pub(crate) fn record(
        &mut self,
        folder: &Path,
        hash: &str,
        trusted: bool,
    ) -> Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(format!(
                "the trust store is not valid, so it was left as it is: {why}"
            ));
        }
        let path = self
            .path
            .clone()
            .ok_or("no agent folder (no home folder), so nothing can be remembered")?;
        self.projects.insert(
            folder_key(folder),
            Entry {
                hash: hash.to_string(),
                trusted,
            },
        );
        let text = serde_json::to_string_pretty(&FileForm {
            version: 1,
            projects: self.projects.clone(),
        })
        .map_err(|e| e.to_string())?;
        write_atomic(&path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// Write `text` to a temporary file beside `path` (mode 0600) and rename it over `path`.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_remembered_per_folder_and_hash() {
        let d = tempfile::tempdir().unwrap();
        let proj = d.path().join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        let mut s = Store::load(Some(d.path()));
        assert_eq!(s.standing(&proj, "h1"), Standing::Unknown);
        s.record(&proj, "h1", true).unwrap();
        let s2 = Store::load(Some(d.path()));
        assert_eq!(s2.standing(&proj, "h1"), Standing::Trusted);
        assert_eq!(s2.standing(&proj, "h2"), Standing::Changed);
        // The same folder through a symlink is the same entry.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&proj, &link).unwrap();
        assert_eq!(s2.standing(&link, "h1"), Standing::Trusted);
        let mut s3 = Store::load(Some(d.path()));
        s3.record(&proj, "h2", false).unwrap();
        assert_eq!(
            Store::load(Some(d.path())).standing(&proj, "h2"),
            Standing::Declined
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.path().join(FILE_NAME))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_broken_store_trusts_nothing_and_is_not_overwritten() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(FILE_NAME), "{ not json").unwrap();
        let mut s = Store::load(Some(d.path()));
        assert!(s.problem().is_some());
        assert_eq!(s.standing(d.path(), "h"), Standing::Unknown);
        assert!(s.record(d.path(), "h", true).is_err());
        assert_eq!(
            std::fs::read_to_string(d.path().join(FILE_NAME)).unwrap(),
            "{ not json"
        );
    }
}

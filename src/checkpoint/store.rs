//! Where checkpoints keep file contents: one file per distinct content, named by its SHA-256,
//! in a folder beside the sessions of the working folder (`<sessions>/checkpoints/blobs`).
//!
//! A content is written once (to a temporary name, then renamed into place), so two pi
//! processes saving the same bytes at once both end with one whole copy. The store counts
//! what it holds so a size limit can refuse new content; the count starts from a walk of the
//! folder the first time it is needed.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// The hex SHA-256 of `bytes`.
pub fn hash_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Contents by hash, under one folder.
#[derive(Debug)]
pub struct BlobStore {
    dir: PathBuf,
    /// Bytes held, once counted.
    held: Mutex<Option<u64>>,
    limit: u64,
    /// A content was refused for room (until something is removed).
    refused: std::sync::atomic::AtomicBool,
}

/// Why a content was not saved.
#[derive(Debug)]
pub enum PutError {
    /// Saving it would take the store past its limit.
    Full,
    Io(io::Error),
}

impl BlobStore {
    /// A store in `dir` (created when the first content is saved) holding at most `limit` bytes.
    pub fn new(dir: impl Into<PathBuf>, limit: u64) -> Self {
        BlobStore {
            dir: dir.into(),
            held: Mutex::new(None),
            limit,
            refused: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the content with this hash lives (whether or not it does yet).
    pub fn path_of(&self, hash: &str) -> PathBuf {
        let (head, tail) = hash.split_at(hash.len().min(2));
        self.dir.join(head).join(tail)
    }

    pub fn has(&self, hash: &str) -> bool {
        is_hash(hash) && self.path_of(hash).is_file()
    }

    /// The content with this hash.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        if !is_hash(hash) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a content hash",
            ));
        }
        let bytes = fs::read(self.path_of(hash))?;
        if hash_of(&bytes) != hash {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the saved content does not match its hash",
            ));
        }
        Ok(bytes)
    }

    /// Save `bytes` (whose hash is `hash`) unless already held.
    pub fn put(&self, hash: &str, bytes: &[u8]) -> Result<(), PutError> {
        let path = self.path_of(hash);
        if path.is_file() {
            return Ok(());
        }
        let mut held = crate::sync::lock(&self.held);
        let now = match *held {
            Some(n) => n,
            None => count_bytes(&self.dir),
        };
        let len = bytes.len() as u64;
        if now.saturating_add(len) > self.limit {
            *held = Some(now);
            self.refused
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(PutError::Full);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(PutError::Io)?;
        write_new(&path, bytes).map_err(PutError::Io)?;
        *held = Some(now + len);
        Ok(())
    }

    /// Whether the store is known to hold its limit already (then nothing new is read for it).
    pub fn is_full(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
            || crate::sync::lock(&self.held).is_some_and(|n| n >= self.limit)
    }

    /// Remove the contents with these hashes (those missing are skipped).
    pub fn remove(&self, hashes: impl IntoIterator<Item = String>) {
        let mut held = crate::sync::lock(&self.held);
        self.refused
            .store(false, std::sync::atomic::Ordering::Relaxed);
        for h in hashes {
            if !is_hash(&h) {
                continue;
            }
            let path = self.path_of(&h);
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if fs::remove_file(&path).is_ok()
                && let Some(n) = held.as_mut()
            {
                *n = n.saturating_sub(len);
            }
        }
    }
}

/// Write `bytes` to `path` through a temporary file beside it, renamed into place.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".tmp-{}", crate::tools::fsutil::random_hex()));
    let tmp = PathBuf::from(name);
    let written = fs::File::create(&tmp).and_then(|mut f| f.write_all(bytes));
    match written.and_then(|()| fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Whether `s` looks like a hash this store names files by (so a record read from a session
/// can never name a path outside the store).
pub fn is_hash(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn count_bytes(dir: &Path) -> u64 {
    let Ok(heads) = fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for head in heads.flatten() {
        if let Ok(files) = fs::read_dir(head.path()) {
            for f in files.flatten() {
                total += f.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_are_saved_once_and_read_back_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"), 1 << 20);
        let h = hash_of(b"hello");
        store.put(&h, b"hello").unwrap();
        store.put(&h, b"hello").unwrap();
        assert_eq!(store.get(&h).unwrap(), b"hello");
        fs::write(store.path_of(&h), b"tampered").unwrap();
        assert!(store.get(&h).is_err());
        assert!(store.get("../../etc/passwd").is_err());
    }

    #[test]
    fn the_limit_refuses_new_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path(), 10);
        store.put(&hash_of(b"12345"), b"12345").unwrap();
        assert!(matches!(
            store.put(&hash_of(b"678901"), b"678901"),
            Err(PutError::Full)
        ));
        assert!(store.is_full());
        store.remove([hash_of(b"12345")]);
        assert!(!store.is_full());
        store.put(&hash_of(b"678901"), b"678901").unwrap();
    }
}

//! File-system helpers shared by the tools: atomic replacement of a file's contents, unique
//! temporary names, content sniffing (images, binary data), and I/O errors put in plain words.
//!
//! [`write_atomic`] never leaves a half-written file behind: the bytes go to a temporary file in
//! the same folder, are flushed to disk, take the old file's permissions (and owner, when
//! allowed), and then replace the old file with one `rename`. A path that is a symlink is
//! written through: the link stays and its target changes. Hard links to the old file keep the
//! old contents, as with any editor that saves by renaming.

use std::fs::{self, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// 16 random hex digits (from the standard library's per-process random hash keys).
pub(crate) fn random_hex() -> String {
    let mut h = std::hash::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// Where a write to `path` really lands: the final target of a symlink chain, else `path`.
pub(crate) fn write_target(path: &Path) -> PathBuf {
    let mut current = path.to_path_buf();
    // A loop of links is left for the write itself to report.
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => match fs::read_link(&current) {
                Ok(link) => {
                    current = match current.parent() {
                        Some(dir) if link.is_relative() => dir.join(link),
                        _ => link,
                    };
                }
                Err(_) => return current,
            },
            _ => return current,
        }
    }
    current
}

/// Replace the contents of `path` with `data` atomically, keeping permissions and owner.
///
/// The parent folder must exist. Fails (and leaves the old file alone) when `path` is a folder
/// or when the old file cannot be opened for writing.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let target = write_target(path);
    let existing = match fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::other(format!(
                "{} is a folder, not a file",
                target.display()
            )));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(io::Error::other(format!(
                "{} is not a regular file (a device, socket or pipe)",
                target.display()
            )));
        }
        Ok(meta) => {
            // Respect a read-only file the way a plain write would.
            OpenOptions::new().write(true).open(&target)?;
            Some(meta)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let temp = dir.join(format!(".{name}.pi-{}.tmp", random_hex()));

    let mode = existing.as_ref().map_or(0o666, |m| m.permissions().mode());
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        file.write_all(data)?;
        if let Some(meta) = &existing {
            // The umask narrowed the creation mode; put the old bits back exactly.
            file.set_permissions(fs::Permissions::from_mode(meta.permissions().mode()))?;
            // Keeping the owner needs privileges; without them the file is ours, as with any
            // editor.
            let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
        }
        file.sync_all()?;
        fs::rename(&temp, &target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// An I/O error in words a model can act on.
pub(crate) fn describe_io_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotADirectory => "a part of the path is a file, not a folder".into(),
        io::ErrorKind::IsADirectory => "it is a folder".into(),
        io::ErrorKind::StorageFull => "the disk is full".into(),
        io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only".into(),
        _ => e.to_string(),
    }
}

/// An image type recognised from the first bytes of a file.
pub(crate) fn sniff_image(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else {
        None
    }
}

/// Binary content, judged like git and ripgrep do: a NUL byte in the sample.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    memchr::memchr(0, sample).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_four_image_types() {
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff_image(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff_image(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff_image(b"hello"), None);
    }

    #[test]
    fn random_names_differ() {
        assert_ne!(random_hex(), random_hex());
        assert_eq!(random_hex().len(), 16);
    }
}

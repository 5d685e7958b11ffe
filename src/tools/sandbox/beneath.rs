//! Reading and writing files for `write` and `edit` so that a symlink swapped in after the
//! sandbox's check cannot send them outside the allowed folders.
//!
//! [`Sandbox::check_write`](super::Sandbox::check_write) resolves the path and says no,
//! clearly, to anything outside. But a command running at the same time could replace a
//! folder on the way with a symlink between that check and the write (the trials landed 2
//! writes of 320 outside that way). So the write itself does not go by path: it opens the
//! allowed folder the resolved path lies in, then walks down one name at a time with
//! `openat(…, O_NOFOLLOW | O_DIRECTORY)` (creating missing folders with `mkdirat`), so a
//! symlink anywhere on the way makes it fail instead of follow. In the last folder the
//! temporary file is made with `openat(O_CREAT | O_EXCL | O_NOFOLLOW)` and put in place with
//! `renameat`, both relative to that folder's descriptor: the new contents can only land
//! inside. A name that turned into a symlink since the check is refused, and nothing is
//! written. (This is the portable form of `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`:
//! each step is a single name, so `O_NOFOLLOW` covers every link there could be.)
//!
//! Symlinks that stay inside still work as before: the path is resolved first (the link is
//! written through), and only the resolved path is walked.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::real_location::real_location;
use crate::tools::fsutil::random_hex;

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name holds a NUL byte"))
}

fn moved(what: &str) -> io::Error {
    io::Error::other(format!(
        "{what} changed into a symbolic link while it was being written (refused, nothing was \
         written)"
    ))
}

/// The allowed folder `real` lies in (the deepest one), and the names below it.
fn split<'a>(roots: &'a [PathBuf], real: &'a Path) -> io::Result<(&'a Path, Vec<&'a OsStr>)> {
    let root = roots
        .iter()
        .filter(|r| real.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} is outside the sandbox", real.display()),
            )
        })?;
    let mut names = Vec::new();
    for c in real
        .strip_prefix(root)
        .unwrap_or(Path::new(""))
        .components()
    {
        match c {
            Component::Normal(n) => names.push(n),
            _ => {
                return Err(io::Error::other(
                    "the path does not resolve to a plain name",
                ));
            }
        }
    }
    Ok((root, names))
}

fn open_dir_at(dir: &OwnedFd, name: &CString) -> io::Result<OwnedFd> {
    // SAFETY: a live descriptor and a NUL-terminated name; the result is owned below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Open the folder holding `real`, walking from its allowed folder without following links;
/// creates missing folders when `create`. Returns it with the file's own name.
fn open_parent(roots: &[PathBuf], real: &Path, create: bool) -> io::Result<(OwnedFd, CString)> {
    let (root, names) = split(roots, real)?;
    let Some((last, folders)) = names.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is an allowed folder itself",
        ));
    };
    let root_c = c_name(root.as_os_str())?;
    // SAFETY: a NUL-terminated path; the result is owned below.
    let fd = unsafe {
        libc::open(
            root_c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let mut dir = unsafe { OwnedFd::from_raw_fd(fd) };
    for name in folders {
        let c = c_name(name)?;
        dir = match open_dir_at(&dir, &c) {
            Ok(next) => next,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && create => {
                // SAFETY: a live descriptor and a NUL-terminated name.
                let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) };
                if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
                    return Err(io::Error::last_os_error());
                }
                open_dir_at(&dir, &c)?
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                return Err(moved(&format!("the folder {}", name.to_string_lossy())));
            }
            Err(e) => return Err(e),
        };
    }
    Ok((dir, c_name(last)?))
}

/// What is at `name` in `dir`, without following a link.
fn stat_at(dir: &OwnedFd, name: &CString) -> io::Result<Option<libc::stat>> {
    // SAFETY: `st` is plain data the call fills in.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live descriptor, a NUL-terminated name, a valid out-pointer.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        return Ok(Some(st));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(e)
    }
}

fn open_at(dir: &OwnedFd, name: &CString, flags: libc::c_int, mode: u32) -> io::Result<File> {
    // SAFETY: a live descriptor and a NUL-terminated name; the result is owned below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) {
            return Err(moved("the file"));
        }
        return Err(e);
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn kind_check(st: &libc::stat) -> io::Result<()> {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Ok(()),
        libc::S_IFLNK => Err(moved("the file")),
        libc::S_IFDIR => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a folder",
        )),
        _ => Err(io::Error::other(
            "it is not a regular file (a device, socket or pipe)",
        )),
    }
}

/// The permission bits of `st` (`mode_t` is narrower than `u32` on some systems).
#[allow(clippy::useless_conversion)]
fn mode_bits(st: &libc::stat) -> u32 {
    u32::from(st.st_mode & 0o7777)
}

/// Replace the contents of `path` with `data` atomically, landing under one of `roots`
/// whatever happens to the path meanwhile. Missing parent folders are created. Keeps the old
/// file's permissions and (when allowed) owner.
pub(crate) fn write_atomic(roots: &[PathBuf], path: &Path, data: &[u8]) -> io::Result<()> {
    let real = real_location(path);
    let (dir, name) = open_parent(roots, &real, true)?;
    let existing = stat_at(&dir, &name)?;
    if let Some(st) = &existing {
        kind_check(st)?;
        // Respect a read-only file the way a plain write would.
        open_at(&dir, &name, libc::O_WRONLY, 0)?;
    }
    let temp = c_name(OsStr::new(&format!(
        ".{}.pi-{}.tmp",
        real.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into()),
        random_hex()
    )))?;
    let mode = existing.as_ref().map_or(0o666, mode_bits);
    let result = (|| {
        let mut file = open_at(
            &dir,
            &temp,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            mode,
        )?;
        file.write_all(data)?;
        if let Some(st) = &existing {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode_bits(st)))?;
            let _ = std::os::unix::fs::fchown(&file, Some(st.st_uid), Some(st.st_gid));
        }
        file.sync_all()?;
        // SAFETY: live descriptors and NUL-terminated names.
        let rc = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                temp.as_ptr(),
                dir.as_raw_fd(),
                name.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })();
    if result.is_err() {
        // SAFETY: a live descriptor and a NUL-terminated name.
        unsafe { libc::unlinkat(dir.as_raw_fd(), temp.as_ptr(), 0) };
    }
    result?;
    let _ = File::from(dir).sync_all();
    Ok(())
}

/// Read `path`, which must resolve under one of `roots`, without following a link swapped in
/// on the way.
pub(crate) fn read(roots: &[PathBuf], path: &Path) -> io::Result<Vec<u8>> {
    let real = real_location(path);
    let (dir, name) = open_parent(roots, &real, false)?;
    let mut file = open_at(&dir, &name, libc::O_RDONLY, 0)?;
    let mut out = Vec::new();
    file.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let out = base.join("out");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&out).unwrap();
        (d, ws, out)
    }

    #[test]
    fn writes_inside_creating_folders_and_keeping_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, ws, _) = place();
        let roots = vec![ws.clone()];
        write_atomic(&roots, &ws.join("a/b/c.txt"), b"one").unwrap();
        assert_eq!(std::fs::read(ws.join("a/b/c.txt")).unwrap(), b"one");
        std::fs::set_permissions(ws.join("a/b/c.txt"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        write_atomic(&roots, &ws.join("a/b/c.txt"), b"two").unwrap();
        let meta = std::fs::metadata(ws.join("a/b/c.txt")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(read(&roots, &ws.join("a/b/c.txt")).unwrap(), b"two");
        // A link inside the workspace to a file inside is written through.
        std::os::unix::fs::symlink(ws.join("a/b/c.txt"), ws.join("link")).unwrap();
        write_atomic(&roots, &ws.join("link"), b"three").unwrap();
        assert_eq!(std::fs::read(ws.join("a/b/c.txt")).unwrap(), b"three");
        assert!(
            std::fs::symlink_metadata(ws.join("link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let e = write_atomic(&roots, &ws.join("a"), b"x").unwrap_err();
        assert!(e.to_string().contains("folder"), "{e}");
    }

    #[test]
    fn a_link_out_is_refused_at_the_write_itself() {
        let (_d, ws, out) = place();
        let roots = vec![ws.clone()];
        std::os::unix::fs::symlink(&out, ws.join("door")).unwrap();
        let e = write_atomic(&roots, &ws.join("door/x.txt"), b"no").unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        // The walk itself refuses a link where the resolved path had a folder: `real`
        // is taken before the swap, the walk after it.
        std::fs::create_dir(ws.join("sub")).unwrap();
        let real = ws.join("sub/x.txt");
        std::fs::remove_dir(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(&out, ws.join("sub")).unwrap();
        let (root, _) = split(&roots, &real).unwrap();
        assert_eq!(root, ws.as_path());
        let e = open_parent(&roots, &real, true).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    }
}

//! The read-only view of the file system sandboxed commands get, built with a user and a
//! mount namespace (what bubblewrap and Codex's Linux sandbox do, with our own code).
//!
//! Landlock stops writes outside the allowed folders, but it has no right for metadata:
//! `chmod`, `chown` and `touch -d` on any file the user owns went through. A read-only mount
//! refuses them all (EROFS), whatever the call. So a sandboxed command starts in namespaces of
//! its own:
//!
//! 1. `unshare(CLONE_NEWUSER | CLONE_NEWNS | …)` (done by [`super::super::launch`]); the new
//!    user namespace maps only the caller's own user and group to themselves
//!    (`/proc/self/setgroups` is set to "deny" first, as the kernel requires of an
//!    unprivileged caller), so files keep their owners and nothing needs setuid helpers.
//! 2. The whole mount tree is made private, so nothing done here reaches the host.
//! 3. Each allowed folder is cloned with `open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)` while it
//!    is still writable, then every mount is made read-only at once
//!    (`mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY)`), and the clones are put back on
//!    their folders with `move_mount`. The working directory is entered again so that it
//!    names the writable clone. Device nodes (`/dev/null`, terminals) stay writable on a
//!    read-only mount: the flag governs the file system, not the device behind a node.
//!
//! Inside, the command holds no capabilities (the launcher empties the bounding set before
//! the exec), so it cannot undo the read-only flag; Landlock, layered on top, also forbids
//! every mount call. When pi itself runs as root this means the command runs as a root
//! without privileges: it cannot read other users' private files or change owners.
//!
//! Everything that allocates (the id maps, the folder names as C strings) is prepared here
//! before the fork; [`Plan::enter`] runs in the child and makes system calls only.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `struct mount_attr` (linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const OPEN_TREE_CLONE: libc::c_uint = 0x1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// What a sandboxed command's namespaces will look like, ready to be entered in the child.
#[derive(Debug)]
pub(crate) struct Plan {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Folders that stay writable.
    writable: Vec<CString>,
    /// The clones of `writable`, filled in the child (-1: the folder does not exist).
    clones: Vec<libc::c_int>,
    /// The command's working directory, entered again once the mounts are in place.
    cwd: CString,
    /// False when an allowed folder is `/` itself: nothing to make read-only then.
    read_only_rest: bool,
}

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", p.display()),
        )
    })
}

impl Plan {
    /// The plan for a command in `cwd` that may write under `writable` (real paths).
    pub(crate) fn prepare(writable: &[PathBuf], cwd: &Path) -> io::Result<Plan> {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let read_only_rest = !writable.iter().any(|w| w.as_os_str() == "/");
        let mut dirs = Vec::new();
        for w in writable {
            if w.is_dir() {
                dirs.push(c_path(w)?);
            }
        }
        Ok(Plan {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            clones: vec![-1; dirs.len()],
            writable: dirs,
            cwd: c_path(cwd)?,
            read_only_rest,
        })
    }

    /// In the child, right after `unshare(CLONE_NEWUSER | CLONE_NEWNS …)`: map the ids, make
    /// the tree private and read-only but for the allowed folders. System calls only.
    pub(crate) fn enter(&mut self) -> io::Result<()> {
        write_file(c"/proc/self/setgroups", b"deny\n")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        make_private()?;
        if !self.read_only_rest {
            return Ok(());
        }
        for (dir, slot) in self.writable.iter().zip(self.clones.iter_mut()) {
            // SAFETY: a NUL-terminated path and integer flags.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    dir.as_ptr(),
                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as libc::c_uint,
                )
            };
            if fd < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOENT) {
                    continue;
                }
                return Err(e);
            }
            *slot = fd as libc::c_int;
        }
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: `attr` is a live `struct mount_attr` of the size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::AT_RECURSIVE as libc::c_uint,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        for (dir, &fd) in self.writable.iter().zip(self.clones.iter()) {
            if fd < 0 {
                continue;
            }
            // SAFETY: `fd` is the detached clone made above; paths are NUL-terminated.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_move_mount,
                    fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    dir.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: our own descriptor.
            unsafe { libc::close(fd) };
        }
        // SAFETY: a NUL-terminated path.
        if unsafe { libc::chdir(self.cwd.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Make every mount private, so nothing mounted here propagates back to the host.
pub(crate) fn make_private() -> io::Result<()> {
    // SAFETY: NUL-terminated strings and null data, as mount(2) documents for a
    // propagation change.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Mount a fresh `/proc` for a new PID namespace, so process ids a command reads there are
/// ones it can signal. Failure (a container that hides parts of `/proc`) leaves the old one.
pub(crate) fn mount_fresh_proc() {
    // SAFETY: NUL-terminated strings and null data.
    unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        );
    }
}

/// Write `data` to `path` with open/write/close.
fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `data` is valid for its length.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = io::Error::last_os_error();
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
    if n < 0 || n as usize != data.len() {
        return Err(err);
    }
    Ok(())
}

/// Whether this system lets pi build the namespaces: a throwaway child tries the steps that
/// can be refused (the user namespace, the id maps, a read-only remount). `Err` says why not.
pub fn probe() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let tmp = std::env::temp_dir();
    let mut plan = Plan::prepare(std::slice::from_ref(&tmp), &tmp)
        .map_err(|e| format!("cannot prepare the namespaces: {e}"))?;
    let mut cmd = std::process::Command::new("bash");
    cmd.arg("-c")
        .arg(":")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the hook makes system calls only (see `Plan::enter`).
    unsafe {
        cmd.pre_exec(move || {
            // See `launch`: a process that is not dumpable may not write its own id maps.
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID) != 0 {
                return Err(io::Error::last_os_error());
            }
            plan.enter()
        });
    }
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the probe failed ({s})")),
        Err(e) => Err(format!("user namespaces are not available ({e})")),
    }
}

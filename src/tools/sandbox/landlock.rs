//! Landlock for `bash`'s commands: the rules are built in pi, applied in the child only.
//!
//! **How it is applied.** Two designs were on the table: a `pre_exec` hook in the forked
//! child, or re-running pi's own binary as a small launcher (a hidden argv mode at the top of
//! `main` that restricts itself and then execs `bash -c`), as Codex does on Linux. This is the
//! hook, built so that the child does almost nothing:
//!
//! * Everything that allocates or can fail in interesting ways happens in pi, before the
//!   fork, on an ordinary thread: probing the kernel, creating the ruleset, opening every
//!   allowed folder and adding its rule ([`Confinement::prepare`], with the `landlock` crate).
//!   The result is one ruleset file descriptor (close-on-exec, so `bash` never sees it).
//! * Between fork and exec the child makes only system calls through `libc` directly (see
//!   [`launch`](crate::tools::launch), which also builds the namespaces and installs the
//!   seccomp filter there): for Landlock, `prctl(PR_SET_NO_NEW_PRIVS)` and
//!   `landlock_restrict_self(fd)` ([`Confinement::restrict`]). No allocation, no lock,
//!   nothing that is not async-signal-safe, so the multi-threaded parent cannot leave the
//!   child deadlocked on an allocator lock. A failure returns the errno, which the standard
//!   library hands back as the spawn error.
//! * The restriction binds the process that execs the command and everything it starts; pi
//!   itself is never restricted.
//!
//! The launcher would need pi's binary on disk and callable: it breaks for the library used
//! from another program (the integration tests call the tools from a test binary that has no
//! launcher mode), when the binary was replaced or deleted by an upgrade mid-session, and it
//! adds an exec per command. Its advantage (no code between fork and exec) matters when that
//! code allocates; here everything that does (the seccomp program and the namespaces' id
//! maps too) is prepared before the fork.
//!
//! **Scopes.** From ABI 6 on, the ruleset is also scoped: a command can neither connect to an
//! abstract unix socket of a process outside the sandbox nor signal one. (Pathname sockets
//! are the seccomp filter's job: Landlock up to ABI 7 cannot filter them.)
//!
//! **What is handled.** Only write-type rights of Landlock's third ABI: writing and truncating
//! files, creating and removing entries of every kind, and moving or linking across folders
//! (`Refer`; a hard link cannot smuggle a file from outside into the workspace). Reading,
//! executing and device ioctls are not handled, so they stay allowed everywhere. A kernel
//! older than ABI 3 cannot stop `truncate(2)` and counts as missing.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use ::landlock::{
    ABI, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::Support;

/// The Landlock ABI pi needs: the first that also governs `truncate`.
pub(crate) const MIN_ABI: i32 = 3;
/// The first ABI with scopes: no connecting to abstract unix sockets made outside the
/// sandbox, no signals to processes outside it.
pub(crate) const SCOPE_ABI: i32 = 6;

/// The rights the sandbox takes away outside the allowed folders.
fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V3)
}

/// What this kernel offers.
pub fn probe() -> Support {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only reports the
    // ABI version (or fails with ENOSYS / EOPNOTSUPP); it touches no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v < 0 {
        let e = std::io::Error::last_os_error();
        return Support::Missing(match e.raw_os_error() {
            Some(libc::ENOSYS) => {
                "this kernel has no Landlock (it needs Linux 6.2 or later)".into()
            }
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built into this kernel but not enabled (the `lsm=` boot setting)"
                    .into()
            }
            _ => format!("Landlock cannot be queried: {e}"),
        });
    }
    let abi = i32::try_from(v).unwrap_or(i32::MAX);
    if abi < MIN_ABI {
        return Support::Missing(format!(
            "this kernel's Landlock (ABI {abi}) is too old to enforce it fully: ABI {MIN_ABI} \
             (Linux 6.2) is needed"
        ));
    }
    Support::Landlock {
        abi,
        namespaces: false,
    }
}

/// The Landlock rules one command starts under, or none.
#[derive(Debug)]
pub(crate) struct Confinement {
    ruleset: Option<OwnedFd>,
}

impl Confinement {
    /// Rules allowing writes under `writable` only. Paths that do not exist are skipped (a
    /// device this system lacks, say); everything else that goes wrong is an error. From ABI
    /// [`SCOPE_ABI`] on, the command is also scoped: it can neither reach abstract unix
    /// sockets of processes outside the sandbox nor signal them.
    pub(crate) fn prepare(writable: &[PathBuf], abi: i32) -> Result<Self, String> {
        let rights = write_rights();
        let mut created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(rights)
            .and_then(|r| {
                if abi >= SCOPE_ABI {
                    r.scope(Scope::AbstractUnixSocket | Scope::Signal)
                } else {
                    Ok(r)
                }
            })
            .and_then(landlock::Ruleset::create)
            .map_err(|e| format!("cannot create the Landlock ruleset: {e}"))?;
        for path in writable {
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            // A rule on a file may only carry the rights that make sense for a file.
            let allowed = if meta.is_dir() {
                rights
            } else {
                rights & AccessFs::from_file(ABI::V3)
            };
            let fd =
                PathFd::new(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            created = created
                .add_rule(PathBeneath::new(fd, allowed))
                .map_err(|e| format!("cannot allow writes in {}: {e}", path.display()))?;
        }
        let fd: Option<OwnedFd> = created.into();
        match fd {
            Some(fd) => Ok(Confinement { ruleset: Some(fd) }),
            None => Err("the kernel gave no Landlock ruleset".into()),
        }
    }

    /// In the child: restrict this process with the prepared rules (system calls only).
    /// `PR_SET_NO_NEW_PRIVS` must be set already.
    pub(crate) fn restrict(&self) -> std::io::Result<()> {
        let Some(fd) = &self.ruleset else {
            return Ok(());
        };
        // SAFETY: `fd` is an open Landlock ruleset descriptor; flags 0.
        if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

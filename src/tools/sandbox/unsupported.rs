//! Systems without Landlock: nothing can confine `bash`'s commands, so the sandbox's fallback
//! (`sandbox_fallback`) decides whether they run unconfined or are refused. The in-process
//! check of `write` and `edit` (and their descriptor-relative writes) works here as
//! everywhere. The namespaces and the seccomp filter are Linux's too: stand-ins below.

use std::path::PathBuf;

use super::Support;

/// What this system offers: no Landlock.
pub(crate) fn probe() -> Support {
    Support::Missing("Landlock exists on Linux only".into())
}

/// Commands always start unconfined here.
#[derive(Debug)]
pub(crate) struct Confinement;

impl Confinement {
    pub(crate) fn none() -> Self {
        Confinement
    }

    pub(crate) fn is_none(&self) -> bool {
        true
    }

    pub(crate) fn prepare(_writable: &[PathBuf], _abi: i32) -> Result<Self, String> {
        Err("Landlock exists on Linux only".into())
    }

    pub(crate) fn restrict(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// No user or mount namespaces outside Linux.
pub(crate) mod namespace {
    use std::io;
    use std::path::{Path, PathBuf};

    #[derive(Debug)]
    pub(crate) struct Plan;

    impl Plan {
        pub(crate) fn prepare(_writable: &[PathBuf], _cwd: &Path) -> io::Result<Plan> {
            Err(io::Error::other("namespaces exist on Linux only"))
        }

        pub(crate) fn enter(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    pub(crate) fn make_private() -> io::Result<()> {
        Ok(())
    }

    pub(crate) fn mount_fresh_proc() {}

    pub(crate) fn probe() -> Result<(), String> {
        Err("namespaces exist on Linux only".into())
    }
}

/// No seccomp outside Linux.
pub(crate) mod seccomp {
    #[derive(Debug)]
    pub(crate) struct Filter;

    impl Filter {
        pub(crate) fn no_unix_sockets() -> Option<Filter> {
            None
        }

        pub(crate) fn install(&self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

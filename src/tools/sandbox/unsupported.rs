//! Systems without Landlock: nothing can confine `bash`'s commands, so the sandbox's fallback
//! (`sandbox_fallback`) decides whether they run unconfined or are refused. The in-process
//! check of `write` and `edit` (and their descriptor-relative writes) works here as
//! everywhere. The namespaces and the seccomp filter are Linux's too: stand-ins below.

use std::path::PathBuf;

use super::Support;

/// What this system offers: no Landlock.
pub fn probe() -> Support {
    Support::Missing("Landlock exists on Linux only".into())
}

/// Commands always start unconfined here.
#[derive(Debug)]
pub struct Confinement;

impl Confinement {
    pub fn none() -> Self {
        Confinement
    }

    pub fn is_none(&self) -> bool {
        true
    }

    pub fn prepare(_writable: &[PathBuf], _abi: i32) -> Result<Self, String> {
        Err("Landlock exists on Linux only".into())
    }

    pub fn restrict(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// No user or mount namespaces outside Linux.
pub mod namespace {
    use std::io;
    use std::path::{Path, PathBuf};

    #[derive(Debug)]
    pub struct Plan;

    impl Plan {
        pub fn prepare(_writable: &[PathBuf], _cwd: &Path) -> io::Result<Plan> {
            Err(io::Error::other("namespaces exist on Linux only"))
        }

        pub fn enter(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    pub fn make_private() -> io::Result<()> {
        Ok(())
    }

    pub fn mount_fresh_proc() {}

    pub fn probe() -> Result<(), String> {
        Err("namespaces exist on Linux only".into())
    }
}

/// No seccomp outside Linux.
pub mod seccomp {
    #[derive(Debug)]
    pub struct Filter;

    impl Filter {
        pub fn no_unix_sockets() -> Option<Filter> {
            None
        }

        pub fn install(&self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

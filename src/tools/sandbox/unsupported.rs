//! Systems without Landlock: nothing can confine `bash`'s commands, so the sandbox's fallback
//! (`sandbox_fallback`) decides whether they run unconfined or are refused. The in-process
//! check of `write` and `edit` works here as everywhere.

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

//! Process groups: how `bash` signals a command together with everything it started.
//!
//! A command runs as the leader of a new process group (its pid is the group id), so pipelines,
//! subshells and background jobs share it and one `killpg` reaches them all. [`ProcessGroup`]
//! signals the group and asks whether any member is left. [`GroupGuard`] kills the group if the
//! tool's future is dropped mid-run (the agent task went away), so no command outlives it by
//! accident; a command that finished normally disarms it, and its background jobs live on.
//!
//! Unix only.

use std::io;

/// The signals this module sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
}

impl Signal {
    fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// A process group, named by its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
    pgid: libc::pid_t,
}

impl ProcessGroup {
    /// The group led by `pid` (a child spawned with `process_group(0)`). `None` for ids that
    /// cannot name a group (0, 1, or out of range), so a bad id never signals init or ourselves.
    pub fn led_by(pid: u32) -> Option<Self> {
        let pgid = libc::pid_t::try_from(pid).ok()?;
        (pgid > 1).then_some(ProcessGroup { pgid })
    }

    pub fn id(self) -> i32 {
        self.pgid
    }

    /// Send `signal` to every member. Returns false when the group no longer exists.
    pub fn signal(self, signal: Signal) -> bool {
        // SAFETY: killpg takes plain integers; `pgid` is > 1 by construction.
        unsafe { libc::killpg(self.pgid, signal.raw()) == 0 }
    }

    /// Whether any member is left (zombies not yet reaped count as members).
    pub fn alive(self) -> bool {
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        let rc = unsafe { libc::killpg(self.pgid, 0) };
        rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
}

/// Kills the group with SIGKILL when dropped while armed.
pub struct GroupGuard {
    group: Option<ProcessGroup>,
}

impl GroupGuard {
    pub fn new(group: Option<ProcessGroup>) -> Self {
        GroupGuard { group }
    }

    /// Leave the group alone from now on.
    pub fn disarm(&mut self) {
        self.group = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(g) = self.group.take() {
            g.signal(Signal::Kill);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_ids_that_are_not_groups_we_own() {
        assert!(ProcessGroup::led_by(0).is_none());
        assert!(ProcessGroup::led_by(1).is_none());
        assert!(ProcessGroup::led_by(u32::MAX).is_none());
        assert!(ProcessGroup::led_by(1234).is_some());
    }

    #[test]
    fn signals_a_real_group() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let g = ProcessGroup::led_by(child.id()).unwrap();
        assert!(g.alive());
        assert!(g.signal(Signal::Kill));
        child.wait().unwrap();
        assert!(!g.alive());
        assert!(!g.signal(Signal::Term));
    }
}

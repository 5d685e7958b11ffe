//! Process groups: how `bash` signals a command together with everything it started.
//!
//! A command runs as the leader of a new process group (its pid is the group id), so pipelines,
//! subshells and background jobs share it and one `killpg` reaches them all. [`ProcessGroup`]
//! signals the group and asks whether any member is left. [`GroupGuard`] kills the group when
//! the call is over, however it ends (finished, stopped, or the tool's future dropped
//! mid-run), so background jobs do not outlive their call. What leaves the group (`setsid`)
//! is caught by the PID namespace of [`launch`](super::launch) where there is one.
//!
//! Unix only.

use std::io;

/// The signals this module sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
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
pub(crate) struct ProcessGroup {
    pgid: libc::pid_t,
}

impl ProcessGroup {
    /// The group led by `pid` (a child spawned with `process_group(0)`). `None` for ids that
    /// cannot name a group (0, 1, or out of range), so a bad id never signals init or ourselves.
    pub(crate) fn led_by(pid: u32) -> Option<Self> {
        let pgid = libc::pid_t::try_from(pid).ok()?;
        (pgid > 1).then_some(ProcessGroup { pgid })
    }

    /// Send `signal` to every member. Returns false when the group no longer exists.
    pub(crate) fn signal(self, signal: Signal) -> bool {
        // SAFETY: killpg takes plain integers; `pgid` is > 1 by construction.
        unsafe { libc::killpg(self.pgid, signal.raw()) == 0 }
    }

    /// Whether any member is still running. A member that has exited but is not yet reaped
    /// (a zombie) does not count: once its parent died it waits for init to collect it, which
    /// some containers' init does only every second or two.
    pub(crate) fn alive(self) -> bool {
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        let rc = unsafe { libc::killpg(self.pgid, 0) };
        let exists = rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists && self.has_running_member().unwrap_or(true)
    }

    /// Whether `/proc` lists a member of the group that is not a zombie (`None` where `/proc`
    /// cannot be read).
    fn has_running_member(self) -> Option<bool> {
        let entries = std::fs::read_dir("/proc").ok()?;
        let mut seen_any = false;
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            seen_any = true;
            if let Some((state, pgrp)) = state_and_group(&stat)
                && pgrp == self.pgid
                && state != 'Z'
            {
                return Some(true);
            }
        }
        // An empty listing means /proc is not what we think it is.
        seen_any.then_some(false)
    }
}

/// The state letter and process group id from a `/proc/<pid>/stat` line: `pid (comm) S ppid
/// pgrp ...`, where `comm` may itself hold spaces and parentheses.
fn state_and_group(stat: &str) -> Option<(char, libc::pid_t)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Kills the group with SIGKILL when dropped while armed.
pub(crate) struct GroupGuard {
    group: Option<ProcessGroup>,
}

impl GroupGuard {
    pub(crate) fn new(group: Option<ProcessGroup>) -> Self {
        GroupGuard { group }
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
    fn reads_state_and_group_from_a_stat_line() {
        assert_eq!(
            state_and_group("42 (we) (ird) Z 1 4242 4242 0 -1 4194560"),
            Some(('Z', 4242))
        );
        assert_eq!(state_and_group("garbage"), None);
    }

    /// A `sleep 30` leading its own group, and the group.
    fn sleeping_group() -> (std::process::Child, ProcessGroup) {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let g = ProcessGroup::led_by(child.id()).unwrap();
        assert!(g.alive());
        (child, g)
    }

    #[test]
    fn a_group_of_zombies_is_not_alive() {
        // The leader stays a zombie (not waited for yet) after it is killed.
        let (mut child, g) = sleeping_group();
        assert!(g.signal(Signal::Kill));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while g.alive() {
            assert!(std::time::Instant::now() < deadline, "still running");
            std::thread::yield_now();
        }
        // Still signalable (the zombie exists) yet not alive.
        assert!(g.signal(Signal::Term));
        child.wait().unwrap();
    }

    #[test]
    fn signals_a_real_group() {
        let (mut child, g) = sleeping_group();
        assert!(g.signal(Signal::Kill));
        child.wait().unwrap();
        assert!(!g.alive());
        assert!(!g.signal(Signal::Term));
    }
}

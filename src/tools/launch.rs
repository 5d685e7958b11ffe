//! How `bash` starts a command so that nothing it starts outlives the call or pi.
//!
//! **Tied to pi.** The child asks for `PR_SET_PDEATHSIG(SIGKILL)`. The kernel fires it when
//! the *thread* that forked the child exits; pi's runtime is single-threaded
//! (`new_current_thread`, and no tool spawns from a `spawn_blocking` thread), so that thread is
//! pi's main thread and the signal comes when pi ends, SIGKILL included. If pi died before the
//! request was made, the child sees a different parent and gives up.
//!
//! **The whole tree.** A process group is not enough (`setsid` leaves it, and a double fork
//! leaves bash). The sound tool is a PID namespace: when its first process (its "init")
//! exits, the kernel kills everything else in it. `unshare(CLONE_NEWPID)` only applies to the
//! caller's later children, so the command runs three levels deep:
//!
//! ```text
//! pi ── A (pi's child; enters the namespaces, waits, exits as the command did)
//!        └── B (pid 1 of the new namespace; reaps orphans, waits for C)
//!             └── C (applies Landlock/seccomp, execs `bash -c COMMAND`)
//! ```
//!
//! A and B ignore the signals pi sends to stop a command (B, as an init, gets none it has no
//! handler for anyway), so SIGTERM reaches bash and its jobs exactly as before, and SIGKILL
//! ends them all. When bash exits, B passes its wait status to A through a pipe and exits,
//! which takes down whatever bash left behind; A then exits the way bash did (same code, or
//! the same signal), so the tool reports what the command did. If pi is SIGKILLed, A gets
//! SIGKILL (death signal), B gets it from A's death, and B's death empties the namespace.
//! A and B close every descriptor but that pipe, so the output pipe closes when the command's
//! processes are gone and the standard library's exec-error pipe reports C's exec.
//!
//! Who gets the namespace: sandboxed commands (in a user namespace, with the mount plan of
//! [`super::sandbox::namespace`]), and the model's unsandboxed commands when pi may create a
//! PID namespace without a user namespace (as root); elsewhere an unsandboxed command runs as
//! before, in its own process group, which `bash` kills when the call returns. The user's own
//! `!commands` keep the plain process group (and the death signal), so `ps` there still shows
//! the whole system. A fresh `/proc` is mounted in the namespace so the process ids a command
//! reads are ones it can signal.
//!
//! Everything that allocates happens before the fork ([`Launch::prepare`]); the hook makes
//! system calls only, as the standard library requires of `pre_exec` in a program with
//! threads.

use std::io;

use super::sandbox::Jail;

/// Whether to run the command as the grandchild of a PID namespace's init.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tree {
    /// Process group only.
    Group,
    /// A PID namespace if the kernel allows one without a user namespace; else the group.
    TryPidNamespace,
    /// User, mount and PID namespaces, or no command at all.
    Namespaces,
}

/// A prepared launch: the child's whole part, ready to hand to `pre_exec`.
#[derive(Debug)]
pub(crate) struct Launch {
    parent: libc::pid_t,
    tree: Tree,
    jail: Option<Jail>,
}

impl Launch {
    /// The launch for one command. `jail`: the sandbox's prepared restrictions (`None`:
    /// unconfined); `contain`: use a PID namespace where possible (false for the user's own
    /// commands).
    pub(crate) fn prepare(jail: Option<Jail>, contain: bool) -> Launch {
        let tree = match &jail {
            Some(j) if j.namespaces.is_some() => Tree::Namespaces,
            _ if contain => Tree::TryPidNamespace,
            _ => Tree::Group,
        };
        Launch {
            // SAFETY: a plain getter.
            parent: unsafe { libc::getpid() },
            tree,
            jail,
        }
    }

    /// Whether the command runs under sandbox restrictions.
    pub(crate) fn confined(&self) -> bool {
        self.jail.is_some()
    }

    /// Have `cmd`'s child do its part before the exec.
    pub(crate) fn apply_to(mut self, cmd: &mut tokio::process::Command) {
        // SAFETY: `in_child` makes system calls only (no allocation, no locks): see the
        // module notes.
        unsafe {
            cmd.pre_exec(move || self.in_child());
        }
    }

    /// Outside Linux there is neither a death signal nor a PID namespace: the process group
    /// alone.
    #[cfg(not(target_os = "linux"))]
    fn in_child(&mut self) -> io::Result<()> {
        let _ = (self.parent, self.tree);
        self.confine()
    }

    /// The child's part (A).
    #[cfg(target_os = "linux")]
    fn in_child(&mut self) -> io::Result<()> {
        die_with_parent(self.parent)?;
        if self.tree == Tree::Group {
            return self.confine();
        }
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        if self.tree == Tree::Namespaces {
            flags |= libc::CLONE_NEWUSER;
            // pi is not dumpable (see `cli::harden`), and a process that is not may not write
            // its own `uid_map` unless it is root. This child is about to become the command
            // (exec resets the flag anyway); pi itself stays closed.
            // SAFETY: integer arguments.
            unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
        }
        // SAFETY: integer flags.
        if unsafe { libc::unshare(flags) } != 0 {
            if self.tree == Tree::TryPidNamespace {
                return self.confine();
            }
            return Err(io::Error::last_os_error());
        }
        match self.jail.as_mut().and_then(|j| j.namespaces.as_mut()) {
            Some(plan) => plan.enter()?,
            None => crate::tools::sandbox::namespace::make_private()?,
        }
        self.split()
    }

    /// Become A (waits for B, never returns), B (init; waits for C, never returns) or C (the
    /// command; returns to exec it).
    #[cfg(target_os = "linux")]
    fn split(&mut self) -> io::Result<()> {
        let mut fds = [-1; 2];
        // SAFETY: `fds` has room for two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let [status_r, status_w] = fds;
        let b = raw_fork()?;
        if b > 0 {
            // A.
            ignore_stop_signals();
            // SAFETY: our own descriptor.
            unsafe { libc::close(status_w) };
            close_all_but(status_r);
            let own = wait_for(b);
            let mut buf = [0u8; 4];
            // SAFETY: `buf` has room for four bytes.
            let n = unsafe { libc::read(status_r, buf.as_mut_ptr().cast(), buf.len()) };
            let status = if n == 4 { i32::from_ne_bytes(buf) } else { own };
            exit_like(status);
        }
        // B: pid 1 of the new namespace.
        // SAFETY: integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        // SAFETY: our own descriptor.
        unsafe { libc::close(status_r) };
        if !reader_alive(status_w) {
            // A died before the death signal was asked for (pi was killed just then).
            // SAFETY: ends this process.
            unsafe { libc::_exit(1) };
        }
        crate::tools::sandbox::namespace::mount_fresh_proc();
        let c = raw_fork()?;
        if c > 0 {
            close_all_but(status_w);
            let status = reap_until(c);
            let buf = status.to_ne_bytes();
            // SAFETY: `buf` is valid for its length.
            unsafe { libc::write(status_w, buf.as_ptr().cast(), buf.len()) };
            // SAFETY: ends this process without running anything of pi's.
            unsafe { libc::_exit(0) };
        }
        // C: the command.
        // SAFETY: integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        // SAFETY: our own descriptor.
        unsafe { libc::close(status_w) };
        self.confine()
    }

    /// Apply the sandbox's restrictions to this process (the one that execs the command).
    fn confine(&mut self) -> io::Result<()> {
        match &self.jail {
            Some(j) => j.restrict_self(self.tree == Tree::Namespaces),
            None => Ok(()),
        }
    }
}

#[cfg(target_os = "linux")]
/// Ask for SIGKILL when the forking thread ends; give up if that already happened.
fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a plain getter.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

#[cfg(target_os = "linux")]
/// fork(2) as a bare system call: no `atfork` handlers run in this already forked child.
fn raw_fork() -> io::Result<libc::pid_t> {
    // SAFETY: clone with SIGCHLD and no stack behaves as fork.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid as libc::pid_t)
}

/// Whether the pipe whose write end is `fd` still has a reader: from B, whether A (which
/// keeps the read end until it exits) is alive. B's parent is outside its PID namespace, so
/// `getppid` cannot tell.
#[cfg(target_os = "linux")]
fn reader_alive(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    !(n > 0 && p.revents & libc::POLLERR != 0)
}

#[cfg(target_os = "linux")]
fn ignore_stop_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: setting a disposition to SIG_IGN.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

#[cfg(target_os = "linux")]
/// Close every descriptor except `keep`.
fn close_all_but(keep: libc::c_int) {
    let keep = keep.max(0) as libc::c_uint;
    // SAFETY: close_range with integer bounds; our descriptors only.
    unsafe {
        if keep > 0 {
            libc::syscall(
                libc::SYS_close_range,
                0 as libc::c_uint,
                keep - 1,
                0 as libc::c_uint,
            );
        }
        libc::syscall(
            libc::SYS_close_range,
            keep + 1,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        );
    }
}

#[cfg(target_os = "linux")]
/// Wait for child `pid`; its raw wait status.
fn wait_for(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return status;
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1 << 8;
        }
    }
}

#[cfg(target_os = "linux")]
/// As init: reap every child until `pid` is among them; its raw wait status.
fn reap_until(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r == pid {
            return status;
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1 << 8;
        }
    }
}

#[cfg(target_os = "linux")]
/// End this process the way a process with wait status `status` ended.
fn exit_like(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain system calls on this process; `set` is a local signal set.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    };
    // SAFETY: ends this process.
    unsafe { libc::_exit(code) }
}

//! A seccomp filter that keeps sandboxed commands away from local servers over unix sockets.
//!
//! tmux, screen, D-Bus, ssh-agent, gpg-agent, the Docker daemon, X11 and Wayland all listen on
//! unix sockets, and each of them will happily do things outside the sandbox on a command's
//! behalf (`tmux new-window 'rm -rf ~'`). Landlock (up to ABI 7) cannot filter pathname
//! sockets by path, and seccomp cannot read the address a `connect` names, so the filter
//! refuses to *create* unix sockets at all: `socket(AF_UNIX, …)` fails with EACCES
//! ("Permission denied"). `socketpair` stays allowed (it makes a connected pair and reaches
//! no one else), so are pipes and every other socket family. The price: a program that
//! talks to a unix socket inside the workspace (a test suite starting its own server there)
//! is refused too.
//!
//! Two side roads are closed as well: `io_uring_setup` (io_uring can create sockets without
//! the `socket` system call) fails with ENOSYS, which programs take as "not supported" and
//! fall back from, and a system call made through a foreign ABI (32-bit x86 on x86-64, or
//! x32) kills the process, since its numbers differ and the checks below would not apply.
//!
//! The program is built in pi before the fork; the child only points the kernel at it
//! ([`Filter::install`], one `prctl`). Only x86-64 and aarch64 are known; elsewhere there is
//! no filter and the sandbox says so in its description.

use std::io;

// Classic BPF opcodes (linux/bpf_common.h).
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
#[cfg(target_arch = "x86_64")]
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

// seccomp return values (linux/seccomp.h).
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;

// Offsets in `struct seccomp_data`: nr (u32), arch (u32), ip (u64), args[6] (u64 each).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// The low 32 bits of the first argument (both supported architectures are little-endian).
const OFF_ARG0_LOW: u32 = 16;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// x32 system calls arrive on x86-64 with this bit set in their number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// A prepared seccomp program.
#[derive(Debug)]
pub(crate) struct Filter {
    program: Vec<libc::sock_filter>,
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

impl Filter {
    /// The filter refusing unix sockets, or `None` on an architecture pi has no numbers for.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(crate) fn no_unix_sockets() -> Option<Filter> {
        let mut p = vec![
            stmt(LD_W_ABS, OFF_ARCH),
            jump(JEQ_K, NATIVE_ARCH, 1, 0),
            stmt(RET_K, RET_KILL_PROCESS),
            stmt(LD_W_ABS, OFF_NR),
        ];
        #[cfg(target_arch = "x86_64")]
        p.extend([
            jump(JGE_K, X32_SYSCALL_BIT, 0, 1),
            stmt(RET_K, RET_KILL_PROCESS),
        ]);
        p.extend([
            jump(JEQ_K, libc::SYS_io_uring_setup as u32, 0, 1),
            stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32),
            jump(JEQ_K, libc::SYS_socket as u32, 1, 0),
            stmt(RET_K, RET_ALLOW),
            stmt(LD_W_ABS, OFF_ARG0_LOW),
            jump(JEQ_K, libc::AF_UNIX as u32, 0, 1),
            stmt(RET_K, RET_ERRNO | libc::EACCES as u32),
            stmt(RET_K, RET_ALLOW),
        ]);
        Some(Filter { program: p })
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub(crate) fn no_unix_sockets() -> Option<Filter> {
        None
    }

    /// Install the filter on the calling thread (the child, between fork and exec: one
    /// `prctl`, no allocation). `PR_SET_NO_NEW_PRIVS` must be set already.
    pub(crate) fn install(&self) -> io::Result<()> {
        let prog = libc::sock_fprog {
            len: u16::try_from(self.program.len()).unwrap_or(u16::MAX),
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: `prog` points at our program, which outlives the call; the kernel copies it.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program() {
        let Some(f) = Filter::no_unix_sockets() else {
            return;
        };
        let n = f.program.len();
        for (i, ins) in f.program.iter().enumerate() {
            if ins.code == JEQ_K {
                assert!(i + 1 + usize::from(ins.jt) < n && i + 1 + usize::from(ins.jf) < n);
            }
        }
        assert_eq!(f.program.last().map(|i| i.code), Some(RET_K));
    }

    #[test]
    fn a_filtered_child_cannot_make_unix_sockets_but_keeps_socketpair() {
        use std::os::unix::process::CommandExt;
        let Some(f) = Filter::no_unix_sockets() else {
            return;
        };
        // The child checks in the hook itself, after installing the filter.
        let mut cmd = std::process::Command::new("true");
        // SAFETY: the hook makes system calls only.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                f.install()?;
                let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                if s >= 0 || *libc::__errno_location() != libc::EACCES {
                    libc::_exit(3);
                }
                let mut pair = [0; 2];
                if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr()) != 0 {
                    libc::_exit(4);
                }
                let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
                if s < 0 {
                    libc::_exit(5);
                }
                Ok(())
            });
        }
        let status = cmd.status().unwrap();
        assert_eq!(status.code(), Some(0), "{status:?}");
    }
}

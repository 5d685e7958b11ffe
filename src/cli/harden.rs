//! Process hardening at start: what pi does to itself before anything else runs, so that the
//! programs its tools start cannot read its secrets out of it.
//!
//! The commands the model runs are pi's children; on Linux a child can read its parent's
//! `/proc/<pid>/environ` (every key pi was started with), `/proc/<pid>/cmdline` (an
//! `--api-key` value) and `/proc/<pid>/mem`. [`harden`] closes those doors, in this order,
//! while pi is still one thread:
//!
//! 1. `PR_SET_DUMPABLE` 0: `/proc/<pi>/environ`, `mem` and friends become readable only with
//!    `CAP_SYS_PTRACE`, and no debugger of the same user can attach. (Root holds that
//!    capability, hence the next steps.)
//! 2. `LD_*` variables (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, …) are dropped from pi's
//!    environment, so nothing pi starts has code injected by a variable someone planted.
//! 3. The values of secret-looking variables (the same rule that keeps them from the tools,
//!    [`EnvPolicy`]) are copied to the heap, where pi keeps reading them, and the original
//!    bytes — the ones `/proc/<pid>/environ` shows — are overwritten with `*`.
//! 4. The value of `--api-key` is overwritten with `*` in the original argument bytes (what
//!    `/proc/<pid>/cmdline` and `ps` show) after pi has taken a copy of its arguments.
//!
//! Steps 3 and 4 find those bytes through `/proc/self/stat` (`arg_start` … `env_end`); where
//! that cannot be read they do nothing. Everything here is best effort: a failure never stops
//! pi, and the masker (`crate::secrets`) still keeps known keys out of what the model reads.

use std::ffi::OsString;

use crate::tools::env::EnvPolicy;

/// Harden the process and return its arguments (a copy taken before `--api-key` is blanked).
/// Must run first in `main`, before any thread is started.
pub fn harden() -> Vec<OsString> {
    let args: Vec<OsString> = std::env::args_os().collect();
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with integer arguments only.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        drop_loader_variables();
        if let Some(regions) = linux::Regions::of_self() {
            linux::scrub_secret_values(&regions);
            linux::scrub_api_key(&regions);
        }
    }
    args
}

/// Remove every `LD_*` variable from pi's environment.
#[cfg(target_os = "linux")]
fn drop_loader_variables() {
    let names: Vec<OsString> = std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| k.as_encoded_bytes().starts_with(b"LD_"))
        .collect();
    for name in names {
        // SAFETY: called from `harden`, before pi starts any thread.
        unsafe { std::env::remove_var(name) };
    }
}

/// The variable names whose values are secrets.
fn secret_names() -> Vec<OsString> {
    let policy = EnvPolicy::default();
    std::env::vars_os()
        .filter(|(k, v)| !policy.allows(k) && !v.is_empty())
        .map(|(k, _)| k)
        .collect()
}

/// Where an argument list names the value of `--api-key`: the index of the argument holding
/// it and the byte offset of the value within that argument.
pub fn api_key_positions(args: &[&[u8]]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == b"--" {
            break;
        }
        if a == b"--api-key" {
            if i + 1 < args.len() {
                out.push((i + 1, 0));
            }
            i += 2;
            continue;
        }
        if a.starts_with(b"--api-key=") {
            out.push((i, b"--api-key=".len()));
        }
        i += 1;
    }
    out
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{api_key_positions, secret_names};

    /// The bytes of the original argument and environment strings (what `/proc` shows).
    pub struct Regions {
        args: (usize, usize),
        env: (usize, usize),
    }

    impl Regions {
        /// Read the four addresses from `/proc/self/stat` (fields 48–51).
        pub fn of_self() -> Option<Self> {
            let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            // Field 3 (the state) is the first after the command name.
            let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
            let field = |n: usize| -> Option<usize> { fields.get(n - 3)?.parse().ok() };
            let args = (field(48)?, field(49)?);
            let env = (field(50)?, field(51)?);
            let sane = |(a, b): (usize, usize)| a != 0 && a < b && b - a < (64 << 20);
            (sane(args) && sane(env)).then_some(Regions { args, env })
        }
    }

    /// The NUL-separated strings of one region: (start address, length) of each.
    fn strings((start, end): (usize, usize)) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut s = start;
        let mut p = start;
        while p < end {
            // SAFETY: [start, end) is this process's own argument or environment area as the
            // kernel reports it, mapped and readable for the life of the process; nothing in
            // Rust holds a reference into it.
            let b = unsafe { std::ptr::read_volatile(p as *const u8) };
            if b == 0 {
                out.push((s, p - s));
                s = p + 1;
            }
            p += 1;
        }
        if s < end {
            out.push((s, end - s));
        }
        out
    }

    fn bytes_at(addr: usize, len: usize) -> Vec<u8> {
        // SAFETY: see `strings`; (addr, len) lies inside a region it returned.
        (0..len)
            .map(|i| unsafe { std::ptr::read_volatile((addr + i) as *const u8) })
            .collect()
    }

    fn star_out(addr: usize, len: usize) {
        for i in 0..len {
            // SAFETY: see `strings`; the area is writable (the initial stack) and no Rust
            // reference into it exists. Only bytes inside one string are changed, never its
            // terminating NUL.
            unsafe { std::ptr::write_volatile((addr + i) as *mut u8, b'*') };
        }
    }

    pub fn scrub_secret_values(r: &Regions) {
        let names = secret_names();
        if names.is_empty() {
            return;
        }
        for name in &names {
            // Move the live value to the heap first: libc's `environ` then points there, and
            // the original bytes are only what /proc shows.
            if let Some(value) = std::env::var_os(name) {
                // SAFETY: called from `harden`, before pi starts any thread.
                unsafe { std::env::set_var(name, value) };
            }
        }
        for (addr, len) in strings(r.env) {
            let s = bytes_at(addr, len);
            let Some(eq) = s.iter().position(|&b| b == b'=') else {
                continue;
            };
            if names.iter().any(|n| n.as_encoded_bytes() == &s[..eq]) {
                star_out(addr + eq + 1, len - eq - 1);
            }
        }
    }

    pub fn scrub_api_key(r: &Regions) {
        let list = strings(r.args);
        let owned: Vec<Vec<u8>> = list.iter().map(|&(a, l)| bytes_at(a, l)).collect();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for (i, offset) in api_key_positions(&refs) {
            let (addr, len) = list[i];
            star_out(addr + offset, len.saturating_sub(offset));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_api_key_value_in_both_spellings() {
        let args: Vec<&[u8]> = vec![
            b"pi",
            b"--api-key",
            b"sk-1",
            b"-p",
            b"--api-key=sk-2",
            b"--",
            b"--api-key=not-a-flag",
        ];
        assert_eq!(api_key_positions(&args), vec![(2, 0), (4, 10)]);
        assert!(api_key_positions(&[b"pi".as_slice(), b"--api-key"]).is_empty());
    }
}

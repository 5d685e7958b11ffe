//! The sandbox of the model's tools: where `bash`, `write` and `edit` may change files.
//!
//! Three modes (`--sandbox`, or `sandbox = "…"` in config.toml; the flag wins):
//!
//! | mode | writes allowed under |
//! |---|---|
//! | `off` (default) | anywhere the user may write (no sandbox) |
//! | `workspace-write` | the working directory, the temp folder (which holds `bash`'s spill files) |
//! | `read-only` | nowhere |
//!
//! Reading and running programs stay allowed everywhere. Commands `bash` runs also keep
//! write access to the harmless devices a shell needs (`/dev/null`, `/dev/zero`, terminals)
//! and, in `workspace-write`, to `/dev/shm` (shared memory is temp space in all but name).
//!
//! Two mechanisms, one rule:
//!
//! * `write` and `edit` run inside pi, so they check the path themselves before touching the
//!   disk ([`Sandbox::check_write`]): the path is resolved the way the write will resolve it
//!   (symlinks followed, `..` folded), so a link inside the workspace that points outside does
//!   not open a way out. The write itself then goes through descriptors, never by path
//!   ([`beneath`]), so a link swapped in after the check cannot redirect it. This works on
//!   every system.
//! * `bash` runs programs pi cannot inspect, so the kernel enforces the rule, in layers
//!   prepared here ([`Sandbox::confine`] builds a [`Jail`]) and applied to the child only by
//!   [`launch`](crate::tools::launch):
//!   - a user and mount namespace in which everything but the allowed folders is mounted
//!     read-only ([`namespace`]), so metadata changes (chmod, chown, timestamps) are refused
//!     too, where unprivileged user namespaces work (probed once at start-up);
//!   - Landlock ([`landlock`]), which works without namespaces and stays on with them. It
//!     exists on Linux 5.13 and later; pi needs its third ABI (Linux 6.2, which also
//!     governs `truncate`). Where it is missing, [`Fallback`] decides: `refuse` (default)
//!     turns every `bash` call into an error result that says why, `warn` runs commands
//!     unconfined. Either way pi says so once at start-up ([`Sandbox::startup_warning`]);
//!   - no way out through a local server acting for the command: a seccomp filter refuses
//!     unix sockets ([`seccomp`]), Landlock's scopes cover abstract sockets and signals, and
//!     the variables pointing at session servers ([`SESSION_VARIABLES`]) are removed;
//!   - a PID namespace, so nothing the command starts outlives the call or pi.
//!
//!   The header line ([`Sandbox::describe`]) names the layers on: `sandbox workspace-write
//!   (namespaces + Landlock ABI 7)`, or `(Landlock ABI 7)` without namespaces.
//!
//! The user's own `!command`s from the editor are not sandboxed: the rule is about what the
//! model does, and the person at the keyboard can run anything in another terminal anyway.

pub(crate) mod beneath;
#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(not(target_os = "linux"))]
#[path = "unsupported.rs"]
pub(crate) mod landlock;
#[cfg(not(target_os = "linux"))]
pub(crate) use landlock::{namespace, seccomp};
#[cfg(target_os = "linux")]
pub mod namespace;
pub(crate) mod real_location;
#[cfg(target_os = "linux")]
pub(crate) mod seccomp;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use crate::agent::protocol::tool::ToolError;

/// How far the model's tools may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox.
    #[default]
    Off,
    /// Writes only in the working directory and the temp folder.
    WorkspaceWrite,
    /// No writes at all.
    ReadOnly,
}

impl SandboxMode {
    pub(crate) const NAMES: &'static [&'static str] = &["off", "workspace-write", "read-only"];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "off" => Ok(SandboxMode::Off),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "read-only" => Ok(SandboxMode::ReadOnly),
            other => Err(format!(
                "unknown sandbox mode `{other}` (expected {})",
                SandboxMode::NAMES.join(", ")
            )),
        }
    }
}

/// What `bash` does when the sandbox cannot be enforced on this system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// Refuse to run commands (an error result explains why).
    #[default]
    Refuse,
    /// Run commands without the sandbox (pi warns at start-up).
    Warn,
}

/// Whether this system can confine commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// Landlock works, at this ABI version; `namespaces`: commands also get a read-only view
    /// of the file system from a user and mount namespace of their own.
    Landlock { abi: i32, namespaces: bool },
    /// It does not, for this reason.
    Missing(String),
}

/// The sandbox of one session's tools.
#[derive(Clone, Debug)]
pub struct Sandbox {
    mode: SandboxMode,
    fallback: Fallback,
    /// Where `write` and `edit` may write (symlinks resolved); `bash` gets these plus devices.
    roots: Vec<PathBuf>,
    support: Support,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::off()
    }
}

impl Sandbox {
    /// No sandbox: today's behaviour.
    pub fn off() -> Self {
        Sandbox {
            mode: SandboxMode::Off,
            fallback: Fallback::Refuse,
            roots: Vec::new(),
            support: Support::Missing("not needed".into()),
        }
    }

    /// A sandbox in `mode` for a session working in `cwd`, with what this system supports.
    pub fn new(mode: SandboxMode, fallback: Fallback, cwd: &Path) -> Self {
        let roots = match mode {
            SandboxMode::WorkspaceWrite => {
                vec![cwd.to_path_buf(), std::env::temp_dir(), spill_dir()]
            }
            SandboxMode::Off | SandboxMode::ReadOnly => Vec::new(),
        };
        let support = match mode {
            SandboxMode::Off => Support::Missing("not needed".into()),
            _ => match landlock::probe() {
                Support::Landlock { abi, .. } => Support::Landlock {
                    abi,
                    namespaces: namespace::probe().is_ok(),
                },
                missing => missing,
            },
        };
        Sandbox {
            mode,
            fallback,
            roots: Vec::new(),
            support,
        }
        .with_roots(roots)
    }

    /// Replace the folders writes are allowed under (ignored in `read-only` and `off`).
    pub(crate) fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        let mut out: Vec<PathBuf> = Vec::new();
        if self.mode == SandboxMode::WorkspaceWrite {
            for r in roots {
                let real = real_location::real_location(&r);
                if !out.contains(&real) {
                    out.push(real);
                }
            }
        }
        self.roots = out;
        self
    }

    /// Pretend the system supports this (tests use it to stand in for a kernel without
    /// Landlock).
    pub fn with_support(mut self, support: Support) -> Self {
        self.support = support;
        self
    }

    pub(crate) fn mode(&self) -> SandboxMode {
        self.mode
    }

    #[cfg(test)]
    pub(crate) fn fallback(&self) -> Fallback {
        self.fallback
    }

    #[cfg(test)]
    pub(crate) fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn support(&self) -> &Support {
        &self.support
    }

    /// The allowed folders in words.
    fn roots_text(&self) -> String {
        if self.roots.is_empty() {
            return "nowhere".into();
        }
        self.roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One short line for the start-up header and `--verbose`; `None` when off.
    pub(crate) fn describe(&self) -> Option<String> {
        if self.mode == SandboxMode::Off {
            return None;
        }
        let how = match (&self.support, self.fallback) {
            (
                Support::Landlock {
                    abi,
                    namespaces: true,
                },
                _,
            ) => format!("namespaces + Landlock ABI {abi}"),
            (Support::Landlock { abi, .. }, _) => format!("Landlock ABI {abi}"),
            (Support::Missing(_), Fallback::Refuse) => "no Landlock: bash refused".into(),
            (Support::Missing(_), Fallback::Warn) => "no Landlock: bash unconfined".into(),
        };
        Some(format!("sandbox {} ({how})", self.mode))
    }

    /// A sentence for `bash`'s description, so the model knows before its first command.
    pub(crate) fn command_note(&self) -> Option<String> {
        match (self.mode, &self.support, self.fallback) {
            (SandboxMode::Off, _, _) | (_, Support::Missing(_), Fallback::Warn) => None,
            (_, Support::Missing(_), Fallback::Refuse) => Some(format!(
                "The sandbox ({}) cannot be enforced on this system, so commands are refused.",
                self.mode
            )),
            (SandboxMode::ReadOnly, _, _) => Some(
                "Commands run in a read-only sandbox: any write to a file fails with \
                 \"Read-only file system\" or \"Permission denied\"."
                    .into(),
            ),
            (SandboxMode::WorkspaceWrite, _, _) => Some(format!(
                "Commands run in a sandbox: they may write only under {}; a write anywhere \
                 else fails with \"Read-only file system\" or \"Permission denied\". Unix \
                 sockets cannot be opened.",
                self.roots_text()
            )),
        }
    }

    /// What to tell the person once at start-up: the sandbox cannot be enforced for `bash`.
    pub fn startup_warning(&self) -> Option<String> {
        let Support::Missing(why) = &self.support else {
            return None;
        };
        if self.mode == SandboxMode::Off {
            return None;
        }
        let then = match self.fallback {
            Fallback::Refuse => {
                "bash commands will be refused (sandbox_fallback = \"warn\" runs them unconfined)"
            }
            Fallback::Warn => "bash commands run WITHOUT the sandbox (sandbox_fallback = \"warn\")",
        };
        Some(format!(
            "sandbox {}: {why}; {then}. write and edit still keep to the sandbox.",
            self.mode
        ))
    }

    /// Refuse a write by `write` or `edit` to `path` (absolute, `..` folded) that the mode
    /// does not allow.
    pub(crate) fn check_write(&self, path: &Path) -> Result<(), ToolError> {
        if self.mode == SandboxMode::Off {
            return Ok(());
        }
        let real = real_location::real_location(path);
        if self.roots.iter().any(|root| real.starts_with(root)) {
            return Ok(());
        }
        let via = if real != path {
            format!(" (it resolves to {})", real.display())
        } else {
            String::new()
        };
        Err(ToolError::new(match self.mode {
            SandboxMode::ReadOnly => format!(
                "Refused by the sandbox: {}{via} cannot be written because the sandbox mode is \
                 read-only, which allows no writes at all.",
                path.display()
            ),
            _ => format!(
                "Refused by the sandbox: {}{via} is outside the folders the sandbox mode {} \
                 allows writes in: {}.",
                path.display(),
                self.mode,
                self.roots_text()
            ),
        }))
    }

    /// Replace `path`'s contents for `write` and `edit`, after [`Sandbox::check_write`]
    /// allowed it. Sandboxed, the write goes through descriptors of the allowed folder (see
    /// [`beneath`]) and creates missing parent folders itself; off, it is the plain atomic
    /// write (the caller creates the folders).
    pub(crate) fn write_atomic(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        match self.mode {
            SandboxMode::Off => crate::tools::fsutil::write_atomic(path, data),
            _ => beneath::write_atomic(&self.roots, path, data),
        }
    }

    /// Read `path` for `edit`; sandboxed, without following a link swapped in on the way.
    pub(crate) fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self.mode {
            SandboxMode::Off => std::fs::read(path),
            _ => beneath::read(&self.roots, path),
        }
    }

    /// How to start a command in `cwd`: confined (the prepared [`Jail`]), unconfined (`None`:
    /// sandbox off, or missing with the `warn` fallback), or not at all (an error result).
    pub(crate) fn confine(&self, cwd: &Path) -> Result<Option<Jail>, ToolError> {
        if self.mode == SandboxMode::Off {
            return Ok(None);
        }
        let refused = |e: String| {
            ToolError::new(format!(
                "bash: refused: the sandbox ({}) could not be set up for this command: {e}",
                self.mode
            ))
        };
        match &self.support {
            Support::Landlock { abi, namespaces } => {
                let mut writable = self.roots.clone();
                writable.extend(device_paths(self.mode));
                let landlock = landlock::Confinement::prepare(&writable, *abi).map_err(refused)?;
                let namespaces = if *namespaces {
                    let mut dirs = self.roots.clone();
                    if self.mode == SandboxMode::WorkspaceWrite {
                        dirs.push(PathBuf::from("/dev/shm"));
                    }
                    let plan =
                        namespace::Plan::prepare(&dirs, cwd).map_err(|e| refused(e.to_string()))?;
                    Some(plan)
                } else {
                    None
                };
                Ok(Some(Jail {
                    landlock,
                    namespaces,
                    seccomp: seccomp::Filter::no_unix_sockets(),
                }))
            }
            Support::Missing(why) => match self.fallback {
                Fallback::Warn => Ok(None),
                Fallback::Refuse => Err(ToolError::new(format!(
                    "bash: refused: the sandbox mode is {} but it cannot be enforced here ({why}). \
                     Commands are not run unconfined unless `sandbox_fallback = \"warn\"` is set \
                     in config.toml; pi can also be started with `--sandbox off`.",
                    self.mode
                ))),
            },
        }
    }
}

/// Variables that lead a command to a server outside the sandbox acting for it (terminal
/// multiplexers, session buses, key agents, displays): sandboxed commands run without them.
/// (The servers' sockets are out of reach anyway, see [`seccomp`]; this keeps programs from
/// trying.)
pub(crate) const SESSION_VARIABLES: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "KITTY_LISTEN_ON",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "GNOME_KEYRING_CONTROL",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "XAUTHORITY",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "PULSE_SERVER",
];

/// What a sandboxed command starts under, prepared in pi before the fork: Landlock rules, the
/// namespace plan (where namespaces work), the seccomp filter (where pi knows the
/// architecture). [`Jail::restrict_self`] is the child's part.
#[derive(Debug)]
pub(crate) struct Jail {
    pub landlock: landlock::Confinement,
    pub namespaces: Option<namespace::Plan>,
    pub seccomp: Option<seccomp::Filter>,
}

impl Jail {
    /// In the child that execs the command: give up every capability (`drop_caps`, inside the
    /// user namespace, so nothing can undo the read-only mounts), set no-new-privileges, then
    /// Landlock, then seccomp. System calls only.
    pub(crate) fn restrict_self(&self, drop_caps: bool) -> std::io::Result<()> {
        if drop_caps {
            drop_capabilities()?;
        }
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.landlock.restrict()?;
        if let Some(f) = &self.seccomp {
            f.install()?;
        }
        Ok(())
    }
}

/// Capabilities are Linux's; elsewhere there are no namespaces to drop them in.
#[cfg(not(target_os = "linux"))]
fn drop_capabilities() -> std::io::Result<()> {
    Ok(())
}

/// Empty the bounding, ambient and current capability sets of this process, so that even a
/// command that is root in its user namespace has no capability after its exec.
#[cfg(target_os = "linux")]
fn drop_capabilities() -> std::io::Result<()> {
    for cap in 0..64 {
        // SAFETY: integer arguments; EINVAL past the last capability is expected.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    // SAFETY: integer arguments.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: a version-3 header and two data words, as capset(2) expects.
    if unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Where `bash` saves a command's full output when it is too long for the result.
pub(crate) fn spill_dir() -> PathBuf {
    std::env::temp_dir()
}

/// Device files (and, for `workspace-write`, shared memory) commands may write to in a
/// sandbox: writing to them changes no file.
fn device_paths(mode: SandboxMode) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
        "/dev/ptmx",
        "/dev/pts",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if mode == SandboxMode::WorkspaceWrite {
        out.push(PathBuf::from("/dev/shm"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn modes_parse_from_flags_and_config() {
        assert_eq!("off".parse::<SandboxMode>(), Ok(SandboxMode::Off));
        assert_eq!(
            " workspace-write ".parse::<SandboxMode>(),
            Ok(SandboxMode::WorkspaceWrite)
        );
        assert_eq!(
            "read-only".parse::<SandboxMode>(),
            Ok(SandboxMode::ReadOnly)
        );
        let e = "readonly".parse::<SandboxMode>().unwrap_err();
        assert!(
            e.contains("readonly") && e.contains("workspace-write"),
            "{e}"
        );
        #[derive(Deserialize)]
        struct T {
            sandbox: SandboxMode,
            sandbox_fallback: Fallback,
        }
        let t: T = toml::from_str("sandbox = \"read-only\"\nsandbox_fallback = \"warn\"").unwrap();
        assert_eq!(
            (t.sandbox, t.sandbox_fallback),
            (SandboxMode::ReadOnly, Fallback::Warn)
        );
        assert!(toml::from_str::<T>("sandbox = \"on\"\nsandbox_fallback = \"warn\"").is_err());
        assert_eq!(Fallback::default(), Fallback::Refuse);
        assert_eq!(SandboxMode::default(), SandboxMode::Off);
    }

    #[test]
    fn off_allows_everything_and_says_nothing() {
        let s = Sandbox::off();
        assert!(s.check_write(Path::new("/etc/passwd")).is_ok());
        assert!(s.confine(Path::new("/")).unwrap().is_none());
        assert_eq!(s.describe(), None);
        assert_eq!(s.startup_warning(), None);
    }

    #[test]
    fn workspace_write_allows_the_workspace_and_temp_only() {
        let base = temp();
        let ws = base.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let s = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &ws)
            .with_support(Support::Missing("test".into()));
        assert!(s.check_write(&ws.join("a/b.txt")).is_ok());
        assert!(s.check_write(&std::env::temp_dir().join("x.log")).is_ok());
        let e = s.check_write(Path::new("/etc/pi-test")).unwrap_err().0;
        assert!(
            e.contains("workspace-write") && e.contains("/etc/pi-test"),
            "{e}"
        );
        assert!(
            e.contains(&real_location::real_location(&ws).display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn read_only_allows_no_write() {
        let base = temp();
        let s = Sandbox::new(SandboxMode::ReadOnly, Fallback::Refuse, base.path())
            .with_support(Support::Missing("test".into()));
        assert!(s.roots().is_empty());
        let e = s.check_write(&base.path().join("a.txt")).unwrap_err().0;
        assert!(e.contains("read-only"), "{e}");
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_seen_through() {
        let base = temp();
        let ws = base.path().join("ws");
        let outside = base.path().join("outside");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("door")).unwrap();
        std::os::unix::fs::symlink(outside.join("f.txt"), ws.join("f.txt")).unwrap();
        let s = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, &ws)
            .with_support(Support::Missing("test".into()))
            .with_roots(vec![ws.clone()]);
        for p in ["door/new.txt", "door/deeper/new.txt", "f.txt"] {
            let e = s.check_write(&ws.join(p)).unwrap_err().0;
            assert!(e.contains("resolves to"), "{p}: {e}");
        }
        assert!(s.check_write(&ws.join("plain.txt")).is_ok());
    }

    #[test]
    fn missing_landlock_refuses_bash_by_default_and_warns_once() {
        let base = temp();
        let missing = Support::Missing("the kernel has no Landlock".into());
        let s = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, base.path())
            .with_support(missing.clone());
        let e = s.confine(base.path()).err().unwrap().0;
        assert!(e.contains("refused") && e.contains("no Landlock"), "{e}");
        assert!(e.contains("sandbox_fallback"), "{e}");
        let w = s.startup_warning().unwrap();
        assert!(w.contains("refused") && w.contains("no Landlock"), "{w}");
        assert!(s.describe().unwrap().contains("bash refused"));
        assert!(s.command_note().unwrap().contains("refused"));

        let s =
            Sandbox::new(SandboxMode::ReadOnly, Fallback::Warn, base.path()).with_support(missing);
        assert!(
            s.confine(Path::new("/")).unwrap().is_none(),
            "warn runs unconfined"
        );
        assert_eq!(s.command_note(), None);
        assert!(s.startup_warning().unwrap().contains("WITHOUT"));
        // The in-process check still holds.
        assert!(s.check_write(&base.path().join("x")).is_err());
    }

    #[test]
    fn available_landlock_prepares_rules_and_says_so() {
        let base = temp();
        let s = Sandbox::new(SandboxMode::WorkspaceWrite, Fallback::Refuse, base.path());
        match s.support() {
            Support::Landlock { abi, namespaces } => {
                assert!(s.startup_warning().is_none());
                let layers = if *namespaces {
                    format!("namespaces + Landlock ABI {abi}")
                } else {
                    format!("Landlock ABI {abi}")
                };
                assert!(
                    s.describe()
                        .unwrap()
                        .contains(&format!("workspace-write ({layers})"))
                );
                let without = s.clone().with_support(Support::Landlock {
                    abi: *abi,
                    namespaces: false,
                });
                assert!(
                    without
                        .describe()
                        .unwrap()
                        .contains(&format!("workspace-write (Landlock ABI {abi})"))
                );
                assert!(s.confine(Path::new("/")).unwrap().is_some());
            }
            Support::Missing(why) => {
                eprintln!("skipped: Landlock is not available here ({why})");
            }
        }
    }
}

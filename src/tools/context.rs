//! What every tool shares: the session's working directory, path resolution, per-file write
//! locks, the output limits, the sandbox, and the knobs of process handling.
//!
//! Paths from the model are resolved here and nowhere else: a leading `@` (copied from a file
//! mention) is dropped, odd Unicode spaces become plain spaces, `~` and `~/...` expand to the
//! home folder, and relative paths join the working directory. [`ToolContext::resolve_existing`]
//! also tries the spellings macOS uses in file names that models cannot type (decomposed
//! accents, the narrow no-break space before AM/PM in screenshot names, curly apostrophes) when
//! the path as written does not exist.
//!
//! Paths shown back to the model are relative to the working directory when they lie under it,
//! absolute otherwise, so the model can pass them straight to the next call.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use unicode_normalization::UnicodeNormalization;

use super::env::EnvPolicy;
use super::sandbox::Sandbox;
use super::truncate::ToolLimits;
use crate::agent::protocol::panic::contain_sync;
use crate::agent::protocol::tool::ToolError;

/// How long a killed command's process group gets between SIGTERM and SIGKILL.
pub(crate) const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// The least time between two progress updates of a running command.
pub(crate) const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// The environment the tools of one session run in.
#[derive(Debug)]
pub struct ToolContext {
    cwd: PathBuf,
    kill_grace: Duration,
    progress_interval: Duration,
    limits: ToolLimits,
    /// The environment commands run with (pi's own, secrets removed).
    env: Vec<(OsString, OsString)>,
    /// Where `bash`, `write` and `edit` may write (off unless asked for).
    sandbox: Arc<Sandbox>,
    /// pi's own files holding keys, which `read`, `grep` and `find` refuse.
    protected: Arc<ProtectedFiles>,
    /// Run `bash`'s commands in a PID namespace where the system allows it (see
    /// [`super::launch`]); off for the user's own `!commands`.
    contain_processes: bool,
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl ToolContext {
    /// A context for `cwd`; a relative `cwd` is taken against the process's current directory.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        let cwd = if cwd.is_absolute() {
            cwd
        } else {
            std::env::current_dir().map(|d| d.join(&cwd)).unwrap_or(cwd)
        };
        ToolContext {
            cwd: lexical_normalize(&cwd),
            kill_grace: DEFAULT_KILL_GRACE,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            limits: ToolLimits::default(),
            env: EnvPolicy::default().filter(std::env::vars_os()),
            sandbox: Arc::new(Sandbox::off()),
            protected: Arc::new(ProtectedFiles::default()),
            contain_processes: true,
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// Run commands with these variables (see [`super::env::EnvPolicy`]).
    pub(crate) fn with_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = env;
        self
    }

    /// The environment commands run with.
    pub(crate) fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// Keep `bash`, `write` and `edit` to this sandbox.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Arc::new(sandbox);
        self
    }

    /// Refuse to show these files to the model (pi's `auth.json`, config files with keys).
    pub(crate) fn with_protected(mut self, files: Vec<PathBuf>) -> Self {
        self.protected = Arc::new(ProtectedFiles::new(files));
        self
    }

    /// pi's own key files (for walks to skip).
    pub(crate) fn protected(&self) -> &Arc<ProtectedFiles> {
        &self.protected
    }

    /// Whether `path` is one of pi's own key files.
    pub(crate) fn is_protected(&self, path: &Path) -> bool {
        self.protected.contains(path)
    }

    /// An error for a read of one of pi's own key files.
    pub(crate) fn refuse_protected(&self, tool: &str, path: &Path) -> Result<(), ToolError> {
        if !self.is_protected(path) {
            return Ok(());
        }
        Err(ToolError::new(format!(
            "{tool}: refused: {} is one of pi's own files holding API keys. pi keeps keys away \
             from the model; nothing in it is needed for the task.",
            self.display(path)
        )))
    }

    /// Whether `bash` puts commands in a PID namespace of their own where it can (the
    /// model's commands; the user's own `!commands` opt out to see the whole system).
    pub fn with_process_namespace(mut self, contain: bool) -> Self {
        self.contain_processes = contain;
        self
    }

    pub(crate) fn contains_processes(&self) -> bool {
        self.contain_processes
    }

    /// The sandbox the tools keep to.
    pub(crate) fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// Change the SIGTERM → SIGKILL grace of `bash`.
    pub fn with_kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Change the least time between progress updates of `bash`.
    pub fn with_progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }

    /// Change the output limits (from config).
    pub(crate) fn with_limits(mut self, limits: ToolLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The output limits every tool of this session works with.
    pub(crate) fn limits(&self) -> &ToolLimits {
        &self.limits
    }

    pub(crate) fn cwd(&self) -> &Path {
        &self.cwd
    }

    pub(crate) fn kill_grace(&self) -> Duration {
        self.kill_grace
    }

    pub(crate) fn progress_interval(&self) -> Duration {
        self.progress_interval
    }

    /// The absolute path the model meant by `raw`.
    pub(crate) fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let cleaned = clean_model_path(raw);
        if cleaned.is_empty() {
            return Err(ToolError::new("The path is empty."));
        }
        let expanded = expand_home(&cleaned)?;
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            self.cwd.join(expanded)
        };
        Ok(lexical_normalize(&joined))
    }

    /// [`resolve`](Self::resolve), then, if nothing exists there, the first macOS spelling
    /// variant that does. Returns the path as resolved when no variant exists either.
    pub(crate) fn resolve_existing(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let path = self.resolve(raw)?;
        if path.symlink_metadata().is_ok() {
            return Ok(path);
        }
        let text = path.to_string_lossy();
        for variant in macos_variants(&text) {
            let candidate = PathBuf::from(variant);
            if candidate.symlink_metadata().is_ok() {
                return Ok(candidate);
            }
        }
        Ok(path)
    }

    /// How a path is shown to the model: relative to the working directory when under it.
    pub(crate) fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.cwd) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Wait for the lock that serialises writes to the file `path` points at (through
    /// symlinks); give up on `cancel`.
    pub(crate) async fn lock_file(
        &self,
        path: &Path,
        cancel: &CancellationToken,
    ) -> Result<tokio::sync::OwnedMutexGuard<()>, ToolError> {
        let lock = self.file_lock(&super::fsutil::write_target(path));
        tokio::select! {
            guard = lock.lock_owned() => Ok(guard),
            _ = cancel.cancelled() => Err(ToolError::new(ABORTED_TEXT)),
        }
    }

    /// The lock that serialises writes to one file (across tools and batches).
    fn file_lock(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = crate::sync::lock(&self.locks);
        // Drop locks nobody holds so the map does not grow with every file ever written.
        if locks.len() > 256 {
            locks.retain(|_, l| Arc::strong_count(l) > 1);
        }
        locks.entry(path.to_path_buf()).or_default().clone()
    }
}

/// pi's own files holding keys: known by path, through symlinks, and as other hard links to
/// the same file.
#[derive(Debug, Default)]
pub(crate) struct ProtectedFiles {
    paths: Vec<PathBuf>,
    /// Their (device, inode) pairs.
    ids: Vec<(u64, u64)>,
    /// Their file names, a cheap first test for walks.
    names: Vec<OsString>,
}

impl ProtectedFiles {
    pub(crate) fn new(paths: Vec<PathBuf>) -> Self {
        ProtectedFiles {
            ids: paths.iter().filter_map(|f| file_id(f)).collect(),
            names: paths
                .iter()
                .filter_map(|p| p.file_name().map(std::ffi::OsStr::to_os_string))
                .collect(),
            paths,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether `path` names one of the files.
    pub(crate) fn contains(&self, path: &Path) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        if file_id(path).is_some_and(|id| self.ids.contains(&id)) {
            return true;
        }
        let real = real_path(path);
        self.paths.iter().any(|p| real_path(p) == real)
    }

    /// [`contains`](Self::contains) for a walk: the costly checks only for entries that are
    /// files of a protected name or have other hard links.
    pub(crate) fn skips(&self, path: &Path, meta: Option<&std::fs::Metadata>) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        let named = path
            .file_name()
            .is_some_and(|n| self.names.iter().any(|p| p == n));
        #[cfg(unix)]
        let linked = meta.is_some_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_file() && m.nlink() > 1
        });
        #[cfg(not(unix))]
        let linked = meta.is_some();
        (named || linked) && self.contains(path)
    }
}

/// The (device, inode) of the file `path` names, through symlinks.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// `path` with symlinks resolved as far as it exists (a file not yet created keeps its name
/// under its resolved folder).
fn real_path(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map(|d| d.join(name))
            .unwrap_or_else(|_| lexical_normalize(path)),
        _ => lexical_normalize(path),
    }
}

/// Characters models put in paths by accident, removed or made plain.
fn clean_model_path(raw: &str) -> String {
    let trimmed = raw.trim();
    let trimmed = trimmed.strip_prefix('@').unwrap_or(trimmed);
    trimmed
        .chars()
        .map(|c| if is_odd_space(c) { ' ' } else { c })
        .collect()
}

/// No-break, figure, thin and other typographic spaces.
pub(crate) fn is_odd_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// `~` and `~/…` from the home folder (see `crate::paths`); an error when none is known.
fn expand_home(path: &str) -> Result<PathBuf, ToolError> {
    if crate::paths::home_relative(path).is_none() {
        return Ok(PathBuf::from(path));
    }
    let home = crate::paths::home()
        .ok_or_else(|| ToolError::new("Cannot expand `~`: no home folder is known."))?;
    Ok(crate::paths::expand_home_in(path, Some(&home)))
}

/// Remove `.` and fold `..` without touching the file system (symlinks stay as named).
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Spellings a macOS file name may have that differ from what the model wrote.
fn macos_variants(path: &str) -> Vec<String> {
    let nbsp_ampm = path
        .replace(" AM.", "\u{202F}AM.")
        .replace(" PM.", "\u{202F}PM.");
    let nfd: String = path.nfd().collect();
    let curly = path.replace('\'', "\u{2019}");
    let mut out = Vec::new();
    for v in [
        nbsp_ampm.clone(),
        nfd.clone(),
        curly,
        nbsp_ampm.nfd().collect(),
    ] {
        if v != path && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Run blocking work off the async threads; give up (and tell the work to stop) on `cancel`.
pub(crate) async fn run_blocking<T, F>(cancel: &CancellationToken, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(CancellationToken) -> Result<T, ToolError> + Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED_TEXT));
    }
    let token = cancel.child_token();
    let inner = token.clone();
    // A panic in the work is reported as the tool's error, with its message.
    let handle = tokio::task::spawn_blocking(move || {
        contain_sync(|| work(inner))
            .unwrap_or_else(|panic| Err(ToolError::new(format!("The tool crashed: {panic}"))))
    });
    tokio::select! {
        joined = handle => match joined {
            Ok(result) => result,
            Err(e) => Err(ToolError::new(format!("The tool failed unexpectedly: {e}"))),
        },
        _ = cancel.cancelled() => {
            token.cancel();
            Err(ToolError::new(ABORTED_TEXT))
        }
    }
}

/// What an aborted tool (other than bash) answers.
pub(crate) const ABORTED_TEXT: &str = "Aborted before the tool finished.";

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_blocking_work_becomes_the_tools_error() {
        let r: Result<(), ToolError> =
            run_blocking(&CancellationToken::new(), |_| panic!("disk on fire")).await;
        let e = r.unwrap_err();
        assert!(e.0.contains("disk on fire"), "{e}");
    }

    #[test]
    fn relative_paths_join_the_working_directory() {
        let ctx = ToolContext::new("/work/project");
        assert_eq!(
            ctx.resolve("src/main.rs").unwrap(),
            PathBuf::from("/work/project/src/main.rs")
        );
        assert_eq!(
            ctx.resolve("./a/../b").unwrap(),
            PathBuf::from("/work/project/b")
        );
        assert_eq!(
            ctx.resolve("/etc/hosts").unwrap(),
            PathBuf::from("/etc/hosts")
        );
        assert_eq!(
            ctx.resolve("@src/lib.rs").unwrap(),
            PathBuf::from("/work/project/src/lib.rs")
        );
        assert_eq!(
            ctx.resolve("a\u{00A0}b").unwrap(),
            PathBuf::from("/work/project/a b")
        );
        assert!(ctx.resolve("  ").is_err());
    }

    #[test]
    fn tilde_expands_to_home() {
        let ctx = ToolContext::new("/x");
        let home = std::env::var("HOME").unwrap();
        assert_eq!(ctx.resolve("~").unwrap(), PathBuf::from(&home));
        assert_eq!(
            ctx.resolve("~/notes.txt").unwrap(),
            PathBuf::from(&home).join("notes.txt")
        );
        // `~user` is not expanded: it is an ordinary relative name.
        assert_eq!(ctx.resolve("~bob").unwrap(), PathBuf::from("/x/~bob"));
    }

    #[test]
    fn display_is_relative_under_the_working_directory() {
        let ctx = ToolContext::new("/work/project");
        assert_eq!(ctx.display(Path::new("/work/project/src/a.rs")), "src/a.rs");
        assert_eq!(ctx.display(Path::new("/work/project")), ".");
        assert_eq!(ctx.display(Path::new("/etc/hosts")), "/etc/hosts");
    }

    #[test]
    fn macos_variants_cover_screenshot_names() {
        let v = macos_variants("/d/Screenshot 2024 at 10.00.00 AM.png");
        assert!(v.iter().any(|s| s.contains("\u{202F}AM.png")));
        let v = macos_variants("/d/it's.txt");
        assert!(v.iter().any(|s| s.contains('\u{2019}')));
        let v = macos_variants("/d/café.txt");
        assert!(v.iter().any(|s| s.contains("e\u{301}")));
    }
}

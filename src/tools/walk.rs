//! The directory walk `grep` and `find` share: ripgrep's `ignore` crate, configured the way
//! `rg --hidden` and `fd --hidden` behave, run on all cores.
//!
//! Hidden files are included; `.gitignore` (also outside a git repository, and in parent
//! folders), `.ignore`, `.git/info/exclude` and the global git excludes are honoured; `.git`
//! folders themselves are never entered; symlinks are not followed. The walk is parallel, so
//! the order entries arrive in varies; callers sort what they keep.

use std::path::Path;
use std::sync::Arc;

use ignore::overrides::Override;
use ignore::{WalkBuilder, WalkParallel};

use super::context::ProtectedFiles;

/// Threads for a walk: one per core, at most 12 (as ripgrep).
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism()
        .map(std::num::NonZeroUsize::get)
        .unwrap_or(2)
        .min(12)
}

/// A walk of `root` with the shared rules (hidden files in, ignore files honoured, symlinks
/// not followed); the caller adds its filter (`.git` is not left out here).
pub(crate) fn builder(root: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .parents(true)
        .require_git(false)
        .follow_links(false);
    b
}

/// A parallel walk of `root` with the shared rules and an optional file-name override.
pub fn parallel(root: &Path, overrides: Option<Override>) -> WalkParallel {
    parallel_skipping(root, overrides, None)
}

/// [`parallel`], never yielding pi's own key files (`skip`).
pub(crate) fn parallel_skipping(
    root: &Path,
    overrides: Option<Override>,
    skip: Option<Arc<ProtectedFiles>>,
) -> WalkParallel {
    let mut b = builder(root);
    b.threads(threads()).filter_entry(move |e| {
        e.file_name() != ".git"
            && !skip
                .as_ref()
                .is_some_and(|s| s.skips(e.path(), e.metadata().ok().as_ref()))
    });
    if let Some(o) = overrides {
        b.overrides(o);
    }
    b.build_parallel()
}

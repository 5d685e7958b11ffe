//! Where a write to a path really lands, for the sandbox's in-process check.
//!
//! The tools write through symlinks (see [`write_target`]), so the check has to look where
//! they would: the final link chain is followed, then the deepest folder that exists is
//! resolved by the kernel (`canonicalize`: every symlink on the way, `..` after a link taken
//! the kernel's way), and the parts that do not exist yet are added back with `..` folded, as
//! creating them would. What comes out has no symlink left in it, so comparing it with the
//! (equally resolved) allowed roots cannot be fooled by a link inside the workspace that
//! points outside it.

use std::path::{Component, Path, PathBuf};

use crate::tools::fsutil::write_target;

/// The symlink-free absolute path a write to `path` (absolute) would change.
pub(crate) fn real_location(path: &Path) -> PathBuf {
    let target = write_target(path);
    let mut existing = target.as_path();
    let mut missing: Vec<Component<'_>> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in missing.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                missing.push(last);
                existing = parent;
            }
            // Nothing on the way exists (not even `/`): keep the path as given.
            _ => return target,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_links_and_keeps_the_missing_tail() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(
            real_location(&base.join("link/new/file.txt")),
            base.join("real/new/file.txt")
        );
        // A dangling link: the write would create its target.
        std::os::unix::fs::symlink(base.join("real/target.txt"), base.join("dangling")).unwrap();
        assert_eq!(
            real_location(&base.join("dangling")),
            base.join("real/target.txt")
        );
        // A relative link climbing out.
        std::os::unix::fs::symlink("../../etc/hosts-copy", base.join("real/up")).unwrap();
        let up = real_location(&base.join("real/up"));
        assert!(!up.starts_with(&base), "{}", up.display());
        assert_eq!(real_location(Path::new("/")), PathBuf::from("/"));
    }
}

//! Files and images the person adds to a prompt.
//!
//! Three ways in, one way out. `pi @notes.txt "summarize"` names files on the command line
//! ([`args`]); a prompt typed in the editor names them as `@path` ([`mentions`]); a pasted or
//! dropped image path attaches the image ([`dropped`]). Whatever the way, a file is read by
//! [`load`] (text up to [`load::TEXT_LIMIT`], or a PNG, JPEG, GIF or WebP image recognised by
//! its first bytes) and the prompt becomes one user message by [`message`]: each text file
//! inlined as `<file name="path">…</file>`, each image as an image block after its own
//! `<file name="path"></file>` line, as the Node.js `pi` writes them. A model that takes no
//! images gets the text alone, and the caller is told which images were left out.
//!
//! Nothing here knows about terminals or the agent loop: the front ends decide when to read
//! (print mode before anything is sent, the interactive UI through the host, off its own task).

pub(crate) mod args;
pub(crate) mod dropped;
pub(crate) mod load;
pub(crate) mod mentions;
pub(crate) mod message;

use std::path::{Path, PathBuf};

#[cfg(test)]
pub(crate) use load::Attachment;
pub(crate) use load::load;
pub(crate) use message::{build, shown_text};

/// A file to attach: the name the person used for it (shown, and given to the model), and
/// where it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileRef {
    pub name: String,
    pub path: PathBuf,
    /// Known to be an image (sniffed when it was added).
    #[serde(default)]
    pub image: bool,
}

impl FileRef {
    /// How it is shown before it is sent: `[image: shot.png]` (the file's name),
    /// `[file: src/main.rs]` (the path as given).
    pub(crate) fn chip(&self) -> String {
        if self.image {
            format!("[image: {}]", base_name(&self.name))
        } else {
            format!("[file: {}]", self.name)
        }
    }
}

/// The last part of a path (`/tmp/shot.png` → `shot.png`).
pub(crate) fn base_name(name: &str) -> &str {
    name.rsplit('/').find(|p| !p.is_empty()).unwrap_or(name)
}

/// `raw` as a path: `~` and `~/…` from the home folder, relative paths from `cwd`.
pub(crate) fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let expanded = crate::paths::expand_home(raw);
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

//! Checkpoints: what pi records to put back every file the agent changed, and putting it
//! back.
//!
//! [`tool`] wraps the tools that change files; [`tracker`] finds their changes (saving
//! contents in [`store`]); [`record`] is the shape saved in the session; [`rewind`] plans and
//! applies a restore between two points of the session tree.

pub mod cleanup;
pub mod record;
pub mod rewind;
pub mod scan;
pub mod store;
pub mod tool;
pub mod tracker;

pub use tracker::{Limits, Tracker};

use std::path::{Path, PathBuf};

/// Where the checkpoints of the sessions in `sessions_dir` keep their contents: beside the
/// sessions, never among them (`<agent dir>/checkpoints/<the sessions folder's name>`), so
/// whatever lists session folders — this pi, the Node.js pi — sees only sessions there.
pub fn folder_for(sessions_dir: &Path, agent_dir: &Path) -> Option<PathBuf> {
    Some(
        agent_dir
            .join("checkpoints")
            .join(sessions_dir.file_name()?),
    )
}

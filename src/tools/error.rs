//! Why a session's tools could not be set up: a name that is no tool, a bad pattern for the
//! environment the tools' commands see. The texts are what the person reads.

use thiserror::Error;

use super::ALL_TOOLS;

/// Why the tools for a session were refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ToolSetupError {
    #[error("Unknown tool \"{0}\". Available tools: {list}, web_fetch, task.", list = ALL_TOOLS.join(", "))]
    UnknownTool(String),
    /// A `tools.env` include or exclude pattern that is not a glob.
    #[error("tools.env: bad pattern `{pattern}`: {reason}")]
    BadEnvPattern { pattern: String, reason: String },
}

//! Why the configuration could not be loaded: a file that cannot be read, TOML or JSON that
//! does not parse (named by file, line and column), values of the wrong type. The texts are
//! what the person reads.

use std::path::PathBuf;

use thiserror::Error;

/// Why `config.toml` or a Node.js pi settings file was refused.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{}: cannot read: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    /// TOML that does not parse, or a value of the wrong type, in one file.
    #[error("{}:{line}:{column}: {message} (in `{snippet}`)", file.display())]
    Toml {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
        /// The offending line, trimmed.
        snippet: String,
    },
    #[error("{}:{line}:{column}: not valid JSON ({message})", file.display())]
    Json {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The merged settings do not make a valid configuration.
    #[error("config: {0}")]
    Invalid(String),
}

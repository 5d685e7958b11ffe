//! The coding tools the model works with: `read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`.
//!
//! Each tool is a small module implementing [`AgentTool`]; the loop validates arguments against
//! its JSON schema, schedules it by its declared concurrency, and coerces what it returns. Names,
//! parameters and limits follow what models are trained on (product surface §4.1); the wording
//! of descriptions and messages is ours.
//!
//! | tool | concurrency | steering interrupts it |
//! |---|---|---|
//! | `read`, `grep`, `find`, `ls` | shared | yes |
//! | `write`, `edit` | exclusive | no |
//! | `bash` | exclusive | no (only abort or its timeout stop it) |
//!
//! Every tool observes the abort token. Shared helpers: [`context`] (working directory, path
//! resolution, per-file write locks), [`truncate`] (the 2,000-line / 50 KB limits), [`fsutil`]
//! (atomic writes, content sniffing), [`walk`] (the ignore-aware parallel walk), [`process`]
//! (process groups), [`fuzzy`] and [`diff`] (for `edit`).
//!
//! [`build`] turns a list of names (what `--tools a,b,c` gives; empty for `--no-tools`) into the
//! tools for a session; [`DEFAULT_TOOLS`] is the set used when no list is given.

pub mod args;
pub mod bash;
pub mod context;
pub mod diff;
pub mod edit;
pub mod fsutil;
pub mod fuzzy;
pub mod process;
pub mod read;
pub mod truncate;
pub mod walk;
pub mod write;

pub use context::ToolContext;

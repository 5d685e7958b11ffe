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
//! resolution, per-file write locks), [`truncate`] (the 2,000-line / 50 KB limits and
//! [`ToolLimits`], which `config.toml` can change), [`fsutil`]
//! (atomic writes, content sniffing), [`walk`] (the ignore-aware parallel walk), [`process`]
//! (process groups), [`fuzzy`] and [`diff`] (for `edit`), [`sandbox`] (where `bash`, `write`
//! and `edit` may write: `--sandbox`).
//!
//! [`build`] turns a list of names (what `--tools a,b,c` gives; empty for `--no-tools`) into the
//! tools for a session; [`DEFAULT_TOOLS`] is the set used when no list is given.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::protocol::tool::AgentTool;

pub(crate) mod args;
pub(crate) mod bash;
pub mod claude_names;
pub mod context;
pub(crate) mod diff;
pub(crate) mod edit;
pub(crate) mod env;
pub(crate) mod error;
pub(crate) mod find;
pub(crate) mod fsutil;
pub(crate) mod fuzzy;
pub mod grep;
pub(crate) mod guard;
pub(crate) mod info;
pub(crate) mod launch;
pub(crate) mod ls;
pub(crate) mod preview;
pub(crate) mod process;
pub(crate) mod read;
pub mod sandbox;
pub mod todo;
pub mod truncate;
pub(crate) mod walk;
pub mod web_fetch;
pub(crate) mod write;

pub use context::ToolContext;
pub(crate) use error::ToolSetupError;
pub use truncate::ToolLimits;

/// The tools a session gets when none are named.
pub const DEFAULT_TOOLS: &[&str] = &["read", "bash", "edit", "write"];

/// Every tool name [`build`] knows.
pub const ALL_TOOLS: &[&str] = &[
    "read", "bash", "edit", "write", "grep", "find", "ls", "todo",
];

/// The tools named in `names`, in that order (duplicates dropped), working in `cwd`.
pub fn build(
    names: &[&str],
    cwd: impl Into<PathBuf>,
) -> Result<Vec<Arc<dyn AgentTool>>, ToolSetupError> {
    build_with(names, Arc::new(ToolContext::new(cwd)))
}

/// [`build`] with the output limits from config instead of the defaults.
pub fn build_with_limits(
    names: &[&str],
    cwd: impl Into<PathBuf>,
    limits: ToolLimits,
) -> Result<Vec<Arc<dyn AgentTool>>, ToolSetupError> {
    build_with(names, Arc::new(ToolContext::new(cwd).with_limits(limits)))
}

/// [`build`] with a prepared context (to share it, or to change its settings).
pub fn build_with(
    names: &[&str],
    ctx: Arc<ToolContext>,
) -> Result<Vec<Arc<dyn AgentTool>>, ToolSetupError> {
    let mut tools: Vec<Arc<dyn AgentTool>> = Vec::with_capacity(names.len());
    let mut seen: Vec<&str> = Vec::new();
    for &raw in names {
        let name = raw.trim();
        if name.is_empty() || seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let ctx = ctx.clone();
        let tool: Arc<dyn AgentTool> = match name {
            "read" => Arc::new(read::ReadTool::new(ctx)),
            "write" => Arc::new(write::WriteTool::new(ctx)),
            "edit" => Arc::new(edit::EditTool::new(ctx)),
            "bash" => Arc::new(bash::BashTool::new(ctx)),
            "grep" => Arc::new(grep::GrepTool::new(ctx)),
            "find" => Arc::new(find::FindTool::new(ctx)),
            "ls" => Arc::new(ls::LsTool::new(ctx)),
            "todo" => Arc::new(todo::TodoTool::new()),
            other => return Err(ToolSetupError::UnknownTool(other.to_string())),
        };
        tools.push(tool);
    }
    Ok(tools)
}

/// Split a `--tools` value (`read,grep, ls`) into names, checking each one.
pub(crate) fn parse_tool_list(list: &str) -> Result<Vec<String>, ToolSetupError> {
    let names: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(bad) = names.iter().find(|n| !ALL_TOOLS.contains(&n.as_str())) {
        return Err(ToolSetupError::UnknownTool(bad.clone()));
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_default_and_full_sets() {
        let tools = build(DEFAULT_TOOLS, "/tmp").unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, DEFAULT_TOOLS);
        let tools = build(ALL_TOOLS, "/tmp").unwrap();
        assert_eq!(tools.len(), 8);
        assert!(build(&[], "/tmp").unwrap().is_empty());
        assert_eq!(build(&["ls", "ls", " read "], "/tmp").unwrap().len(), 2);
    }

    #[test]
    fn unknown_names_are_refused_clearly() {
        let err = build(&["read", "browse"], "/tmp")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("\"browse\""), "{err}");
        assert!(
            err.contains("read, bash, edit, write, grep, find, ls"),
            "{err}"
        );
        assert_eq!(
            parse_tool_list("read, grep,,ls").unwrap(),
            ["read", "grep", "ls"]
        );
        assert!(parse_tool_list("read,nope").is_err());
        assert!(parse_tool_list("").unwrap().is_empty());
    }
}

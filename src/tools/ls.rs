//! `ls`: one folder's entries.
//!
//! Every entry is listed, dotfiles included, sorted alphabetically without regard to case,
//! folders (and symlinks to folders) marked with a trailing `/`. At most `limit` entries
//! ([`super::truncate::LS_LIMIT`] by default, or the configured `ls_limit`) and 50 KB (or the configured
//! `max_bytes`) are returned, with a notice when more exist.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::context::{ABORTED_TEXT, ToolContext, run_blocking};
use super::fsutil::describe_io_error;
use super::info::{ToolInfo, tool_info_accessors};
use super::truncate::{ToolLimits, append_notices, limit_size, truncate_head};
use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};

fn description(limits: &ToolLimits) -> String {
    format!(
        "List a folder: every entry including dotfiles, sorted alphabetically, folders ending \
         in `/`. Lists the working directory when `path` is not given. Returns at most `limit` \
         entries (default {}).",
        limits.ls_limit
    )
}

/// The names in `dir`, sorted, folders with a trailing `/`.
pub(crate) fn list(dir: &Path, cancel: &CancellationToken) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if cancel.is_cancelled() {
            return Err(std::io::Error::other(ABORTED_TEXT));
        }
        let Ok(entry) = entry else { continue };
        let mut name = entry.file_name().to_string_lossy().into_owned();
        // Follow symlinks to mark links to folders; a broken link is listed as a file.
        let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        if is_dir {
            name.push('/');
        }
        names.push(name);
    }
    names.sort_by_cached_key(|n| (n.to_lowercase(), n.clone()));
    Ok(names)
}

pub(crate) struct LsTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl LsTool {
    pub(crate) fn new(ctx: Arc<ToolContext>) -> Self {
        let default_limit = ctx.limits().ls_limit;
        LsTool {
            info: ToolInfo::new(
                "ls",
                description(ctx.limits()),
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Folder to list (default: the working directory)"},
                        "limit": {"type": "integer", "description": format!("Most entries to return (default {default_limit})")}
                    }
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for LsTool {
    tool_info_accessors!();

    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(true)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("ls", &call.args)?;
        let raw = args.opt_str("path")?.unwrap_or(".").to_string();
        let limit = args.limit("limit", self.ctx.limits().ls_limit)?;
        let max_bytes = self.ctx.limits().max_bytes;
        let dir = self.ctx.resolve_existing(&raw)?;
        run_blocking(&call.cancel, move |cancel| {
            match std::fs::metadata(&dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ToolError::new(format!("Path not found: {raw}")));
                }
                Err(e) => {
                    return Err(ToolError::new(format!(
                        "Cannot list {raw}: {}",
                        describe_io_error(&e)
                    )));
                }
                Ok(m) if !m.is_dir() => {
                    return Err(ToolError::new(format!(
                        "{raw} is a file, not a folder. Use read to see its contents."
                    )));
                }
                Ok(_) => {}
            }
            let names = list(&dir, &cancel).map_err(|e| {
                ToolError::new(format!("Cannot list {raw}: {}", describe_io_error(&e)))
            })?;
            if names.is_empty() {
                return Ok(ToolOutput::text(format!("({raw} is empty.)"))
                    .with_details(json!({"entries": 0})));
            }
            let total = names.len();
            let shown = &names[..total.min(limit)];
            let cut = truncate_head(&shown.join("\n"), usize::MAX, max_bytes);
            let mut text = cut.content.clone();
            let mut notes = Vec::new();
            if total > limit {
                notes.push(format!(
                    "Showing {limit} of {total} entries. Pass limit={total} to see all."
                ));
            }
            if cut.truncated() {
                notes.push(format!(
                    "Output cut at {} after {} entries.",
                    limit_size(max_bytes),
                    cut.output_lines
                ));
            }
            append_notices(&mut text, &notes);
            Ok(ToolOutput::text(text).with_details(json!({
                "entries": total,
                "shown": shown.len().min(cut.output_lines),
                "limitReached": total > limit,
            })))
        })
        .await
    }
}

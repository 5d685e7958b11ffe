//! `find`: file and folder names matching a glob.
//!
//! The walk is the one `grep` uses ([`walk`](super::walk): hidden files included, `.gitignore`
//! honoured, `.git` skipped). A pattern without `/` is matched against each entry's name
//! (`*.rs`); a pattern with `/` against its path relative to the search folder (`src/**/*.rs`),
//! where `*` stays within one folder and `**` crosses folders. As with `fd`, a pattern in lower
//! case matches names in any case; one with a capital letter matches case exactly. Results are
//! sorted, relative to
//! the working directory, folders marked with a trailing `/`. The walk stops once it has one
//! result more than the limit; as with `grep`, which results were kept is then not certain.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::context::{ABORTED_TEXT, ProtectedFiles, ToolContext, run_blocking};
use super::info::{ToolInfo, tool_info_accessors};
use super::truncate::{ToolLimits, append_notices, limit_size, truncate_head};
use super::walk;
use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};

fn description(limits: &ToolLimits) -> String {
    format!(
        "Find files and folders whose names match a glob. A pattern with `/` is matched \
         against the path below the search folder; one in lower case ignores case. Searches \
         the working directory or `path`, including hidden files, leaving out what .gitignore \
         excludes. Returns paths relative to the working directory, one per line, folders \
         ending in `/`, at most `limit` (default {}).",
        limits.find_limit
    )
}

/// One entry found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Found {
    pub path: PathBuf,
    pub is_dir: bool,
}

/// [`find`], leaving out pi's own key files.
pub(crate) fn find_skipping(
    root: &Path,
    pattern: &str,
    limit: usize,
    cancel: &CancellationToken,
    skip: Option<Arc<ProtectedFiles>>,
) -> Result<(Vec<Found>, bool), ToolError> {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let full_path = pattern.contains('/');
    // Smart case, as fd: a pattern without capitals matches names in any case.
    let any_case = !pattern.chars().any(char::is_uppercase);
    let glob: GlobMatcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(any_case)
        .build()
        .map_err(|e| ToolError::new(format!("The glob `{pattern}` is not valid: {e}")))?
        .compile_matcher();
    let found = Mutex::new(Vec::new());
    let count = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    walk::parallel_skipping(root, None, skip).run(|| {
        let (glob, found, count, stop) = (&glob, &found, &count, &stop);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let hit = if full_path {
                entry
                    .path()
                    .strip_prefix(root)
                    .is_ok_and(|rel| glob.is_match(rel))
            } else {
                glob.is_match(Path::new(entry.file_name()))
            };
            if hit {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let item = Found {
                    path: entry.into_path(),
                    is_dir,
                };
                crate::sync::lock(found).push(item);
                if count.fetch_add(1, Ordering::Relaxed) + 1 > limit {
                    stop.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED_TEXT));
    }
    let mut found = crate::sync::into_inner(found);
    found.sort_unstable();
    let more = found.len() > limit;
    found.truncate(limit);
    Ok((found, more))
}

pub(crate) struct FindTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl FindTool {
    pub(crate) fn new(ctx: Arc<ToolContext>) -> Self {
        let default_limit = ctx.limits().find_limit;
        FindTool {
            info: ToolInfo::new(
                "find",
                description(ctx.limits()),
                json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "description": "Glob to match, e.g. *.rs or src/**/*.json"},
                        "path": {"type": "string", "description": "Folder to search (default: the working directory)"},
                        "limit": {"type": "integer", "description": format!("Most results to return (default {default_limit})")}
                    },
                    "required": ["pattern"]
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for FindTool {
    tool_info_accessors!();

    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(true)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("find", &call.args)?;
        let pattern = args.required_str("pattern")?.trim().to_string();
        if pattern.is_empty() {
            return Err(ToolError::new("find: the pattern is empty."));
        }
        let raw_path = args.opt_str("path")?.unwrap_or(".").to_string();
        let limit = args.limit("limit", self.ctx.limits().find_limit)?;
        let root = self.ctx.resolve_existing(&raw_path)?;
        let ctx = self.ctx.clone();
        run_blocking(&call.cancel, move |cancel| {
            match std::fs::metadata(&root) {
                Err(_) => return Err(ToolError::new(format!("Path not found: {raw_path}"))),
                Ok(m) if !m.is_dir() => {
                    return Err(ToolError::new(format!(
                        "{raw_path} is not a folder; find searches folders."
                    )));
                }
                Ok(_) => {}
            }
            let skip = Some(ctx.protected().clone()).filter(|p| !p.is_empty());
            let (found, more) = find_skipping(&root, &pattern, limit, &cancel, skip)?;
            if found.is_empty() {
                return Ok(
                    ToolOutput::text(format!("No files or folders match `{pattern}`."))
                        .with_details(json!({"results": 0})),
                );
            }
            let body = found
                .iter()
                .map(|f| {
                    let mut s = ctx.display(&f.path);
                    if f.is_dir {
                        s.push('/');
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join("\n");
            let max_bytes = ctx.limits().max_bytes;
            let cut = truncate_head(&body, usize::MAX, max_bytes);
            let mut text = cut.content.clone();
            let mut notes = Vec::new();
            if more {
                notes.push(format!(
                    "Stopped at {limit} results. Pass limit={} for more, or narrow the pattern.",
                    limit.saturating_mul(2)
                ));
            }
            if cut.truncated() {
                notes.push(format!(
                    "Output cut at {}. Narrow the pattern or the path.",
                    limit_size(max_bytes)
                ));
            }
            append_notices(&mut text, &notes);
            Ok(ToolOutput::text(text).with_details(json!({
                "results": found.len(),
                "limitReached": more,
                "outputTruncated": cut.truncated(),
            })))
        })
        .await
    }
}

//! The tool wrapper that records checkpoints: around `bash` (and a subagent's `task`, and an
//! MCP server's tool unless the server marks it read-only) a scan of the working folder before
//! and after; around `write` and `edit` the one file they name.
//! Every other tool only starts the tracker's first save of the folder ([`Tracker::warm`]), so
//! a run that calls no tool (`pi -p "hello"`) never pays for it, and one that does has it done
//! in the background by the time it first changes something.
//! The change set goes into the result's details; a call that failed but changed files still
//! reports them (as an error result with the same text).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::record;
use super::tracker::Tracker;
use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};
use crate::tools::context::ToolContext;
use crate::tools::guard::forward_tool_info;

/// How a tool's changes are found.
enum Watch {
    /// Anything under the working folder may change.
    Scan,
    /// Only the file its `path` argument names, resolved as the tools resolve it.
    File(Arc<ToolContext>),
    /// Nothing: it changes no file (the folder's first save starts).
    Nothing,
}

/// A tool whose changes to the working folder are recorded.
struct Checkpointed {
    inner: Arc<dyn AgentTool>,
    tracker: Arc<Tracker>,
    watch: Watch,
}

impl Checkpointed {
    fn wrap(inner: Arc<dyn AgentTool>, watch: Watch, tracker: &Arc<Tracker>) -> Arc<dyn AgentTool> {
        Arc::new(Checkpointed {
            inner,
            tracker: tracker.clone(),
            watch,
        })
    }
}

/// Wrap every tool: those that change files are recorded, any starts the first save.
pub fn wrap_all(tools: Vec<Arc<dyn AgentTool>>, tracker: &Arc<Tracker>) -> Vec<Arc<dyn AgentTool>> {
    let paths = Arc::new(ToolContext::new(tracker.root().to_path_buf()));
    tools
        .into_iter()
        .map(|t| {
            let watch = match t.name() {
                "bash" | "task" => Watch::Scan,
                "write" | "edit" => Watch::File(paths.clone()),
                _ => Watch::Nothing,
            };
            Checkpointed::wrap(t, watch, tracker)
        })
        .collect()
}

/// Wrap a tool from outside pi (an MCP server's) that may change any file: scanned around
/// each call.
pub fn wrap_scanned(tool: Arc<dyn AgentTool>, tracker: &Arc<Tracker>) -> Arc<dyn AgentTool> {
    Checkpointed::wrap(tool, Watch::Scan, tracker)
}

/// Run blocking file work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

#[async_trait]
impl AgentTool for Checkpointed {
    forward_tool_info!();

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        self.tracker.warm();
        match &self.watch {
            Watch::Nothing => self.inner.execute(call).await,
            Watch::Scan => {
                let tracker = self.tracker.clone();
                let begin = blocking(move || tracker.begin()).await.flatten();
                let result = self.inner.execute(call).await;
                let Some(begin) = begin else {
                    return result;
                };
                let tracker = self.tracker.clone();
                let set = blocking(move || tracker.finish(begin))
                    .await
                    .unwrap_or_default();
                with_set(result, &set)
            }
            Watch::File(paths) => {
                let path = call
                    .args
                    .get("path")
                    .and_then(Value::as_str)
                    .and_then(|raw| paths.resolve_existing(raw).ok());
                let Some(path) = path else {
                    return self.inner.execute(call).await;
                };
                let tracker = self.tracker.clone();
                let begin = blocking(move || tracker.before_file(&path)).await.flatten();
                let result = self.inner.execute(call).await;
                let Some(begin) = begin else {
                    return result;
                };
                let tracker = self.tracker.clone();
                let change = blocking(move || tracker.after_file(begin)).await.flatten();
                let set = record::ChangeSet {
                    files: change.into_iter().collect(),
                };
                with_set(result, &set)
            }
        }
    }
}

/// `result` with `set` in its details (an error that changed files becomes an error result
/// carrying them).
fn with_set(
    result: Result<ToolOutput, ToolError>,
    set: &record::ChangeSet,
) -> Result<ToolOutput, ToolError> {
    if set.is_empty() {
        return result;
    }
    let mut out = match result {
        Ok(out) => out,
        Err(ToolError(message)) => ToolOutput::error(message),
    };
    record::attach(&mut out.details, set);
    Ok(out)
}

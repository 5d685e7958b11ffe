//! `write`: create or replace a whole file.
//!
//! Parent folders are created as needed. The new contents replace the old atomically (see
//! [`write_atomic`](super::fsutil::write_atomic)): a crash or a full disk leaves either the
//! old file or the new one, never a mix, and the old file's permissions survive. Writes to one path are serialised through the
//! context's file lock, shared with `edit`. The sandbox (see [`super::sandbox`]) is asked
//! first, before any folder is created; sandboxed, the folders and the file are made through
//! descriptors of the allowed folder (see [`super::sandbox::beneath`]).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::Args;
use super::context::{ABORTED_TEXT, ToolContext, run_blocking};
use super::fsutil::{describe_io_error, write_target};
use super::info::{ToolInfo, tool_info_accessors};
use super::sandbox::SandboxMode;
use super::truncate::format_size;
use crate::agent::protocol::tool::{AgentTool, Concurrency, ToolError, ToolInvocation, ToolOutput};

const DESCRIPTION: &str = "Write `content` to a file, creating it (and any missing parent \
folders) or replacing everything in it. For changes to part of an existing file use `edit` \
instead. Relative paths are taken from the working directory.";

pub(crate) struct WriteTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl WriteTool {
    pub(crate) fn new(ctx: Arc<ToolContext>) -> Self {
        WriteTool {
            info: ToolInfo::new(
                "write",
                DESCRIPTION,
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to write (relative or absolute)"},
                        "content": {"type": "string", "description": "The complete new contents"}
                    },
                    "required": ["path", "content"]
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for WriteTool {
    tool_info_accessors!();

    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        Ok(Concurrency::Exclusive)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("write", &call.args)?;
        let raw = args.required_str("path")?.to_string();
        let content = args.required_str("content")?.to_string();
        let path = self.ctx.resolve(&raw)?;
        let _guard = self.ctx.lock_file(&path, &call.cancel).await?;
        let sandbox = self.ctx.sandbox().clone();
        run_blocking(&call.cancel, move |cancel| {
            sandbox.check_write(&path)?;
            let target = write_target(&path);
            // Sandboxed, the write makes its folders itself, without following links.
            if let Some(parent) = target
                .parent()
                .filter(|_| sandbox.mode() == SandboxMode::Off)
            {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ToolError::new(format!(
                        "Cannot create the folder for {raw}: {}",
                        describe_io_error(&e)
                    ))
                })?;
            }
            // Past this point the write happens as a whole or not at all.
            if cancel.is_cancelled() {
                return Err(ToolError::new(ABORTED_TEXT));
            }
            sandbox
                .write_atomic(&path, content.as_bytes())
                .map_err(|e| {
                    ToolError::new(format!("Cannot write {raw}: {}", describe_io_error(&e)))
                })?;
            Ok(ToolOutput::text(format!(
                "Wrote {} to {raw}.",
                format_size(content.len() as u64)
            ))
            .with_details(json!({"bytes": content.len()})))
        })
        .await
    }
}

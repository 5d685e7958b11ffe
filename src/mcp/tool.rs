//! An MCP server's tool as an [`AgentTool`].
//!
//! The model sees `mcp__<server>__<tool>` (see [`naming`](super::naming)) with the server's
//! input schema and description. Calls run exclusively (an MCP tool may change anything), are
//! not stopped by steering, only by abort or the tool timeout, and every failure (a dead
//! server, a timeout, a protocol error, a reply over the size limit) is an error result the
//! model can read, never a panic. A result's text is cut to the tools' output limits.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::client::{CallError, Link};
use super::content;
use super::naming;
use crate::agent::protocol::tool::{
    AgentTool, Concurrency, IntentMode, ToolError, ToolInvocation, ToolOutput,
};

pub struct McpTool {
    /// The name the model uses.
    name: String,
    /// The name the server knows.
    remote: String,
    description: String,
    schema: Value,
    lenient: bool,
    /// The server marks it as changing nothing (`readOnlyHint`).
    read_only: bool,
    link: Arc<Link>,
}

impl McpTool {
    /// The adapter for `tool` of the server behind `link`, offered as `name`.
    pub fn new(name: String, tool: &rmcp::model::Tool, link: Arc<Link>) -> Self {
        let (schema, lenient) = naming::prepare_schema(&tool.input_schema);
        let description = tool
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .or_else(|| tool.title.clone())
            .unwrap_or_else(|| {
                format!("The `{}` tool of MCP server `{}`.", tool.name, link.server)
            });
        McpTool {
            name,
            remote: tool.name.to_string(),
            description,
            schema,
            lenient,
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            link,
        }
    }

    /// Whether its server says it changes nothing (a hint: the server may be wrong).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The tool's name on its server.
    pub(crate) fn remote_name(&self) -> &str {
        &self.remote
    }
}

#[async_trait]
impl AgentTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.schema
    }

    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        Ok(Concurrency::Exclusive)
    }

    fn intent_mode(&self) -> IntentMode {
        // The schema is the server's: nothing is added to it.
        IntentMode::Omit
    }

    fn lenient_validation(&self) -> bool {
        self.lenient
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = match call.args {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Ok(ToolOutput::error(format!(
                    "{}: the arguments must be a JSON object, not {other}",
                    self.name
                )));
            }
        };
        match self.link.call(&self.remote, args, &call.cancel).await {
            Ok(result) => {
                let mut out = content::to_output(&self.link.server, &self.remote, &result);
                content::fit(&mut out, &self.link.limits);
                Ok(out)
            }
            Err(CallError::Aborted) => Err(ToolError::new("Aborted before the tool finished.")),
            Err(e) => Ok(ToolOutput::error(format!(
                "MCP server `{}`, tool `{}`: {e}",
                self.link.server, self.remote
            ))
            .with_details(serde_json::json!({
                "server": self.link.server,
                "tool": self.remote,
            }))),
        }
    }
}

//! The tool trait the loop executes, and what tools return.
//!
//! A tool declares its JSON-schema parameters, how it may run beside others
//! ([`Concurrency`]), whether a steering message may interrupt it, and how it states intent.
//! The loop validates arguments against the schema before `execute` is called, hands the tool
//! an abort token and a progress sink, and coerces whatever comes back (see `coerce`).

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::protocol::types::{ContentBlock, empty_object};

/// How a call may overlap with the other calls of its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Concurrency {
    /// May run beside other shared calls (reads, searches).
    Shared,
    /// Runs alone: waits for everything before it, and everything after waits for it.
    Exclusive,
}

/// Whether the model is asked to state its intent in the optional `i` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntentMode {
    Require,
    Optional,
    /// Never ask; the tool may derive an intent from its arguments instead.
    Omit,
}

/// One usage example, rendered into the tool description for the model.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolExample {
    Call {
        caption: Option<String>,
        args: Value,
    },
    Contrast {
        caption: Option<String>,
        bad: Value,
        good: Value,
    },
    Note {
        caption: String,
        note: Option<String>,
    },
}

/// What a tool returns (and what progress updates carry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    #[serde(default = "empty_object")]
    pub details: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The result carried nothing of value (kept only on success).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub useless: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: empty_object(),
            is_error: false,
            useless: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            is_error: true,
            ..ToolOutput::text(text)
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// A placeholder the loop wrote for a call that never ran (not the tool's own output).
    pub fn never_ran(&self) -> bool {
        crate::agent::protocol::types::PlaceholderDetails::of(&self.details).is_some()
    }
}

/// A failure raised by a tool (the equivalent of a thrown error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError(e.to_string())
    }
}

/// Where the batch stands, given to each call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallContext {
    /// `"<assistant timestamp>_<first call id>"`, shared by every call of one batch.
    pub batch_id: Arc<str>,
    pub index: usize,
    pub total: usize,
    /// `(id, name)` of every call in the batch, in call order (shared by the batch's calls).
    pub tool_calls: Arc<[(String, String)]>,
}

/// Sends progress updates for a running call; each becomes a `tool_execution_update` event.
#[derive(Clone)]
pub struct ProgressSink {
    send: Arc<dyn Fn(ToolOutput) + Send + Sync>,
}

impl ProgressSink {
    pub fn new(send: impl Fn(ToolOutput) + Send + Sync + 'static) -> Self {
        ProgressSink {
            send: Arc::new(send),
        }
    }

    /// A sink that drops updates.
    pub fn discard() -> Self {
        ProgressSink::new(|_| {})
    }

    pub fn update(&self, partial: ToolOutput) {
        (self.send)(partial)
    }
}

/// One call as the tool receives it.
pub struct ToolInvocation {
    pub tool_call_id: String,
    /// Validated arguments (the `i` intent field already removed).
    pub args: Value,
    /// Fires on abort (and, for interruptible tools, on a steering interrupt). Tools must stop.
    pub cancel: CancellationToken,
    /// Fires when a steering message is queued; tools may finish early. Ignoring it is safe.
    pub steering: CancellationToken,
    pub progress: ProgressSink,
    pub context: ToolCallContext,
}

/// A tool the agent can call.
#[async_trait]
pub trait AgentTool: Send + Sync {
    fn name(&self) -> &str;

    /// A human label for the UI.
    fn label(&self) -> &str {
        self.name()
    }

    fn description(&self) -> &str;

    /// JSON Schema (draft 2020-12) of the arguments object.
    fn parameters(&self) -> &Value;

    fn examples(&self) -> &[ToolExample] {
        &[]
    }

    /// How this call may overlap with others. An `Err` means exclusive.
    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        Ok(Concurrency::Shared)
    }

    /// Whether a steering message may abort this call while it runs. An `Err` means no.
    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(false)
    }

    fn intent_mode(&self) -> IntentMode {
        IntentMode::Require
    }

    /// An intent derived from the arguments, used when the model stated none.
    fn derive_intent(&self, _args: &Value) -> Option<String> {
        None
    }

    /// On a schema failure, run with the raw arguments instead of failing.
    fn lenient_validation(&self) -> bool {
        false
    }

    /// An alternative name the model may use on the wire (e.g. an OpenAI custom tool).
    fn custom_wire_name(&self) -> Option<&str> {
        None
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError>;
}

/// A tool with its compiled argument validator, built on first use.
pub struct RegisteredTool {
    pub tool: Arc<dyn AgentTool>,
    validator: OnceLock<Result<Arc<jsonschema::Validator>, String>>,
}

impl RegisteredTool {
    pub fn new(tool: Arc<dyn AgentTool>) -> Self {
        RegisteredTool {
            tool,
            validator: OnceLock::new(),
        }
    }

    /// The compiled schema, or why it does not compile.
    pub fn validator(&self) -> Result<Arc<jsonschema::Validator>, String> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(self.tool.parameters())
                    .map(Arc::new)
                    .map_err(|e| format!("the tool's parameter schema is invalid: {e}"))
            })
            .clone()
    }
}

/// The active tools, with validators cached across turns.
#[derive(Default)]
pub struct ToolSet {
    tools: Vec<Arc<RegisteredTool>>,
}

impl ToolSet {
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn AgentTool>>) -> Self {
        ToolSet {
            tools: tools
                .into_iter()
                .map(|t| Arc::new(RegisteredTool::new(t)))
                .collect(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools.iter()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.tool.name().to_string())
            .collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// By exact name, else by custom wire name.
    pub fn find(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools
            .iter()
            .find(|t| t.tool.name() == name)
            .or_else(|| {
                self.tools
                    .iter()
                    .find(|t| t.tool.custom_wire_name() == Some(name))
            })
    }
}

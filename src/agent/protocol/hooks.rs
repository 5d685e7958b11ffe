//! What a host plugs into the loop: queues, gates and hooks, plus the per-run configuration.
//!
//! [`LoopHooks`] has a default for every method, so a host implements only what it needs. The
//! `Agent` facade implements it over its own queues and state; tests implement it directly.
//! [`LoopConfig`] holds what is fixed for one run.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::Notify;

use crate::agent::protocol::abort::AbortSignal;
use crate::agent::protocol::stream::{LlmContext, Model, StreamEvent, ToolChoice};
use crate::agent::protocol::summary::{RunCoverage, RunSummary};
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::tool::{AgentTool, ToolCallContext, ToolOutput, ToolSet};
use crate::agent::protocol::types::{AgentMessage, AssistantMessage, Message, ToolCall};

/// Who queued the steering message that would be taken next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteeringSource {
    User,
    Agent,
    System,
    Unknown,
}

/// A non-consuming look at the steering queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteeringPeek {
    /// The host cannot peek: steering never interrupts a batch, it waits for the boundary.
    Unsupported,
    Empty,
    Queued(SteeringSource),
}

/// Whether a steering message interrupts a running tool batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InterruptMode {
    /// Skip tools not yet started and abort interruptible ones.
    #[default]
    Immediate,
    /// Let the batch finish; the message is delivered at the next boundary.
    Wait,
}

/// Callbacks that follow an aside message into the context.
#[derive(Default)]
pub struct AsideHooks {
    /// Called once the message is inserted into the live context.
    pub on_commit: Option<Box<dyn FnOnce() + Send>>,
    /// Called if the message was taken but the run ended before inserting it.
    pub on_discard: Option<Box<dyn FnOnce(String) + Send>>,
}

/// A message waiting to enter the context, with optional aside callbacks.
pub struct Injected {
    pub message: AgentMessage,
    pub hooks: AsideHooks,
    /// Came from the aside provider (discarded, not inserted, if the deadline cuts the run).
    pub aside: bool,
}

impl Injected {
    pub fn plain(message: AgentMessage) -> Self {
        Injected {
            message,
            hooks: AsideHooks::default(),
            aside: false,
        }
    }

    /// A message with aside callbacks.
    pub fn with_hooks(message: AgentMessage, hooks: AsideHooks) -> Self {
        Injected {
            message,
            hooks,
            aside: false,
        }
    }

    pub(crate) fn commit(&mut self) {
        if let Some(f) = self.hooks.on_commit.take() {
            f()
        }
    }

    pub(crate) fn discard(&mut self, why: &str) {
        if let Some(f) = self.hooks.on_discard.take() {
            f(why.to_string())
        }
    }
}

/// A non-interrupting notification, resolved when the loop polls for it.
pub enum AsideEntry {
    Ready(Injected),
    /// Evaluated at the boundary. `Ok(None)` drops it; `Err` fails the run.
    Deferred(Box<dyn FnOnce() -> Result<Option<Injected>, String> + Send>),
}

/// Decides whether a call satisfies a soft tool requirement.
pub type ToolCallPredicate = Arc<dyn Fn(&ToolCall) -> bool + Send + Sync>;

/// A requirement to call `tool_name` before other tools or yielding, enforced without changing
/// `tool_choice` unless the model ignores it.
#[derive(Clone)]
pub struct SoftToolRequirement {
    pub id: String,
    pub tool_name: String,
    /// Whether a call satisfies the requirement (default: same name).
    pub satisfies: Option<ToolCallPredicate>,
    /// Injected once when this requirement id becomes active.
    pub reminder: Vec<AgentMessage>,
}

/// The tool-choice directive for one logical turn.
#[derive(Clone)]
pub enum ToolDirective {
    Hard(ToolChoice),
    Soft(SoftToolRequirement),
}

/// The answer of the pre-model-call gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateDecision {
    Proceed,
    Stop(Option<String>),
}

/// What `before_tool_call` decides.
#[derive(Clone, Debug, PartialEq)]
pub enum BeforeToolCall {
    Proceed,
    Block(Option<String>),
    /// Replace the arguments (validated again; on success they replace the call in history).
    Revise(Value),
}

/// Fields an `after_tool_call` hook replaces in the result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultOverride {
    pub content: Option<Vec<crate::agent::protocol::types::ContentBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
    pub useless: Option<bool>,
}

/// What `after_tool_call` sees.
pub struct AfterToolCallInfo<'a> {
    pub assistant: &'a AssistantMessage,
    pub tool_call: &'a ToolCall,
    pub args: &'a Value,
    pub result: &'a ToolOutput,
    pub is_error: bool,
    pub context: &'a ToolCallContext,
}

/// Passed to `on_turn_end`.
pub struct TurnEndInfo<'a> {
    pub message: &'a AssistantMessage,
    pub tool_results: &'a [AgentMessage],
    pub will_continue: bool,
}

/// Passed to `on_harmony_leak`: a GPT-5 reply leaked Harmony protocol text and was discarded.
pub struct HarmonyLeakInfo<'a> {
    /// `false`: the turn is sampled again; `true`: the re-samples are used up and the run fails.
    pub escalated: bool,
    /// Re-samples already made in this turn before this reply.
    pub retry: u32,
    /// The signal classes that fired, e.g. `M+C`.
    pub signals: &'a str,
    /// `text` or `thinking`.
    pub surface: &'a str,
    /// The model that wrote the reply.
    pub model: &'a Model,
    /// Length (bytes) of the block that tripped.
    pub removed_len: usize,
}

/// Fresh per-call state read before each provider call (`None` keeps the current value).
#[derive(Default)]
pub struct ContextRefresh {
    pub system_prompt: Option<Vec<String>>,
    pub tools: Option<Arc<ToolSet>>,
    pub model: Option<Model>,
    pub reasoning: Option<Option<Effort>>,
    pub disable_reasoning: Option<bool>,
}

/// Everything a host can plug into a run. All methods have neutral defaults.
#[async_trait]
pub trait LoopHooks: Send + Sync {
    /// Refresh prompt, tools, model and thinking before each provider call.
    async fn sync_before_model_call(&self, _signal: &AbortSignal) -> ContextRefresh {
        ContextRefresh::default()
    }

    /// The directive for the next logical turn.
    fn tool_directive(&self) -> Option<ToolDirective> {
        None
    }

    /// A gate stopped the run before the model call; a host may re-offer a hard choice later.
    fn on_tool_choice_rejected(&self) -> Result<(), String> {
        Ok(())
    }

    /// Prune or extend the transcript before conversion. `None` keeps it as it is.
    async fn transform_context(
        &self,
        _messages: &[AgentMessage],
        _signal: &AbortSignal,
    ) -> Option<Vec<AgentMessage>> {
        None
    }

    /// Map the transcript to provider messages. `None` applies the default rule (keep user,
    /// tool results and assistant messages except provider refusals; drop everything else),
    /// which the loop applies incrementally so long conversations stay cheap.
    fn convert_to_llm(&self, _messages: &[AgentMessage]) -> Option<Vec<Message>> {
        None
    }

    /// Last change to the provider context before it is sent.
    fn transform_provider_context(&self, _context: &mut LlmContext, _model: &Model) {}

    /// Whether [`LoopHooks::before_model_call`] is a real gate.
    fn has_model_gate(&self) -> bool {
        false
    }

    async fn before_model_call(
        &self,
        _context: &LlmContext,
        _signal: &AbortSignal,
    ) -> Result<GateDecision, String> {
        Ok(GateDecision::Proceed)
    }

    /// Called with the partial message before each `message_update`.
    fn on_assistant_event(&self, _partial: &AssistantMessage, _event: &StreamEvent) {}

    /// Audit: a reply was discarded for leaking Harmony protocol text.
    fn on_harmony_leak(&self, _info: HarmonyLeakInfo<'_>) {}

    /// Rewrite the final assistant message before anything sees it.
    async fn transform_assistant_message(
        &self,
        _message: &mut AssistantMessage,
        _signal: &AbortSignal,
    ) -> Result<(), String> {
        Ok(())
    }

    /// A tool for a name the tool set does not know.
    fn resolve_fallback_tool(&self, _name: &str) -> Option<Arc<dyn AgentTool>> {
        None
    }

    /// Inspect, block or revise a validated call. `args` may be edited in place (no revalidation).
    async fn before_tool_call(
        &self,
        _assistant: &AssistantMessage,
        _call: &ToolCall,
        _args: &mut Value,
        _signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        Ok(BeforeToolCall::Proceed)
    }

    /// Last change to arguments right before execution (e.g. restoring redacted secrets).
    fn transform_tool_arguments(&self, args: Value, _tool_name: &str) -> Value {
        args
    }

    async fn after_tool_call(
        &self,
        _info: AfterToolCallInfo<'_>,
        _signal: &AbortSignal,
    ) -> Result<Option<ResultOverride>, String> {
        Ok(None)
    }

    async fn on_turn_end(&self, _messages: &[AgentMessage], _info: TurnEndInfo<'_>) {}

    /// Awaited before the final follow-up poll of a run.
    async fn on_before_yield(&self) {}

    /// Take steering messages (consuming).
    async fn steering_messages(&self, _signal: &AbortSignal) -> Vec<AgentMessage> {
        Vec::new()
    }

    /// Look at the steering queue without consuming it.
    fn peek_steering(&self) -> SteeringPeek {
        SteeringPeek::Unsupported
    }

    /// Notified whenever a steering message is queued (saves waiting for the poll).
    fn steering_notify(&self) -> Option<Arc<Notify>> {
        None
    }

    async fn follow_up_messages(&self, _signal: &AbortSignal) -> Vec<AgentMessage> {
        Vec::new()
    }

    fn aside_messages(&self) -> Vec<AsideEntry> {
        Vec::new()
    }

    /// The run's summary and coverage, once per run with telemetry on, just before
    /// `agent_end` (also for a run that failed). A panic here is ignored.
    fn on_run_end(&self, _summary: &RunSummary, _coverage: &RunCoverage) {}
}

/// Hooks that do nothing.
pub struct NoHooks;

impl LoopHooks for NoHooks {}

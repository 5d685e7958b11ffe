//! What is fixed for one run: [`LoopConfig`], and how failed model calls are retried.

use std::sync::Arc;

use crate::agent::policy::append_only::AppendOnlyContext;
use crate::agent::protocol::hooks::{InterruptMode, LoopHooks, NoHooks};
use crate::agent::protocol::stream::{Model, Provider, ToolChoice};
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::tool::ToolSet;

/// How transient model-call failures are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// First backoff; doubled each retry, with ±25 % jitter.
    pub base_delay: std::time::Duration,
    /// Longest wait, also the cap on a server's `Retry-After`.
    pub max_delay: std::time::Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: std::time::Duration::from_secs(1),
            max_delay: std::time::Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based).
    pub fn delay(&self, attempt: u32, retry_after_ms: Option<u64>) -> std::time::Duration {
        if let Some(ms) = retry_after_ms {
            return std::time::Duration::from_millis(ms).min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        // Jitter from the clock's low bits: enough to spread clients, no RNG needed.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let factor = 0.75 + f64::from(nanos % 1000) / 2000.0;
        exp.mul_f64(factor).min(self.max_delay)
    }
}

pub use crate::agent::protocol::command::DEFAULT_MAX_REPEATED_TOOL_TURNS;

/// What is fixed for one run.
#[derive(Clone)]
pub struct LoopConfig {
    pub provider: Arc<dyn Provider>,
    pub model: Model,
    pub system_prompt: Vec<String>,
    pub tools: Arc<ToolSet>,
    pub reasoning: Option<Effort>,
    pub disable_reasoning: bool,
    /// Applied to every turn unless a directive overrides it.
    pub tool_choice: Option<ToolChoice>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub session_id: Option<String>,
    pub interrupt_mode: InterruptMode,
    /// Add the optional `i` (intent) argument to every tool schema and strip it before execution.
    pub intent_tracing: bool,
    pub prune_tool_descriptions: bool,
    /// When the run must end, on tokio's clock (so tests can run it on a paused clock).
    pub deadline: Option<tokio::time::Instant>,
    /// Collect a run summary and coverage (delivered with `agent_end`).
    pub telemetry: bool,
    pub retry: RetryPolicy,
    /// Fail the run when the model has sent the same tool calls and got the same results this
    /// many turns in a row, and asks for them once more (`None`, 0: never).
    pub max_repeated_tool_turns: Option<u32>,
    /// Keep provider messages in an append-only log so the prompt cache stays warm.
    pub append_only: Option<Arc<std::sync::Mutex<AppendOnlyContext>>>,
    /// Condense the conversation before a request that would not fit (`None`: never).
    pub compaction: Option<crate::agent::policy::compaction::CompactionSettings>,
    pub hooks: Arc<dyn LoopHooks>,
    /// Woken to give up a retry whose backoff is running: the failed reply ends the run as
    /// an error, without further attempts. A wake with no backoff running does nothing.
    pub skip_retry: Arc<tokio::sync::Notify>,
    /// Held closed, the run parks before each model call and before each tool starts.
    pub pause: crate::agent::protocol::pause::PauseGate,
}

impl LoopConfig {
    pub fn new(provider: Arc<dyn Provider>, model: Model) -> Self {
        LoopConfig {
            provider,
            model,
            system_prompt: Vec::new(),
            tools: Arc::new(ToolSet::default()),
            reasoning: None,
            disable_reasoning: false,
            tool_choice: None,
            temperature: None,
            max_tokens: None,
            session_id: None,
            interrupt_mode: InterruptMode::Immediate,
            intent_tracing: false,
            prune_tool_descriptions: false,
            deadline: None,
            telemetry: false,
            retry: RetryPolicy::default(),
            max_repeated_tool_turns: Some(DEFAULT_MAX_REPEATED_TOOL_TURNS),
            append_only: None,
            compaction: Some(Default::default()),
            hooks: Arc::new(NoHooks),
            skip_retry: Arc::new(tokio::sync::Notify::new()),
            pause: Default::default(),
        }
    }
}

//! The agent loop: turns, stop reasons, steering and follow-up boundaries, abort and deadline.
//!
//! A run is a double loop. The inner loop takes one turn per provider call: inject waiting
//! messages, build the provider context, stream the assistant reply, then act on its stop
//! reason (run the tool batch, answer unrunnable calls with placeholders, or stop). It goes on
//! while tools ran or messages wait. When it would stop, the outer loop awaits
//! `on_before_yield` and polls late steering, asides and follow-ups; anything found revives it.
//!
//! Event order (per turn): `turn_start`, the injected messages (`message_start`/`end`), the
//! assistant `message_start`/`message_update`*/`message_end`, then per finished tool call
//! `tool_execution_start`/`update`*/`end` and its result message, then `turn_end`.
//! Error and aborted replies end the run at once: no follow-ups are taken, queues are kept.
//!
//! Every run ends with `agent_end`, and every tool call in the transcript has a result by then.
//! A run that fails (a hook error, the repeated-call guard, an unmet soft requirement, an
//! out-of-band provider failure, a panic anywhere in the loop) is closed here, by the one
//! place that knows the transcript: the reply being streamed ends as an error, or an error
//! reply is added, and every unanswered call gets a placeholder. A transient model-call failure
//! is retried as a step of its own: after the backoff, the same turn makes the call again,
//! through the settings refresh, the context sync and the pre-model gate like any call.
//!
//! The code follows the phases: [`turn`] (the loop and one call), [`inputs`] (injection),
//! [`request`] (the provider context), [`streaming`] (the reply), [`retry`] (settling an
//! attempt), [`directive`] (tool choice and soft requirements), [`closing`] (commit, answer,
//! turn end, failure), [`guards`] (the deadline) and [`compacting`].

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;

use crate::agent::engine::answer::emit_synthetic_result;
use crate::agent::engine::batch::{BatchEnv, PreparedCall, execute_batch, prepare_calls};
use crate::agent::engine::config::LoopConfig;
use crate::agent::lock;
use crate::agent::policy::compaction;
use crate::agent::policy::error_id::{self, is_context_overflow};
use crate::agent::policy::harmony;
use crate::agent::policy::normalize::{
    ToolNormalizeOptions, default_convert_to_llm, normalize_messages_for_provider, normalize_tools,
};
use crate::agent::policy::placeholder::{
    PlaceholderReason, placeholder_result, soft_skip_label, unanswered_calls,
};
use crate::agent::policy::repetition::RepetitionGuard;
use crate::agent::policy::soft::{SoftState, escalation_error, hard_choice_blocks, is_compliant};
use crate::agent::policy::summary::RunCollector;
use crate::agent::policy::validate::strip_sentinels;
use crate::agent::protocol::abort::{AbortReason, AbortSignal, DEADLINE_TEXT};
use crate::agent::protocol::events::{AgentEvent, CompactionReason, CompactionResult, EventSink};
use crate::agent::protocol::hooks::{
    AsideEntry, GateDecision, HarmonyLeakInfo, Injected, LoopHooks, SoftToolRequirement,
    ToolDirective, TurnEndInfo,
};
use crate::agent::protocol::panic::{contain, contain_sync};
use crate::agent::protocol::stream::{
    EventStream, LlmContext, MessageBuilder, Model, Provider, ProviderError, ProviderRequest,
    StreamEvent, StreamOptions, ToolChoice, ToolSpec,
};
use crate::agent::protocol::summary::ToolStatus;
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::tool::ToolSet;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Message, STOP_PAUSE_TURN, STOP_REFUSAL,
    STOP_RETRIED, STOP_SENSITIVE, STREAM_INTERRUPTED_AFTER_CONTENT, StopDetails, StopReason,
    ToolCall, ToolResultMessage, UserContent, UserMessage, now_ms,
};

/// Re-samples allowed for a backend that keeps pausing its turn.
pub const MAX_PAUSED_TURN_CONTINUATIONS: u32 = 8;

mod closing;
mod compacting;
mod directive;
mod guards;
mod inputs;
mod request;
mod retry;
mod streaming;
mod turn;

use closing::{retain_completed_tool_calls, salvage_interrupted_tool_turn};
pub use compacting::summarize;
use guards::TimerGuard;
use streaming::{contain_stream, drop_elsewhere, provider_panic_text};

/// Why a run failed. The loop has already closed it (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopError {
    pub message: String,
}

impl LoopError {
    pub fn new(message: impl Into<String>) -> Self {
        LoopError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for LoopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoopError {}

/// What a finished run leaves behind. A failed run is closed like any other: its error turn and
/// its placeholder results are in `context`, and `error` says why it failed.
#[derive(Debug)]
pub struct RunOutcome {
    /// The whole transcript after the run.
    pub context: Vec<AgentMessage>,
    /// Where this run's messages start in `context`.
    pub first_new: usize,
    /// Soft-requirement state to carry into the next run (kept after a gate stop).
    pub soft_state: SoftState,
    /// Why the run failed, if it did.
    pub error: Option<LoopError>,
}

impl RunOutcome {
    /// The messages this run added, in insertion order.
    pub fn new_messages(&self) -> &[AgentMessage] {
        &self.context[self.first_new..]
    }

    /// `Ok` for a run that ended normally, `Err` (with the outcome) for one that failed.
    pub fn into_result(self) -> Result<RunOutcome, RunFailure> {
        match self.error.clone() {
            None => Ok(self),
            Some(error) => Err(RunFailure {
                error,
                outcome: Box::new(self),
            }),
        }
    }
}

/// A failed run: why, and what it left (already closed: every tool call answered).
#[derive(Debug)]
pub struct RunFailure {
    pub error: LoopError,
    pub outcome: Box<RunOutcome>,
}

/// Condense `context` now (`/compact`): no model turn, only the compaction and its events. A
/// conversation too short to condense says so in `compaction_end`.
pub async fn run_compact(
    context: Vec<AgentMessage>,
    cfg: LoopConfig,
    soft: SoftState,
    focus: Option<String>,
    signal: AbortSignal,
    sink: Arc<dyn EventSink>,
) -> RunOutcome {
    let mut run = Run::new(context, cfg, soft, &signal, sink);
    // Asked for explicitly: it runs even where automatic compaction is off.
    run.cfg.compaction.get_or_insert_with(Default::default);
    run.compact(CompactionReason::Manual, focus.as_deref())
        .await;
    RunOutcome {
        first_new: run.transcript.context.len(),
        context: run.transcript.context,
        soft_state: run.directive.soft,
        error: None,
    }
}

/// Start a run with new prompt messages.
pub async fn run_prompt(
    prompts: Vec<Injected>,
    context: Vec<AgentMessage>,
    config: LoopConfig,
    soft_state: SoftState,
    signal: AbortSignal,
    sink: Arc<dyn EventSink>,
) -> RunOutcome {
    Run::new(context, config, soft_state, &signal, sink)
        .execute(prompts)
        .await
}

/// Continue from the current transcript. `Err` (with nothing emitted) when its tail cannot be
/// continued (see [`check_continuable`]).
pub async fn run_continue(
    context: Vec<AgentMessage>,
    config: LoopConfig,
    soft_state: SoftState,
    signal: AbortSignal,
    sink: Arc<dyn EventSink>,
) -> Result<RunOutcome, LoopError> {
    check_continuable(&context)?;
    Ok(Run::new(context, config, soft_state, &signal, sink)
        .execute(Vec::new())
        .await)
}

/// Why a transcript cannot be continued, if it cannot.
pub fn check_continuable(context: &[AgentMessage]) -> Result<(), LoopError> {
    match context.last() {
        None => Err(LoopError::new(
            "Nothing to continue: the conversation is empty",
        )),
        Some(m) if m.role() == "assistant" => Err(LoopError::new(
            "Nothing to continue: the last message is the assistant's reply",
        )),
        Some(_) => Ok(()),
    }
}

/// How one provider call ended.
enum Attempt {
    /// The aborted boundary, already committed.
    Aborted(AgentMessage),
    Final {
        message: AssistantMessage,
        started_emitted: bool,
        started: Instant,
    },
}

/// What a turn leads to.
enum Step {
    /// The turn is closed; go on with another turn if `true` (or if messages wait).
    Next(bool),
    /// The model call failed with a transient error and waited out its backoff: make the same
    /// call again, in the same open turn.
    Retry,
    /// The run ends now.
    End,
}

/// The transcript as the run grows it, and where the open turn stands.
struct Transcript {
    context: Vec<AgentMessage>,
    /// Where this run's messages start in `context` (the run only appends).
    first_new: usize,
    /// This run's messages that a compaction took out of the context (still this run's, for
    /// `agent_end`).
    compacted_away: Vec<AgentMessage>,
    /// Inputs inserted into the context whose events have not been emitted yet.
    unemitted: Vec<AgentMessage>,
    turn_open: bool,
}

/// What a model call is made with, refreshed by `sync_before_model_call` before each call.
struct CallSettings {
    system_prompt: Vec<String>,
    tools: Arc<ToolSet>,
    model: Model,
    reasoning: Option<Effort>,
    disable_reasoning: bool,
}

/// The request log: provider messages already converted, and the tool specs last sent.
#[derive(Default)]
struct RequestCache {
    /// Provider messages for `context[..converted]` (the default conversion, done
    /// incrementally).
    llm_cache: Arc<Vec<Arc<Message>>>,
    converted: usize,
    tool_specs: Option<(usize, Vec<ToolSpec>)>,
}

/// The reply of the current call: what is streamed, how often it was re-sampled, the calls
/// prepared from it and the results its batch has emitted.
#[derive(Default)]
struct Reply {
    /// The reply being streamed (after its `message_start`, before its `message_end`).
    streaming: Option<MessageBuilder>,
    /// Ids of the streaming reply's tool calls whose arguments are complete.
    completed_calls: Vec<String>,
    /// Transient failures retried so far for the current model call.
    retries: u32,
    /// Replies of the open turn discarded for leaking Harmony protocol text.
    harmony_retries: u32,
    prepared: Vec<PreparedCall>,
    /// The running batch's results as they are emitted (see [`BatchEnv::results`]).
    batch_results: Mutex<Vec<AgentMessage>>,
}

/// The host's tool directive for the current call and the soft-requirement state.
struct Directive {
    resolved: bool,
    host_choice: Option<ToolChoice>,
    soft_req: Option<SoftToolRequirement>,
    soft: SoftState,
    /// Keep `soft` after the run (a gate stopped it).
    preserve_soft: bool,
}

/// Counters that stop a run going round: paused-turn re-samples, repeated calls, the overflow
/// compaction of the current request, and the deadline timer.
struct Guards {
    paused_continuations: u32,
    /// Stops a model that repeats the same calls and gets the same answers.
    repetition: RepetitionGuard,
    /// The current request was already compacted after the provider found it too long.
    overflow_compacted: bool,
    _timer: TimerGuard,
}

struct Run {
    cfg: LoopConfig,
    hooks: Arc<dyn LoopHooks>,
    sink: Arc<dyn EventSink>,
    signal: AbortSignal,
    collector: Option<Mutex<RunCollector>>,
    transcript: Transcript,
    call: CallSettings,
    request: RequestCache,
    reply: Reply,
    directive: Directive,
    guards: Guards,
}

impl Run {
    fn new(
        context: Vec<AgentMessage>,
        cfg: LoopConfig,
        soft: SoftState,
        external: &AbortSignal,
        sink: Arc<dyn EventSink>,
    ) -> Self {
        let signal = external.child();
        let timer = TimerGuard::start(cfg.deadline, &signal);
        let collector = cfg.telemetry.then(|| Mutex::new(RunCollector::new()));
        let first_new = context.len();
        let repetition = RepetitionGuard::new(cfg.max_repeated_tool_turns);
        Run {
            hooks: cfg.hooks.clone(),
            call: CallSettings {
                system_prompt: cfg.system_prompt.clone(),
                tools: cfg.tools.clone(),
                model: cfg.model.clone(),
                reasoning: cfg.reasoning,
                disable_reasoning: cfg.disable_reasoning,
            },
            cfg,
            sink,
            signal,
            collector,
            transcript: Transcript {
                context,
                first_new,
                compacted_away: Vec::new(),
                unemitted: Vec::new(),
                turn_open: false,
            },
            request: RequestCache::default(),
            reply: Reply::default(),
            directive: Directive {
                resolved: false,
                host_choice: None,
                soft_req: None,
                soft,
                preserve_soft: false,
            },
            guards: Guards {
                paused_continuations: 0,
                repetition,
                overflow_compacted: false,
                _timer: timer,
            },
        }
    }

    async fn execute(mut self, mut prompts: Vec<Injected>) -> RunOutcome {
        self.sink.emit(AgentEvent::AgentStart);
        for p in prompts.iter_mut() {
            p.commit();
        }
        let error = match contain(self.body(prompts)).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(panic) => Some(LoopError::new(format!("Internal error: {panic}"))),
        };
        if let Some(e) = &error {
            self.close_failed(&e.message);
        }
        if !self.directive.preserve_soft {
            self.directive.soft.clear();
        }
        let (telemetry, coverage) = match &self.collector {
            Some(c) => {
                let c = lock(c);
                (Some(c.summary()), Some(c.coverage()))
            }
            None => (None, None),
        };
        if let (Some(summary), Some(coverage)) = (&telemetry, &coverage) {
            // Once per run, failed or not; a failing hook changes nothing.
            let hooks = self.hooks.clone();
            let _ = contain_sync(|| hooks.on_run_end(summary, coverage));
        }
        let mut messages = std::mem::take(&mut self.transcript.compacted_away);
        messages.extend(
            self.transcript.context[self.transcript.first_new..]
                .iter()
                .cloned(),
        );
        self.sink.emit(AgentEvent::AgentEnd {
            messages,
            telemetry,
            coverage,
        });
        RunOutcome {
            context: self.transcript.context,
            first_new: self.transcript.first_new,
            soft_state: self.directive.soft,
            error,
        }
    }

    /// Wait while the pause gate is closed (an abort or the deadline still ends the wait).
    async fn park(&self) {
        self.cfg.pause.wait_until_resumed(&self.signal).await;
    }

    fn aborted(&self) -> bool {
        self.signal.is_aborted()
    }

    fn push(&mut self, message: AgentMessage) {
        self.transcript.context.push(message);
    }

    fn emit_message(&self, message: &AgentMessage) {
        self.sink.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.sink.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
    }

    /// Feed the run collector, if telemetry is on.
    fn collect(&self, f: impl FnOnce(&mut RunCollector)) {
        if let Some(c) = &self.collector {
            f(&mut lock(c));
        }
    }

    fn call_args(&self, id: &str) -> serde_json::Value {
        self.transcript
            .context
            .iter()
            .rev()
            .find_map(|m| m.as_assistant())
            .and_then(|a| a.tool_calls().find(|c| c.id == id))
            .map(|c| strip_sentinels(&c.arguments))
            .unwrap_or_default()
    }
}

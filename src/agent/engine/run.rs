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

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;

use crate::agent::engine::answer::emit_synthetic_result;
use crate::agent::engine::batch::{BatchEnv, PreparedCall, execute_batch, prepare_calls};
use crate::agent::engine::config::LoopConfig;
use crate::agent::lock;
use crate::agent::policy::compaction;
use crate::agent::policy::error_id;
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

/// The `auto_retry_end` error when a retry is given up on request.
pub const RETRY_SKIPPED_TEXT: &str = "Retry cancelled";

/// Re-samples allowed for a backend that keeps pausing its turn.
pub const MAX_PAUSED_TURN_CONTINUATIONS: u32 = 8;

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
        first_new: run.context.len(),
        context: run.context,
        soft_state: run.soft,
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

/// Kills the deadline timer when the run ends.
struct TimerGuard(Option<tokio::task::JoinHandle<()>>);

impl Drop for TimerGuard {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

struct Run {
    cfg: LoopConfig,
    hooks: Arc<dyn LoopHooks>,
    sink: Arc<dyn EventSink>,
    signal: AbortSignal,
    context: Vec<AgentMessage>,
    /// Where this run's messages start in `context` (the run only appends).
    first_new: usize,
    // Per-call state, refreshed by `sync_before_model_call`.
    system_prompt: Vec<String>,
    tools: Arc<ToolSet>,
    model: Model,
    reasoning: Option<Effort>,
    disable_reasoning: bool,
    // Incremental default conversion: provider messages for `context[..converted]`.
    llm_cache: Arc<Vec<Arc<Message>>>,
    converted: usize,
    tool_specs: Option<(usize, Vec<ToolSpec>)>,
    // Turn state.
    turn_open: bool,
    /// Inputs inserted into the context whose events have not been emitted yet.
    unemitted: Vec<AgentMessage>,
    /// The reply being streamed (after its `message_start`, before its `message_end`).
    streaming: Option<MessageBuilder>,
    /// Ids of the streaming reply's tool calls whose arguments are complete.
    completed_calls: Vec<String>,
    /// Transient failures retried so far for the current model call.
    retries: u32,
    /// Replies of the open turn discarded for leaking Harmony protocol text.
    harmony_retries: u32,
    directive_resolved: bool,
    host_choice: Option<ToolChoice>,
    soft_req: Option<SoftToolRequirement>,
    soft: SoftState,
    preserve_soft: bool,
    paused_continuations: u32,
    /// Stops a model that repeats the same calls and gets the same answers.
    repetition: RepetitionGuard,
    prepared: Vec<PreparedCall>,
    /// The running batch's results as they are emitted (see [`BatchEnv::results`]).
    batch_results: Mutex<Vec<AgentMessage>>,
    collector: Option<Mutex<RunCollector>>,
    /// This run's messages that a compaction took out of the context (still this run's, for
    /// `agent_end`).
    compacted_away: Vec<AgentMessage>,
    /// The current request was already compacted after the provider found it too long.
    overflow_compacted: bool,
    _timer: TimerGuard,
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
        let timer = cfg.deadline.map(|deadline| {
            let s = signal.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                s.abort(AbortReason::Deadline);
            })
        });
        let collector = cfg.telemetry.then(|| Mutex::new(RunCollector::new()));
        let first_new = context.len();
        let repetition = RepetitionGuard::new(cfg.max_repeated_tool_turns);
        Run {
            hooks: cfg.hooks.clone(),
            system_prompt: cfg.system_prompt.clone(),
            tools: cfg.tools.clone(),
            model: cfg.model.clone(),
            reasoning: cfg.reasoning,
            disable_reasoning: cfg.disable_reasoning,
            cfg,
            sink,
            signal,
            context,
            first_new,
            llm_cache: Arc::new(Vec::new()),
            converted: 0,
            tool_specs: None,
            turn_open: false,
            unemitted: Vec::new(),
            streaming: None,
            completed_calls: Vec::new(),
            retries: 0,
            harmony_retries: 0,
            directive_resolved: false,
            host_choice: None,
            soft_req: None,
            soft,
            preserve_soft: false,
            paused_continuations: 0,
            repetition,
            prepared: Vec::new(),
            batch_results: Mutex::new(Vec::new()),
            collector,
            compacted_away: Vec::new(),
            overflow_compacted: false,
            _timer: TimerGuard(timer),
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
        if !self.preserve_soft {
            self.soft.clear();
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
        let mut messages = std::mem::take(&mut self.compacted_away);
        messages.extend(self.context[self.first_new..].iter().cloned());
        self.sink.emit(AgentEvent::AgentEnd {
            messages,
            telemetry,
            coverage,
        });
        RunOutcome {
            context: self.context,
            first_new: self.first_new,
            soft_state: self.soft,
            error,
        }
    }

    /// Close a run that failed with `text`, wherever it stood: the reply being streamed ends
    /// as an error (keeping the calls whose arguments completed), or a fresh error reply is
    /// added; every tool call left without a result is answered; the turn is closed. Aborted
    /// runs end the same way, with the abort's reason and aborted placeholders.
    fn close_failed(&mut self, text: &str) {
        // Results a batch emitted before it failed are answers already: keep them, so no call
        // is answered twice.
        let emitted = std::mem::take(&mut *lock(&self.batch_results));
        self.context.extend(emitted);
        let aborted = self.aborted();
        let (stop, reason, status) = if aborted {
            (
                StopReason::Aborted,
                PlaceholderReason::Aborted,
                ToolStatus::Aborted,
            )
        } else {
            (
                StopReason::Error,
                PlaceholderReason::Error,
                ToolStatus::Error,
            )
        };
        let text = if aborted {
            self.signal.reason_text()
        } else {
            text.to_string()
        };
        let upstream = (!aborted).then_some(text.as_str());
        let mut results = Vec::new();
        let committed = match self.streaming.take() {
            Some(builder) => {
                let mut message = builder.into_message();
                let completed = std::mem::take(&mut self.completed_calls);
                retain_completed_tool_calls(&mut message, &completed);
                message.stop_reason = stop;
                message.error_message = Some(text.clone());
                let committed = self.commit_assistant(message, true, None);
                results = self.answer_open_calls(reason, &text, upstream, status);
                committed
            }
            None => {
                // A reply committed before the failure (e.g. the repeated-call guard) has its
                // calls answered first: its results must follow it.
                results.extend(self.answer_open_calls(reason, &text, upstream, status));
                if !self.turn_open {
                    self.sink.emit(AgentEvent::TurnStart);
                    self.turn_open = true;
                }
                let unemitted = std::mem::take(&mut self.unemitted);
                self.emit_inputs(&unemitted);
                let mut message =
                    AssistantMessage::empty(&self.model.api, &self.model.provider, &self.model.id);
                message.content.push(ContentBlock::text(""));
                message.stop_reason = stop;
                message.error_message = Some(text.clone());
                self.commit_assistant(message, false, None)
            }
        };
        self.sink.emit(AgentEvent::TurnEnd {
            message: committed,
            tool_results: results,
        });
        self.turn_open = false;
    }

    /// Answer the calls of the last assistant message that have no result yet.
    fn answer_open_calls(
        &mut self,
        reason: PlaceholderReason,
        label: &str,
        upstream: Option<&str>,
        status: ToolStatus,
    ) -> Vec<AgentMessage> {
        let open: Vec<ToolCall> = unanswered_calls(&self.context)
            .into_iter()
            .cloned()
            .collect();
        open.iter()
            .map(|call| {
                let r = placeholder_result(call, reason, Some(label), upstream);
                self.answer(r, status)
            })
            .collect()
    }

    /// Wait while the pause gate is closed (an abort or the deadline still ends the wait).
    async fn park(&self) {
        self.cfg.pause.wait_until_resumed(&self.signal).await;
    }

    fn deadline_passed(&self) -> bool {
        self.cfg
            .deadline
            .is_some_and(|d| tokio::time::Instant::now() >= d)
    }

    fn aborted(&self) -> bool {
        self.signal.is_aborted()
    }

    fn push(&mut self, message: AgentMessage) {
        self.context.push(message);
    }

    fn emit_message(&self, message: &AgentMessage) {
        self.sink.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.sink.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
    }

    /// Insert messages into the context (committing asides) and return them for emission.
    fn insert_inputs(&mut self, inputs: Vec<Injected>) -> Vec<AgentMessage> {
        let mut out = Vec::with_capacity(inputs.len());
        for mut m in inputs {
            m.commit();
            self.push(m.message.clone());
            out.push(m.message);
        }
        self.unemitted.extend(out.iter().cloned());
        out
    }

    fn emit_inputs(&mut self, inputs: &[AgentMessage]) {
        for m in inputs {
            self.emit_message(m);
        }
        self.unemitted.clear();
    }

    fn open_turn(&mut self, inputs: &[AgentMessage]) {
        if !self.turn_open {
            self.sink.emit(AgentEvent::TurnStart);
            self.turn_open = true;
        }
        self.emit_inputs(inputs);
    }

    async fn steering(&self) -> Vec<Injected> {
        if self.aborted() {
            return Vec::new();
        }
        self.hooks
            .steering_messages(&self.signal)
            .await
            .into_iter()
            .map(Injected::plain)
            .collect()
    }

    async fn follow_ups(&self) -> Vec<Injected> {
        if self.aborted() {
            return Vec::new();
        }
        self.hooks
            .follow_up_messages(&self.signal)
            .await
            .into_iter()
            .map(Injected::plain)
            .collect()
    }

    /// Resolve the host's asides. A failing thunk discards the ones already resolved.
    fn asides(&mut self) -> Result<Vec<Injected>, LoopError> {
        if self.aborted() {
            return Ok(Vec::new());
        }
        let mut out: Vec<Injected> = Vec::new();
        for entry in self.hooks.aside_messages() {
            let resolved = match entry {
                AsideEntry::Ready(m) => Ok(Some(m)),
                AsideEntry::Deferred(f) => f(),
            };
            match resolved {
                Ok(Some(mut m)) => {
                    m.aside = true;
                    out.push(m);
                }
                Ok(None) => {}
                Err(e) => {
                    for mut m in out {
                        m.discard(&e);
                    }
                    return Err(LoopError::new(e));
                }
            }
        }
        Ok(out)
    }

    /// Stop at the deadline: insert what waits (asides are discarded, not inserted). A turn
    /// left open for a re-sample (a retry, a discarded leak) is closed with an aborted reply
    /// that names the deadline.
    fn end_at_deadline(&mut self, inputs: Vec<Injected>) {
        let (asides, keep): (Vec<_>, Vec<_>) = inputs.into_iter().partition(|m| m.aside);
        for mut a in asides {
            a.discard(DEADLINE_TEXT);
        }
        let msgs = self.insert_inputs(keep);
        self.emit_inputs(&msgs);
        if self.turn_open {
            let mut m =
                AssistantMessage::empty(&self.model.api, &self.model.provider, &self.model.id);
            m.content.push(ContentBlock::text(""));
            m.stop_reason = StopReason::Aborted;
            m.error_message = Some(DEADLINE_TEXT.to_string());
            self.end_retrying(false, Some(DEADLINE_TEXT.to_string()));
            let committed = self.commit_assistant(m, false, None);
            self.sink.emit(AgentEvent::TurnEnd {
                message: committed,
                tool_results: Vec::new(),
            });
            self.turn_open = false;
        }
    }

    async fn body(&mut self, prompts: Vec<Injected>) -> Result<(), LoopError> {
        if self.deadline_passed() {
            self.end_at_deadline(prompts);
            return Ok(());
        }
        let mut to_emit = prompts;
        self.park().await;
        let mut pending = self.steering().await;
        loop {
            let mut more = true;
            while more || !pending.is_empty() {
                // A paused agent waits here, before anything of the next call happens: the
                // settings it reads, the request it builds, `turn_start`.
                self.park().await;
                let mut inputs = std::mem::take(&mut to_emit);
                inputs.append(&mut pending);
                if self.deadline_passed() {
                    self.end_at_deadline(inputs);
                    return Ok(());
                }
                match self.turn(inputs).await? {
                    Step::Next(m) => more = m,
                    Step::Retry => {
                        // Same turn, same call: nothing is injected before it.
                        more = true;
                        continue;
                    }
                    Step::End => return Ok(()),
                }
                if self.deadline_passed() {
                    return Ok(());
                }
                pending = self.steering().await;
                if more {
                    let asides = self.asides()?;
                    pending.extend(asides);
                }
            }
            if self.deadline_passed() {
                return Ok(());
            }
            self.hooks.on_before_yield().await;
            if self.deadline_passed() {
                return Ok(());
            }
            let mut late = self.steering().await;
            late.extend(self.asides()?);
            late.extend(self.follow_ups().await);
            if late.is_empty() {
                return Ok(());
            }
            pending = late;
        }
    }

    /// One model call and what follows it. Every attempt of a call (the first and each retry)
    /// goes through the same steps: settings refresh, tool directive, context sync, pre-model
    /// gate, then the request.
    async fn turn(&mut self, inputs: Vec<Injected>) -> Result<Step, LoopError> {
        let mut inputs = self.insert_inputs(inputs);

        let refresh = self.hooks.sync_before_model_call(&self.signal).await;
        if let Some(p) = refresh.system_prompt {
            self.system_prompt = p;
        }
        if let Some(t) = refresh.tools {
            self.tools = t;
        }
        if let Some(m) = refresh.model {
            self.model = m;
        }
        if let Some(r) = refresh.reasoning {
            self.reasoning = r;
        }
        if let Some(d) = refresh.disable_reasoning {
            self.disable_reasoning = d;
        }

        if !self.directive_resolved {
            self.resolve_directive(&mut inputs);
        }

        if !self.turn_open {
            self.overflow_compacted = false;
        }
        if self.compaction_due() {
            self.compact(CompactionReason::Threshold, None).await;
        }
        let context = self.provider_context().await;
        if self.hooks.has_model_gate() {
            let decision = if self.aborted() {
                Ok(GateDecision::Stop(None))
            } else {
                self.hooks.before_model_call(&context, &self.signal).await
            };
            match decision {
                Err(e) => {
                    self.open_turn(&inputs);
                    return Err(LoopError::new(e));
                }
                Ok(GateDecision::Stop(reason)) => {
                    if self.turn_open {
                        // Only a retry reaches the gate with its turn open: close that turn.
                        self.stop_open_turn(reason).await;
                        return Ok(Step::End);
                    }
                    if !self.aborted()
                        && let Err(e) = self.hooks.on_tool_choice_rejected()
                    {
                        self.open_turn(&inputs);
                        return Err(LoopError::new(e));
                    }
                    self.emit_inputs(&inputs);
                    self.preserve_soft = !self.aborted();
                    return Ok(Step::End);
                }
                Ok(GateDecision::Proceed) => {}
            }
        }

        self.open_turn(&inputs);
        let committed = match self.stream_attempt(context).await? {
            Attempt::Aborted(m) => m,
            Attempt::Final {
                message,
                started_emitted,
                started,
            } => match self.settle(message, started_emitted, started).await? {
                Some(m) => m,
                None => return Ok(Step::Retry),
            },
        };
        let Some(assistant) = committed.as_assistant() else {
            return Err(LoopError::new(
                "Internal error: the committed reply is not an assistant message",
            ));
        };
        self.directive_resolved = false;
        self.host_choice = None;
        self.soft.forced = None;
        let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
        self.repetition.check(&calls).map_err(LoopError::new)?;
        let mut results: Vec<AgentMessage> = Vec::new();
        if matches!(
            assistant.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) {
            let reason = if assistant.stop_reason == StopReason::Error {
                PlaceholderReason::Error
            } else {
                PlaceholderReason::Aborted
            };
            let status = if reason == PlaceholderReason::Error {
                ToolStatus::Error
            } else {
                ToolStatus::Aborted
            };
            for call in &calls {
                let label = assistant
                    .tool_call_abort_messages
                    .as_ref()
                    .and_then(|m| m.get(&call.id))
                    .or(assistant.error_message.as_ref());
                let upstream = (reason == PlaceholderReason::Error)
                    .then_some(assistant.error_message.as_deref())
                    .flatten();
                let r = placeholder_result(call, reason, label.map(String::as_str), upstream);
                results.push(self.answer(r, status));
            }
            self.close_turn(&committed, results, false, false).await;
            return Ok(Step::End);
        }

        let mut more;
        let soft_violation = self.soft_violation(assistant)?;
        if let Some(tool_name) = soft_violation {
            let label = soft_skip_label(&tool_name);
            for call in &calls {
                let r = placeholder_result(call, PlaceholderReason::Skipped, Some(&label), None);
                results.push(self.answer(r, ToolStatus::Skipped));
            }
            more = true;
        } else if !calls.is_empty() && assistant.stop_reason != StopReason::Length {
            if self.deadline_passed() {
                for call in &calls {
                    let r = placeholder_result(
                        call,
                        PlaceholderReason::Aborted,
                        Some(DEADLINE_TEXT),
                        None,
                    );
                    results.push(self.answer(r, ToolStatus::Aborted));
                }
                more = false;
            } else {
                let prepared = std::mem::take(&mut self.prepared);
                let env = BatchEnv {
                    hooks: self.hooks.as_ref(),
                    sink: &self.sink,
                    signal: &self.signal,
                    interrupt_mode: self.cfg.interrupt_mode,
                    collector: self.collector.as_ref(),
                    pause: &self.cfg.pause,
                    results: &self.batch_results,
                };
                results = execute_batch(assistant, &prepared, &env).await;
                self.context.extend(results.iter().cloned());
                more = self.signal.reason() != Some(AbortReason::TerminalToolResult);
            }
        } else if !calls.is_empty() {
            for call in &calls {
                let r = placeholder_result(call, PlaceholderReason::Length, None, None);
                results.push(self.answer(r, ToolStatus::Skipped));
            }
            more = !self.deadline_passed();
        } else {
            more = false;
        }

        if !calls.is_empty() {
            self.paused_continuations = 0;
        } else if !more
            && assistant.stop_reason == StopReason::Stop
            && assistant.stop_detail_kind() == Some(STOP_PAUSE_TURN)
            && self.paused_continuations < MAX_PAUSED_TURN_CONTINUATIONS
        {
            self.paused_continuations += 1;
            more = true;
        }

        self.repetition.record(&calls, &results);
        let will_continue = more && !self.deadline_passed();
        self.close_turn(&committed, results, will_continue, true)
            .await;
        Ok(Step::Next(more))
    }

    /// A gate stopped the call of a turn that is already open (a retry): close the turn with
    /// an aborted reply that says why.
    async fn stop_open_turn(&mut self, reason: Option<String>) {
        let mut m = AssistantMessage::empty(&self.model.api, &self.model.provider, &self.model.id);
        m.content.push(ContentBlock::text(""));
        m.stop_reason = StopReason::Aborted;
        m.error_message = Some(
            reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| GATE_STOP_TEXT.to_string()),
        );
        self.end_retrying(false, m.error_message.clone());
        let committed = self.commit_assistant(m, false, None);
        let run_hook = !self.aborted();
        self.close_turn(&committed, Vec::new(), false, run_hook)
            .await;
    }

    /// Emit `auto_retry_end` if the current call was being retried.
    fn end_retrying(&mut self, success: bool, final_error: Option<String>) {
        if self.retries > 0 {
            self.sink.emit(AgentEvent::AutoRetryEnd {
                success,
                attempt: self.retries,
                final_error: (!success).then(|| final_error.unwrap_or_default()),
            });
            self.retries = 0;
        }
    }

    /// Emit a placeholder's event quadruple and insert it.
    fn answer(&mut self, result: ToolResultMessage, status: ToolStatus) -> AgentMessage {
        self.collect(|c| c.record_orphan_tool(&result.tool_name, status));
        let args = Arc::new(self.call_args(&result.tool_call_id));
        let message = emit_synthetic_result(self.sink.as_ref(), result, args);
        self.push(message.clone());
        message
    }

    /// Feed the run collector, if telemetry is on.
    fn collect(&self, f: impl FnOnce(&mut RunCollector)) {
        if let Some(c) = &self.collector {
            f(&mut lock(c));
        }
    }

    fn call_args(&self, id: &str) -> serde_json::Value {
        self.context
            .iter()
            .rev()
            .find_map(|m| m.as_assistant())
            .and_then(|a| a.tool_calls().find(|c| c.id == id))
            .map(|c| strip_sentinels(&c.arguments))
            .unwrap_or_default()
    }

    async fn close_turn(
        &mut self,
        committed: &AgentMessage,
        results: Vec<AgentMessage>,
        will_continue: bool,
        run_hook: bool,
    ) {
        self.sink.emit(AgentEvent::TurnEnd {
            message: committed.clone(),
            tool_results: results.clone(),
        });
        self.turn_open = false;
        if run_hook
            && !self.aborted()
            && let Some(assistant) = committed.as_assistant()
        {
            let info = TurnEndInfo {
                message: assistant,
                tool_results: &results,
                will_continue,
            };
            self.hooks.on_turn_end(&self.context, info).await;
        }
    }

    fn resolve_directive(&mut self, inputs: &mut Vec<AgentMessage>) {
        self.directive_resolved = true;
        self.host_choice = None;
        self.soft_req = None;
        if self.aborted() {
            return;
        }
        match self.hooks.tool_directive() {
            Some(ToolDirective::Hard(choice)) => {
                self.host_choice = Some(choice);
                self.soft.clear();
            }
            Some(ToolDirective::Soft(req)) if self.tools.contains(&req.tool_name) => {
                if self.soft.activate(&req) {
                    for m in &req.reminder {
                        self.push(m.clone());
                        self.unemitted.push(m.clone());
                        inputs.push(m.clone());
                    }
                }
                self.soft_req = Some(req);
            }
            _ => self.soft.clear(),
        }
    }

    /// The required tool's name when the reply breaks an active soft requirement.
    fn soft_violation(
        &mut self,
        assistant: &AssistantMessage,
    ) -> Result<Option<String>, LoopError> {
        let Some(req) = &self.soft_req else {
            return Ok(None);
        };
        if hard_choice_blocks(self.cfg.tool_choice.as_ref(), &req.tool_name)
            || is_compliant(req, assistant)
        {
            return Ok(None);
        }
        if self.soft.escalations >= crate::agent::policy::soft::MAX_SOFT_ESCALATIONS {
            return Err(LoopError::new(escalation_error(&req.tool_name)));
        }
        self.soft.forced = Some(ToolChoice::Tool(req.tool_name.clone()));
        self.soft.escalations += 1;
        Ok(Some(req.tool_name.clone()))
    }

    /// transform_context → convert_to_llm → provider normalisation → tools.
    async fn provider_context(&mut self) -> LlmContext {
        let transformed = self
            .hooks
            .transform_context(&self.context, &self.signal)
            .await;
        let shared = |v: Vec<Message>| v.into_iter().map(Arc::new).collect::<Vec<_>>();
        let custom = match &transformed {
            Some(msgs) => Some(
                self.hooks
                    .convert_to_llm(msgs)
                    .map(shared)
                    .unwrap_or_else(|| default_convert_to_llm(msgs)),
            ),
            None => self.hooks.convert_to_llm(&self.context).map(shared),
        };
        let messages: Arc<Vec<Arc<Message>>> = match custom {
            Some(msgs) => {
                self.llm_cache = Arc::new(Vec::new());
                self.converted = 0;
                Arc::new(msgs)
            }
            None => {
                if self.converted > self.context.len() {
                    self.llm_cache = Arc::new(Vec::new());
                    self.converted = 0;
                }
                let fresh = default_convert_to_llm(&self.context[self.converted..]);
                // The previous request is gone by now, so this appends in place.
                Arc::make_mut(&mut self.llm_cache).extend(fresh);
                self.converted = self.context.len();
                self.llm_cache.clone()
            }
        };
        let messages = normalize_messages_for_provider(messages, &self.model);
        let options = ToolNormalizeOptions {
            inject_intent: self.cfg.intent_tracing,
            prune_descriptions: self.cfg.prune_tool_descriptions,
        };
        let mut ctx = match &self.cfg.append_only {
            Some(ao) => {
                let mut ao = lock(ao);
                // A model changed between calls (or runs) starts the log over.
                ao.note_model(&self.model.provider, &self.model.api, &self.model.id);
                ao.sync_and_build(
                    &self.system_prompt,
                    &self.tools,
                    options,
                    messages.as_ref().clone(),
                )
            }
            None => {
                let key = Arc::as_ptr(&self.tools) as usize;
                let specs = match &self.tool_specs {
                    Some((k, specs)) if *k == key => specs.clone(),
                    _ => {
                        let specs = normalize_tools(&self.tools, options);
                        self.tool_specs = Some((key, specs.clone()));
                        specs
                    }
                };
                LlmContext {
                    system_prompt: self.system_prompt.clone(),
                    messages,
                    tools: specs,
                }
            }
        };
        self.hooks.transform_provider_context(&mut ctx, &self.model);
        self.collect(|c| c.note_tools_available(ctx.tools.iter().map(|t| t.name.as_str())));
        ctx
    }

    fn request_options(&self) -> StreamOptions {
        StreamOptions {
            reasoning: self.reasoning,
            disable_reasoning: self.disable_reasoning,
            tool_choice: self
                .host_choice
                .clone()
                .or_else(|| self.soft.forced.clone())
                .or_else(|| self.cfg.tool_choice.clone()),
            temperature: self
                .cfg
                .temperature
                .map(|t| t + harmony::TEMPERATURE_STEP * f64::from(self.harmony_retries)),
            max_tokens: self.cfg.max_tokens,
            session_id: self.cfg.session_id.clone(),
        }
    }

    /// The context has passed the model's window minus the reserve.
    fn compaction_due(&self) -> bool {
        let Some(settings) = self.cfg.compaction else {
            return false;
        };
        let window = self.model.context_window;
        if !settings.enabled || window == 0 {
            return false;
        }
        compaction::should_compact(
            compaction::context_tokens(&self.context).tokens,
            window,
            &settings,
        )
    }

    /// Condense the context: the older part is replaced by a summary the model writes (no
    /// tools offered), the newest messages stay. `true` when the context changed; a failed or
    /// stopped summary leaves it as it was (and says so in `compaction_end`).
    async fn compact(&mut self, reason: CompactionReason, focus: Option<&str>) -> bool {
        let Some(settings) = self.cfg.compaction else {
            return false;
        };
        // A summary is a model call: it waits behind a closed pause gate like any other.
        self.park().await;
        if self.aborted() {
            if reason == CompactionReason::Manual {
                self.sink.emit(AgentEvent::CompactionStart { reason });
                return self.compaction_failed(reason, None);
            }
            return false;
        }
        let Some(plan) = compaction::plan(&self.context, settings.keep_recent_tokens) else {
            // Asked for (`/compact`): say why nothing happens. Automatic: nothing to say.
            if reason == CompactionReason::Manual {
                self.sink.emit(AgentEvent::CompactionStart { reason });
                return self.compaction_failed(
                    reason,
                    Some(format!(
                        "nothing to compact: the conversation is within the {} tokens kept as \
                         they are",
                        settings.keep_recent_tokens
                    )),
                );
            }
            return false;
        };
        self.sink.emit(AgentEvent::CompactionStart { reason });
        let budget =
            compaction::transcript_budget(self.model.context_window, settings.reserve_tokens);
        let max_tool = compaction::MAX_TOOL_RESULT_CHARS;
        let mut history = plan.previous_summary.clone();
        if !plan.history.is_empty() {
            let request =
                compaction::history_request(&self.context, &plan, focus, max_tool, budget);
            match self.summarize(request).await {
                Ok(text) => history = Some(text),
                Err(e) => return self.compaction_failed(reason, e),
            }
        }
        let mut prefix = None;
        if let Some(range) = plan.turn_prefix.clone() {
            let request =
                compaction::turn_prefix_request(&self.context, range, focus, max_tool, budget);
            match self.summarize(request).await {
                Ok(text) => prefix = Some(text),
                Err(e) => return self.compaction_failed(reason, e),
            }
        }
        let summary = compaction::assemble(
            history.as_deref().unwrap_or_default(),
            prefix.as_deref(),
            &plan.files,
        );
        let first_kept = self.context[plan.first_kept].clone();
        if self.first_new < plan.first_kept {
            self.compacted_away.extend(
                self.context[self.first_new..plan.first_kept]
                    .iter()
                    .cloned(),
            );
        }
        self.context = compaction::compacted(&self.context, plan.first_kept, &summary, now_ms());
        self.first_new = if self.first_new >= plan.first_kept {
            self.first_new - plan.first_kept + 1
        } else {
            1
        };
        self.llm_cache = Arc::new(Vec::new());
        self.converted = 0;
        let tokens_after = self.context.iter().map(compaction::estimate_tokens).sum();
        self.sink.emit(AgentEvent::CompactionEnd {
            reason,
            result: Some(CompactionResult {
                summary,
                first_kept_entry_id: None,
                tokens_before: plan.tokens_before,
                tokens_after,
                details: plan.files.details(),
                first_kept: Some(first_kept),
            }),
            aborted: false,
            will_retry: reason == CompactionReason::Overflow,
            error_message: None,
        });
        true
    }

    fn compaction_failed(&self, reason: CompactionReason, error: Option<String>) -> bool {
        self.sink.emit(AgentEvent::CompactionEnd {
            reason,
            result: None,
            aborted: error.is_none(),
            will_retry: false,
            error_message: error,
        });
        false
    }

    /// Ask the model for a summary. `Err(None)`: stopped (Esc); `Err(Some(why))`: failed.
    async fn summarize(
        &self,
        request: compaction::SummaryRequest,
    ) -> Result<String, Option<String>> {
        summarize(
            &self.cfg.provider,
            &self.model,
            self.cfg.session_id.clone(),
            request,
            &self.signal,
        )
        .await
    }

    /// Decide what a finished attempt leads to: a retry after a transient failure (`None`,
    /// once its backoff has passed), or the committed reply.
    async fn settle(
        &mut self,
        mut message: AssistantMessage,
        started_emitted: bool,
        started: Instant,
    ) -> Result<Option<AgentMessage>, LoopError> {
        if harmony::applies_to(&self.model)
            && !self.aborted()
            && let Some(leak) = harmony::detect(&message)
        {
            return self.discard_leak(message, leak, started_emitted, started);
        }
        if message.stop_reason == StopReason::Error
            && is_context_overflow(&message)
            && self.cfg.compaction.is_some_and(|c| c.enabled)
            && !self.aborted()
        {
            if self.overflow_compacted {
                message.error_message = Some(format!(
                    "The conversation is still too long for {} after compacting it: {}",
                    self.model.id,
                    message
                        .error_message
                        .as_deref()
                        .unwrap_or("the request was refused")
                ));
            } else {
                self.overflow_compacted = true;
                if started_emitted {
                    // Shown as a failed attempt, then dropped, as a retried one is.
                    let mut shown = message.clone();
                    shown.stop_details = Some(StopDetails {
                        kind: STOP_RETRIED.to_string(),
                        category: None,
                        explanation: shown.error_message.clone(),
                    });
                    self.sink.emit(AgentEvent::MessageEnd {
                        message: shown.into(),
                    });
                }
                if self.compact(CompactionReason::Overflow, None).await {
                    self.streaming = None;
                    self.completed_calls.clear();
                    return Ok(None);
                }
                if self.aborted() {
                    return Ok(Some(self.finish_aborted()));
                }
            }
        }
        let retryable = message.stop_reason == StopReason::Error
            && message.transient.is_some()
            && self.retries < self.cfg.retry.max_retries
            && !self.aborted();
        if retryable {
            retain_completed_tool_calls(&mut message, &self.completed_calls);
            salvage_interrupted_tool_turn(&mut message, &self.tools);
        }
        if !(retryable && message.stop_reason == StopReason::Error) {
            let success = message.stop_reason != StopReason::Error;
            self.end_retrying(success, message.error_message.clone());
            return self
                .finish(message, started_emitted, started)
                .await
                .map(Some);
        }
        self.retries += 1;
        let error_text = message.error_message.clone().unwrap_or_default();
        // The failed attempt counts as a call; its partial never enters the transcript.
        self.record_discarded(&message, started);
        let retry_after = message.transient.as_ref().and_then(|t| t.retry_after_ms);
        // Kept in case the retry is given up: then this reply ends the run after all.
        let failed = message.clone();
        if started_emitted {
            // Shown as a failed attempt, then dropped: consumers keep it out of the transcript.
            message.stop_details = Some(StopDetails {
                kind: STOP_RETRIED.to_string(),
                category: None,
                explanation: message.error_message.clone(),
            });
            self.sink.emit(AgentEvent::MessageEnd {
                message: message.into(),
            });
        }
        let delay = self.cfg.retry.delay(self.retries, retry_after);
        self.sink.emit(AgentEvent::AutoRetryStart {
            attempt: self.retries,
            max_attempts: self.cfg.retry.max_retries,
            delay_ms: delay.as_millis() as u64,
            error_message: error_text,
        });
        let signal = self.signal.clone();
        let skip = self.cfg.skip_retry.clone();
        let skipped = skip.notified();
        tokio::pin!(skipped);
        // Registered before the wait, so a wake between the event above and the select counts.
        skipped.as_mut().enable();
        tokio::select! {
            _ = signal.cancelled() => Ok(Some(self.finish_aborted())),
            _ = &mut skipped => {
                self.end_retrying(false, Some(RETRY_SKIPPED_TEXT.to_string()));
                Ok(Some(self.commit_assistant(failed, false, None)))
            }
            _ = tokio::time::sleep(delay) => Ok(None),
        }
    }

    /// Drop a reply that leaked Harmony protocol text (spec §13.1). A shown partial ends as a
    /// discarded attempt (consumers drop it as they drop a retried one); nothing enters the
    /// context. `Ok(None)` samples the open turn again; after [`harmony::MAX_RETRIES`]
    /// re-samples the run fails.
    fn discard_leak(
        &mut self,
        mut message: AssistantMessage,
        leak: harmony::Leak,
        started_emitted: bool,
        started: Instant,
    ) -> Result<Option<AgentMessage>, LoopError> {
        // The discarded reply still counts as a model call.
        self.record_discarded(&message, started);
        let escalated = self.harmony_retries >= harmony::MAX_RETRIES;
        let signals = leak.signals.to_string();
        self.hooks.on_harmony_leak(HarmonyLeakInfo {
            escalated,
            retry: self.harmony_retries,
            signals: &signals,
            surface: leak.surface.as_str(),
            model: &self.model,
            removed_len: leak.len,
        });
        if started_emitted {
            let text = leak.discarded_text();
            message.stop_reason = StopReason::Error;
            message.error_message = Some(text.clone());
            message.stop_details = Some(StopDetails {
                kind: STOP_RETRIED.to_string(),
                category: None,
                explanation: Some(text),
            });
            self.sink.emit(AgentEvent::MessageEnd {
                message: message.into(),
            });
        }
        if escalated {
            return Err(LoopError::new(leak.persisted_text()));
        }
        self.harmony_retries += 1;
        Ok(None)
    }

    /// A reply that is thrown away (retried, or discarded for a leak) still counts as a model
    /// call; the partial being streamed is forgotten.
    fn record_discarded(&mut self, message: &AssistantMessage, started: Instant) {
        self.collect(|c| {
            c.record_chat(
                &message.model,
                &message.provider,
                message.stop_reason,
                started.elapsed().as_millis() as u64,
                &message.usage,
            )
        });
        self.streaming = None;
        self.completed_calls.clear();
    }

    /// One provider call, streamed to the end (or to an abort).
    async fn stream_attempt(&mut self, context: LlmContext) -> Result<Attempt, LoopError> {
        if self.aborted() {
            return Ok(Attempt::Aborted(self.finish_aborted()));
        }
        let request = ProviderRequest {
            model: self.model.clone(),
            context,
            options: self.request_options(),
        };
        let started = Instant::now();
        let provider = self.cfg.provider.clone();
        let token = self.signal.token().child_token();
        let mut stream = match contain_sync(move || provider.stream(request, token)) {
            Ok(s) => contain_stream(s),
            Err(panic) => {
                self.fail_chat(started);
                return Err(LoopError::new(provider_panic_text(&panic)));
            }
        };
        self.streaming = None;
        self.completed_calls.clear();
        let signal = self.signal.clone();
        let cancelled = signal.cancelled();
        tokio::pin!(cancelled);
        loop {
            let next = tokio::select! {
                biased;
                _ = &mut cancelled => None,
                ev = stream.next() => Some(ev),
            };
            let Some(next) = next else {
                // Closes the connection now, on another thread: a provider whose cleanup
                // stalls must not hold up the aborted boundary.
                drop_elsewhere(stream);
                return Ok(Attempt::Aborted(self.finish_aborted()));
            };
            let event = match next {
                None => {
                    self.fail_chat(started);
                    return Err(LoopError::new(
                        "The model's response ended before it was complete",
                    ));
                }
                Some(Err(e)) => {
                    self.fail_chat(started);
                    return Err(LoopError::new(e.message));
                }
                Some(Ok(ev)) => ev,
            };
            match event {
                StreamEvent::Done { message, .. } | StreamEvent::Error { error: message, .. } => {
                    drop(stream);
                    return Ok(Attempt::Final {
                        message: *message,
                        started_emitted: self.streaming.is_some(),
                        started,
                    });
                }
                StreamEvent::Start { ref partial } => match &mut self.streaming {
                    None => {
                        self.sink.emit(AgentEvent::MessageStart {
                            message: (**partial).clone().into(),
                        });
                        self.streaming = Some(MessageBuilder::new((**partial).clone()));
                    }
                    Some(b) => {
                        // The provider restarted the attempt: same message, fresh content.
                        b.apply(&event);
                        self.completed_calls.clear();
                        self.sink.emit(AgentEvent::MessageUpdate {
                            assistant_message_event: event,
                        });
                    }
                },
                ev => {
                    let Some(b) = &mut self.streaming else {
                        continue; // content before `start` is ignored
                    };
                    if let StreamEvent::ToolCallEnd { tool_call, .. } = &ev {
                        self.completed_calls.push(tool_call.id.clone());
                    }
                    b.apply(&ev);
                    self.hooks.on_assistant_event(b.message(), &ev);
                    self.sink.emit(AgentEvent::MessageUpdate {
                        assistant_message_event: ev,
                    });
                }
            }
        }
    }

    fn fail_chat(&self, started: Instant) {
        self.collect(|c| {
            c.fail_chat(
                &self.model.id,
                &self.model.provider,
                started.elapsed().as_millis() as u64,
                "stream_error",
            )
        });
    }

    /// The aborted boundary: the partial being streamed (or a fresh message) marked aborted.
    fn finish_aborted(&mut self) -> AgentMessage {
        let reason = self.signal.reason().unwrap_or(AbortReason::Requested);
        let builder = self.streaming.take();
        let had_partial = builder.is_some();
        let mut message = match builder {
            Some(b) => b.into_message(),
            None => AssistantMessage::empty(&self.model.api, &self.model.provider, &self.model.id),
        };
        message.stop_reason = StopReason::Aborted;
        message.error_message = Some(reason.text());
        let completed = std::mem::take(&mut self.completed_calls);
        retain_completed_tool_calls(&mut message, &completed);
        message.tool_call_abort_messages =
            reason.tool_labels(message.tool_calls().map(|c| c.id.as_str()));
        self.end_retrying(false, Some(reason.text()));
        self.commit_assistant(message, had_partial, Some(0))
    }

    /// Record (as a model call, when `latency_ms` is given), emit (`message_start` unless the
    /// partial already had one, then `message_end`) and insert the final assistant message.
    fn commit_assistant(
        &mut self,
        mut message: AssistantMessage,
        started_emitted: bool,
        latency_ms: Option<u64>,
    ) -> AgentMessage {
        if message.error_id.is_none() {
            let abort = self.signal.reason();
            message.error_id = error_id::classify(&message, abort.as_ref());
        }
        if let Some(latency_ms) = latency_ms {
            self.collect(|c| {
                c.record_chat(
                    &message.model,
                    &message.provider,
                    message.stop_reason,
                    latency_ms,
                    &message.usage,
                )
            });
        }
        self.streaming = None;
        self.completed_calls.clear();
        self.harmony_retries = 0;
        let m: AgentMessage = message.into();
        if !started_emitted {
            self.sink
                .emit(AgentEvent::MessageStart { message: m.clone() });
        }
        self.sink
            .emit(AgentEvent::MessageEnd { message: m.clone() });
        self.push(m.clone());
        m
    }

    async fn finish(
        &mut self,
        mut message: AssistantMessage,
        started_emitted: bool,
        started: Instant,
    ) -> Result<AgentMessage, LoopError> {
        if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            retain_completed_tool_calls(&mut message, &self.completed_calls);
            salvage_interrupted_tool_turn(&mut message, &self.tools);
        }
        self.hooks
            .transform_assistant_message(&mut message, &self.signal)
            .await
            .map_err(LoopError::new)?;
        self.prepared.clear();
        if matches!(message.stop_reason, StopReason::Stop | StopReason::ToolUse)
            && message.has_tool_calls()
        {
            self.prepared = prepare_calls(
                &mut message,
                &self.tools,
                self.hooks.as_ref(),
                self.cfg.intent_tracing,
                &self.signal,
            )
            .await;
        }
        Ok(self.commit_assistant(
            message,
            started_emitted,
            Some(started.elapsed().as_millis() as u64),
        ))
    }
}

/// Shown when a pre-model gate stops a call without saying why.
pub const GATE_STOP_TEXT: &str = "Stopped before the model call";

fn provider_panic_text(panic: &str) -> String {
    format!("The provider crashed while streaming: {panic}")
}

/// Drop an abandoned provider stream on the blocking pool, fire and forget: its cleanup
/// (closing a connection, a provider's own teardown) may take its time or even block, and the
/// loop does not wait for it. A panic in that cleanup stays on its thread.
fn drop_elsewhere(stream: EventStream) {
    drop(tokio::task::spawn_blocking(move || {
        let _ = contain_sync(move || drop(stream));
    }));
}

/// The provider's stream with its panics turned into out-of-band failures.
fn contain_stream(stream: EventStream) -> EventStream {
    let mut stream = Some(stream);
    futures::stream::poll_fn(move |cx| {
        let Some(s) = stream.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        match contain_sync(|| s.poll_next_unpin(cx)) {
            Ok(poll) => poll,
            Err(panic) => {
                stream = None;
                std::task::Poll::Ready(Some(Err(ProviderError::new(provider_panic_text(&panic)))))
            }
        }
    })
    .boxed()
}

/// Drop tool calls whose arguments never completed (their JSON may be cut short). If any were
/// dropped, mark the message as interrupted after content.
pub fn retain_completed_tool_calls(message: &mut AssistantMessage, completed: &[String]) {
    let before = message.content.len();
    message.content.retain(|b| match b {
        crate::agent::protocol::types::ContentBlock::ToolCall(c) => completed.contains(&c.id),
        _ => true,
    });
    if message.content.len() == before {
        return;
    }
    if message.stop_detail_kind() == Some(STREAM_INTERRUPTED_AFTER_CONTENT) {
        return;
    }
    let previous = message.stop_details.take();
    message.stop_details = Some(StopDetails {
        kind: STREAM_INTERRUPTED_AFTER_CONTENT.to_string(),
        category: previous.as_ref().map(|d| d.kind.clone()),
        explanation: previous
            .and_then(|d| d.explanation)
            .or_else(|| message.error_message.clone()),
    });
}

/// Turn an error reply back into a runnable tool turn when the stream broke after complete tool
/// calls: the calls are whole (`toolcall_end` was seen), so running them loses nothing.
pub fn salvage_interrupted_tool_turn(message: &mut AssistantMessage, tools: &ToolSet) {
    if message.stop_reason != StopReason::Error || !message.has_tool_calls() {
        return;
    }
    let refusal = |s: Option<&str>| matches!(s, Some(STOP_REFUSAL | STOP_SENSITIVE));
    if let Some(d) = &message.stop_details
        && (refusal(Some(d.kind.as_str())) || refusal(d.category.as_deref()))
    {
        return;
    }
    if !message.tool_calls().all(|c| tools.contains(&c.name)) {
        return;
    }
    if !message.stream_broken {
        return;
    }
    let previous = message.stop_details.take().unwrap_or_default();
    message.stop_details = Some(StopDetails {
        kind: STREAM_INTERRUPTED_AFTER_CONTENT.to_string(),
        category: if previous.kind == STREAM_INTERRUPTED_AFTER_CONTENT {
            previous.category
        } else if previous.kind.is_empty() {
            None
        } else {
            Some(previous.kind)
        },
        explanation: previous
            .explanation
            .or_else(|| message.error_message.clone()),
    });
    message.stop_reason = StopReason::ToolUse;
    message.error_message = None;
    message.error_status = None;
    message.stream_broken = false;
}

pub use crate::agent::policy::error_id::is_context_overflow;

/// Ask `model` for a summary (compaction, branch summaries): one request with no tools, the
/// whole text of the reply. `Err(None)`: `signal` stopped it; `Err(Some(why))`: it failed.
pub async fn summarize(
    provider: &Arc<dyn Provider>,
    model: &Model,
    session_id: Option<String>,
    request: compaction::SummaryRequest,
    signal: &AbortSignal,
) -> Result<String, Option<String>> {
    if signal.is_aborted() {
        return Err(None);
    }
    let message = Message::User(UserMessage {
        content: UserContent::Text(request.prompt),
        synthetic: true,
        steering: false,
        attribution: None,
        timestamp: now_ms(),
    });
    let request = ProviderRequest {
        model: model.clone(),
        context: LlmContext {
            system_prompt: vec![request.system],
            messages: Arc::new(vec![Arc::new(message)]),
            tools: Vec::new(),
        },
        options: StreamOptions {
            session_id,
            ..StreamOptions::default()
        },
    };
    let provider = provider.clone();
    let token = signal.token().child_token();
    let mut stream = match contain_sync(move || provider.stream(request, token)) {
        Ok(s) => contain_stream(s),
        Err(panic) => return Err(Some(provider_panic_text(&panic))),
    };
    let cancelled = signal.cancelled();
    tokio::pin!(cancelled);
    loop {
        let next = tokio::select! {
            biased;
            _ = &mut cancelled => {
                drop_elsewhere(stream);
                return Err(None);
            }
            ev = stream.next() => ev,
        };
        match next {
            None => return Err(Some("the summary response ended early".into())),
            Some(Err(e)) => return Err(Some(e.to_string())),
            Some(Ok(StreamEvent::Done { message, .. })) => {
                let text = message.text();
                return if text.trim().is_empty() {
                    Err(Some("the model wrote an empty summary".into()))
                } else {
                    Ok(text)
                };
            }
            Some(Ok(StreamEvent::Error { error, .. })) => {
                return Err(Some(
                    error
                        .error_message
                        .clone()
                        .unwrap_or_else(|| "the summary request failed".into()),
                ));
            }
            Some(Ok(_)) => {}
        }
    }
}

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
//! A run that fails (`Err`) has emitted no `agent_end`; the `Agent` facade closes it with an
//! error turn.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;

use crate::agent::engine::answer::emit_synthetic_result;
use crate::agent::engine::batch::{BatchEnv, PreparedCall, execute_batch, prepare_calls};
use crate::agent::engine::config::LoopConfig;
use crate::agent::policy::normalize::{
    ToolNormalizeOptions, default_convert_to_llm, normalize_messages_for_provider, normalize_tools,
};
use crate::agent::policy::placeholder::{PlaceholderReason, placeholder_result, soft_skip_label};
use crate::agent::policy::soft::{SoftState, escalation_error, hard_choice_blocks, is_compliant};
use crate::agent::policy::summary::RunCollector;
use crate::agent::protocol::abort::{AbortReason, AbortSignal, DEADLINE_TEXT};
use crate::agent::protocol::events::{AgentEvent, EventSink};
use crate::agent::protocol::hooks::{
    AsideEntry, GateDecision, Injected, LoopHooks, SoftToolRequirement, ToolDirective, TurnEndInfo,
};
use crate::agent::protocol::stream::{
    LlmContext, MessageBuilder, Model, ProviderRequest, StreamEvent, StreamOptions, ToolChoice,
    ToolSpec,
};
use crate::agent::protocol::summary::ToolStatus;
use crate::agent::protocol::thinking::Effort;
use crate::agent::protocol::tool::ToolSet;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, Message, STOP_PAUSE_TURN, STOP_REFUSAL, STOP_SENSITIVE,
    STREAM_INTERRUPTED_AFTER_CONTENT, StopDetails, StopReason, ToolCall, ToolResultMessage,
};

/// Re-samples allowed for a backend that keeps pausing its turn.
pub const MAX_PAUSED_TURN_CONTINUATIONS: u32 = 8;

/// A run that failed; the facade turns it into an error turn.
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

/// What a finished run leaves behind.
#[derive(Debug)]
pub struct RunOutcome {
    /// The whole transcript after the run.
    pub context: Vec<AgentMessage>,
    /// Where this run's messages start in `context`.
    pub first_new: usize,
    /// Soft-requirement state to carry into the next run (kept after a gate stop).
    pub soft_state: SoftState,
}

impl RunOutcome {
    /// The messages this run added, in insertion order.
    pub fn new_messages(&self) -> &[AgentMessage] {
        &self.context[self.first_new..]
    }
}

/// A failed run, with what it had done before failing.
#[derive(Debug)]
pub struct RunFailure {
    pub error: LoopError,
    pub context: Vec<AgentMessage>,
    pub new_messages: Vec<AgentMessage>,
}

/// Start a run with new prompt messages.
pub async fn run_prompt(
    prompts: Vec<Injected>,
    context: Vec<AgentMessage>,
    config: LoopConfig,
    soft_state: SoftState,
    signal: AbortSignal,
    sink: Arc<dyn EventSink>,
) -> Result<RunOutcome, RunFailure> {
    Run::new(context, config, soft_state, &signal, sink)
        .execute(prompts)
        .await
}

/// Continue from the current transcript (its tail must not be an assistant message).
pub async fn run_continue(
    context: Vec<AgentMessage>,
    config: LoopConfig,
    soft_state: SoftState,
    signal: AbortSignal,
    sink: Arc<dyn EventSink>,
) -> Result<RunOutcome, RunFailure> {
    check_continuable(&context).map_err(|error| RunFailure {
        error,
        context: context.clone(),
        new_messages: Vec::new(),
    })?;
    Run::new(context, config, soft_state, &signal, sink)
        .execute(Vec::new())
        .await
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
        completed: Vec<String>,
        started: Instant,
    },
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
    directive_resolved: bool,
    host_choice: Option<ToolChoice>,
    soft_req: Option<SoftToolRequirement>,
    soft: SoftState,
    preserve_soft: bool,
    paused_continuations: u32,
    /// The previous turn's tool calls (names and arguments) and how often they repeated.
    last_calls: Option<Vec<(String, serde_json::Value)>>,
    repeats: u32,
    prepared: Vec<PreparedCall>,
    collector: Option<Mutex<RunCollector>>,
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
                tokio::time::sleep_until(deadline.into()).await;
                s.abort(AbortReason::Deadline);
            })
        });
        let collector = cfg.telemetry.then(|| Mutex::new(RunCollector::new()));
        let first_new = context.len();
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
            directive_resolved: false,
            host_choice: None,
            soft_req: None,
            soft,
            preserve_soft: false,
            paused_continuations: 0,
            last_calls: None,
            repeats: 0,
            prepared: Vec::new(),
            collector,
            _timer: TimerGuard(timer),
        }
    }

    async fn execute(mut self, mut prompts: Vec<Injected>) -> Result<RunOutcome, RunFailure> {
        self.sink.emit(AgentEvent::AgentStart);
        for p in prompts.iter_mut() {
            p.commit();
        }
        let result = self.body(prompts).await;
        if !self.preserve_soft {
            self.soft.clear();
        }
        match result {
            Ok(()) => {
                let (telemetry, coverage) = match &self.collector {
                    Some(c) => {
                        let c = c.lock().unwrap_or_else(|p| p.into_inner());
                        (Some(c.summary()), Some(c.coverage()))
                    }
                    None => (None, None),
                };
                self.sink.emit(AgentEvent::AgentEnd {
                    messages: self.context[self.first_new..].to_vec(),
                    telemetry,
                    coverage,
                });
                Ok(RunOutcome {
                    context: self.context,
                    first_new: self.first_new,
                    soft_state: self.soft,
                })
            }
            Err(error) => Err(RunFailure {
                error,
                new_messages: self.context[self.first_new..].to_vec(),
                context: self.context,
            }),
        }
    }

    fn deadline_passed(&self) -> bool {
        self.cfg.deadline.is_some_and(|d| Instant::now() >= d)
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
        out
    }

    fn emit_inputs(&self, inputs: &[AgentMessage]) {
        for m in inputs {
            self.emit_message(m);
        }
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

    /// Stop at the deadline: insert what waits (asides are discarded, not inserted).
    fn end_at_deadline(&mut self, inputs: Vec<Injected>) {
        let (asides, keep): (Vec<_>, Vec<_>) = inputs.into_iter().partition(|m| m.aside);
        for mut a in asides {
            a.discard(DEADLINE_TEXT);
        }
        let msgs = self.insert_inputs(keep);
        self.emit_inputs(&msgs);
    }

    async fn body(&mut self, prompts: Vec<Injected>) -> Result<(), LoopError> {
        if self.deadline_passed() {
            self.end_at_deadline(prompts);
            return Ok(());
        }
        let mut to_emit = prompts;
        let mut pending = self.steering().await;
        loop {
            let mut more = true;
            while more || !pending.is_empty() {
                let mut inputs = std::mem::take(&mut to_emit);
                inputs.append(&mut pending);
                if self.deadline_passed() {
                    self.end_at_deadline(inputs);
                    return Ok(());
                }
                match self.turn(inputs).await? {
                    Some(m) => more = m,
                    None => return Ok(()),
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

    /// One turn. `Ok(Some(more))` to go on, `Ok(None)` when the run must end now.
    async fn turn(&mut self, inputs: Vec<Injected>) -> Result<Option<bool>, LoopError> {
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
                Ok(GateDecision::Stop(_reason)) => {
                    if !self.turn_open
                        && !self.aborted()
                        && let Err(e) = self.hooks.on_tool_choice_rejected()
                    {
                        self.open_turn(&inputs);
                        return Err(LoopError::new(e));
                    }
                    self.emit_inputs(&inputs);
                    self.preserve_soft = !self.aborted();
                    return Ok(None);
                }
                Ok(GateDecision::Proceed) => {}
            }
        }

        self.open_turn(&inputs);
        let committed = self.stream_assistant(context).await?;
        let Some(assistant) = committed.as_assistant() else {
            return Err(LoopError::new(
                "Internal error: the committed reply is not an assistant message",
            ));
        };
        self.directive_resolved = false;
        self.host_choice = None;
        self.soft.forced = None;
        self.check_repetition(assistant)?;

        let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
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
            return Ok(None);
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

        let will_continue = more && !self.deadline_passed();
        self.close_turn(&committed, results, will_continue, true)
            .await;
        Ok(Some(more))
    }

    /// Fail the run when the model keeps sending the very same tool calls turn after turn (a
    /// small local model stuck in a loop), instead of looping until the deadline.
    fn check_repetition(&mut self, assistant: &AssistantMessage) -> Result<(), LoopError> {
        let Some(limit) = self.cfg.max_repeated_tool_turns else {
            return Ok(());
        };
        if !assistant.has_tool_calls() {
            self.last_calls = None;
            self.repeats = 0;
            return Ok(());
        }
        let same = self.last_calls.as_ref().is_some_and(|last| {
            last.len() == assistant.tool_calls().count()
                && last
                    .iter()
                    .zip(assistant.tool_calls())
                    .all(|((name, args), c)| *name == c.name && *args == c.arguments)
        });
        if same {
            self.repeats += 1;
        } else {
            self.repeats = 0;
            self.last_calls = Some(
                assistant
                    .tool_calls()
                    .map(|c| (c.name.clone(), c.arguments.clone()))
                    .collect(),
            );
        }
        if self.repeats >= limit {
            return Err(LoopError::new(format!(
                "Stopped: the model sent the same tool call {} turns in a row without making progress",
                self.repeats + 1
            )));
        }
        Ok(())
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
            f(&mut c.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    fn call_args(&self, id: &str) -> serde_json::Value {
        self.context
            .iter()
            .rev()
            .find_map(|m| m.as_assistant())
            .and_then(|a| a.tool_calls().find(|c| c.id == id))
            .map(|c| crate::agent::policy::validate::strip_sentinels(&c.arguments))
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
            Some(ao) => ao.lock().unwrap_or_else(|p| p.into_inner()).sync_and_build(
                &self.system_prompt,
                &self.tools,
                options,
                messages.as_ref().clone(),
            ),
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
            temperature: self.cfg.temperature,
            max_tokens: self.cfg.max_tokens,
            session_id: self.cfg.session_id.clone(),
        }
    }

    /// Stream one reply, emit its message events and commit it to the context.
    async fn stream_assistant(&mut self, context: LlmContext) -> Result<AgentMessage, LoopError> {
        let mut attempt: u32 = 0;
        let mut next_context = Some(context);
        loop {
            // A retry rebuilds the (unchanged) context instead of keeping a copy of every request.
            let context = match next_context.take() {
                Some(c) => c,
                None => self.provider_context().await,
            };
            let outcome = self.stream_attempt(context).await?;
            let (message, started_emitted, completed, started) = match outcome {
                Attempt::Aborted(m) => return Ok(m),
                Attempt::Final {
                    message,
                    started_emitted,
                    completed,
                    started,
                } => (message, started_emitted, completed, started),
            };
            let mut message = message;
            let retryable = message.stop_reason == StopReason::Error
                && message.transient.is_some()
                && attempt < self.cfg.retry.max_retries
                && !self.aborted();
            if retryable {
                retain_completed_tool_calls(&mut message, &completed);
                salvage_interrupted_tool_turn(&mut message, &self.tools);
            }
            if retryable && message.stop_reason == StopReason::Error {
                attempt += 1;
                let error_text = message.error_message.clone().unwrap_or_default();
                if started_emitted {
                    // Show the failed attempt, but keep it out of what the model sees.
                    message.stop_details = Some(StopDetails {
                        kind: crate::agent::protocol::types::STOP_RETRIED.to_string(),
                        category: None,
                        explanation: message.error_message.clone(),
                    });
                    self.sink.emit(AgentEvent::MessageEnd {
                        message: message.clone().into(),
                    });
                }
                let retry_after = message.transient.as_ref().and_then(|t| t.retry_after_ms);
                let delay = self.cfg.retry.delay(attempt, retry_after);
                self.sink.emit(AgentEvent::AutoRetryStart {
                    attempt,
                    max_attempts: self.cfg.retry.max_retries,
                    delay_ms: delay.as_millis() as u64,
                    error_message: error_text,
                });
                let signal = self.signal.clone();
                tokio::select! {
                    _ = signal.cancelled() => return Ok(self.finish_aborted(None, &[])),
                    _ = tokio::time::sleep(delay) => {}
                }
                continue;
            }
            if attempt > 0 {
                let success = message.stop_reason != StopReason::Error;
                self.sink.emit(AgentEvent::AutoRetryEnd {
                    success,
                    attempt,
                    final_error: (!success)
                        .then(|| message.error_message.clone().unwrap_or_default()),
                });
            }
            return self
                .finish(message, started_emitted, &completed, started)
                .await;
        }
    }

    /// One provider call, streamed to the end (or to an abort).
    async fn stream_attempt(&mut self, context: LlmContext) -> Result<Attempt, LoopError> {
        if self.aborted() {
            return Ok(Attempt::Aborted(self.finish_aborted(None, &[])));
        }
        let request = ProviderRequest {
            model: self.model.clone(),
            context,
            options: self.request_options(),
        };
        let started = Instant::now();
        let mut stream = self
            .cfg
            .provider
            .stream(request, self.signal.token().child_token());
        let mut builder: Option<MessageBuilder> = None;
        let mut completed: Vec<String> = Vec::new();
        let signal = self.signal.clone();
        loop {
            let next = tokio::select! {
                biased;
                _ = signal.cancelled() => None,
                ev = stream.next() => Some(ev),
            };
            let Some(next) = next else {
                drop(stream); // closes the connection now
                return Ok(Attempt::Aborted(self.finish_aborted(builder, &completed)));
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
                        started_emitted: builder.is_some(),
                        completed,
                        started,
                    });
                }
                StreamEvent::Start { ref partial } => match &mut builder {
                    None => {
                        self.sink.emit(AgentEvent::MessageStart {
                            message: (**partial).clone().into(),
                        });
                        builder = Some(MessageBuilder::new((**partial).clone()));
                    }
                    Some(b) => {
                        // The provider restarted the attempt: same message, fresh content.
                        b.apply(&event);
                        completed.clear();
                        self.sink.emit(AgentEvent::MessageUpdate {
                            assistant_message_event: event,
                        });
                    }
                },
                ev => {
                    let Some(b) = &mut builder else {
                        continue; // content before `start` is ignored
                    };
                    if let StreamEvent::ToolCallEnd { tool_call, .. } = &ev {
                        completed.push(tool_call.id.clone());
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

    /// The aborted boundary: the partial (or a fresh message) marked aborted.
    fn finish_aborted(
        &mut self,
        builder: Option<MessageBuilder>,
        completed: &[String],
    ) -> AgentMessage {
        let reason = self.signal.reason().unwrap_or(AbortReason::Requested);
        let had_partial = builder.is_some();
        let mut message = match builder {
            Some(b) => b.into_message(),
            None => AssistantMessage::empty(&self.model.api, &self.model.provider, &self.model.id),
        };
        message.stop_reason = StopReason::Aborted;
        message.error_message = Some(reason.text());
        retain_completed_tool_calls(&mut message, completed);
        message.tool_call_abort_messages =
            reason.tool_labels(message.tool_calls().map(|c| c.id.as_str()));
        self.commit_assistant(message, had_partial, 0)
    }

    /// Record, emit (`message_start` unless the partial already had one, then `message_end`)
    /// and insert the final assistant message.
    fn commit_assistant(
        &mut self,
        message: AssistantMessage,
        started_emitted: bool,
        latency_ms: u64,
    ) -> AgentMessage {
        self.collect(|c| {
            c.record_chat(
                &message.model,
                &message.provider,
                message.stop_reason,
                latency_ms,
                &message.usage,
            )
        });
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
        completed: &[String],
        started: Instant,
    ) -> Result<AgentMessage, LoopError> {
        if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            retain_completed_tool_calls(&mut message, completed);
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
            started.elapsed().as_millis() as u64,
        ))
    }
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

/// Markers of a stream that broke while being read (not a model or request error).
const STREAM_BREAK_MARKERS: [&str; 8] = [
    "stream_read_error",
    "stream read error",
    "stream envelope error:",
    "error decoding response body",
    "unexpected end of json",
    "eof while parsing",
    "unterminated string",
    "connection closed before message completed",
];

fn is_stream_break(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    STREAM_BREAK_MARKERS.iter().any(|m| lower.contains(m))
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
    let mut text = message.error_message.clone().unwrap_or_default();
    if let Some(e) = message
        .stop_details
        .as_ref()
        .and_then(|d| d.explanation.as_ref())
    {
        text.push(' ');
        text.push_str(e);
    }
    if !is_stream_break(&text) {
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
}

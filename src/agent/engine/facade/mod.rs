//! The `Agent`: a long-lived conversation that runs the loop on a background task.
//!
//! It owns the transcript, the steering and follow-up queues, and the current run. `prompt` and
//! `continue_run` start a run (one at a time: a second is refused with [`AgentError::Busy`]);
//! `steer` and `follow_up` queue messages the running loop picks up at its boundaries; `abort`
//! stops the run and keeps the queues for a later `continue_run`. Every event the loop emits
//! first updates [`AgentState`] and is then sent to each subscriber, so a UI, a JSON printer and
//! a session recorder all see the same stream. A run that fails is closed with an error turn
//! here, so subscribers always see balanced `turn_start`/`turn_end` and one `agent_end`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, watch};

use crate::agent::engine::answer::emit_synthetic_result;
use crate::agent::engine::config::LoopConfig;
use crate::agent::engine::host_hooks::{self, HookId, HookList, SignalHook};
use crate::agent::engine::run::{check_continuable, run_compact, run_continue, run_prompt};
use crate::agent::lock;
use crate::agent::policy::append_only::AppendOnlyContext;
use crate::agent::policy::normalize::{
    ToolNormalizeOptions, normalize_messages_for_provider, normalize_tools,
};
use crate::agent::policy::placeholder::unanswered_calls;
use crate::agent::policy::placeholder::{PlaceholderReason, placeholder_result};
use crate::agent::policy::soft::SoftState;
use crate::agent::policy::validate::strip_sentinels;
use crate::agent::protocol::abort::{AbortReason, AbortSignal};
use crate::agent::protocol::command::{AgentError, AgentState, QueueMode};
use crate::agent::protocol::events::{AgentEvent, EventSink, RunEvent, RunId};
use crate::agent::protocol::hooks::{
    AfterToolCallInfo, AsideEntry, BeforeToolCall, ContextRefresh, GateDecision, Injected,
    InterruptMode, LoopHooks, NoHooks, ResultOverride, SteeringPeek, SteeringSource, ToolDirective,
    TurnEndInfo,
};
use crate::agent::protocol::paced::{
    EventSender, PacedProvider, PacedReceiver, Pacer, paced_channel,
};
use crate::agent::protocol::panic::contain;
use crate::agent::protocol::stream::{LlmContext, Model, Provider, StreamEvent, ToolChoice};
use crate::agent::protocol::summary::{RunCoverage, RunSummary};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::tool::{AgentTool, ToolSet};
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, Attribution, Message, ToolCall,
};

mod hooks;
mod stream;

use hooks::{FacadeHooks, ToolState};
pub use stream::classify_steering;
use stream::{FacadeSink, Subscriber, apply_to, broadcast, preview};

/// Settings used for the next run (and re-read between provider calls).
#[derive(Clone)]
pub struct AgentSettings {
    pub provider: Arc<dyn Provider>,
    pub model: Model,
    pub system_prompt: Vec<String>,
    pub tools: Arc<ToolSet>,
    pub thinking: ThinkingLevel,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub interrupt_mode: InterruptMode,
    /// Offered on every turn while its tool is active.
    pub tool_choice: Option<ToolChoice>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub session_id: Option<String>,
    pub intent_tracing: bool,
    pub prune_tool_descriptions: bool,
    pub telemetry: bool,
    pub retry: crate::agent::engine::config::RetryPolicy,
    pub deadline: Option<tokio::time::Instant>,
    /// When and how to condense long conversations (`None`: never).
    pub compaction: Option<crate::agent::policy::compaction::CompactionSettings>,
    /// See [`LoopConfig::max_repeated_tool_turns`].
    pub max_repeated_tool_turns: Option<u32>,
    /// Send the model an append-only context (spec §10): messages already sent go again as
    /// they were sent, and the system prompt and tool specs as they were snapshotted, so a
    /// provider's prompt cache keeps matching. The log lives as long as the agent, across
    /// runs; it starts over after compaction (a shorter history), another model or `reset`,
    /// and a message rewritten in place is sent anew with everything after it.
    pub append_only: bool,
    /// Host hooks (gates, tool hooks, transforms). Queues are the agent's own.
    pub hooks: Arc<dyn LoopHooks>,
}

impl AgentSettings {
    pub fn new(provider: Arc<dyn Provider>, model: Model) -> Self {
        AgentSettings {
            provider,
            model,
            system_prompt: Vec::new(),
            tools: Arc::new(ToolSet::default()),
            thinking: ThinkingLevel::Off,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            interrupt_mode: InterruptMode::Immediate,
            tool_choice: None,
            temperature: None,
            max_tokens: None,
            session_id: None,
            intent_tracing: false,
            prune_tool_descriptions: false,
            telemetry: false,
            retry: crate::agent::engine::config::RetryPolicy::default(),
            deadline: None,
            compaction: Some(Default::default()),
            max_repeated_tool_turns: Some(
                crate::agent::engine::config::DEFAULT_MAX_REPEATED_TOOL_TURNS,
            ),
            append_only: false,
            hooks: Arc::new(NoHooks),
        }
    }

    pub fn with_tools(mut self, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        self.tools = Arc::new(ToolSet::new(tools));
        self
    }
}

#[derive(Default)]
struct Queues {
    steering: VecDeque<AgentMessage>,
    follow_up: VecDeque<AgentMessage>,
}

struct RunHandle {
    id: u64,
    signal: AbortSignal,
}

/// The active run, if any, and the id of the newest run started.
#[derive(Default)]
struct RunSlot {
    current: Option<RunHandle>,
    last_id: u64,
}

/// The host's hook lists.
#[derive(Default)]
struct HostHooks {
    /// Awaited before any queued message is taken.
    dequeue: HookList,
    /// Awaited before each model call, before its settings are read.
    model_call: HookList,
}

/// What the facade's calls and its runs share, behind the one lock (`Inner::shared`). The lock
/// is never held across an `.await` nor while a host hook or the loop runs; events are applied
/// to the state and handed to the subscribers under it, so every subscriber sees them in the
/// order the state took them.
struct Shared {
    state: AgentState,
    /// A run that `reset` cut loose (0: none): its events and its outcome no longer touch
    /// the state.
    detached: RunId,
    settings: AgentSettings,
    queues: Queues,
    subscribers: Vec<Subscriber>,
    run: RunSlot,
    /// Soft-requirement state carried between runs, and the one-shot tool choices.
    tool_state: ToolState,
    host_hooks: HostHooks,
    /// Messages a host added with `emit_external_event` while a run was active: the run's
    /// outcome does not hold them, so they are added back after it, unless that run's outcome
    /// was written back already (`written_back`, the last run whose outcome replaced the
    /// transcript).
    external: Vec<AgentMessage>,
    written_back: RunId,
}

impl Shared {
    /// Tell the subscribers what the queues hold now.
    fn send_queue_update(&mut self) {
        let event = AgentEvent::QueueUpdate {
            steering: self.queues.steering.iter().map(preview).collect(),
            follow_up: self.queues.follow_up.iter().map(preview).collect(),
        };
        broadcast(&mut self.subscribers, None, event);
    }
}

struct Inner {
    shared: Mutex<Shared>,
    steer_notify: Arc<Notify>,
    /// Gives up a retry whose backoff is running (see `LoopConfig::skip_retry`).
    skip_retry: Arc<Notify>,
    pause: crate::agent::protocol::pause::PauseGate,
    /// The gauges of paced subscribers, which the model stream waits on.
    pacer: Arc<Pacer>,
    idle: watch::Sender<u64>,
    suppress_steering_once: AtomicBool,
    /// The request log kept across runs while `AgentSettings::append_only` is on. Its own lock:
    /// the loop holds it while it builds a request, apart from the facade's state.
    append_only: Arc<Mutex<AppendOnlyContext>>,
}

/// A conversation with a model and tools. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

/// A handle on an [`Agent`] that does not keep it alive: for what the agent itself holds (a
/// tool that reads its settings) without a reference cycle.
#[derive(Clone)]
pub struct WeakAgent(std::sync::Weak<Inner>);

impl WeakAgent {
    /// The agent, while it exists.
    pub fn upgrade(&self) -> Option<Agent> {
        self.0.upgrade().map(|inner| Agent { inner })
    }
}

impl Agent {
    pub fn new(settings: AgentSettings) -> Self {
        let (idle, _) = watch::channel(0);
        Agent {
            inner: Arc::new(Inner {
                shared: Mutex::new(Shared {
                    state: AgentState::default(),
                    detached: 0,
                    settings,
                    queues: Queues::default(),
                    subscribers: Vec::new(),
                    run: RunSlot::default(),
                    tool_state: ToolState::default(),
                    host_hooks: HostHooks::default(),
                    external: Vec::new(),
                    written_back: 0,
                }),
                steer_notify: Arc::new(Notify::new()),
                skip_retry: Arc::new(Notify::new()),
                pause: Default::default(),
                pacer: Arc::default(),
                idle,
                suppress_steering_once: AtomicBool::new(false),
                append_only: Arc::new(Mutex::new(AppendOnlyContext::new())),
            }),
        }
    }

    /// A handle that does not keep this agent alive.
    pub fn downgrade(&self) -> WeakAgent {
        WeakAgent(Arc::downgrade(&self.inner))
    }

    /// A copy of the current state.
    pub fn state(&self) -> AgentState {
        let mut state = {
            let shared = self.shared();
            let mut state = shared.state.clone();
            state.pending_messages = shared.queues.steering.len() + shared.queues.follow_up.len();
            state
        };
        state.paused = self.inner.pause.is_paused();
        state
    }

    pub fn messages(&self) -> Vec<AgentMessage> {
        self.shared().state.messages.clone()
    }

    pub fn is_streaming(&self) -> bool {
        self.shared().state.is_streaming
    }

    /// The id of the newest run started so far (0 before the first).
    pub fn last_run(&self) -> RunId {
        self.shared().run.last_id
    }

    /// Replace the transcript (e.g. a resumed session). Refused while a run is active.
    pub fn replace_messages(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        let st = &mut self.shared().state;
        if st.is_streaming {
            return Err(AgentError::Busy);
        }
        st.messages = messages;
        st.error = None;
        Ok(())
    }

    /// Change the settings; a running loop sees model, prompt, tools and thinking on its next call.
    /// `f` runs under the agent's lock: it must not call the agent.
    pub fn update_settings(&self, f: impl FnOnce(&mut AgentSettings)) {
        f(&mut self.shared().settings);
    }

    pub fn settings(&self) -> AgentSettings {
        self.shared().settings.clone()
    }

    /// Receive every event from now on, each with the run it belongs to.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<RunEvent> {
        self.subscribe_filtered(|_| true)
    }

    /// Receive the events `wanted` accepts (a session recorder has no use for the deltas, and
    /// should not be woken by each one).
    pub fn subscribe_filtered(
        &self,
        wanted: fn(&AgentEvent) -> bool,
    ) -> mpsc::UnboundedReceiver<RunEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let tx = EventSender::plain(tx);
        self.shared().subscribers.push(Subscriber { tx, wanted });
        rx
    }

    /// Receive the events `wanted` accepts, the model stream waiting while `limit` of them
    /// are queued for this subscriber and not yet taken (see [`crate::agent::protocol::paced`]).
    pub fn subscribe_paced(&self, limit: usize, wanted: fn(&AgentEvent) -> bool) -> PacedReceiver {
        let (tx, rx, gauge) = paced_channel(limit);
        self.inner.pacer.register(&gauge);
        self.shared().subscribers.push(Subscriber { tx, wanted });
        rx
    }

    /// Start a run with a user text prompt.
    pub fn prompt_text(&self, text: impl Into<String>) -> Result<RunId, AgentError> {
        self.prompt(vec![AgentMessage::user(text)])
    }

    /// Start a run with the given messages.
    pub fn prompt(&self, messages: Vec<AgentMessage>) -> Result<RunId, AgentError> {
        let (id, signal) = self.claim()?;
        let prompts = messages.into_iter().map(Injected::plain).collect();
        self.spawn_run(id, signal, RunKind::Prompt(prompts));
        Ok(id)
    }

    /// Continue from the transcript: run queued messages if the tail cannot be continued.
    ///
    /// With dequeue hooks added, taking the queued messages waits for them (on the run's task:
    /// the agent is busy, and an abort stops it, meanwhile); if nothing is queued then, the run
    /// ends at once (`agent_start`, `agent_end` with no messages) and the state's error says
    /// why.
    pub fn continue_run(&self) -> Result<RunId, AgentError> {
        let (id, signal) = self.claim()?;
        let messages = self.messages();
        let kind = match check_continuable(&messages) {
            Ok(()) => RunKind::Continue,
            Err(e) if !self.shared().host_hooks.dequeue.is_empty() => {
                RunKind::FromQueues(e.message)
            }
            Err(e) => {
                let steer = self.take_queue(QueueSide::Steering, &signal);
                if !steer.is_empty() {
                    self.inner
                        .suppress_steering_once
                        .store(true, Ordering::SeqCst);
                    RunKind::Prompt(steer.into_iter().map(Injected::plain).collect())
                } else {
                    let fups = self.take_queue(QueueSide::FollowUp, &signal);
                    if fups.is_empty() {
                        self.release(id, None);
                        return Err(AgentError::CannotContinue(e.message));
                    }
                    RunKind::Prompt(fups.into_iter().map(Injected::plain).collect())
                }
            }
        };
        self.spawn_run(id, signal, kind);
        Ok(id)
    }

    /// Condense the conversation now, as a run of its own (abortable, refused while another
    /// runs): only `compaction_start` / `compaction_end` are emitted.
    pub fn compact(&self, focus: Option<String>) -> Result<RunId, AgentError> {
        let (id, signal) = self.claim()?;
        self.spawn_run(id, signal, RunKind::Compact(focus));
        Ok(id)
    }

    /// Queue a steering message: delivered at the next tool boundary, interrupting the batch.
    pub fn steer(&self, message: AgentMessage) {
        self.shared().queues.steering.push_back(message);
        self.inner.steer_notify.notify_waiters();
        self.emit_queue_update();
    }

    pub fn steer_text(&self, text: impl Into<String>) {
        self.steer(AgentMessage::user(text));
    }

    /// Queue a message for when the agent would otherwise stop.
    pub fn follow_up(&self, message: AgentMessage) {
        let mut shared = self.shared();
        shared.queues.follow_up.push_back(message);
        shared.send_queue_update();
    }

    pub fn follow_up_text(&self, text: impl Into<String>) {
        self.follow_up(AgentMessage::user(text));
    }

    pub fn peek_steering_queue(&self) -> Vec<AgentMessage> {
        self.shared().queues.steering.iter().cloned().collect()
    }

    pub fn peek_follow_up_queue(&self) -> Vec<AgentMessage> {
        self.shared().queues.follow_up.iter().cloned().collect()
    }

    pub fn has_queued_messages(&self) -> bool {
        let q = &self.shared().queues;
        !q.steering.is_empty() || !q.follow_up.is_empty()
    }

    /// Remove the most recent steering message.
    pub fn pop_last_steer(&self) -> Option<AgentMessage> {
        let mut shared = self.shared();
        let m = shared.queues.steering.pop_back();
        shared.send_queue_update();
        m
    }

    pub fn pop_last_follow_up(&self) -> Option<AgentMessage> {
        let mut shared = self.shared();
        let m = shared.queues.follow_up.pop_back();
        shared.send_queue_update();
        m
    }

    /// Empty both queues and return what they held (steering first), e.g. to restore an editor.
    pub fn clear_all_queues(&self) -> Vec<AgentMessage> {
        let mut shared = self.shared();
        let mut out: Vec<AgentMessage> = shared.queues.steering.drain(..).collect();
        out.extend(shared.queues.follow_up.drain(..));
        shared.tool_state = ToolState::default();
        shared.send_queue_update();
        out
    }

    /// Force `choice` on the next model call, once. If a gate stops the run before that call
    /// is made, the choice is kept for the next run (and dropped if its tool is gone by then).
    pub fn force_tool_choice(&self, choice: ToolChoice) {
        self.shared().tool_state.choices.queued = Some(choice);
    }

    /// Add a hook awaited before the agent takes queued messages (steering or follow-up, at
    /// every boundary and in `continue_run`), with the signal of the run taking them. A hook
    /// may queue messages itself; once the signal fired, nothing is taken.
    pub fn add_before_dequeue_hook(&self, hook: SignalHook) -> HookId {
        self.shared().host_hooks.dequeue.add(hook)
    }

    /// `false` when the hook was removed already.
    pub fn remove_before_dequeue_hook(&self, id: HookId) -> bool {
        self.shared().host_hooks.dequeue.remove(id)
    }

    /// Add a hook awaited before each model call of every run, with the run's signal: after
    /// the pause gate, before the call's settings are read (so what it changes applies).
    pub fn add_before_model_call_hook(&self, hook: SignalHook) -> HookId {
        self.shared().host_hooks.model_call.add(hook)
    }

    /// `false` when the hook was removed already.
    pub fn remove_before_model_call_hook(&self, id: HookId) -> bool {
        self.shared().host_hooks.model_call.remove(id)
    }

    /// Apply `event` to the state as if the loop had emitted it, then send it to subscribers
    /// (stamped with the active run, if any). A `message_end` adds its message to the
    /// transcript; one added during a run is kept after the run's own messages.
    pub fn emit_external_event(&self, event: AgentEvent) {
        let mut shared = self.shared();
        let run = shared.run.current.as_ref().map(|r| r.id);
        if let (Some(run), AgentEvent::MessageEnd { message }) = (run, &event)
            && !message.is_retried_attempt()
            && shared.written_back != run
        {
            shared.external.push(message.clone());
        }
        apply_to(&mut shared.state, &event);
        broadcast(&mut shared.subscribers, run, event);
    }

    /// A provider context for a side request (a title, a summary) that shares the main loop's
    /// prompt-cache prefix: the same system prompt (unless given) and the same tool specs the
    /// next model call would send, `messages` normalised for the model, and the host's
    /// `transform_provider_context` applied.
    pub fn side_request_context(
        &self,
        messages: Vec<Message>,
        system_prompt: Option<Vec<String>>,
    ) -> LlmContext {
        let s = self.settings();
        let options = ToolNormalizeOptions {
            inject_intent: s.intent_tracing,
            prune_descriptions: s.prune_tool_descriptions,
        };
        let messages = normalize_messages_for_provider(
            Arc::new(messages.into_iter().map(Arc::new).collect()),
            &s.model,
        );
        let mut ctx = LlmContext {
            system_prompt: system_prompt.unwrap_or(s.system_prompt),
            messages,
            tools: normalize_tools(&s.tools, options),
        };
        s.hooks.transform_provider_context(&mut ctx, &s.model);
        ctx
    }

    async fn run_dequeue_hooks(&self, signal: &AbortSignal) {
        let hooks = self.shared().host_hooks.dequeue.snapshot();
        host_hooks::run_all(hooks, signal).await;
    }

    /// What `continue_run` runs when the transcript cannot be continued: the queued steering
    /// (the loop's first steering poll then skipped), else a follow-up, taken after the
    /// dequeue hooks; nothing once `signal` fired.
    async fn dequeue_for_continue(&self, signal: &AbortSignal) -> Vec<Injected> {
        self.run_dequeue_hooks(signal).await;
        let steer = self.take_queue(QueueSide::Steering, signal);
        let taken = if steer.is_empty() {
            self.take_queue(QueueSide::FollowUp, signal)
        } else {
            self.inner
                .suppress_steering_once
                .store(true, Ordering::SeqCst);
            steer
        };
        taken.into_iter().map(Injected::plain).collect()
    }

    /// Abort the current run (no-op when idle).
    pub fn abort(&self, reason: Option<String>) {
        if let Some(run) = self.shared().run.current.as_ref() {
            run.signal.abort(match reason {
                Some(r) => AbortReason::Message(r),
                None => AbortReason::Requested,
            });
        }
    }

    /// The gate that holds runs back at their next boundary (see `PauseGate`).
    pub fn pause_gate(&self) -> &crate::agent::protocol::pause::PauseGate {
        &self.inner.pause
    }

    /// Give up the retry whose backoff is running: its failed reply ends the run as an error.
    /// Does nothing when no retry is waiting.
    pub fn abort_retry(&self) {
        self.inner.skip_retry.notify_waiters();
    }

    /// Resolves when no run is active.
    pub async fn wait_idle(&self) {
        let mut rx = self.inner.idle.subscribe();
        loop {
            if self.shared().run.current.is_none() {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Clear transcript, queues, error and soft state. Does not abort a running loop, but cuts
    /// it loose: its later events still reach subscribers (stamped with its run), yet neither
    /// they nor its outcome change the state again, so the reset is never undone. The agent
    /// stays busy until that run ends (abort it and `wait_idle` to be done with it).
    pub fn reset(&self) {
        {
            let mut shared = self.shared();
            if let Some(id) = shared.run.current.as_ref().map(|r| r.id) {
                shared.detached = id;
            }
            let st = &mut shared.state;
            st.messages.clear();
            st.error = None;
            st.pending_tool_calls.clear();
        }
        // A new conversation sends everything afresh.
        let mut ao = lock(&self.inner.append_only);
        ao.reset_sync_cursor();
        ao.invalidate();
        drop(ao);
        self.clear_all_queues();
    }

    /// The one lock over what the facade's calls and its runs share (see [`Shared`]).
    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        lock(&self.inner.shared)
    }

    fn claim(&self) -> Result<(u64, AbortSignal), AgentError> {
        let mut shared = self.shared();
        let run = &mut shared.run;
        if run.current.is_some() {
            return Err(AgentError::Busy);
        }
        run.last_id += 1;
        let id = run.last_id;
        let signal = AbortSignal::new();
        // One-shot and per run: an earlier run that ended before its first steering poll (e.g.
        // aborted at once) must not leave it set for this one.
        self.inner
            .suppress_steering_once
            .store(false, Ordering::SeqCst);
        run.current = Some(RunHandle {
            id,
            signal: signal.clone(),
        });
        let st = &mut shared.state;
        st.is_streaming = true;
        st.error = None;
        Ok((id, signal))
    }

    /// End run `id`, then send its held `agent_end` (if any): a subscriber reacting to it finds
    /// the agent idle, and no successor can start (and emit) before it is sent.
    fn release(&self, id: u64, agent_end: Option<AgentEvent>) {
        let mut shared = self.shared();
        if shared.run.current.as_ref().is_some_and(|r| r.id == id) {
            shared.run.current = None;
            shared.state.is_streaming = false;
            shared.state.pending_tool_calls.clear();
            if let Some(e) = agent_end {
                broadcast(&mut shared.subscribers, Some(id), e);
            }
            drop(shared);
            self.inner.idle.send_modify(|v| *v = id);
        } else if let Some(e) = agent_end {
            broadcast(&mut shared.subscribers, Some(id), e);
        }
    }

    fn spawn_run(&self, id: u64, signal: AbortSignal, kind: RunKind) {
        let agent = self.clone();
        tokio::spawn(async move {
            agent.run_task(id, signal, kind).await;
        });
    }

    async fn run_task(&self, id: u64, signal: AbortSignal, kind: RunKind) {
        let settings = self.settings();
        let config = self.loop_config(&settings);
        let context = self.messages();
        let soft = self.shared().tool_state.soft.clone();
        let facade_sink = Arc::new(FacadeSink::new(self.clone(), id));
        let sink: Arc<dyn EventSink> = facade_sink.clone();
        let run = async {
            match kind {
                RunKind::Prompt(prompts) => {
                    Ok(run_prompt(prompts, context, config, soft, signal.clone(), sink).await)
                }
                RunKind::Continue => {
                    run_continue(context, config, soft, signal.clone(), sink).await
                }
                RunKind::Compact(focus) => {
                    Ok(run_compact(context, config, soft, focus, signal.clone(), sink).await)
                }
                RunKind::FromQueues(why) => {
                    let prompts = self.dequeue_for_continue(&signal).await;
                    if prompts.is_empty() {
                        sink.emit(AgentEvent::AgentStart);
                        sink.emit(AgentEvent::AgentEnd {
                            messages: Vec::new(),
                            telemetry: None,
                            coverage: None,
                        });
                        let why = if signal.is_aborted() {
                            signal.reason_text()
                        } else {
                            why
                        };
                        Err(crate::agent::engine::run::LoopError::new(why))
                    } else {
                        Ok(run_prompt(prompts, context, config, soft, signal.clone(), sink).await)
                    }
                }
            }
        };
        let result = contain(run).await;
        let panic = {
            let mut guard = self.shared();
            let shared = &mut *guard;
            // In the same lock as the write-back (see `emit_external_event`): only a written-back
            // outcome lacks the host's messages; every other end kept the state as it was.
            shared.written_back = id;
            let external = std::mem::take(&mut shared.external);
            let detached = shared.detached == id;
            let st = &mut shared.state;
            match result {
                Ok(Ok(outcome)) => {
                    if !detached {
                        shared.tool_state.soft = outcome.soft_state;
                        st.messages = outcome.context;
                        st.messages.extend(external);
                        st.error = outcome.error.map(|e| e.message).or(st.error.take());
                    }
                    None
                }
                Ok(Err(refused)) => {
                    // Refused before the loop started: nothing of it is in the transcript.
                    if !detached {
                        st.error = Some(refused.message);
                    }
                    None
                }
                Err(panic) => Some(panic),
            }
        };
        if let Some(panic) = panic {
            self.backstop(&facade_sink, &panic);
        }
        let agent_end = lock(&facade_sink.held_end).take();
        self.release(id, agent_end);
    }

    /// The loop itself could not close the run (it closes every failure it can catch): answer
    /// whatever call is left open in the transcript the events built, and end the run.
    fn backstop(&self, sink: &FacadeSink, panic: &str) {
        let text = format!("Internal error: {panic}");
        {
            let mut shared = self.shared();
            if shared.detached != sink.run {
                shared.state.error = Some(text.clone());
            }
        }
        if lock(&sink.held_end).is_some() {
            return;
        }
        let messages = self.messages();
        let results: Vec<AgentMessage> = unanswered_calls(&messages)
            .into_iter()
            .map(|call| {
                let r =
                    placeholder_result(call, PlaceholderReason::Error, Some(&text), Some(&text));
                let args = Arc::new(strip_sentinels(&call.arguments));
                emit_synthetic_result(sink, r, args)
            })
            .collect();
        sink.emit(AgentEvent::AgentEnd {
            messages: results,
            telemetry: None,
            coverage: None,
        });
    }

    fn loop_config(&self, s: &AgentSettings) -> LoopConfig {
        let (reasoning, disable) = s.thinking.to_request();
        LoopConfig {
            provider: PacedProvider::wrap(s.provider.clone(), self.inner.pacer.clone()),
            model: s.model.clone(),
            system_prompt: s.system_prompt.clone(),
            tools: s.tools.clone(),
            reasoning,
            disable_reasoning: disable,
            tool_choice: None,
            temperature: s.temperature,
            max_tokens: s.max_tokens,
            session_id: s.session_id.clone(),
            interrupt_mode: s.interrupt_mode,
            intent_tracing: s.intent_tracing,
            prune_tool_descriptions: s.prune_tool_descriptions,
            deadline: s.deadline,
            telemetry: s.telemetry,
            retry: s.retry,
            max_repeated_tool_turns: s.max_repeated_tool_turns,
            append_only: s.append_only.then(|| self.inner.append_only.clone()),
            compaction: s.compaction,
            hooks: Arc::new(FacadeHooks {
                agent: self.clone(),
                user: s.hooks.clone(),
            }),
            skip_retry: self.inner.skip_retry.clone(),
            pause: self.inner.pause.clone(),
        }
    }

    fn take_queue(&self, side: QueueSide, signal: &AbortSignal) -> Vec<AgentMessage> {
        if signal.is_aborted() {
            return Vec::new();
        }
        let mut shared = self.shared();
        let mode = match side {
            QueueSide::Steering => shared.settings.steering_mode,
            QueueSide::FollowUp => shared.settings.follow_up_mode,
        };
        let q = &mut shared.queues;
        let queue = match side {
            QueueSide::Steering => &mut q.steering,
            QueueSide::FollowUp => &mut q.follow_up,
        };
        let taken: Vec<AgentMessage> = match mode {
            QueueMode::All => queue.drain(..).collect(),
            QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
        };
        if !taken.is_empty() {
            shared.send_queue_update();
        }
        taken
    }

    fn peek_steering(&self) -> SteeringPeek {
        let shared = self.shared();
        let q = &shared.queues;
        if q.steering.is_empty() {
            return SteeringPeek::Empty;
        }
        let mode = shared.settings.steering_mode;
        let next: Vec<&AgentMessage> = match mode {
            QueueMode::All => q.steering.iter().collect(),
            QueueMode::OneAtATime => q.steering.iter().take(1).collect(),
        };
        SteeringPeek::Queued(classify_steering(&next))
    }

    fn emit_queue_update(&self) {
        self.shared().send_queue_update();
    }

    fn broadcast(&self, run: Option<RunId>, event: AgentEvent) {
        broadcast(&mut self.shared().subscribers, run, event);
    }

    /// Apply run `run`'s event to the state (unless `reset` cut the run loose), then send it to
    /// the subscribers, in one hold of the lock. An `agent_end` is held back by the caller.
    fn apply_and_send(&self, run: RunId, event: AgentEvent) {
        let mut shared = self.shared();
        if shared.detached != run {
            apply_to(&mut shared.state, &event);
        }
        broadcast(&mut shared.subscribers, Some(run), event);
    }
}

enum RunKind {
    Prompt(Vec<Injected>),
    Continue,
    Compact(Option<String>),
    /// Run what is queued once the dequeue hooks have run (why nothing else can continue).
    FromQueues(String),
}

#[derive(Clone, Copy)]
enum QueueSide {
    Steering,
    FollowUp,
}

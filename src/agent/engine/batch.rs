//! One assistant message's tool calls: prepare, schedule, run, interrupt, answer.
//!
//! Flow: [`prepare_calls`] runs before the assistant `message_end` (intent stripping, schema
//! validation, the `before_tool_call` hook, which may revise the call in the message itself).
//! [`execute_batch`] then runs the calls under the barrier rule: consecutive shared calls run
//! together, an exclusive call waits for everything before it and holds back everything after
//! it. Each result is emitted the moment its call finishes (completion order).
//!
//! Steering: while the batch runs, a watcher peeks at the steering queue when notified and every
//! [`STEERING_POLL`]; a check also follows every finished call. Once a steering message is
//! queued, calls not yet started are skipped, interruptible calls are aborted, and
//! non-interruptible calls (bash) finish. The queue itself is never consumed here.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::lock;
use crate::agent::policy::coerce::{coerce_output, sanitize_text};
use crate::agent::policy::normalize::INTENT_FIELD;
use crate::agent::policy::placeholder::{
    BLOCKED_TEXT, interrupt_skip_details, interrupt_skip_text, not_run_aborted_text,
};
use crate::agent::policy::summary::RunCollector;
use crate::agent::policy::validate::{PARSE_ERROR_KEY, strip_sentinels, validate_arguments};
use crate::agent::protocol::abort::{AbortReason, AbortSignal};
use crate::agent::protocol::events::{AgentEvent, EventSink};
use crate::agent::protocol::hooks::{
    AfterToolCallInfo, BeforeToolCall, InterruptMode, LoopHooks, SteeringPeek, SteeringSource,
};
use crate::agent::protocol::panic::{contain, contain_sync};
use crate::agent::protocol::summary::ToolStatus;
use crate::agent::protocol::tool::{
    Concurrency, IntentMode, ProgressSink, RegisteredTool, ToolCallContext, ToolInvocation,
    ToolOutput, ToolSet,
};
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, ToolCall, ToolResultMessage, now_ms,
};

/// How often a running batch looks at the steering queue when nobody notifies it.
pub const STEERING_POLL: Duration = Duration::from_millis(250);

/// A call after validation and the `before_tool_call` hook.
pub struct PreparedCall {
    pub call: ToolCall,
    tool: Option<Arc<RegisteredTool>>,
    exec_args: Value,
    event_args: Arc<Value>,
    validation_error: Option<String>,
    hook_error: Option<String>,
    blocked: Option<Option<String>>,
    intent: Option<String>,
    concurrency: Concurrency,
    interruptible: bool,
}

/// Validate every call of `message` and run `before_tool_call`, revising the message in place.
pub async fn prepare_calls(
    message: &mut AssistantMessage,
    tools: &ToolSet,
    hooks: &dyn LoopHooks,
    intent_tracing: bool,
    signal: &AbortSignal,
) -> Vec<PreparedCall> {
    let snapshot = message.clone();
    let mut prepared = Vec::new();
    for block in message.content.iter_mut() {
        let ContentBlock::ToolCall(call) = block else {
            continue;
        };
        let tool: Option<Arc<RegisteredTool>> = tools.find(&call.name).cloned().or_else(|| {
            contain_sync(|| hooks.resolve_fallback_tool(&call.name))
                .ok()
                .flatten()
                .map(|t| Arc::new(RegisteredTool::new(t)))
        });

        let mut args = call.arguments.clone();
        let mut intent = None;
        if intent_tracing
            && let Value::Object(map) = &mut args
            && let Some(stated) = map.shift_remove(INTENT_FIELD)
        {
            intent = stated
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string);
        }
        if intent.is_none()
            && let Some(t) = &tool
            && t.tool.intent_mode() == IntentMode::Omit
        {
            intent = contain_sync(|| t.tool.derive_intent(&args)).ok().flatten();
        }
        if intent.is_some() {
            call.intent = intent.clone();
        }

        let mut rec = PreparedCall {
            call: call.clone(),
            tool: tool.clone(),
            exec_args: args.clone(),
            event_args: Arc::new(strip_sentinels(&args)),
            validation_error: None,
            hook_error: None,
            blocked: None,
            intent,
            concurrency: Concurrency::Shared,
            interruptible: false,
        };

        match &tool {
            None => {
                rec.validation_error = Some(format!("Tool {} not found", call.name));
            }
            Some(t) => match validate_arguments(t, &args) {
                Ok(valid) => rec.exec_args = valid,
                Err(e) if t.tool.lenient_validation() && !has_parse_error(&args) => {
                    rec.exec_args = strip_sentinels(&args);
                    let _ = e;
                }
                Err(e) => rec.validation_error = Some(e),
            },
        }

        if rec.validation_error.is_none()
            && let Some(t) = &tool
        {
            let mut exec = rec.exec_args.clone();
            let decision = contain(hooks.before_tool_call(&snapshot, call, &mut exec, signal))
                .await
                .unwrap_or_else(|panic| Err(hook_panic_text("before_tool_call", &panic)));
            match decision {
                Ok(BeforeToolCall::Proceed) => rec.exec_args = exec,
                Ok(BeforeToolCall::Block(reason)) => rec.blocked = Some(reason),
                Ok(BeforeToolCall::Revise(new_args)) => match validate_arguments(t, &new_args) {
                    Ok(valid) => {
                        call.arguments = new_args.clone();
                        rec.call.arguments = new_args.clone();
                        rec.event_args = Arc::new(valid.clone());
                        rec.exec_args = valid;
                    }
                    Err(e) => rec.validation_error = Some(e),
                },
                Err(e) => rec.hook_error = Some(e),
            }
            if rec.validation_error.is_none() {
                rec.event_args = Arc::new(rec.exec_args.clone());
            }
            rec.concurrency = concurrency_of(t, &rec.exec_args);
            rec.interruptible = contain_sync(|| t.tool.interruptible(&rec.exec_args))
                .ok()
                .and_then(Result::ok)
                .unwrap_or(false);
        } else if let Some(t) = &tool {
            rec.concurrency = concurrency_of(t, &rec.exec_args);
        }
        prepared.push(rec);
    }
    prepared
}

/// How a call may overlap with others: a tool that fails (or panics) to say runs alone.
fn concurrency_of(tool: &RegisteredTool, args: &Value) -> Concurrency {
    contain_sync(|| tool.tool.concurrency(args))
        .ok()
        .and_then(Result::ok)
        .unwrap_or(Concurrency::Exclusive)
}

/// The error a panicking hook becomes.
fn hook_panic_text(hook: &str, panic: &str) -> String {
    format!("The {hook} hook crashed: {panic}")
}

fn has_parse_error(args: &Value) -> bool {
    args.get(PARSE_ERROR_KEY).is_some()
}

/// Closes a call's progress sink when dropped (also when the call's future is dropped).
struct CloseOnDrop(Arc<Mutex<bool>>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        *lock(&self.0) = false;
    }
}

/// What a batch needs from the run.
pub struct BatchEnv<'a> {
    pub hooks: &'a dyn LoopHooks,
    pub sink: &'a Arc<dyn EventSink>,
    pub signal: &'a AbortSignal,
    pub interrupt_mode: InterruptMode,
    pub collector: Option<&'a Mutex<RunCollector>>,
    /// Closed, each call waits before it starts (calls already running go on).
    pub pause: &'a crate::agent::protocol::pause::PauseGate,
    /// Each result is added here as it is emitted, so the run knows what was answered even if
    /// the batch never returns (a panic unwinds through it).
    pub results: &'a Mutex<Vec<AgentMessage>>,
}

struct Slot {
    started: bool,
    result: Option<AgentMessage>,
}

struct Batch<'a> {
    env: &'a BatchEnv<'a>,
    assistant: &'a AssistantMessage,
    records: &'a [PreparedCall],
    contexts: Vec<ToolCallContext>,
    slots: Mutex<Vec<Slot>>,
    /// Hard interrupt for interruptible calls (also fires with the run signal).
    steering_abort: AbortSignal,
    /// Cooperative "a steer is waiting" signal.
    steering_soft: CancellationToken,
    trigger: Mutex<Option<SteeringSource>>,
}

/// Run the calls and return their results in the order they were emitted.
pub async fn execute_batch(
    assistant: &AssistantMessage,
    records: &[PreparedCall],
    env: &BatchEnv<'_>,
) -> Vec<AgentMessage> {
    let total = records.len();
    let first_id = records
        .first()
        .map(|r| r.call.id.clone())
        .unwrap_or_else(|| "batch".into());
    let batch_id: Arc<str> = format!("{}_{}", assistant.timestamp, first_id).into();
    let listing: Arc<[(String, String)]> = records
        .iter()
        .map(|r| (r.call.id.clone(), r.call.name.clone()))
        .collect();
    let contexts = (0..total)
        .map(|index| ToolCallContext {
            batch_id: batch_id.clone(),
            index,
            total,
            tool_calls: listing.clone(),
        })
        .collect();
    let batch = Batch {
        env,
        assistant,
        records,
        contexts,
        slots: Mutex::new(
            (0..total)
                .map(|_| Slot {
                    started: false,
                    result: None,
                })
                .collect(),
        ),
        steering_abort: env.signal.child(),
        steering_soft: CancellationToken::new(),
        trigger: Mutex::new(None),
    };

    let run_all = batch.run_phases();
    let watch =
        env.interrupt_mode == InterruptMode::Immediate && batch.peek() != SteeringPeek::Unsupported;
    if watch {
        let mut run_all = std::pin::pin!(run_all);
        tokio::select! {
            _ = &mut run_all => {}
            _ = batch.watch_steering() => run_all.await,
        }
    } else {
        run_all.await;
    }
    batch.sweep();
    std::mem::take(&mut *lock(env.results))
}

impl Batch<'_> {
    async fn run_phases(&self) {
        let mut i = 0;
        while i < self.records.len() {
            if self.records[i].concurrency == Concurrency::Exclusive {
                self.run_one(i).await;
                i += 1;
                continue;
            }
            let start = i;
            while i < self.records.len() && self.records[i].concurrency == Concurrency::Shared {
                i += 1;
            }
            if i - start == 1 {
                self.run_one(start).await;
            } else {
                futures::future::join_all((start..i).map(|k| self.run_one(k))).await;
            }
        }
    }

    /// Returns once a steering interrupt has been triggered (never, otherwise).
    async fn watch_steering(&self) {
        // A host whose wake-up panics is polled instead.
        let notify = contain_sync(|| self.env.hooks.steering_notify())
            .ok()
            .flatten();
        loop {
            let notified = notify.as_ref().map(|n| n.notified());
            let mut notified = std::pin::pin!(notified);
            if let Some(n) = notified.as_mut().as_pin_mut() {
                n.enable();
            }
            self.check_steering();
            if self.triggered().is_some() || self.env.signal.is_aborted() {
                return;
            }
            match notified.as_pin_mut() {
                Some(n) => {
                    tokio::select! {
                        _ = n => {}
                        _ = tokio::time::sleep(STEERING_POLL) => {}
                    }
                }
                None => tokio::time::sleep(STEERING_POLL).await,
            }
        }
    }

    /// Look at the steering queue. A host whose look panics is treated as one that cannot
    /// look: its steering waits for the boundary.
    fn peek(&self) -> SteeringPeek {
        contain_sync(|| self.env.hooks.peek_steering()).unwrap_or(SteeringPeek::Unsupported)
    }

    fn triggered(&self) -> Option<SteeringSource> {
        *lock(&self.trigger)
    }

    fn check_steering(&self) {
        if self.env.interrupt_mode == InterruptMode::Wait || self.env.signal.is_aborted() {
            return;
        }
        if let SteeringPeek::Queued(source) = self.peek() {
            let mut trigger = lock(&self.trigger);
            if trigger.is_none() {
                *trigger = Some(source);
                drop(trigger);
                self.steering_abort
                    .abort(AbortReason::Message("a steering message is waiting".into()));
                self.steering_soft.cancel();
            }
        }
    }

    fn record(
        &self,
        name: &str,
        status: ToolStatus,
        started: Option<Instant>,
        error: Option<&str>,
    ) {
        if let Some(c) = self.env.collector {
            let mut c = lock(c);
            match started {
                Some(t) => c.record_tool(name, status, t.elapsed().as_millis() as u64, error),
                None => c.record_orphan_tool(name, status),
            }
        }
    }

    fn emit_start(&self, i: usize) {
        let rec = &self.records[i];
        let first = {
            let mut slots = lock(&self.slots);
            !std::mem::replace(&mut slots[i].started, true)
        };
        if first {
            self.env.sink.emit(AgentEvent::ToolExecutionStart {
                tool_call_id: rec.call.id.clone(),
                tool_name: rec.call.name.clone(),
                args: rec.event_args.clone(),
                intent: rec.intent.clone(),
            });
        }
    }

    /// Emit the result of call `i` once: start (if never started), end, and the result message.
    fn emit_result(&self, i: usize, output: ToolOutput, is_error: bool) {
        if lock(&self.slots)[i].result.is_some() {
            return;
        }
        self.emit_start(i);
        let rec = &self.records[i];
        let message: AgentMessage = ToolResultMessage {
            tool_call_id: rec.call.id.clone(),
            tool_name: rec.call.name.clone(),
            content: output.content.clone(),
            details: Some(output.details.clone()),
            is_error,
            useless: output.useless && !is_error,
            timestamp: now_ms(),
        }
        .into();
        lock(&self.slots)[i].result = Some(message.clone());
        let sink = self.env.sink;
        sink.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: rec.call.id.clone(),
            tool_name: rec.call.name.clone(),
            result: output,
            is_error,
        });
        sink.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        sink.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        lock(self.env.results).push(message);
    }

    #[allow(
        clippy::too_many_lines,
        reason = "the batch driver: one select loop over calls, results and aborts; split with the engine's next rework"
    )]
    async fn run_one(&self, i: usize) {
        if self.triggered().is_some() {
            return; // skipped; the sweep answers it in call order
        }
        let rec = &self.records[i];
        let name = rec.call.name.as_str();
        let tool_signal = if rec.interruptible {
            &self.steering_abort
        } else {
            self.env.signal
        };
        // A paused agent holds every call here, before anything of it is emitted (even the
        // error of a call that failed validation).
        if self.env.pause.is_paused() {
            self.env.pause.wait_until_resumed(tool_signal).await;
            if self.triggered().is_some() {
                return; // a steer came while it waited: skipped like the others
            }
        }
        if let Some(err) = &rec.validation_error {
            let output = ToolOutput {
                content: vec![ContentBlock::text(err.clone())],
                details: json!({"isError": true, "error": err}),
                is_error: true,
                useless: false,
            };
            self.emit_result(i, output, true);
            self.check_steering();
            return;
        }
        if tool_signal.is_aborted() {
            self.record(name, ToolStatus::Aborted, None, None);
            let text = not_run_aborted_text(&tool_signal.reason_text());
            self.emit_result(i, ToolOutput::error(text), true);
            return;
        }

        self.emit_start(i);
        let started = Instant::now();
        let mut completed = false;
        let mut status = ToolStatus::Ok;
        let (mut output, mut is_error) = match (&rec.tool, &rec.hook_error, &rec.blocked) {
            (None, _, _) => (ToolOutput::error(format!("Tool {name} not found")), true),
            (_, Some(e), _) => (ToolOutput::error(e.clone()), true),
            (_, _, Some(reason)) => {
                status = ToolStatus::Blocked;
                let text = reason
                    .as_deref()
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or(BLOCKED_TEXT);
                (ToolOutput::error(text), true)
            }
            (Some(tool), None, None) => match contain_sync(|| {
                self.env
                    .hooks
                    .transform_tool_arguments(rec.exec_args.clone(), name)
            }) {
                Err(panic) => (
                    ToolOutput::error(hook_panic_text("transform_tool_arguments", &panic)),
                    true,
                ),
                Ok(args) => {
                    let (progress, closes) = self.progress_sink(i);
                    let invocation = ToolInvocation {
                        tool_call_id: rec.call.id.clone(),
                        args,
                        cancel: tool_signal.token().clone(),
                        steering: self.steering_soft.clone(),
                        progress,
                        context: self.contexts[i].clone(),
                    };
                    let outcome = contain(tool.tool.execute(invocation)).await;
                    // The call is over: an update sent from now on (by a task the tool left
                    // behind) would follow its end, so it goes nowhere.
                    drop(closes);
                    match outcome {
                        Ok(Ok(out)) => {
                            completed = true;
                            let (out, malformed) = coerce_output(out);
                            let err = out.is_error || malformed;
                            (out, err)
                        }
                        Ok(Err(e)) => {
                            // Same boundary as returned results: sanitised, never empty.
                            let (output, _) = coerce_output(ToolOutput::error(e.0));
                            (output, true)
                        }
                        Err(panic) => {
                            let text = format!("The {name} tool crashed: {panic}");
                            let (output, _) = coerce_output(ToolOutput::error(text));
                            (output, true)
                        }
                    }
                }
            },
        };

        if !tool_signal.is_aborted() || completed {
            let info = AfterToolCallInfo {
                assistant: self.assistant,
                tool_call: &rec.call,
                args: &rec.exec_args,
                result: &output,
                is_error,
                context: &self.contexts[i],
            };
            let after = contain(self.env.hooks.after_tool_call(info, self.env.signal))
                .await
                .unwrap_or_else(|panic| Err(hook_panic_text("after_tool_call", &panic)));
            match after {
                Ok(None) => {}
                Ok(Some(over)) => {
                    if let Some(c) = over.content {
                        output.content = c;
                    }
                    if let Some(d) = over.details {
                        output.details = d;
                    }
                    if let Some(u) = over.useless {
                        output.useless = u;
                    }
                    let wanted_error = over.is_error.unwrap_or(is_error);
                    output.is_error = wanted_error;
                    let (out, malformed) = coerce_output(output);
                    output = out;
                    is_error = malformed || wanted_error;
                }
                Err(e) => {
                    output = ToolOutput::error(sanitize_text(&e));
                    is_error = true;
                }
            }
        }

        let interrupted = self.triggered();
        if let Some(source) = interrupted
            && tool_signal.is_aborted()
            && is_error
            && !completed
        {
            self.record(name, ToolStatus::Skipped, Some(started), None);
            let skipped = ToolOutput {
                content: vec![ContentBlock::text(interrupt_skip_text(source))],
                details: interrupt_skip_details(true),
                is_error: true,
                useless: false,
            };
            self.emit_result(i, skipped, true);
        } else {
            if is_error && status == ToolStatus::Ok {
                status = if tool_signal.is_aborted() {
                    ToolStatus::Aborted
                } else {
                    ToolStatus::Error
                };
            }
            self.record(name, status, Some(started), None);
            self.emit_result(i, output, is_error);
        }
        self.check_steering();
    }

    /// The progress sink of call `i`, working until the returned guard is dropped.
    fn progress_sink(&self, i: usize) -> (ProgressSink, CloseOnDrop) {
        let rec = &self.records[i];
        let sink = self.env.sink.clone();
        let id = rec.call.id.clone();
        let name = rec.call.name.clone();
        let args = rec.event_args.clone();
        let open = Arc::new(Mutex::new(true));
        let live = open.clone();
        let progress = ProgressSink::new(move |partial| {
            // Held while emitting: closing waits for an update under way, and none follows.
            let open = lock(&live);
            if !*open {
                return;
            }
            let (partial_result, _) = coerce_output(partial);
            sink.emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: args.clone(),
                partial_result,
            });
        });
        (progress, CloseOnDrop(open))
    }

    /// Answer every call that has no result yet, in call order.
    fn sweep(&self) {
        let source = self.triggered().unwrap_or(SteeringSource::Unknown);
        for i in 0..self.records.len() {
            if lock(&self.slots)[i].result.is_some() {
                continue;
            }
            self.record(&self.records[i].call.name, ToolStatus::Skipped, None, None);
            let output = ToolOutput {
                content: vec![ContentBlock::text(interrupt_skip_text(source))],
                details: interrupt_skip_details(false),
                is_error: true,
                useless: false,
            };
            self.emit_result(i, output, true);
        }
    }
}

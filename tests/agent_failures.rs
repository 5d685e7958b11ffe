//! How runs end when something goes wrong, through the real `Agent`: every failure leaves each
//! tool call answered (in the live agent, in `agent_end.messages` and in the session file,
//! which all agree), panics in tools, hooks, provider streams and the loop itself are
//! contained, and transient failures are retried as ordinary loop steps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use pi::agent::engine::config::RetryPolicy;
use pi::agent::engine::facade::{Agent, AgentSettings};
use pi::agent::protocol::abort::AbortSignal;
use pi::agent::protocol::events::{AgentEvent, RunEvent};
use pi::agent::protocol::hooks::{
    BeforeToolCall, ContextRefresh, GateDecision, LoopHooks, SoftToolRequirement, ToolDirective,
    TurnEndInfo,
};
use pi::agent::protocol::stream::{
    EventStream, LlmContext, Model, Provider, ProviderRequest, StreamEvent,
};
use pi::agent::protocol::summary::RunSummary;
use pi::agent::protocol::tool::{AgentTool, ToolOutput};
use pi::agent::protocol::types::{AgentMessage, AssistantMessage, Message, StopReason, ToolCall};
use pi::agent::scripted::{ScriptedProvider, Step, reply};
use pi::session::{RecorderTask, Session, SessionRecorder};
use serde_json::{Value, json};
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(5);

/// An agent, its event stream, and a session file recording it.
struct Rig {
    agent: Agent,
    events: UnboundedReceiver<RunEvent>,
    session: Option<RecorderTask>,
    dir: tempfile::TempDir,
}

impl Rig {
    fn new(settings: AgentSettings) -> Self {
        let agent = Agent::new(settings);
        let events = agent.subscribe();
        let dir = tempfile::tempdir().unwrap();
        let recorder = SessionRecorder::new_session(dir.path(), dir.path());
        let session = Some(RecorderTask::from_events(
            agent.subscribe_filtered(SessionRecorder::wants),
            recorder,
        ));
        Rig {
            agent,
            events,
            session,
            dir,
        }
    }

    fn scripted(p: &ScriptedProvider, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        Rig::new(settings(Arc::new(p.clone()), tools))
    }

    /// Prompt, then read events up to this run's `agent_end` and wait until the agent is idle.
    async fn prompt(&mut self, text: &str) -> Vec<AgentEvent> {
        self.agent
            .prompt_text(text)
            .expect("the agent accepts a prompt");
        let mut out = Vec::new();
        loop {
            let e = tokio::time::timeout(WAIT, self.events.recv())
                .await
                .expect("timed out waiting for agent_end")
                .expect("event channel closed");
            let end = matches!(e.event, AgentEvent::AgentEnd { .. });
            out.push(e.event);
            if end {
                break;
            }
        }
        tokio::time::timeout(WAIT, self.agent.wait_idle())
            .await
            .expect("the agent becomes idle");
        out
    }

    /// What the session file holds, read back as a resumed session would be.
    async fn saved(&mut self) -> (Vec<AgentMessage>, usize) {
        let task = self.session.take().expect("recording");
        let path = task.path().to_path_buf();
        task.finish().await;
        let ctx = Session::load(&path)
            .expect("the session file loads")
            .into_context();
        self.session = Some(RecorderTask::from_events(
            self.agent.subscribe_filtered(SessionRecorder::wants),
            SessionRecorder::resume(&Session::load(&path).unwrap()).unwrap(),
        ));
        let _ = &self.dir;
        (ctx.messages, ctx.placeholders)
    }
}

fn settings(provider: Arc<dyn Provider>, tools: Vec<Arc<dyn AgentTool>>) -> AgentSettings {
    let mut s = AgentSettings::new(provider, model()).with_tools(tools);
    s.retry = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    s
}

fn agent_end(events: &[AgentEvent]) -> (Vec<AgentMessage>, Option<RunSummary>) {
    match events.last() {
        Some(AgentEvent::AgentEnd {
            messages,
            telemetry,
            ..
        }) => (messages.clone(), telemetry.clone()),
        other => panic!("the run must end with agent_end, got {other:?}"),
    }
}

/// Every tool call of every assistant message is answered by a result before the next
/// assistant message (what a provider requires of a history).
fn assert_every_call_answered(messages: &[AgentMessage]) {
    for (i, m) in messages.iter().enumerate() {
        let Some(a) = m.as_assistant() else { continue };
        let next = messages[i + 1..]
            .iter()
            .position(|m| m.as_assistant().is_some())
            .map_or(messages.len(), |p| i + 1 + p);
        for call in a.tool_calls() {
            let answered = messages[i + 1..next]
                .iter()
                .filter_map(AgentMessage::as_tool_result)
                .any(|r| r.tool_call_id == call.id);
            assert!(answered, "call {} of message {i} has no result", call.id);
        }
    }
}

/// The same check on what a provider was sent.
fn assert_request_answers_every_call(request: &ProviderRequest) {
    let messages: Vec<AgentMessage> = request
        .context
        .messages
        .iter()
        .map(|m| AgentMessage::from((**m).clone()))
        .collect();
    assert_every_call_answered(&messages);
}

fn last_assistant(messages: &[AgentMessage]) -> AssistantMessage {
    messages
        .iter()
        .rev()
        .find_map(|m| m.as_assistant().cloned())
        .expect("an assistant message")
}

/// The run failed: its last reply is an error that says `why`.
fn assert_failed_with(live: &[AgentMessage], why: &str) -> AssistantMessage {
    let last = last_assistant(live);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(
        last.error_message.as_deref().unwrap_or("").contains(why),
        "{last:?}"
    );
    last
}

fn balanced(events: &[AgentEvent]) -> bool {
    let count = |k: &str| events.iter().filter(|e| e.kind() == k).count();
    count("turn_start") == count("turn_end") && count("agent_start") == count("agent_end")
}

/// After a failure: the agent, agent_end and the session file hold the same transcript, every
/// call in it is answered, and the session needed no repair to load.
async fn assert_closed_everywhere(rig: &mut Rig, events: &[AgentEvent]) -> Vec<AgentMessage> {
    assert!(balanced(events), "turns and runs are balanced");
    let live = rig.agent.messages();
    assert_every_call_answered(&live);
    let (ended, _) = agent_end(events);
    assert_eq!(&live[live.len() - ended.len()..], &ended[..]);
    let (saved, placeholders) = rig.saved().await;
    assert_eq!(placeholders, 0, "the file needed no repair");
    assert_eq!(saved, live, "the session file holds what the agent holds");
    live
}

// 1. Failures close in the loop --------------------------------------------------------------

#[tokio::test]
async fn the_repeated_call_guard_leaves_every_call_answered() {
    let same = || reply::tools(&[reply::call("c", "echo", json!({"x": 1}))]);
    let mut list: Vec<_> = (0..6).map(|_| same()).collect();
    list.push(reply::text("starting over"));
    let p = scripts(list);
    let mut rig = Rig::scripted(&p, vec![TestTool::echo("echo").arc()]);
    let events = rig.prompt("go").await;

    let live = assert_closed_everywhere(&mut rig, &events).await;
    assert_failed_with(&live, "same tool call 6 turns");
    // The sixth call was never run, and is answered by a placeholder.
    let results: Vec<_> = live
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .collect();
    assert_eq!(results.len(), 6);
    assert!(results[5].is_error && results[5].is_synthetic());

    // The next prompt in the same agent goes through with a valid history.
    let events = rig.prompt("try something else").await;
    assert_eq!(
        last_assistant(&agent_end(&events).0).text(),
        "starting over"
    );
    assert_request_answers_every_call(&p.requests()[6]);
}

/// Requires `todo` before anything else.
struct NeedsTodo;

impl LoopHooks for NeedsTodo {
    fn tool_directive(&self) -> Option<ToolDirective> {
        Some(ToolDirective::Soft(SoftToolRequirement {
            id: "plan".into(),
            tool_name: "todo".into(),
            satisfies: None,
            reminder: vec![AgentMessage::user("update the todo list first")],
        }))
    }
}

#[tokio::test]
async fn an_unmet_soft_requirement_leaves_every_call_answered() {
    // The model keeps calling bash instead of todo: three forced turns, then the run fails
    // with bash calls on the last reply.
    let detour = |i: usize| reply::tools(&[reply::call(&format!("b{i}"), "bash", json!({}))]);
    let p = scripts((0..4).map(detour).chain([reply::text("fine")]).collect());
    let bash = TestTool::echo("bash");
    let ran = bash.calls.clone();
    let mut s = settings(
        Arc::new(p.clone()),
        vec![TestTool::echo("todo").arc(), bash.arc()],
    );
    s.hooks = Arc::new(NeedsTodo);
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;

    let live = assert_closed_everywhere(&mut rig, &events).await;
    assert_eq!(ran.load(Ordering::SeqCst), 0, "no detour ran");
    assert_failed_with(&live, "3 forced turns");
    rig.agent
        .update_settings(|s| s.hooks = Arc::new(pi::agent::protocol::hooks::NoHooks));
    rig.prompt("never mind").await;
    assert_request_answers_every_call(p.requests().last().unwrap());
}

#[tokio::test]
async fn an_out_of_band_failure_keeps_completed_calls_answered_and_drops_the_rest() {
    let (mut steps, _) = reply::open(&["looking"], &[reply::call("c1", "echo", json!({}))]);
    steps.push(Step::Event(StreamEvent::ToolCallStart {
        content_index: 2,
        id: "c2".into(),
        name: "echo".into(),
    }));
    steps.push(Step::Fail("connection dropped".into()));
    let p = scripts(vec![steps, reply::text("ok")]);
    let mut rig = Rig::scripted(&p, vec![TestTool::echo("echo").arc()]);
    let events = rig.prompt("go").await;

    let live = assert_closed_everywhere(&mut rig, &events).await;
    let a = live[1].as_assistant().unwrap();
    let ids: Vec<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1"]);
    assert_eq!(a.error_message.as_deref(), Some("connection dropped"));
    rig.prompt("again").await;
    assert_request_answers_every_call(&p.requests()[1]);
}

// 2. Panics are contained --------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_run_goes_on() {
    let boom = TestTool::new("boom", |_| async { panic!("the tool fell over") });
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "boom", json!({})),
            reply::call("c2", "echo", json!({})),
        ]),
        reply::text("recovered"),
        reply::text("second prompt"),
    ]);
    let mut rig = Rig::scripted(&p, vec![boom.arc(), TestTool::echo("echo").arc()]);
    let events = rig.prompt("go").await;

    let live = assert_closed_everywhere(&mut rig, &events).await;
    let results: Vec<_> = live
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .collect();
    let boom = results.iter().find(|r| r.tool_call_id == "c1").unwrap();
    assert!(boom.is_error);
    assert!(
        boom.text().contains("the tool fell over"),
        "{}",
        boom.text()
    );
    let echo = results.iter().find(|r| r.tool_call_id == "c2").unwrap();
    assert!(!echo.is_error, "the other call of the batch ran");
    assert_eq!(last_assistant(&live).text(), "recovered");
    assert!(!rig.agent.is_streaming());
    rig.prompt("more").await;
}

struct PanickyHooks {
    before_tool: bool,
    sync: Arc<AtomicBool>,
    turn_end: bool,
}

#[async_trait]
impl LoopHooks for PanickyHooks {
    async fn sync_before_model_call(&self, _signal: &AbortSignal) -> ContextRefresh {
        if self.sync.swap(false, Ordering::SeqCst) {
            panic!("refresh exploded");
        }
        ContextRefresh::default()
    }

    async fn before_tool_call(
        &self,
        _assistant: &AssistantMessage,
        _call: &ToolCall,
        _args: &mut Value,
        _signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        if self.before_tool {
            panic!("the gatekeeper fell over");
        }
        Ok(BeforeToolCall::Proceed)
    }

    async fn on_turn_end(&self, _messages: &[AgentMessage], info: TurnEndInfo<'_>) {
        if self.turn_end && !info.tool_results.is_empty() {
            panic!("turn bookkeeping exploded");
        }
    }
}

fn panicky(before_tool: bool, sync: bool, turn_end: bool) -> PanickyHooks {
    PanickyHooks {
        before_tool,
        sync: Arc::new(AtomicBool::new(sync)),
        turn_end,
    }
}

#[tokio::test]
async fn a_panicking_tool_hook_becomes_an_error_result() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("done"),
    ]);
    let echo = TestTool::echo("echo");
    let ran = echo.calls.clone();
    let mut s = settings(Arc::new(p.clone()), vec![echo.arc()]);
    s.hooks = Arc::new(panicky(true, false, false));
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;

    let live = assert_closed_everywhere(&mut rig, &events).await;
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let r = live.iter().find_map(AgentMessage::as_tool_result).unwrap();
    assert!(
        r.is_error && r.text().contains("the gatekeeper fell over"),
        "{}",
        r.text()
    );
    assert_eq!(last_assistant(&live).text(), "done");
}

#[tokio::test]
async fn a_hook_panicking_in_the_loop_ends_the_run_with_an_error_turn() {
    // Before the first model call: nothing was streamed yet.
    let p = scripts(vec![reply::text("after")]);
    let mut s = settings(Arc::new(p.clone()), vec![]);
    s.hooks = Arc::new(panicky(false, true, false));
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;
    let live = assert_closed_everywhere(&mut rig, &events).await;
    let last = assert_failed_with(&live, "refresh exploded");
    assert_eq!(rig.agent.state().error, last.error_message);
    assert_eq!(p.request_count(), 0);
    // The agent takes the next prompt.
    let events = rig.prompt("again").await;
    assert_eq!(last_assistant(&agent_end(&events).0).text(), "after");
}

#[tokio::test]
async fn a_hook_panicking_after_a_tool_turn_ends_the_run_cleanly() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("never asked"),
        reply::text("next run"),
    ]);
    let mut s = settings(Arc::new(p.clone()), vec![TestTool::echo("echo").arc()]);
    s.hooks = Arc::new(panicky(false, false, true));
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;
    let live = assert_closed_everywhere(&mut rig, &events).await;
    assert_eq!(p.request_count(), 1);
    assert!(
        last_assistant(&live)
            .error_message
            .unwrap()
            .contains("turn bookkeeping exploded")
    );
    rig.agent
        .update_settings(|s| s.hooks = Arc::new(pi::agent::protocol::hooks::NoHooks));
    rig.prompt("go on").await;
    assert_request_answers_every_call(&p.requests()[1]);
}

/// A provider that panics on its first call (while building the stream, or after streaming a
/// complete tool call), then answers from a script.
struct Crashing {
    at_start: bool,
    calls: AtomicUsize,
    then: ScriptedProvider,
}

impl Provider for Crashing {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        if self.calls.fetch_add(1, Ordering::SeqCst) > 0 {
            return self.then.stream(request, cancel);
        }
        if self.at_start {
            panic!("no stream for you");
        }
        let (steps, _) = reply::open(&["working"], &[reply::call("c1", "echo", json!({}))]);
        let events: Vec<_> = steps
            .into_iter()
            .filter_map(|s| match s {
                Step::Event(e) => Some(Ok(e)),
                _ => None,
            })
            .collect();
        futures::stream::iter(events)
            .chain(futures::stream::poll_fn(|_| panic!("the stream blew up")))
            .boxed()
    }
}

#[tokio::test]
async fn a_panicking_provider_stream_becomes_an_error_turn() {
    for at_start in [false, true] {
        let p = scripts(vec![reply::text("back")]);
        let crashing = Arc::new(Crashing {
            at_start,
            calls: AtomicUsize::new(0),
            then: p.clone(),
        });
        let echo = TestTool::echo("echo");
        let ran = echo.calls.clone();
        let mut rig = Rig::new(settings(crashing, vec![echo.arc()]));
        let events = rig.prompt("go").await;
        let live = assert_closed_everywhere(&mut rig, &events).await;
        let expected = if at_start {
            "no stream for you"
        } else {
            "the stream blew up"
        };
        let last = assert_failed_with(&live, expected);
        assert_eq!(
            ran.load(Ordering::SeqCst),
            0,
            "nothing from a crashed reply runs"
        );
        if !at_start {
            // The call completed before the crash: it is kept, and answered.
            assert_eq!(last.tool_calls().count(), 1);
            assert_eq!(last.text(), "working");
        }
        let events = rig.prompt("again").await;
        assert_eq!(last_assistant(&agent_end(&events).0).text(), "back");
        assert_request_answers_every_call(&p.requests()[0]);
    }
}

// 3. Retries are loop steps ------------------------------------------------------------------

/// Counts refreshes and gate calls; the gate stops the call numbered `stop_at` (1-based).
#[derive(Default)]
struct Steps {
    refreshes: AtomicUsize,
    gates: AtomicUsize,
    stop_at: Option<usize>,
}

#[async_trait]
impl LoopHooks for Steps {
    async fn sync_before_model_call(&self, _signal: &AbortSignal) -> ContextRefresh {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        ContextRefresh::default()
    }

    fn has_model_gate(&self) -> bool {
        true
    }

    async fn before_model_call(
        &self,
        _context: &LlmContext,
        _signal: &AbortSignal,
    ) -> Result<GateDecision, String> {
        let n = self.gates.fetch_add(1, Ordering::SeqCst) + 1;
        if self.stop_at == Some(n) {
            return Ok(GateDecision::Stop(Some("budget spent".into())));
        }
        Ok(GateDecision::Proceed)
    }
}

#[tokio::test]
async fn every_retry_goes_through_refresh_gate_and_summary() {
    let p = scripts(vec![
        reply::transient_error(&["half an ans"], &[], "overloaded", None),
        reply::transient_error(&[], &[], "overloaded", None),
        reply::text("the whole answer"),
    ]);
    let hooks = Arc::new(Steps::default());
    let mut s = settings(Arc::new(p.clone()), vec![]);
    s.hooks = hooks.clone();
    s.telemetry = true;
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;

    assert_eq!(p.request_count(), 3);
    assert_eq!(
        hooks.refreshes.load(Ordering::SeqCst),
        3,
        "a refresh per attempt"
    );
    assert_eq!(
        hooks.gates.load(Ordering::SeqCst),
        3,
        "the gate sees every attempt"
    );
    let (ended, telemetry) = agent_end(&events);
    let summary = telemetry.expect("telemetry is on");
    assert_eq!(summary.step_count, 3, "every attempt is a step");
    assert_eq!(summary.chats.total, 3);
    assert_eq!(summary.chats.by_stop_reason.get("error"), Some(&2));
    assert_eq!(
        events.iter().filter(|e| e.kind() == "turn_start").count(),
        1,
        "retries stay in their turn"
    );
    // The failed attempt was shown (its message_end is marked retried) but is kept nowhere.
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::MessageEnd { message } if message.is_retried_attempt()
    )));
    let roles: Vec<&str> = ended.iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(last_assistant(&ended).text(), "the whole answer");
    let live = assert_closed_everywhere(&mut rig, &events).await;
    let all_text: String = live
        .iter()
        .filter_map(|m| m.as_assistant().map(AssistantMessage::text))
        .collect();
    assert!(!all_text.contains("half an ans"), "{all_text}");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::AutoRetryEnd {
            success: true,
            attempt: 2,
            ..
        }
    )));
}

#[tokio::test]
async fn settings_changed_during_the_backoff_apply_to_the_retry() {
    let p = scripts(vec![
        reply::transient_error(&[], &[], "overloaded", Some(200)),
        reply::text("ok"),
    ]);
    let mut s = settings(Arc::new(p.clone()), vec![]);
    s.retry.max_delay = Duration::from_secs(1);
    let agent = Agent::new(s);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    loop {
        let e = tokio::time::timeout(WAIT, rx.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(e.event, AgentEvent::AutoRetryStart { .. }) {
            break;
        }
    }
    agent.update_settings(|s| s.model = Model::new("other", "scripted", "other-model"));
    tokio::time::timeout(WAIT, agent.wait_idle()).await.unwrap();
    let requests = p.requests();
    assert_eq!(requests[0].model.id, "scripted-model");
    assert_eq!(requests[1].model.id, "other-model");
}

#[tokio::test]
async fn a_gate_stopping_a_retry_closes_its_turn() {
    let p = scripts(vec![
        reply::transient_error(&["par"], &[], "overloaded", None),
        reply::text("never"),
    ]);
    let hooks = Arc::new(Steps {
        stop_at: Some(2),
        ..Default::default()
    });
    let mut s = settings(Arc::new(p.clone()), vec![]);
    s.hooks = hooks.clone();
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;

    assert_eq!(p.request_count(), 1);
    let live = assert_closed_everywhere(&mut rig, &events).await;
    let last = last_assistant(&live);
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("budget spent"));
    let roles: Vec<&str> = live.iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::AutoRetryEnd { success: false, .. }))
    );
}

#[tokio::test]
async fn the_retry_of_a_tool_reply_keeps_the_history_valid() {
    // A transient failure after a complete call is salvaged only for broken streams; a
    // reported error is retried, and the retried partial's call never enters the history.
    let call = reply::call("c1", "echo", json!({}));
    let p = scripts(vec![
        reply::transient_error(&["a"], std::slice::from_ref(&call), "overloaded", None),
        reply::tools(&[call]),
        reply::text("done"),
    ]);
    let echo = TestTool::echo("echo");
    let ran = echo.calls.clone();
    let mut rig = Rig::scripted(&p, vec![echo.arc()]);
    let events = rig.prompt("go").await;
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let live = assert_closed_everywhere(&mut rig, &events).await;
    let roles: Vec<&str> = live.iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    for r in p.requests() {
        assert_request_answers_every_call(&r);
    }
}

#[tokio::test]
async fn the_tool_output_of_a_panic_is_sanitised_text() {
    // The panic text reaches the model as ordinary (sanitised, non-empty) tool output.
    let boom = TestTool::new("boom", |_| async {
        if true {
            panic!("\u{1b}[31mred alert\u{1b}[0m");
        }
        Ok(ToolOutput::text("unreachable"))
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "boom", json!({}))]),
        reply::text("ok"),
    ]);
    let mut rig = Rig::scripted(&p, vec![boom.arc()]);
    let events = rig.prompt("go").await;
    let live = assert_closed_everywhere(&mut rig, &events).await;
    let r = live.iter().find_map(AgentMessage::as_tool_result).unwrap();
    assert!(r.text().contains("red alert"), "{}", r.text());
    assert!(!r.text().contains('\u{1b}'), "{:?}", r.text());
    let sent = &p.requests()[1].context.messages;
    assert!(
        sent.iter()
            .any(|m| matches!(&**m, Message::ToolResult(t) if t.text().contains("red alert")))
    );
}

/// A host whose look at the steering queue panics once `armed` is set (by the first tool, as
/// it runs: so the panic comes after a result was emitted).
struct PanickyPeek {
    armed: Arc<AtomicBool>,
}

impl LoopHooks for PanickyPeek {
    fn peek_steering(&self) -> pi::agent::protocol::hooks::SteeringPeek {
        if self.armed.load(Ordering::SeqCst) {
            panic!("the queue look exploded");
        }
        pi::agent::protocol::hooks::SteeringPeek::Empty
    }
}

/// How often each tool call id is answered in `messages`.
fn answers(messages: &[AgentMessage]) -> std::collections::BTreeMap<String, usize> {
    let mut n = std::collections::BTreeMap::new();
    for r in messages.iter().filter_map(AgentMessage::as_tool_result) {
        *n.entry(r.tool_call_id.clone()).or_insert(0) += 1;
    }
    n
}

#[tokio::test]
async fn a_panicking_steering_look_is_contained_and_no_call_is_answered_twice() {
    let armed = Arc::new(AtomicBool::new(false));
    let a2 = armed.clone();
    let arm = TestTool::new("arm", move |_| {
        let a2 = a2.clone();
        async move {
            a2.store(true, Ordering::SeqCst);
            Ok(ToolOutput::text("armed"))
        }
    })
    .exclusive();
    let echo = TestTool::echo("echo").exclusive();
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "arm", json!({})),
            reply::call("c2", "echo", json!({})),
        ]),
        reply::text("done"),
    ]);
    let mut s = settings(Arc::new(p.clone()), vec![arm.arc(), echo.arc()]);
    s.hooks = Arc::new(PanickyPeek { armed });
    let mut rig = Rig::new(s);
    let events = rig.prompt("go").await;
    let live = assert_closed_everywhere(&mut rig, &events).await;

    // One answer per call, as the subscribers saw it, in agent_end and in the agent.
    let once: std::collections::BTreeMap<String, usize> =
        [("c1".to_string(), 1), ("c2".to_string(), 1)].into();
    let seen: Vec<AgentMessage> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answers(&seen), once);
    assert_eq!(answers(&agent_end(&events).0), once);
    assert_eq!(answers(&live), once);
    // The broken look only cost the interrupt: the second call ran and the run went on.
    let c2 = live
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .find(|r| r.tool_call_id == "c2")
        .unwrap();
    assert!(!c2.is_error, "{}", c2.text());
    assert_eq!(last_assistant(&live).text(), "done");
}

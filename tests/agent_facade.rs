//! The `Agent` facade (spec agent-core §9 and the `agent.test.ts` /
//! `continue-empty-transcript.test.ts` lines of §14): queues, busy handling, the event stream
//! seen by subscribers, steering during tools, queue modes, abort, continue, failure closing and
//! live settings. Every test drives a real run against the scripted provider and asserts the
//! events and/or messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pi::agent::engine::facade::{Agent, AgentSettings, classify_steering};
use pi::agent::policy::placeholder::interrupt_skip_text;
use pi::agent::protocol::command::{AgentError, QueueMode};
use pi::agent::protocol::events::{AgentEvent, RunEvent};
use pi::agent::protocol::hooks::SteeringSource;
use pi::agent::protocol::stream::{Model, ProviderRequest, StreamEvent};
use pi::agent::protocol::thinking::{Effort, ThinkingLevel};
use pi::agent::protocol::tool::AgentTool;
use pi::agent::protocol::types::{
    AgentMessage, Attribution, CustomMessage, Message, STOP_REFUSAL, StopDetails, StopReason,
    UserMessage,
};
use pi::agent::scripted::{Script, ScriptedProvider, Step, reply};
use serde_json::{Map, Value, json};
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

type Rx = UnboundedReceiver<RunEvent>;

const WAIT: Duration = Duration::from_secs(5);

fn agent(p: &ScriptedProvider, tools: Vec<Arc<dyn AgentTool>>) -> Agent {
    Agent::new(AgentSettings::new(Arc::new(p.clone()), model()).with_tools(tools))
}

/// Event name, with the role for message events and the id for tool events.
fn kind(e: &AgentEvent) -> String {
    match e {
        AgentEvent::MessageStart { message } => format!("message_start:{}", message.role()),
        AgentEvent::MessageEnd { message } => format!("message_end:{}", message.role()),
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => format!("tool_start:{tool_call_id}"),
        AgentEvent::ToolExecutionEnd { tool_call_id, .. } => format!("tool_end:{tool_call_id}"),
        other => other.kind().to_string(),
    }
}

/// Loop event kinds, without `message_update` and `queue_update`.
fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| !matches!(e.kind(), "message_update" | "queue_update"))
        .map(kind)
        .collect()
}

fn count(events: &[AgentEvent], k: &str) -> usize {
    events.iter().filter(|e| e.kind() == k).count()
}

/// Read events until one whose `kind()` is `k` (included).
async fn until(rx: &mut Rx, k: &str) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    loop {
        let e = tokio::time::timeout(WAIT, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {k}; got {:?}", kinds(&out)))
            .expect("event channel closed")
            .event;
        let done = kind(&e) == k || e.kind() == k;
        out.push(e);
        if done {
            return out;
        }
    }
}

/// Read events up to `agent_end`, then wait until the agent is idle.
async fn finish(agent: &Agent, rx: &mut Rx) -> Vec<AgentEvent> {
    let events = until(rx, "agent_end").await;
    tokio::time::timeout(WAIT, agent.wait_idle())
        .await
        .expect("wait_idle timed out");
    events
}

fn text_of(m: &AgentMessage) -> String {
    match m {
        AgentMessage::Llm(m) => llm_text(m),
        AgentMessage::Custom(c) => c
            .fields
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    }
}

fn llm_text(m: &Message) -> String {
    match m {
        Message::User(u) => u.content.joined_text(),
        Message::Assistant(a) => a.text(),
        Message::ToolResult(r) => r.text(),
        _ => String::new(),
    }
}

fn texts(ms: &[AgentMessage]) -> Vec<String> {
    ms.iter().map(text_of).collect()
}

fn roles(ms: &[AgentMessage]) -> Vec<String> {
    ms.iter().map(|m| m.role().to_string()).collect()
}

/// User texts of a provider request.
fn request_user_texts(r: &ProviderRequest) -> Vec<String> {
    r.context
        .messages
        .iter()
        .filter(|m| m.role() == "user")
        .map(|m| llm_text(m))
        .collect()
}

fn request_roles_of(r: &ProviderRequest) -> Vec<String> {
    r.context
        .messages
        .iter()
        .map(|m| m.role().to_string())
        .collect()
}

fn message_ends(events: &[AgentEvent]) -> Vec<AgentMessage> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// (id, text, is_error, details) of every tool result message_end.
fn tool_results(events: &[AgentEvent]) -> Vec<(String, String, bool, Value)> {
    message_ends(events)
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| {
            (
                r.tool_call_id.clone(),
                r.text(),
                r.is_error,
                r.details.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn queue_updates(events: &[AgentEvent]) -> Vec<(Vec<String>, Vec<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => Some((steering.clone(), follow_up.clone())),
            _ => None,
        })
        .collect()
}

fn drain(rx: &mut Rx) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e.event);
    }
    out
}

fn custom(role: &str, content: &str, attribution: Option<&str>) -> AgentMessage {
    let mut fields = Map::new();
    fields.insert("content".into(), json!(content));
    if let Some(a) = attribution {
        fields.insert("attribution".into(), json!(a));
    }
    AgentMessage::from(CustomMessage::new(role, fields))
}

fn agent_steer(text: &str) -> AgentMessage {
    let mut m = UserMessage::new(text);
    m.attribution = Some(Attribution::Agent);
    m.into()
}

// 1. Queues ------------------------------------------------------------------------------------

#[tokio::test]
async fn steer_queues_without_touching_messages_and_pops_lifo() {
    let p = scripts(vec![]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    assert!(!agent.has_queued_messages());

    agent.steer_text("s1");
    agent.steer_text("s2");
    agent.follow_up_text("f1");
    agent.follow_up_text("f2");

    assert!(agent.state().messages.is_empty());
    assert!(agent.has_queued_messages());
    assert_eq!(texts(&agent.peek_steering_queue()), ["s1", "s2"]);
    assert_eq!(texts(&agent.peek_follow_up_queue()), ["f1", "f2"]);
    let s: (Vec<String>, Vec<String>) = (vec![], vec![]);
    let sv = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(
        queue_updates(&drain(&mut rx)),
        [
            (sv(&["s1"]), sv(&[])),
            (sv(&["s1", "s2"]), sv(&[])),
            (sv(&["s1", "s2"]), sv(&["f1"])),
            (sv(&["s1", "s2"]), sv(&["f1", "f2"])),
        ]
    );

    // LIFO removal.
    assert_eq!(
        agent.pop_last_steer().map(|m| text_of(&m)).as_deref(),
        Some("s2")
    );
    assert_eq!(
        agent.pop_last_follow_up().map(|m| text_of(&m)).as_deref(),
        Some("f2")
    );
    assert_eq!(texts(&agent.peek_steering_queue()), ["s1"]);
    assert_eq!(texts(&agent.peek_follow_up_queue()), ["f1"]);
    assert_eq!(
        queue_updates(&drain(&mut rx)),
        [(sv(&["s1"]), sv(&["f1", "f2"])), (sv(&["s1"]), sv(&["f1"])),]
    );

    assert_eq!(
        agent.pop_last_steer().map(|m| text_of(&m)).as_deref(),
        Some("s1")
    );
    assert!(agent.has_queued_messages(), "a follow-up is still queued");
    assert_eq!(
        agent.pop_last_follow_up().map(|m| text_of(&m)).as_deref(),
        Some("f1")
    );
    assert!(!agent.has_queued_messages());
    assert!(agent.pop_last_steer().is_none());
    assert!(agent.pop_last_follow_up().is_none());
    let last = queue_updates(&drain(&mut rx));
    assert_eq!(last.last(), Some(&s));
    assert!(agent.state().messages.is_empty());
    assert_eq!(p.request_count(), 0);
}

// 2. Busy / idle -------------------------------------------------------------------------------

#[tokio::test]
async fn prompt_while_running_is_busy_and_wait_idle_returns_after_the_run() {
    let mut slow = vec![Step::Delay(Duration::from_millis(150))];
    slow.extend(reply::text("first"));
    let p = scripts(vec![slow, reply::text("second")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();

    agent.prompt_text("one").unwrap();
    assert!(agent.state().is_streaming);
    assert!(agent.is_streaming());
    assert_eq!(agent.prompt_text("two"), Err(AgentError::Busy));
    assert_eq!(agent.continue_run(), Err(AgentError::Busy));
    until(&mut rx, "turn_start").await;
    assert!(agent.state().is_streaming, "still streaming mid-run");
    assert_eq!(agent.prompt_text("two"), Err(AgentError::Busy));

    tokio::time::timeout(WAIT, agent.wait_idle()).await.unwrap();
    let st = agent.state();
    assert!(!st.is_streaming);
    assert_eq!(roles(&st.messages), ["user", "assistant"]);
    assert_eq!(texts(&st.messages), ["one", "first"]);
    assert_eq!(
        p.request_count(),
        1,
        "the busy prompt never reached the provider"
    );

    // Idle again: a new prompt is accepted.
    agent.prompt_text("two").unwrap();
    tokio::time::timeout(WAIT, agent.wait_idle()).await.unwrap();
    assert_eq!(texts(&agent.messages()), ["one", "first", "two", "second"]);
}

/// A subscriber that reacts to `agent_end` (e.g. to send the next prompt) must find the agent
/// idle, not get `Busy` from the predecessor's cleanup racing on another thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_on_agent_end_is_accepted() {
    for round in 0..40 {
        let p = scripts(vec![reply::text("a"), reply::text("b")]);
        let agent = agent(&p, vec![]);
        let mut rx = agent.subscribe();
        agent.prompt_text("one").unwrap();
        until(&mut rx, "agent_end").await;
        assert!(!agent.state().is_streaming, "round {round}");
        assert_eq!(agent.prompt_text("two"), Ok(2), "round {round}");
        let events = finish(&agent, &mut rx).await;
        assert_eq!(
            kinds(&events).first().map(String::as_str),
            Some("agent_start")
        );
        assert_eq!(texts(&agent.messages()), ["one", "a", "two", "b"]);
    }
}

// 3. Event stream ------------------------------------------------------------------------------

#[tokio::test]
async fn subscribers_see_the_full_stream_and_state_is_rebuilt_from_message_end() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"x": 1}))]),
        reply::full(&["do", "ne"], &[]),
    ]);
    let agent = agent(&p, vec![TestTool::echo("echo").arc()]);
    let mut rx = agent.subscribe();
    let mut rx2 = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let events = finish(&agent, &mut rx).await;

    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "tool_start:c1",
            "tool_end:c1",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
        ]
    );
    let st = agent.state();
    assert_eq!(
        roles(&st.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(message_ends(&events), st.messages);
    assert_eq!(st.messages[3].as_assistant().unwrap().text(), "done");
    assert!(st.pending_tool_calls.is_empty());
    assert!(st.error.is_none());
    if let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() {
        assert_eq!(messages, &st.messages);
    } else {
        panic!("last event is not agent_end");
    }
    // A second subscriber sees the very same stream.
    let events2 = until(&mut rx2, "agent_end").await;
    assert_eq!(events2, events);
}

// 4./5. Steering while a tool runs -------------------------------------------------------------

/// Runs `slow` (c1, ~100 ms) then `echo` (c2) sequentially; `steer` is queued while c1 runs.
async fn steer_during_tool(
    steer: Vec<AgentMessage>,
    mode: QueueMode,
) -> (Agent, ScriptedProvider, Vec<AgentEvent>, usize) {
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "slow", json!({})),
            reply::call("c2", "echo", json!({})),
        ]),
        reply::text("after"),
        reply::text("after 2"),
    ]);
    let echo = TestTool::echo("echo").exclusive();
    let echo_calls = echo.calls.clone();
    let agent = agent(
        &p,
        vec![TestTool::sleeper("slow", 100).exclusive().arc(), echo.arc()],
    );
    agent.update_settings(|s| s.steering_mode = mode);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let mut events = until(&mut rx, "tool_start:c1").await;
    for m in steer {
        agent.steer(m);
    }
    events.extend(finish(&agent, &mut rx).await);
    (agent, p, events, echo_calls.load(Ordering::SeqCst))
}

#[tokio::test]
async fn steering_while_a_tool_runs_skips_the_rest_and_is_injected_before_the_next_call() {
    let (agent, p, events, echo_calls) = steer_during_tool(
        vec![AgentMessage::user("change of plan")],
        QueueMode::OneAtATime,
    )
    .await;
    assert_eq!(echo_calls, 0, "the not-yet-started call must not run");
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    assert_eq!(
        (results[0].0.as_str(), results[0].1.as_str(), results[0].2),
        ("c1", "slow done", false)
    );
    assert_eq!(results[1].0, "c2");
    assert!(results[1].2);
    assert_eq!(results[1].1, interrupt_skip_text(SteeringSource::User));
    assert!(results[1].1.contains("a message the user queued"));
    assert_eq!(results[1].3["source"], "interrupt_skipped");
    assert_eq!(results[1].3["executed"], false);

    // The steer opens the next turn, before the second provider call.
    let k = kinds(&events);
    let tail: Vec<&str> = k[k.len() - 9..k.len() - 1]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
        ]
    );
    assert_eq!(p.request_count(), 2);
    let r1 = &p.requests()[1];
    assert_eq!(
        request_roles_of(r1),
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
    assert_eq!(request_user_texts(r1), ["go", "change of plan"]);
    assert_eq!(
        texts(&agent.messages())[4..],
        ["change of plan".to_string(), "after".to_string()]
    );
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn agent_attributed_steering_uses_the_parent_agent_wording() {
    let (agent, p, events, echo_calls) =
        steer_during_tool(vec![agent_steer("parent says stop")], QueueMode::OneAtATime).await;
    assert_eq!(echo_calls, 0);
    let results = tool_results(&events);
    assert_eq!(results[1].0, "c2");
    assert_eq!(results[1].1, interrupt_skip_text(SteeringSource::Agent));
    assert!(results[1].1.contains("parent agent"));
    assert!(!results[1].1.contains("user queued"));
    assert_eq!(
        request_user_texts(&p.requests()[1]),
        ["go", "parent says stop"]
    );
    let steered = agent.messages()[4].clone();
    assert_eq!(steered.attribution(), Some(Attribution::Agent));
}

#[tokio::test]
async fn user_attributed_custom_steering_uses_the_user_wording() {
    let note = custom("notice", "look at this", Some("user"));
    let (agent, p, events, echo_calls) =
        steer_during_tool(vec![note.clone()], QueueMode::OneAtATime).await;
    assert_eq!(echo_calls, 0);
    let results = tool_results(&events);
    assert_eq!(results[1].1, interrupt_skip_text(SteeringSource::User));
    // The custom message enters the transcript but the default conversion keeps it from the
    // provider.
    assert_eq!(agent.messages()[4], note);
    assert_eq!(
        request_roles_of(&p.requests()[1]),
        ["user", "assistant", "toolResult", "toolResult"]
    );
}

#[tokio::test]
async fn one_at_a_time_classification_follows_the_next_queued_message() {
    // Agent steer first, then a user steer: one-at-a-time looks only at the head.
    let (_, _, events, _) = steer_during_tool(
        vec![agent_steer("from parent"), AgentMessage::user("from user")],
        QueueMode::OneAtATime,
    )
    .await;
    assert_eq!(
        tool_results(&events)[1].1,
        interrupt_skip_text(SteeringSource::Agent)
    );
    // "all" takes both, and a user message wins.
    let (_, _, events, _) = steer_during_tool(
        vec![agent_steer("from parent"), AgentMessage::user("from user")],
        QueueMode::All,
    )
    .await;
    assert_eq!(
        tool_results(&events)[1].1,
        interrupt_skip_text(SteeringSource::User)
    );
}

#[test]
fn classify_steering_rules() {
    let user = AgentMessage::user("u");
    let agent_user = agent_steer("a");
    let custom_user = custom("notice", "n", Some("user"));
    let custom_agent = custom("notice", "n", Some("agent"));
    let custom_plain = custom("notice", "n", None);
    assert_eq!(classify_steering(&[&user]), SteeringSource::User);
    assert_eq!(classify_steering(&[&agent_user]), SteeringSource::Agent);
    assert_eq!(classify_steering(&[&custom_user]), SteeringSource::User);
    assert_eq!(classify_steering(&[&custom_agent]), SteeringSource::Agent);
    assert_eq!(classify_steering(&[&custom_plain]), SteeringSource::System);
    assert_eq!(
        classify_steering(&[&custom_plain, &agent_user]),
        SteeringSource::Agent
    );
    assert_eq!(
        classify_steering(&[&agent_user, &custom_plain, &user]),
        SteeringSource::User
    );
    assert_eq!(
        classify_steering(&[&custom_agent, &custom_user]),
        SteeringSource::User
    );
}

// 6. Queue modes -------------------------------------------------------------------------------

async fn two_steers(mode: QueueMode) -> (Agent, ScriptedProvider, Vec<AgentEvent>) {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "slow", json!({}))]),
        reply::text("r1"),
        reply::text("r2"),
    ]);
    let agent = agent(&p, vec![TestTool::sleeper("slow", 60).arc()]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let mut events = until(&mut rx, "tool_start:c1").await;
    // Switched mid-run: the boundary after the tool reads the current mode.
    agent.update_settings(|s| s.steering_mode = mode);
    agent.steer_text("s1");
    agent.steer_text("s2");
    events.extend(finish(&agent, &mut rx).await);
    (agent, p, events)
}

#[tokio::test]
async fn one_at_a_time_delivers_one_steering_message_per_boundary() {
    let (agent, p, events) = two_steers(QueueMode::OneAtATime).await;
    assert_eq!(p.request_count(), 3);
    let reqs = p.requests();
    assert_eq!(request_user_texts(&reqs[1]), ["go", "s1"]);
    assert_eq!(request_user_texts(&reqs[2]), ["go", "s1", "s2"]);
    assert_eq!(
        roles(&agent.messages()),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(count(&events, "agent_end"), 1);
    assert_eq!(count(&events, "turn_start"), 3);
}

#[tokio::test]
async fn all_mode_delivers_every_steering_message_at_once() {
    let (agent, p, events) = two_steers(QueueMode::All).await;
    assert_eq!(p.request_count(), 2);
    let reqs = p.requests();
    assert_eq!(request_user_texts(&reqs[1]), ["go", "s1", "s2"]);
    assert_eq!(
        roles(&agent.messages()),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "user",
            "assistant"
        ]
    );
    assert_eq!(count(&events, "turn_start"), 2);
    // One queue update when both were taken together: [] steering afterwards.
    let updates = queue_updates(&events);
    assert_eq!(updates.last(), Some(&(vec![], vec![])));
    assert_eq!(updates.len(), 3, "two steers queued, one dequeue of both");
}

// 7. Follow-up ---------------------------------------------------------------------------------

#[tokio::test]
async fn follow_up_queued_during_a_run_is_processed_when_the_agent_would_stop() {
    let mut slow = vec![Step::Delay(Duration::from_millis(60))];
    slow.extend(reply::text("first answer"));
    let p = scripts(vec![slow, reply::text("second answer")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("start").unwrap();
    let mut events = until(&mut rx, "turn_start").await;
    agent.follow_up_text("and then?");
    assert_eq!(texts(&agent.peek_follow_up_queue()), ["and then?"]);
    events.extend(finish(&agent, &mut rx).await);

    assert_eq!(p.request_count(), 2);
    assert_eq!(count(&events, "agent_end"), 1);
    assert_eq!(count(&events, "turn_start"), 2);
    assert_eq!(
        request_roles_of(&p.requests()[1]),
        ["user", "assistant", "user"]
    );
    assert_eq!(
        texts(&agent.messages()),
        ["start", "first answer", "and then?", "second answer"]
    );
    assert!(!agent.has_queued_messages());
    // The follow-up is emitted after the first turn ended, as the second turn's input.
    let k = kinds(&events);
    let first_end = k.iter().position(|x| x == "turn_end").unwrap();
    let fu = k
        .iter()
        .enumerate()
        .filter(|(_, x)| *x == "message_end:user")
        .nth(1)
        .unwrap()
        .0;
    assert!(first_end < fu);
}

// 8. Abort -------------------------------------------------------------------------------------

#[tokio::test]
async fn abort_keeps_queues_and_continue_runs_a_follow_up_afterwards() {
    let p = scripts(vec![vec![Step::Stall]]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let mut events = until(&mut rx, "turn_start").await;
    agent.steer_text("queued steer");
    agent.follow_up_text("queued follow-up");
    agent.abort(Some("Esc".into()));
    events.extend(finish(&agent, &mut rx).await);

    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
        ]
    );
    let st = agent.state();
    assert!(!st.is_streaming);
    let last = st.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Esc"));
    assert_eq!(st.error.as_deref(), Some("Esc"));
    p.wait_dropped(1).await;
    assert_eq!(p.dropped_early(), 1);

    // Nothing was dequeued by the aborted run.
    assert_eq!(texts(&agent.peek_steering_queue()), ["queued steer"]);
    assert_eq!(texts(&agent.peek_follow_up_queue()), ["queued follow-up"]);
    // What the TUI does on Esc: take everything back into the editor, steering first.
    let restored = agent.clear_all_queues();
    assert_eq!(texts(&restored), ["queued steer", "queued follow-up"]);
    assert!(!agent.has_queued_messages());
    assert_eq!(
        queue_updates(&drain(&mut rx)).last(),
        Some(&(vec![], vec![]))
    );

    // The tail is an assistant message: continue runs a queued follow-up.
    p.push(reply::text("resumed"));
    agent.follow_up_text("try again");
    agent.continue_run().unwrap();
    let events = finish(&agent, &mut rx).await;
    assert_eq!(count(&events, "agent_start"), 1);
    assert_eq!(
        texts(&agent.messages())[2..],
        ["try again".to_string(), "resumed".to_string()]
    );
    assert_eq!(request_user_texts(&p.requests()[1]), ["go", "try again"]);
    assert!(agent.state().error.is_none());
}

// 9. continue_run ------------------------------------------------------------------------------

#[tokio::test]
async fn continue_on_an_empty_transcript_runs_a_queued_steer_as_the_opening_turn() {
    let p = scripts(vec![reply::text("a1"), reply::text("a2")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.steer_text("s1");
    agent.steer_text("s2");
    agent.continue_run().unwrap();
    let events = finish(&agent, &mut rx).await;
    // One-at-a-time: s1 opens the run, the loop's first poll does not also take s2; s2 comes at
    // the next boundary.
    let reqs = p.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(request_user_texts(&reqs[0]), ["s1"]);
    assert_eq!(request_user_texts(&reqs[1]), ["s1", "s2"]);
    assert_eq!(texts(&agent.messages()), ["s1", "a1", "s2", "a2"]);
    assert_eq!(count(&events, "agent_end"), 1);
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn continue_on_an_empty_transcript_runs_a_queued_follow_up() {
    let p = scripts(vec![reply::text("hello")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.follow_up_text("f1");
    agent.continue_run().unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(request_user_texts(&p.requests()[0]), ["f1"]);
    assert_eq!(texts(&agent.messages()), ["f1", "hello"]);
}

#[tokio::test]
async fn continue_with_nothing_queued_cannot_continue() {
    let p = scripts(vec![reply::text("never"), reply::text("ok")]);
    let agent = agent(&p, vec![]);
    let err = agent.continue_run().unwrap_err();
    assert!(
        matches!(&err, AgentError::CannotContinue(m) if !m.is_empty()),
        "{err:?}"
    );
    assert!(!agent.is_streaming(), "the claim is released");
    assert_eq!(p.request_count(), 0);

    // From an assistant tail, with nothing queued: refused as well.
    agent
        .replace_messages(vec![AgentMessage::user("hi"), reply::base().into()])
        .unwrap();
    assert!(matches!(
        agent.continue_run(),
        Err(AgentError::CannotContinue(_))
    ));
    assert!(!agent.is_streaming());
    // And the agent is still usable.
    let mut rx = agent.subscribe();
    agent.prompt_text("again").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(p.request_count(), 1);
}

#[tokio::test]
async fn continue_from_an_assistant_tail_runs_a_queued_follow_up() {
    let p = scripts(vec![reply::text("more text")]);
    let agent = agent(&p, vec![]);
    let mut answer = reply::base();
    answer
        .content
        .push(pi::agent::protocol::types::ContentBlock::text("first"));
    agent
        .replace_messages(vec![AgentMessage::user("hi"), answer.into()])
        .unwrap();
    let mut rx = agent.subscribe();
    agent.follow_up_text("go on");
    agent.continue_run().unwrap();
    let events = finish(&agent, &mut rx).await;
    assert_eq!(
        request_roles_of(&p.requests()[0]),
        ["user", "assistant", "user"]
    );
    assert_eq!(request_user_texts(&p.requests()[0]), ["hi", "go on"]);
    assert_eq!(
        texts(&agent.messages()),
        ["hi", "first", "go on", "more text"]
    );
    assert_eq!(
        roles(&message_ends(&events)),
        ["user", "assistant"],
        "only the new messages are emitted"
    );
}

#[tokio::test]
async fn an_aborted_continue_does_not_suppress_the_next_runs_first_steering_poll() {
    let p = scripts(vec![reply::text("answer")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.steer_text("opening");
    agent.continue_run().unwrap();
    // Aborted before the run task got to poll steering.
    agent.abort(None);
    finish(&agent, &mut rx).await;
    assert_eq!(p.request_count(), 0);

    // A fresh run: a steer queued before it starts is taken by its first poll.
    agent.steer_text("extra");
    agent.prompt_text("next").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(p.request_count(), 1, "the steer must join the first turn");
    let texts0 = request_user_texts(&p.requests()[0]);
    assert_eq!(texts0[texts0.len() - 2..], ["next", "extra"]);
}

// 10. Provider failure -------------------------------------------------------------------------

#[tokio::test]
async fn out_of_band_failure_after_start_closes_the_run_with_an_error_turn() {
    let (mut steps, _) = reply::open(&["partial ", "text"], &[]);
    steps.push(Step::Fail("connection reset".into()));
    let p = scripts(vec![steps]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let events = finish(&agent, &mut rx).await;

    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
        ]
    );
    let ends = message_ends(&events);
    let a = ends[1].as_assistant().unwrap();
    assert_eq!(a.stop_reason, StopReason::Error);
    assert_eq!(a.error_message.as_deref(), Some("connection reset"));
    assert_eq!(a.text(), "partial text");
    let st = agent.state();
    assert_eq!(st.error.as_deref(), Some("connection reset"));
    assert!(!st.is_streaming);
    assert_eq!(roles(&st.messages), ["user", "assistant"]);
    assert_eq!(&st.messages[1], &ends[1]);
}

#[tokio::test]
async fn out_of_band_failure_before_start_synthesizes_an_error_message() {
    let p = scripts(vec![vec![Step::Fail("503 unavailable".into())]]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let events = finish(&agent, &mut rx).await;
    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
        ]
    );
    let a = agent.messages()[1].as_assistant().unwrap().clone();
    assert_eq!(a.stop_reason, StopReason::Error);
    assert_eq!(a.error_message.as_deref(), Some("503 unavailable"));
    assert_eq!(agent.state().error.as_deref(), Some("503 unavailable"));
}

#[tokio::test]
async fn failure_after_a_completed_tool_call_gives_it_a_placeholder_and_drops_the_incomplete_one() {
    let (mut steps, _) = reply::open(&["let me look"], &[reply::call("c1", "echo", json!({}))]);
    // A second call that never completes.
    steps.push(Step::Event(StreamEvent::ToolCallStart {
        content_index: 2,
        id: "c2".into(),
        name: "echo".into(),
    }));
    steps.push(Step::Event(StreamEvent::ToolCallDelta {
        content_index: 2,
        delta: "{\"pa".into(),
    }));
    steps.push(Step::Fail("stream broke".into()));
    let p = scripts(vec![steps]);
    let echo = TestTool::echo("echo");
    let calls = echo.calls.clone();
    let agent = agent(&p, vec![echo.arc()]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    let events = finish(&agent, &mut rx).await;

    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing is executed");
    assert_eq!(
        kinds(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "tool_start:c1",
            "tool_end:c1",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "agent_end",
        ]
    );
    assert_eq!(count(&events, "turn_start"), count(&events, "turn_end"));
    let ends = message_ends(&events);
    let a = ends[1].as_assistant().unwrap();
    let ids: Vec<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1"], "the incomplete call is dropped");
    assert_eq!(a.stop_reason, StopReason::Error);
    assert_eq!(a.error_message.as_deref(), Some("stream broke"));

    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    let (id, _, is_error, details) = &results[0];
    assert_eq!(id, "c1");
    assert!(is_error);
    assert_eq!(details["source"], "assistant_stop_error");
    assert_eq!(details["upstreamError"], "stream broke");
    assert_eq!(details["__synthetic"], true);

    let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() else {
        panic!("the run must end with agent_end");
    };
    assert_eq!(roles(messages), ["user", "assistant", "toolResult"]);
    let st = agent.state();
    assert_eq!(
        &st.messages, messages,
        "the agent keeps what agent_end reported"
    );
    assert_eq!(st.error.as_deref(), Some("stream broke"));
    assert!(st.pending_tool_calls.is_empty());
}

// 11. Refusal ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_refusal_turn_stays_in_the_transcript_but_not_in_the_next_request() {
    let refusal = reply::with_stop(
        &["I can't help with that."],
        &[],
        StopReason::Error,
        Some(StopDetails {
            kind: STOP_REFUSAL.into(),
            ..Default::default()
        }),
    );
    let p = scripts(vec![refusal, reply::text("sure")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("bad request").unwrap();
    finish(&agent, &mut rx).await;
    let msgs = agent.messages();
    assert_eq!(roles(&msgs), ["user", "assistant"]);
    assert!(msgs[1].as_assistant().unwrap().is_provider_refusal());

    agent.prompt_text("something else").unwrap();
    finish(&agent, &mut rx).await;
    let r1 = &p.requests()[1];
    assert_eq!(request_roles_of(r1), ["user", "user"]);
    assert_eq!(request_user_texts(r1), ["bad request", "something else"]);
    assert_eq!(
        texts(&agent.messages()),
        [
            "bad request",
            "I can't help with that.",
            "something else",
            "sure"
        ]
    );
}

// 12. Live settings ----------------------------------------------------------------------------

#[tokio::test]
async fn settings_changed_mid_run_apply_to_the_next_provider_call() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "slow", json!({}))]),
        reply::text("done"),
    ]);
    let agent = agent(&p, vec![TestTool::sleeper("slow", 60).arc()]);
    agent.update_settings(|s| s.system_prompt = vec!["old prompt".into()]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    until(&mut rx, "tool_start:c1").await;
    agent.update_settings(|s| {
        s.model = Model::new("other", "other-api", "model-2");
        s.system_prompt = vec!["new prompt".into()];
        s.thinking = ThinkingLevel::High;
    });
    finish(&agent, &mut rx).await;

    let reqs = p.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].model.id, "scripted-model");
    assert_eq!(reqs[0].context.system_prompt, ["old prompt"]);
    assert_eq!(reqs[0].options.reasoning, None);
    assert!(reqs[0].options.disable_reasoning);

    assert_eq!(reqs[1].model.id, "model-2");
    assert_eq!(reqs[1].model.provider, "other");
    assert_eq!(reqs[1].context.system_prompt, ["new prompt"]);
    assert_eq!(reqs[1].options.reasoning, Some(Effort::High));
    assert!(!reqs[1].options.disable_reasoning);
    assert_eq!(agent.settings().model.id, "model-2");
}

// 13. replace_messages / reset ------------------------------------------------------------------

#[tokio::test]
async fn replace_messages_is_refused_while_streaming_and_reset_clears_everything() {
    let p = scripts(vec![
        vec![Step::Delay(Duration::from_millis(50))]
            .into_iter()
            .chain(reply::text("answer"))
            .collect::<Script>(),
    ]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    assert_eq!(
        agent.replace_messages(vec![AgentMessage::user("other")]),
        Err(AgentError::Busy)
    );
    finish(&agent, &mut rx).await;
    assert_eq!(texts(&agent.messages()), ["go", "answer"]);

    let restored = vec![AgentMessage::user("a"), AgentMessage::user("b")];
    agent.replace_messages(restored.clone()).unwrap();
    assert_eq!(agent.state().messages, restored);

    agent.steer_text("s");
    agent.follow_up_text("f");
    drain(&mut rx);
    agent.reset();
    let st = agent.state();
    assert!(st.messages.is_empty());
    assert!(st.error.is_none());
    assert!(!agent.has_queued_messages());
    assert!(agent.peek_steering_queue().is_empty());
    assert!(agent.peek_follow_up_queue().is_empty());
    assert_eq!(queue_updates(&drain(&mut rx)), [(vec![], vec![])]);
}

#[tokio::test(start_paused = true)]
async fn reset_during_a_run_is_not_undone_when_the_run_ends() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "stubborn", json!({}))]),
        reply::text("the old run's last word"),
        reply::text("fresh answer"),
    ]);
    let agent = agent(&p, vec![TestTool::stubborn("stubborn", 1_000).arc()]);
    let mut rx = agent.subscribe();
    agent.prompt_text("old work").unwrap();
    until(&mut rx, "tool_start:c1").await;
    agent.follow_up_text("queued before the reset");
    agent.reset();
    assert!(agent.messages().is_empty());
    assert!(agent.is_streaming(), "the run is not aborted: still busy");
    // The run goes on to its end; subscribers still see it.
    let events = finish(&agent, &mut rx).await;
    assert_eq!(count(&events, "agent_end"), 1);
    assert_eq!(p.request_count(), 2);
    // Its end does not bring the old conversation back.
    let st = agent.state();
    assert!(st.messages.is_empty(), "{:?}", texts(&st.messages));
    assert!(st.error.is_none());
    assert!(st.pending_tool_calls.is_empty());
    assert!(!st.is_streaming);
    assert!(!agent.has_queued_messages());
    // The next run starts from the empty conversation.
    agent.prompt_text("fresh").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(request_user_texts(&p.requests()[2]), ["fresh"]);
    assert_eq!(texts(&agent.messages()), ["fresh", "fresh answer"]);
}

/// A host gate that stops every model call while `stop` is set.
struct SwitchGate {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait::async_trait]
impl pi::agent::protocol::hooks::LoopHooks for SwitchGate {
    fn has_model_gate(&self) -> bool {
        true
    }
    async fn before_model_call(
        &self,
        _c: &pi::agent::protocol::stream::LlmContext,
        _s: &pi::agent::protocol::abort::AbortSignal,
    ) -> Result<pi::agent::protocol::hooks::GateDecision, String> {
        Ok(if self.stop.load(Ordering::SeqCst) {
            pi::agent::protocol::hooks::GateDecision::Stop(Some("held".into()))
        } else {
            pi::agent::protocol::hooks::GateDecision::Proceed
        })
    }
}

fn gated(p: &ScriptedProvider) -> (Agent, Arc<std::sync::atomic::AtomicBool>) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let a = agent(
        p,
        vec![TestTool::echo("todo").arc(), TestTool::echo("bash").arc()],
    );
    let gate = SwitchGate { stop: stop.clone() };
    a.update_settings(|s| s.hooks = Arc::new(gate));
    (a, stop)
}

fn choices(p: &ScriptedProvider) -> Vec<Option<pi::agent::protocol::stream::ToolChoice>> {
    p.requests()
        .iter()
        .map(|r| r.options.tool_choice.clone())
        .collect()
}

#[tokio::test]
async fn a_forced_choice_from_a_gate_stopped_run_is_served_on_the_next_prompt() {
    use pi::agent::protocol::stream::ToolChoice;
    let p = ScriptedProvider::new([
        reply::tools(&[reply::call("c1", "todo", json!({}))]),
        reply::text("ok"),
    ]);
    let (a, stop) = gated(&p);
    a.force_tool_choice(ToolChoice::Tool("todo".into()));
    a.prompt_text("first").unwrap();
    a.wait_idle().await;
    assert_eq!(p.request_count(), 0, "the gate held the call");
    stop.store(false, Ordering::SeqCst);
    a.prompt_text("second").unwrap();
    a.wait_idle().await;
    assert_eq!(choices(&p), [Some(ToolChoice::Tool("todo".into())), None]);
}

#[tokio::test]
async fn a_deferred_choice_is_dropped_when_its_tool_is_gone_or_queues_are_cleared() {
    use pi::agent::protocol::stream::ToolChoice;
    let p = ScriptedProvider::new([reply::text("ok"), reply::text("ok")]);
    let (a, stop) = gated(&p);
    a.force_tool_choice(ToolChoice::Tool("todo".into()));
    a.prompt_text("first").unwrap();
    a.wait_idle().await;
    stop.store(false, Ordering::SeqCst);
    a.update_settings(|s| {
        s.tools = Arc::new(pi::agent::protocol::tool::ToolSet::new([TestTool::echo(
            "bash",
        )
        .arc()]))
    });
    a.prompt_text("second").unwrap();
    a.wait_idle().await;
    assert_eq!(choices(&p), [None]);

    let p = ScriptedProvider::new([reply::text("ok")]);
    let (a, stop) = gated(&p);
    a.force_tool_choice(ToolChoice::Tool("todo".into()));
    a.prompt_text("first").unwrap();
    a.wait_idle().await;
    a.clear_all_queues();
    stop.store(false, Ordering::SeqCst);
    a.prompt_text("second").unwrap();
    a.wait_idle().await;
    assert_eq!(choices(&p), [None]);
}

#[tokio::test]
async fn a_served_choice_is_not_deferred_again_by_a_later_gate_stop() {
    use pi::agent::protocol::stream::ToolChoice;
    let p = ScriptedProvider::new([reply::text("ok"), reply::text("ok")]);
    let (a, stop) = gated(&p);
    stop.store(false, Ordering::SeqCst);
    a.force_tool_choice(ToolChoice::Tool("todo".into()));
    a.prompt_text("first").unwrap();
    a.wait_idle().await;
    stop.store(true, Ordering::SeqCst);
    a.prompt_text("second").unwrap();
    a.wait_idle().await;
    stop.store(false, Ordering::SeqCst);
    a.prompt_text("third").unwrap();
    a.wait_idle().await;
    assert_eq!(choices(&p), [Some(ToolChoice::Tool("todo".into())), None]);
}

// The pause gate (§13.4) ----------------------------------------------------------------------

/// Let every task run until all are idle (the clock is paused: idle time passes at once).
async fn settle() {
    tokio::time::sleep(Duration::from_secs(60)).await;
}

#[tokio::test(start_paused = true)]
async fn a_paused_agent_waits_before_the_model_call_and_before_each_tool_and_abort_still_ends_it() {
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "pauser", json!({})),
            reply::call("c2", "echo", json!({})),
        ]),
        reply::text("done"),
        reply::text("never"),
    ]);
    let gate_holder: Arc<std::sync::OnceLock<Agent>> = Arc::new(std::sync::OnceLock::new());
    let holder = gate_holder.clone();
    // The first tool closes the gate as it runs: it finishes, the second must wait.
    let pauser = TestTool::new("pauser", move |_inv| {
        let holder = holder.clone();
        async move {
            if let Some(a) = holder.get() {
                a.pause_gate().pause();
            }
            Ok(pi::agent::protocol::tool::ToolOutput::text("paused it"))
        }
    })
    .exclusive();
    let echo = TestTool::echo("echo").exclusive();
    let echo_calls = echo.calls.clone();
    let agent = agent(&p, vec![pauser.arc(), echo.arc()]);
    let _ = gate_holder.set(agent.clone());
    let mut rx = agent.subscribe();

    // Paused before the prompt: the run starts but makes no model call.
    assert!(agent.pause_gate().pause());
    agent.prompt_text("go").unwrap();
    settle().await;
    assert_eq!(p.request_count(), 0, "parked before the model call");
    assert!(agent.state().paused);
    assert!(agent.pause_gate().resume().is_some());
    let events = until(&mut rx, "tool_end:c1").await;
    assert!(kinds(&events).contains(&"tool_start:c1".to_string()));
    settle().await;
    let waiting = drain(&mut rx);
    assert!(
        !kinds(&waiting).contains(&"tool_start:c2".to_string()),
        "the second tool waits: {:?}",
        kinds(&waiting)
    );
    assert_eq!(echo_calls.load(Ordering::SeqCst), 0);
    agent.pause_gate().resume();
    let events = finish(&agent, &mut rx).await;
    assert!(kinds(&events).contains(&"tool_start:c2".to_string()));
    assert_eq!(echo_calls.load(Ordering::SeqCst), 1);
    assert_eq!(p.request_count(), 2);

    // Paused again: Esc (abort) still ends the parked run at once.
    agent.pause_gate().pause();
    agent.prompt_text("again").unwrap();
    settle().await;
    agent.abort(None);
    let events = finish(&agent, &mut rx).await;
    assert_eq!(count(&events, "agent_end"), 1);
    assert_eq!(p.request_count(), 2, "no call was made");
    assert!(agent.pause_gate().is_paused(), "the gate stays closed");
}

/// Tool names a request offered.
fn offered(r: &ProviderRequest) -> Vec<String> {
    r.context.tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_paused_agent_parks_before_the_turn_and_takes_the_settings_changed_meanwhile() {
    let p = scripts(vec![reply::text("done")]);
    let agent = agent(&p, vec![TestTool::echo("echo").arc()]);
    let mut rx = agent.subscribe();
    assert!(agent.pause_gate().pause());
    agent.prompt_text("go").unwrap();
    settle().await;
    // Parked first: nothing of the turn exists yet.
    let parked = drain(&mut rx);
    assert_eq!(kinds(&parked), ["agent_start"], "{:?}", kinds(&parked));
    assert_eq!(p.request_count(), 0);
    // Changed while paused: the call about to be made uses them.
    agent.update_settings(|s| {
        s.model = Model::new("other", "other-api", "model-2");
        s.thinking = ThinkingLevel::High;
        s.tools = Arc::new(pi::agent::protocol::tool::ToolSet::new([
            TestTool::echo("echo").arc(),
            TestTool::echo("added").arc(),
        ]));
    });
    agent.pause_gate().resume();
    let events = finish(&agent, &mut rx).await;
    assert_eq!(
        kinds(&events)[..3],
        ["turn_start", "message_start:user", "message_end:user"]
    );
    let r = &p.requests()[0];
    assert_eq!(r.model.id, "model-2");
    assert_eq!(r.options.reasoning, Some(Effort::High));
    assert_eq!(offered(r), ["echo", "added"]);
}

#[tokio::test(start_paused = true)]
async fn a_paused_agent_holds_a_call_that_failed_validation_too() {
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "pauser", json!({})),
            reply::call("c2", "strict", json!({"n": "not a number"})),
        ]),
        reply::text("done"),
    ]);
    let holder: Arc<std::sync::OnceLock<Agent>> = Arc::new(std::sync::OnceLock::new());
    let h = holder.clone();
    let pauser = TestTool::new("pauser", move |_inv| {
        let h = h.clone();
        async move {
            if let Some(a) = h.get() {
                a.pause_gate().pause();
            }
            Ok(pi::agent::protocol::tool::ToolOutput::text("paused it"))
        }
    })
    .exclusive();
    let strict = TestTool::echo("strict")
        .schema(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .exclusive();
    let agent = agent(&p, vec![pauser.arc(), strict.arc()]);
    let _ = holder.set(agent.clone());
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    until(&mut rx, "tool_end:c1").await;
    settle().await;
    let parked = kinds(&drain(&mut rx));
    assert!(
        !parked.iter().any(|k| k.ends_with(":c2")),
        "nothing of c2 while paused: {parked:?}"
    );
    agent.pause_gate().resume();
    let events = finish(&agent, &mut rx).await;
    let results = tool_results(&events);
    assert_eq!(results[0].0, "c2");
    assert!(results[0].2, "c2 still fails validation once resumed");
    assert_eq!(p.request_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_compaction_waits_behind_a_closed_pause_gate() {
    let p = scripts(vec![reply::text("the summary")]);
    let agent = agent(&p, vec![]);
    agent.update_settings(|s| {
        s.compaction = Some(pi::agent::policy::compaction::CompactionSettings {
            enabled: true,
            reserve_tokens: 1_000,
            keep_recent_tokens: 20,
            scale_with_window: false,
        })
    });
    let long = |c: &str| c.repeat(400);
    agent
        .replace_messages(vec![
            AgentMessage::user(long("a")),
            AgentMessage::user(long("b")),
            AgentMessage::user(long("c")),
            AgentMessage::user(long("d")),
        ])
        .unwrap();
    let mut rx = agent.subscribe();
    agent.pause_gate().pause();
    agent.compact(None).unwrap();
    settle().await;
    let parked = drain(&mut rx);
    assert_eq!(count(&parked, "compaction_start"), 0);
    assert_eq!(p.request_count(), 0, "no summary request while paused");
    agent.pause_gate().resume();
    let events = until(&mut rx, "compaction_end").await;
    agent.wait_idle().await;
    assert_eq!(count(&events, "compaction_start"), 1);
    assert_eq!(p.request_count(), 1);
    let summary = events.iter().find_map(|e| match e {
        AgentEvent::CompactionEnd { result, .. } => result.clone(),
        _ => None,
    });
    assert!(summary.unwrap().summary.contains("the summary"));
}

// Host hooks, external events, side requests (§9.2) ------------------------------------------

/// A hook that counts its calls.
fn counting_hook(
    n: &Arc<std::sync::atomic::AtomicUsize>,
) -> pi::agent::engine::host_hooks::SignalHook {
    let n = n.clone();
    Arc::new(move |_signal| {
        n.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {})
    })
}

#[tokio::test]
async fn dequeue_hooks_run_before_queues_are_read_and_are_removed_one_by_one() {
    use std::sync::atomic::AtomicUsize;
    let p = scripts(vec![
        reply::text("first"),
        reply::text("second"),
        reply::text("third"),
    ]);
    let agent = agent(&p, vec![]);
    // A hook may queue something itself: it is taken at the same boundary.
    let a2 = agent.clone();
    let fed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f2 = fed.clone();
    let feeder = agent.add_before_dequeue_hook(Arc::new(move |_signal| {
        if !f2.swap(true, Ordering::SeqCst) {
            a2.follow_up_text("from the hook");
        }
        Box::pin(async {})
    }));
    let counted = Arc::new(AtomicUsize::new(0));
    let counter = agent.add_before_dequeue_hook(counting_hook(&counted));
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(p.request_count(), 2, "the hook's follow-up ran");
    assert_eq!(
        request_user_texts(&p.requests()[1]),
        ["go", "from the hook"]
    );
    let before = counted.load(Ordering::SeqCst);
    assert!(before > 0);
    // Removed independently: the counter still runs, the feeder does not.
    assert!(agent.remove_before_dequeue_hook(feeder));
    assert!(!agent.remove_before_dequeue_hook(feeder), "already gone");
    fed.store(false, Ordering::SeqCst);
    agent.prompt_text("again").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(p.request_count(), 3, "nothing fed this time");
    assert!(counted.load(Ordering::SeqCst) > before);
    assert!(agent.remove_before_dequeue_hook(counter));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_passing_inside_a_dequeue_hook_leaves_the_follow_up_queued() {
    let p = scripts(vec![reply::text("first"), reply::text("never")]);
    let agent = agent(&p, vec![]);
    agent.update_settings(|s| {
        s.deadline = Some(tokio::time::Instant::now() + Duration::from_secs(1))
    });
    agent.follow_up_text("later");
    let a2 = agent.clone();
    agent.add_before_dequeue_hook(Arc::new(move |signal| {
        // Slow once the first reply is in (at the boundary where the follow-up would be
        // taken), and told when the run's deadline passes.
        let slow = a2.messages().iter().any(|m| m.as_assistant().is_some());
        Box::pin(async move {
            if slow {
                tokio::select! {
                    _ = signal.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                }
            }
        })
    }));
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(p.request_count(), 1);
    assert_eq!(texts(&agent.peek_follow_up_queue()), ["later"]);
}

#[tokio::test(start_paused = true)]
async fn continue_waits_for_dequeue_hooks_busy_and_abortable() {
    let p = scripts(vec![reply::text("never")]);
    let agent = agent(&p, vec![]);
    agent
        .replace_messages(vec![
            AgentMessage::user("q"),
            AgentMessage::from(Message::Assistant(
                pi::agent::protocol::types::AssistantMessage {
                    content: vec![pi::agent::protocol::types::ContentBlock::text("a")],
                    ..Default::default()
                },
            )),
        ])
        .unwrap();
    agent.follow_up_text("queued");
    let asked = Arc::new(tokio::sync::Notify::new());
    let a2 = asked.clone();
    agent.add_before_dequeue_hook(Arc::new(move |signal| {
        let a2 = a2.clone();
        Box::pin(async move {
            a2.notify_one();
            signal.cancelled().await;
        })
    }));
    let mut rx = agent.subscribe();
    agent.continue_run().unwrap();
    tokio::time::timeout(WAIT, asked.notified())
        .await
        .expect("the hook is awaited");
    assert_eq!(
        agent.prompt_text("meanwhile"),
        Err(AgentError::Busy),
        "busy while the hook runs"
    );
    agent.abort(Some("changed my mind".into()));
    let events = finish(&agent, &mut rx).await;
    assert_eq!(kinds(&events), ["agent_start", "agent_end"]);
    assert_eq!(p.request_count(), 0);
    assert_eq!(
        texts(&agent.peek_follow_up_queue()),
        ["queued"],
        "nothing taken"
    );
    assert_eq!(agent.state().error.as_deref(), Some("changed my mind"));
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn model_call_hooks_run_with_the_run_signal_before_the_settings_are_read() {
    let p = scripts(vec![reply::text("one"), reply::text("two")]);
    let agent = agent(&p, vec![]);
    let a2 = agent.clone();
    let switch = agent.add_before_model_call_hook(Arc::new(move |_signal| {
        a2.update_settings(|s| s.model = Model::new("other", "other-api", "model-2"));
        Box::pin(async {})
    }));
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(
        p.requests()[0].model.id,
        "model-2",
        "applies to that very call"
    );
    assert!(agent.remove_before_model_call_hook(switch));

    // The hook gets the run's signal: aborting the run ends its wait.
    let asked = Arc::new(tokio::sync::Notify::new());
    let a2 = asked.clone();
    agent.add_before_model_call_hook(Arc::new(move |signal| {
        let a2 = a2.clone();
        Box::pin(async move {
            a2.notify_one();
            signal.cancelled().await;
        })
    }));
    agent.prompt_text("again").unwrap();
    tokio::time::timeout(WAIT, asked.notified())
        .await
        .expect("the hook is awaited");
    agent.abort(None);
    let events = finish(&agent, &mut rx).await;
    assert_eq!(count(&events, "agent_end"), 1);
    assert_eq!(p.request_count(), 1, "no call after the abort");
}

#[tokio::test]
async fn external_events_update_the_state_and_reach_subscribers() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "slow", json!({}))]),
        reply::text("done"),
        reply::text("next"),
    ]);
    let agent = agent(&p, vec![TestTool::sleeper("slow", 50).arc()]);
    let mut rx = agent.subscribe();
    let note = custom("note", "build finished", Some("agent"));
    agent.emit_external_event(AgentEvent::MessageEnd {
        message: note.clone(),
    });
    let e = rx.recv().await.unwrap();
    assert_eq!(e.run, None);
    assert!(matches!(e.event, AgentEvent::MessageEnd { .. }));
    assert_eq!(agent.messages(), std::slice::from_ref(&note));

    // During a run: stamped with the run, and kept once the run's outcome replaces the state.
    agent.prompt_text("go").unwrap();
    until(&mut rx, "tool_start:c1").await;
    let during = AgentMessage::user("typed elsewhere");
    agent.emit_external_event(AgentEvent::MessageEnd {
        message: during.clone(),
    });
    let events = finish(&agent, &mut rx).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::MessageEnd { message } if *message == during))
    );
    let st = agent.messages();
    assert_eq!(
        st.iter().filter(|m| **m == during).count(),
        1,
        "{:?}",
        texts(&st)
    );
    assert_eq!(st.last(), Some(&during));
    assert_eq!(st[0], note);
    agent.prompt_text("more").unwrap();
    finish(&agent, &mut rx).await;
    assert!(request_user_texts(&p.requests()[2]).contains(&"typed elsewhere".to_string()));
}

/// Adds a marker to every provider context.
struct Marker;

impl pi::agent::protocol::hooks::LoopHooks for Marker {
    fn transform_provider_context(
        &self,
        context: &mut pi::agent::protocol::stream::LlmContext,
        _model: &Model,
    ) {
        context.system_prompt.push("(marked)".into());
    }
}

#[tokio::test]
async fn a_side_request_context_shares_the_main_prefix() {
    let p = scripts(vec![reply::text("ok")]);
    let agent = agent(
        &p,
        vec![TestTool::echo("echo").arc(), TestTool::echo("bash").arc()],
    );
    agent.update_settings(|s| {
        s.system_prompt = vec!["be brief".into()];
        s.intent_tracing = true;
        s.hooks = Arc::new(Marker);
    });
    let mut rx = agent.subscribe();
    agent.prompt_text("go").unwrap();
    finish(&agent, &mut rx).await;
    let main = &p.requests()[0].context;
    let question = Message::User(UserMessage {
        content: pi::agent::protocol::types::UserContent::Text("title?".into()),
        synthetic: true,
        steering: false,
        attribution: None,
        timestamp: 0,
    });
    let side = agent.side_request_context(vec![question.clone()], None);
    assert_eq!(side.system_prompt, main.system_prompt);
    assert_eq!(
        side.system_prompt.last().map(String::as_str),
        Some("(marked)")
    );
    assert_eq!(
        serde_json::to_value(&side.tools).unwrap(),
        serde_json::to_value(&main.tools).unwrap(),
        "the same tool specs, intent field included"
    );
    assert_eq!(side.messages.len(), 1);
    let own = agent.side_request_context(vec![question], Some(vec!["summarise".into()]));
    assert_eq!(own.system_prompt, ["summarise", "(marked)"]);
}

// Append-only context (spec §10) -----------------------------------------------------------------

/// The transcript with every timestamp set to `ts`: the same conversation as far as a provider
/// can tell (timestamps are never sent), but new values.
fn restamped(messages: Vec<AgentMessage>, ts: i64) -> Vec<AgentMessage> {
    messages
        .into_iter()
        .map(|m| match m {
            AgentMessage::Llm(llm) => {
                let mut llm = (*llm).clone();
                match &mut llm {
                    Message::User(u) => u.timestamp = ts,
                    Message::Developer(d) => d.timestamp = ts,
                    Message::Assistant(a) => a.timestamp = ts,
                    Message::ToolResult(r) => r.timestamp = ts,
                }
                llm.into()
            }
            other => other,
        })
        .collect()
}

fn stamps_sent(p: &ScriptedProvider, i: usize) -> Vec<i64> {
    p.requests()[i]
        .context
        .messages
        .iter()
        .map(|m| m.timestamp())
        .collect()
}

#[tokio::test]
async fn the_append_only_context_resends_what_was_sent_across_runs() {
    let p = scripts(vec![
        reply::text("one"),
        reply::text("two"),
        reply::text("three"),
        reply::text("four"),
        reply::text("five"),
    ]);
    let agent = agent(&p, vec![]);
    agent.update_settings(|s| s.append_only = true);
    let mut rx = agent.subscribe();
    agent.prompt_text("first").unwrap();
    finish(&agent, &mut rx).await;
    let sent = stamps_sent(&p, 0);
    assert_eq!(sent.len(), 1);

    // The same conversation with other values: the earlier messages go as they went.
    agent
        .replace_messages(restamped(agent.messages(), 7))
        .unwrap();
    agent.prompt_text("second").unwrap();
    finish(&agent, &mut rx).await;
    let second = stamps_sent(&p, 1);
    assert_eq!(second.len(), 3);
    assert_eq!(second[0], sent[0], "the first prompt as it was sent");
    assert_eq!(second[1], 7, "the answer was not sent before");
    agent
        .replace_messages(restamped(agent.messages(), 10))
        .unwrap();
    agent.prompt_text("again").unwrap();
    finish(&agent, &mut rx).await;
    let again = stamps_sent(&p, 2);
    assert_eq!(again[..3], second[..3], "each message as it was first sent");

    // Another model: everything is sent afresh.
    agent.update_settings(|s| s.model.id = "other".into());
    agent
        .replace_messages(restamped(agent.messages(), 8))
        .unwrap();
    agent.prompt_text("third").unwrap();
    finish(&agent, &mut rx).await;
    let third = stamps_sent(&p, 3);
    assert_eq!(&third[..6], [8; 6], "{third:?}");

    // `reset` starts a new log, even for a conversation that looks the same.
    let kept = agent.messages();
    agent.reset();
    agent.replace_messages(restamped(kept, 9)).unwrap();
    agent.prompt_text("fourth").unwrap();
    finish(&agent, &mut rx).await;
    let fourth = stamps_sent(&p, 4);
    assert_eq!(&fourth[..8], [9; 8], "{fourth:?}");
}

#[tokio::test]
async fn without_the_append_only_context_each_call_sends_the_transcript_as_it_is() {
    let p = scripts(vec![reply::text("one"), reply::text("two")]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    agent.prompt_text("first").unwrap();
    finish(&agent, &mut rx).await;
    agent
        .replace_messages(restamped(agent.messages(), 7))
        .unwrap();
    agent.prompt_text("second").unwrap();
    finish(&agent, &mut rx).await;
    assert_eq!(&stamps_sent(&p, 1)[..2], [7, 7]);
}

/// Events from several threads at once reach a subscriber in the order the state took them:
/// the facade applies an event and hands it on in one hold of its lock.
#[test]
fn the_stream_keeps_the_order_the_state_took_the_events_in() {
    let p = scripts(vec![]);
    let agent = agent(&p, vec![]);
    let mut rx = agent.subscribe();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let agent = agent.clone();
            std::thread::spawn(move || {
                for i in 0..300 {
                    agent.emit_external_event(AgentEvent::MessageEnd {
                        message: AgentMessage::user(format!("{t}-{i}")),
                    });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let streamed: Vec<String> = drain(&mut rx)
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(text_of(message)),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.len(), 2400);
    assert!(
        streamed == texts(&agent.messages()),
        "the stream's order differs from the transcript's"
    );
}

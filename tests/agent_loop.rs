//! The agent loop's rules, scenario by scenario (spec agent-core §14), against the scripted
//! provider and small test tools. Each test asserts the event sequence and/or the messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant as TokioInstant;

use async_trait::async_trait;
use pi::agent::engine::batch::STEERING_POLL;
use pi::agent::engine::run::run_prompt;
use pi::agent::engine::run::{MAX_PAUSED_TURN_CONTINUATIONS, run_continue};
use pi::agent::policy::soft::SoftState;
use pi::agent::protocol::abort::{AbortReason, AbortSignal, DEADLINE_TEXT, DEFAULT_ABORT_TEXT};
use pi::agent::protocol::events::AgentEvent;
use pi::agent::protocol::hooks::{
    AfterToolCallInfo, AsideEntry, AsideHooks, BeforeToolCall, ContextRefresh, GateDecision,
    Injected, InterruptMode, LoopHooks, ResultOverride, SoftToolRequirement, SteeringPeek,
    SteeringSource, ToolDirective, TurnEndInfo,
};
use pi::agent::protocol::stream::{LlmContext, StreamEvent, ToolChoice};
use pi::agent::protocol::tool::{AgentTool, Concurrency, ToolOutput, ToolSet};
use pi::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, CustomMessage, Message, STOP_PAUSE_TURN,
    STOP_REFUSAL, STREAM_INTERRUPTED_AFTER_CONTENT, StopDetails, StopReason, ToolCall,
};
use pi::agent::scripted::{Step, reply};
use serde_json::{Value, json};
use support::*;

fn ids(results: &[(String, String, bool)]) -> Vec<&str> {
    results.iter().map(|r| r.0.as_str()).collect()
}

#[tokio::test]
async fn basic_run_emits_the_canonical_sequence() {
    let p = scripts(vec![reply::full(&["Hel", "lo"], &[])]);
    let (rec, out) = run(config(&p, vec![]), "hi", vec![]).await;
    let out = out.unwrap();
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    let roles: Vec<_> = out
        .new_messages()
        .iter()
        .map(|m| m.role().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(
        out.new_messages()[1].as_assistant().unwrap().text(),
        "Hello"
    );
    assert_eq!(rec.agent_end_messages(), out.new_messages().to_vec());
}

#[tokio::test]
async fn one_tool_round_orders_results_before_turn_end() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"x": 1}))]),
        reply::text("done"),
    ]);
    let (rec, out) = run(config(&p, vec![TestTool::echo("echo").arc()]), "go", vec![]).await;
    out.unwrap();
    let k = rec.kinds();
    let pos = |s: &str| k.iter().position(|x| x == s).unwrap();
    assert!(pos("message_end:assistant") < pos("tool_start:c1"));
    assert!(pos("tool_start:c1") < pos("tool_end:c1"));
    assert!(pos("tool_end:c1") < pos("message_end:toolResult"));
    assert!(pos("message_end:toolResult") < pos("turn_end"));
    assert_eq!(rec.count("turn_start"), 2);
    assert_eq!(
        rec.tool_results(),
        [("c1".into(), "echo ok: {\"x\":1}".into(), false)]
    );
    assert_eq!(request_roles(&p, 1), ["user", "assistant", "toolResult"]);
    if let Some(AgentEvent::TurnEnd { tool_results, .. }) =
        rec.all().iter().find(|e| e.kind() == "turn_end")
    {
        assert_eq!(tool_results.len(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn past_deadline_makes_no_provider_call() {
    let p = scripts(vec![reply::text("never")]);
    let mut c = config(&p, vec![]);
    c.deadline = Some(TokioInstant::now() - Duration::from_millis(1));
    let (rec, out) = run(c, "hi", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 0);
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "message_start:user",
            "message_end:user",
            "agent_end"
        ]
    );
    assert_eq!(out.new_messages().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn deadline_during_request_aborts_it_with_deadline_text() {
    let p = scripts(vec![vec![Step::Stall]]);
    let mut c = config(&p, vec![]);
    c.deadline = Some(TokioInstant::now() + Duration::from_millis(50));
    let (_rec, out) = run(c, "hi", vec![]).await;
    let out = out.unwrap();
    let a = out.new_messages()[1].as_assistant().unwrap();
    assert_eq!(a.stop_reason, StopReason::Aborted);
    assert_eq!(a.error_message.as_deref(), Some(DEADLINE_TEXT));
    p.wait_dropped(1).await;
    assert_eq!(p.dropped_early(), 1);
}

/// Moves the paused clock on while the reply is committed, without yielding: the deadline
/// passes before the tools could start, and the deadline timer has had no chance to abort the
/// run, so only the loop's own check can stop the tools.
struct SlowCommit(Duration);

#[async_trait]
impl LoopHooks for SlowCommit {
    async fn transform_assistant_message(
        &self,
        _message: &mut AssistantMessage,
        _signal: &AbortSignal,
    ) -> Result<(), String> {
        jump_clock(self.0);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn deadline_crossed_before_tools_gives_aborted_placeholders() {
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "echo", json!({})),
            reply::call("c2", "echo", json!({})),
        ]),
        reply::text("never asked"),
    ]);
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let mut c = with_hooks(
        config(&p, vec![tool.arc()]),
        SlowCommit(Duration::from_millis(200)),
    );
    c.deadline = Some(TokioInstant::now() + Duration::from_millis(100));
    let (rec, out) = run(c, "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "no tool runs past the deadline"
    );
    assert_eq!(p.request_count(), 1, "and no further call is made");
    // The reply itself is whole (the stream was not aborted); its calls get deadline
    // placeholders, and the run ends after them.
    let a = out.new_messages()[1].as_assistant().unwrap();
    assert_eq!(a.stop_reason, StopReason::ToolUse);
    let results = rec.tool_results();
    assert_eq!(ids(&results), ["c1", "c2"]);
    for (_, text, is_error) in &results {
        assert!(*is_error);
        assert!(
            text.ends_with(&format!("aborted: {DEADLINE_TEXT}")),
            "{text}"
        );
    }
    let roles: Vec<&str> = out.new_messages().iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "toolResult"]);
    assert_eq!(rec.count("turn_end"), 1);
}

#[tokio::test]
async fn pause_turn_resamples_and_is_capped() {
    let paused = || {
        reply::with_stop(
            &["thinking..."],
            &[],
            StopReason::Stop,
            Some(StopDetails {
                kind: STOP_PAUSE_TURN.into(),
                ..Default::default()
            }),
        )
    };
    let p = scripts(vec![paused(), reply::text("finished")]);
    let (rec, _) = run(config(&p, vec![]), "go", vec![]).await;
    assert_eq!(p.request_count(), 2);
    assert_eq!(rec.count("turn_start"), 2);
    assert_eq!(request_roles(&p, 1), ["user", "assistant"]);

    let p = scripts((0..20).map(|_| paused()).collect());
    let (_, out) = run(config(&p, vec![]), "go", vec![]).await;
    out.unwrap();
    assert_eq!(
        p.request_count(),
        1 + MAX_PAUSED_TURN_CONTINUATIONS as usize
    );
}

#[tokio::test]
async fn abort_before_any_event_gives_an_aborted_message() {
    let p = scripts(vec![vec![Step::Stall]]);
    let signal = AbortSignal::new();
    let (s2, rec) = (signal.clone(), Recorder::default());
    let r2 = rec.clone();
    tokio::spawn(async move {
        // The turn is open and the request made; the provider says nothing.
        r2.wait_for("turn_start").await;
        s2.abort(AbortReason::Requested);
    });
    let (rec, out) = run_recorded(config(&p, vec![]), "hi", vec![], signal, rec).await;
    let out = out.unwrap();
    let a = out.new_messages()[1].as_assistant().unwrap();
    assert_eq!(a.stop_reason, StopReason::Aborted);
    assert_eq!(a.error_message.as_deref(), Some(DEFAULT_ABORT_TEXT));
    p.wait_dropped(1).await;
    assert_eq!(p.dropped_early(), 1, "the provider stream is dropped");
    assert_eq!(rec.count("message_start"), 2);
    assert_eq!(rec.count("turn_end"), 1);
}

#[tokio::test]
async fn custom_abort_reason_is_kept_and_partial_survives() {
    let (mut steps, _) = reply::open(&["partial text"], &[]);
    steps.push(Step::Stall);
    let p = scripts(vec![steps]);
    let signal = AbortSignal::new();
    let (s2, rec) = (signal.clone(), Recorder::default());
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_until("the partial text", |_, events| {
            events.iter().any(|e| {
                matches!(
                    e,
                    AgentEvent::MessageUpdate {
                        assistant_message_event: StreamEvent::TextDelta { .. }
                    }
                )
            })
        })
        .await;
        s2.abort(AbortReason::Message("user pressed Esc".into()));
    });
    let (rec, out) = run_recorded(config(&p, vec![]), "hi", vec![], signal, rec).await;
    let a = out.unwrap().new_messages()[1]
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(a.error_message.as_deref(), Some("user pressed Esc"));
    assert_eq!(a.text(), "partial text");
    assert_eq!(
        rec.count("message_start"),
        2,
        "no second assistant message_start"
    );
}

#[tokio::test]
async fn aborted_message_keeps_only_completed_tool_calls() {
    let (mut steps, _) = reply::open(&[], &[reply::call("c1", "echo", json!({}))]);
    steps.push(Step::Event(StreamEvent::ToolCallStart {
        content_index: 1,
        id: "c2".into(),
        name: "echo".into(),
    }));
    steps.push(Step::Event(StreamEvent::ToolCallDelta {
        content_index: 1,
        delta: "{\"pa".into(),
    }));
    steps.push(Step::Stall);
    let p = scripts(vec![steps]);
    let signal = AbortSignal::new();
    let (s2, rec) = (signal.clone(), Recorder::default());
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_until("the second call's first fragment", |_, events| {
            events.iter().any(|e| {
                matches!(e, AgentEvent::MessageUpdate { assistant_message_event: StreamEvent::ToolCallDelta { delta, .. } } if delta == "{\"pa")
            })
        })
        .await;
        s2.abort(AbortReason::Requested);
    });
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let (rec, out) = run_recorded(config(&p, vec![tool.arc()]), "go", vec![], signal, rec).await;
    let out = out.unwrap();
    let a = out.new_messages()[1].as_assistant().unwrap();
    let kept: Vec<_> = a.tool_calls().map(|c| c.id.clone()).collect();
    assert_eq!(kept, ["c1"]);
    assert_eq!(a.stop_detail_kind(), Some(STREAM_INTERRUPTED_AFTER_CONTENT));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let results = rec.tool_results();
    assert_eq!(ids(&results), ["c1"]);
    assert!(results[0].2 && results[0].1.contains("aborted"));
}

#[tokio::test]
async fn tool_scoped_abort_labels_each_placeholder() {
    let (mut steps, _) = reply::open(
        &[],
        &[
            reply::call("a", "echo", json!({})),
            reply::call("b", "echo", json!({})),
        ],
    );
    steps.push(Step::Stall);
    let p = scripts(vec![steps]);
    let signal = AbortSignal::new();
    let (s2, rec) = (signal.clone(), Recorder::default());
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_until("both calls complete", |_, events| {
            let ends = events.iter().filter(|e| {
                matches!(
                    e,
                    AgentEvent::MessageUpdate {
                        assistant_message_event: StreamEvent::ToolCallEnd { .. }
                    }
                )
            });
            ends.count() == 2
        })
        .await;
        s2.abort(AbortReason::ToolScoped {
            message: "interrupted".into(),
            per_call: [("a".to_string(), "a was the trigger".to_string())].into(),
            default_label: "sibling of the trigger".into(),
        });
    });
    let (rec, _) = run_recorded(
        config(&p, vec![TestTool::echo("echo").arc()]),
        "go",
        vec![],
        signal,
        rec,
    )
    .await;
    let r = rec.tool_results();
    assert!(r[0].1.ends_with("a was the trigger"));
    assert!(r[1].1.ends_with("sibling of the trigger"));
}

struct CustomConvert;

#[async_trait]
impl LoopHooks for CustomConvert {
    async fn transform_context(
        &self,
        messages: &[AgentMessage],
        _s: &AbortSignal,
    ) -> Option<Vec<AgentMessage>> {
        // Runs before conversion: add a custom note the converter then maps.
        let mut m = messages.to_vec();
        let mut fields = serde_json::Map::new();
        fields.insert("content".into(), json!("injected by transform"));
        m.push(AgentMessage::from(CustomMessage::new("note", fields)));
        Some(m)
    }
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Option<Vec<Message>> {
        Some(
            messages
                .iter()
                .filter_map(|m| match m {
                    AgentMessage::Llm(l) if matches!(**l, Message::User(_)) => Some((**l).clone()),
                    AgentMessage::Custom(c) => {
                        Some(Message::User(pi::agent::protocol::types::UserMessage::new(
                            c.fields["content"].as_str().unwrap_or_default(),
                        )))
                    }
                    _ => None,
                })
                .collect(),
        )
    }
}

#[tokio::test]
async fn custom_messages_reach_the_provider_only_through_convert() {
    let mut fields = serde_json::Map::new();
    fields.insert("content".into(), json!("advisor says hi"));
    let custom = AgentMessage::from(CustomMessage::new("advisor", fields));
    // Default conversion drops it.
    let p = scripts(vec![reply::text("ok")]);
    run(config(&p, vec![]), "hi", vec![custom.clone()])
        .await
        .1
        .unwrap();
    assert_eq!(request_roles(&p, 0), ["user"]);
    // A converter maps it, and transform_context runs first.
    let p = scripts(vec![reply::text("ok")]);
    run(
        with_hooks(config(&p, vec![]), CustomConvert),
        "hi",
        vec![custom],
    )
    .await
    .1
    .unwrap();
    let req = &p.requests()[0];
    let texts: Vec<String> = req
        .context
        .messages
        .iter()
        .map(|m| match &**m {
            Message::User(u) => u.content.joined_text(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(texts, ["advisor says hi", "hi", "injected by transform"]);
}

#[tokio::test]
async fn tool_context_describes_the_batch() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let tool = TestTool::new("ctx", move |inv| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(inv.context.clone());
            Ok(ToolOutput::text("ok"))
        }
    });
    let p = scripts(vec![
        reply::tools(&[
            reply::call("a", "ctx", json!({})),
            reply::call("b", "ctx", json!({})),
        ]),
        reply::text("done"),
    ]);
    run(config(&p, vec![tool.arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].batch_id, seen[1].batch_id);
    assert!(seen[0].batch_id.ends_with("_a"));
    assert_eq!(seen[0].total, 2);
    let mut idx: Vec<_> = seen.iter().map(|c| c.index).collect();
    idx.sort();
    assert_eq!(idx, [0, 1]);
    assert_eq!(
        seen[0].tool_calls.to_vec(),
        vec![
            ("a".to_string(), "ctx".to_string()),
            ("b".into(), "ctx".into())
        ]
    );
}

#[tokio::test]
async fn parse_error_arguments_fail_validation_without_leaking_raw_json() {
    let raw = "{\"path\": \"a".to_string() + &"x".repeat(600);
    let args = json!({"__parseError": "EOF while parsing a string", "__rawJson": raw});
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", args)]),
        reply::text("ok"),
    ]);
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let (rec, _) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let r = &rec.tool_results()[0];
    assert!(r.2);
    assert!(r.1.contains("EOF while parsing"), "{}", r.1);
    assert!(r.1.len() < 1200, "raw JSON is truncated");
    let start_args = rec
        .all()
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionStart { args, .. } => Some(args.clone()),
            _ => None,
        })
        .unwrap();
    assert!(start_args.get("__parseError").is_some());
    assert!(start_args.get("__rawJson").is_none());
}

#[tokio::test]
async fn schema_violations_are_error_results_and_the_tool_does_not_run() {
    let tool = TestTool::echo("echo").schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"]
    }));
    let calls = tool.calls.clone();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"nope": 1}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let r = &rec.tool_results()[0];
    assert!(r.2 && r.1.contains("path"), "{}", r.1);
}

fn calls_named(names: &[&str]) -> Vec<ToolCall> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| reply::call(&format!("c{i}"), n, json!({})))
        .collect()
}

/// Complete calls, then a stream that broke (as a provider marks it).
fn salvage_script(error: &str, names: &[&str]) -> Vec<Step> {
    reply::broken(&[], &calls_named(names), error)
}

/// Complete calls, then an error the provider reported (not a broken stream).
fn reported_error_script(error: &str, names: &[&str]) -> Vec<Step> {
    reply::error(&[], &calls_named(names), error)
}

#[tokio::test]
async fn completed_calls_run_after_a_broken_stream() {
    for err in [
        "stream_read_error: connection reset",
        "Stream envelope error: truncated",
        "Unexpected end of JSON input",
        "error decoding response body",
    ] {
        let tool = TestTool::echo("echo");
        let calls = tool.calls.clone();
        let p = scripts(vec![salvage_script(err, &["echo"]), reply::text("ok")]);
        let (_, out) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
        let out = out.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "salvaged for {err}");
        let a = out.new_messages()[1].as_assistant().unwrap();
        assert_eq!(a.stop_reason, StopReason::ToolUse);
        assert_eq!(a.stop_detail_kind(), Some(STREAM_INTERRUPTED_AFTER_CONTENT));
        assert!(a.error_message.is_none());
    }
}

#[tokio::test]
async fn no_salvage_for_refusals_unknown_tools_text_only_or_ordinary_errors() {
    // Ordinary transient error.
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let p = scripts(vec![reported_error_script(
        "overloaded_error: try later",
        &["echo"],
    )]);
    let (rec, out) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    out.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let r = &rec.tool_results()[0];
    assert!(r.2);
    let details = rec
        .all()
        .iter()
        .find_map(|e| match e {
            AgentEvent::MessageEnd { message } => {
                message.as_tool_result().and_then(|r| r.details.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(details["source"], "assistant_stop_error");
    assert_eq!(details["upstreamError"], "overloaded_error: try later");
    assert_eq!(details["executed"], false);

    // Unknown tool name next to a known one.
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let p = scripts(vec![salvage_script(
        "stream_read_error",
        &["echo", "mystery"],
    )]);
    run(config(&p, vec![tool.arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // A refusal.
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let mut steps = salvage_script("stream_read_error", &["echo"]);
    if let Some(Step::Event(StreamEvent::Error { error, .. })) = steps.last_mut() {
        error.stop_details = Some(StopDetails {
            kind: STOP_REFUSAL.into(),
            ..Default::default()
        });
    }
    let p = scripts(vec![steps]);
    run(config(&p, vec![tool.arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // An error the provider reported, even if its text reads like a broken stream.
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let p = scripts(vec![reported_error_script(
        "stream_read_error: the server says so",
        &["echo"],
    )]);
    run(config(&p, vec![tool.arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Text only: stays an error turn, and the run ends.
    let p = scripts(vec![reply::broken(&["half"], &[], "stream_read_error")]);
    let (_, out) = run(config(&p, vec![]), "go", vec![]).await;
    assert_eq!(
        out.unwrap().new_messages()[1]
            .as_assistant()
            .unwrap()
            .stop_reason,
        StopReason::Error
    );
    assert_eq!(p.request_count(), 1);
}

struct Fallback;

impl LoopHooks for Fallback {
    fn resolve_fallback_tool(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        (name == "hidden").then(|| TestTool::echo("hidden").arc())
    }
}

#[tokio::test]
async fn unadvertised_tool_names_use_the_fallback_resolver() {
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "hidden", json!({})),
            reply::call("c2", "nothing", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(with_hooks(config(&p, vec![]), Fallback), "go", vec![]).await;
    let r = rec.tool_results();
    assert_eq!(r[0], ("c1".into(), "hidden ok: {}".into(), false));
    assert!(r[1].2 && r[1].1.contains("not found"));
    assert!(p.requests()[0].context.tools.is_empty());
}

#[tokio::test]
async fn intent_tracing_strips_the_intent_and_reports_it() {
    let seen = Arc::new(Mutex::new(Value::Null));
    let s = seen.clone();
    let tool = TestTool::new("probe", move |inv| {
        let s = s.clone();
        async move {
            *s.lock().unwrap() = inv.args.clone();
            Ok(ToolOutput::text("ok"))
        }
    })
    .schema(json!({"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false}));
    let p = scripts(vec![
        reply::tools(&[reply::call(
            "c1",
            "probe",
            json!({"i": "look around", "q": "x"}),
        )]),
        reply::text("ok"),
    ]);
    let mut c = config(&p, vec![tool.arc()]);
    c.intent_tracing = true;
    let (rec, out) = run(c, "go", vec![]).await;
    assert_eq!(*seen.lock().unwrap(), json!({"q": "x"}));
    let intent = rec.all().iter().find_map(|e| match e {
        AgentEvent::ToolExecutionStart { intent, .. } => intent.clone(),
        _ => None,
    });
    assert_eq!(intent.as_deref(), Some("look around"));
    let a = out.unwrap().new_messages()[1]
        .as_assistant()
        .unwrap()
        .clone();
    let call = a.tool_calls().next().unwrap();
    assert_eq!(call.intent.as_deref(), Some("look around"));
    assert_eq!(
        call.arguments["i"], "look around",
        "history keeps the original arguments"
    );
    let schema = &p.requests()[0].context.tools[0].parameters;
    assert_eq!(
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .map(String::as_str),
        Some("i")
    );
}

#[tokio::test(start_paused = true)]
async fn shared_tools_run_in_parallel_and_report_in_completion_order() {
    let p = scripts(vec![
        reply::tools(&[
            reply::call("slow", "slow", json!({})),
            reply::call("fast", "fast", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, out) = run(
        config(
            &p,
            vec![
                TestTool::sleeper("slow", 150).arc(),
                TestTool::sleeper("fast", 20).arc(),
            ],
        ),
        "go",
        vec![],
    )
    .await;
    // On the paused clock: both start together, and the batch takes as long as the slower.
    assert_eq!(
        rec.time_of("tool_start:fast"),
        rec.time_of("tool_start:slow")
    );
    assert_eq!(
        rec.time_of("tool_end:slow") - rec.time_of("tool_start:slow"),
        Duration::from_millis(150)
    );
    assert_eq!(ids(&rec.tool_results()), ["fast", "slow"]);
    let out = out.unwrap();
    let order: Vec<_> = out
        .context
        .iter()
        .filter_map(|m| m.as_tool_result().map(|r| r.tool_call_id.clone()))
        .collect();
    assert_eq!(order, ["fast", "slow"], "context uses the emitted order");
}

#[tokio::test]
async fn exclusive_calls_are_barriers() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let mk = |name: &str, ms: u64, exclusive: bool| {
        let log = log.clone();
        let n = name.to_string();
        let t = TestTool::new(name, move |inv| {
            let log = log.clone();
            let n = n.clone();
            async move {
                log.lock()
                    .unwrap()
                    .push(format!("start {}", inv.tool_call_id));
                tokio::time::sleep(Duration::from_millis(ms)).await;
                log.lock()
                    .unwrap()
                    .push(format!("end {}", inv.tool_call_id));
                Ok(ToolOutput::text(n))
            }
        });
        if exclusive {
            t.exclusive().arc()
        } else {
            t.arc()
        }
    };
    let tools = vec![mk("s", 30, false), mk("e", 10, true)];
    let p = scripts(vec![
        reply::tools(&[
            reply::call("s1", "s", json!({})),
            reply::call("s2", "s", json!({})),
            reply::call("e3", "e", json!({})),
            reply::call("s4", "s", json!({})),
            reply::call("s5", "s", json!({})),
        ]),
        reply::text("ok"),
    ]);
    run(config(&p, tools), "go", vec![]).await.1.unwrap();
    let log = log.lock().unwrap().clone();
    let at = |s: &str| log.iter().position(|x| x == s).unwrap();
    assert!(at("start s2") < at("end s1"), "s1 and s2 overlap: {log:?}");
    assert!(at("end s1") < at("start e3") && at("end s2") < at("start e3"));
    assert!(at("end e3") < at("start s4") && at("end e3") < at("start s5"));
    assert!(at("start s5") < at("end s4"), "s4 and s5 overlap: {log:?}");
}

#[tokio::test]
async fn a_failing_concurrency_resolver_means_exclusive() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = log.clone();
    let mut odd = TestTool::new("odd", move |inv| {
        let l = l.clone();
        async move {
            l.lock()
                .unwrap()
                .push(format!("start {}", inv.tool_call_id));
            tokio::time::sleep(Duration::from_millis(20)).await;
            l.lock().unwrap().push(format!("end {}", inv.tool_call_id));
            Ok(ToolOutput::text("ok"))
        }
    });
    odd.concurrency = Err("cannot tell".into());
    let p = scripts(vec![
        reply::tools(&[
            reply::call("a", "odd", json!({})),
            reply::call("b", "odd", json!({})),
        ]),
        reply::text("ok"),
    ]);
    run(config(&p, vec![odd.arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["start a", "end a", "start b", "end b"]
    );
}

/// Hooks with a steering queue the test controls.
#[derive(Default, Clone)]
struct Queue {
    steering: Arc<Mutex<Vec<AgentMessage>>>,
    follow_up: Arc<Mutex<Vec<AgentMessage>>>,
    peek: bool,
    source: Option<SteeringSource>,
    before_yield: Arc<AtomicUsize>,
    steer_in_before_yield: Arc<Mutex<Option<AgentMessage>>>,
}

#[async_trait]
impl LoopHooks for Queue {
    async fn steering_messages(&self, _s: &AbortSignal) -> Vec<AgentMessage> {
        std::mem::take(&mut *self.steering.lock().unwrap())
    }
    fn peek_steering(&self) -> SteeringPeek {
        if !self.peek {
            return SteeringPeek::Unsupported;
        }
        if self.steering.lock().unwrap().is_empty() {
            SteeringPeek::Empty
        } else {
            SteeringPeek::Queued(self.source.unwrap_or(SteeringSource::User))
        }
    }
    async fn follow_up_messages(&self, _s: &AbortSignal) -> Vec<AgentMessage> {
        let mut q = self.follow_up.lock().unwrap();
        if q.is_empty() {
            vec![]
        } else {
            vec![q.remove(0)]
        }
    }
    async fn on_before_yield(&self) {
        self.before_yield.fetch_add(1, Ordering::SeqCst);
        if let Some(m) = self.steer_in_before_yield.lock().unwrap().take() {
            self.steering.lock().unwrap().push(m);
        }
    }
}

/// A tool that queues a steering message when it runs.
fn steerer(q: &Queue, text: &str) -> Arc<dyn AgentTool> {
    let s = q.steering.clone();
    let text = text.to_string();
    TestTool::new("steer", move |_| {
        let s = s.clone();
        let text = text.clone();
        async move {
            s.lock().unwrap().push(AgentMessage::user(text));
            Ok(ToolOutput::text("queued"))
        }
    })
    .exclusive()
    .arc()
}

#[tokio::test]
async fn queued_steering_skips_the_remaining_tools_and_is_injected_next_turn() {
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let later = TestTool::echo("echo");
    let later_calls = later.calls.clone();
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "steer", json!({})),
            reply::call("c2", "echo", json!({})),
            reply::call("c3", "echo", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, out) = run(
        with_hooks(
            config(&p, vec![steerer(&q, "change course"), later.arc()]),
            q.clone(),
        ),
        "go",
        vec![],
    )
    .await;
    out.unwrap();
    assert_eq!(later_calls.load(Ordering::SeqCst), 0);
    let r = rec.tool_results();
    assert_eq!(ids(&r), ["c1", "c2", "c3"]);
    assert!(!r[0].2);
    assert!(r[1].2 && r[1].1.contains("the user queued"), "{}", r[1].1);
    let k = rec.kinds();
    let second_turn = k.iter().rposition(|x| x == "turn_start").unwrap();
    assert_eq!(k[second_turn + 1], "message_start:user");
    assert_eq!(
        request_roles(&p, 1),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "toolResult",
            "user"
        ]
    );
}

#[tokio::test]
async fn system_steering_uses_advisory_wording() {
    let q = Queue {
        peek: true,
        source: Some(SteeringSource::System),
        ..Default::default()
    };
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "steer", json!({})),
            reply::call("c2", "steer", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(config(&p, vec![steerer(&q, "note")]), q.clone()),
        "go",
        vec![],
    )
    .await;
    assert!(rec.tool_results()[1].1.contains("system advisory"));
}

#[tokio::test(start_paused = true)]
async fn steering_interrupts_an_interruptible_wait_but_not_a_foreground_tool() {
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let s = q.steering.clone();
    let rec = Recorder::default();
    let r2 = rec.clone();
    tokio::spawn(async move {
        // Queued while both tools run; nothing wakes the batch, so the poll finds it.
        r2.wait_for("tool_start:b").await;
        s.lock().unwrap().push(AgentMessage::user("stop waiting"));
    });
    let p = scripts(vec![
        reply::tools(&[
            reply::call("w", "wait", json!({})),
            reply::call("b", "bash", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, _) = run_recorded(
        with_hooks(
            config(
                &p,
                vec![
                    TestTool::sleeper("wait", 5_000).interruptible().arc(),
                    TestTool::stubborn("bash", 400).arc(),
                ],
            ),
            q.clone(),
        ),
        "go",
        vec![],
        AbortSignal::new(),
        rec,
    )
    .await;
    // On tokio's paused clock: the wait is cut at the first poll, 250 ms after the batch
    // started; bash runs its full 400 ms.
    let start = rec.time_of("tool_start:w");
    assert_eq!(rec.time_of("tool_end:w") - start, STEERING_POLL);
    assert_eq!(
        rec.time_of("tool_end:b") - start,
        Duration::from_millis(400)
    );
    let r = rec.tool_results();
    let wait = r.iter().find(|x| x.0 == "w").unwrap();
    assert!(wait.2 && wait.1.contains("Skipped"));
    let bash = r.iter().find(|x| x.0 == "b").unwrap();
    assert_eq!(bash.1, "bash done", "a non-interruptible tool finishes");
    let details = rec.all().iter().find_map(|e| match e {
        AgentEvent::MessageEnd { message } => message
            .as_tool_result()
            .filter(|r| r.tool_call_id == "w")
            .and_then(|r| r.details.clone()),
        _ => None,
    });
    assert_eq!(details.unwrap()["execution"], "started");
}

#[tokio::test(start_paused = true)]
async fn a_completed_error_survives_a_steer() {
    // #4752: an interruptible call that was aborted by a steer but had already done its work
    // (it returned, with an error) keeps its real result; only calls cut short are "skipped".
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let s = q.steering.clone();
    let tool = TestTool::new("failing", move |inv| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(AgentMessage::user("new direction"));
            // The steer aborts this call (the poll finds it); the work was done already.
            inv.cancel.cancelled().await;
            Ok(ToolOutput::error("real failure with side effects"))
        }
    })
    .interruptible();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "failing", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, out) = run(
        with_hooks(config(&p, vec![tool.arc()]), q.clone()),
        "go",
        vec![],
    )
    .await;
    out.unwrap();
    assert_eq!(
        rec.tool_results(),
        [(
            "c1".to_string(),
            "real failure with side effects".to_string(),
            true
        )]
    );
    let details = rec.all().iter().find_map(|e| match e {
        AgentEvent::MessageEnd { message } => {
            message.as_tool_result().and_then(|r| r.details.clone())
        }
        _ => None,
    });
    assert_ne!(details.unwrap()["source"], "interrupt_skipped");
    // The steer was real: it interrupted the call, and it opens the next turn.
    assert_eq!(
        request_roles(&p, 1),
        ["user", "assistant", "toolResult", "user"]
    );
}

/// Hooks with a model gate that lets every call through and counts how often it was asked.
#[derive(Clone, Default)]
struct CountingGate {
    asked: Arc<AtomicUsize>,
}

#[async_trait]
impl LoopHooks for CountingGate {
    fn has_model_gate(&self) -> bool {
        true
    }
    async fn before_model_call(
        &self,
        _c: &LlmContext,
        _s: &AbortSignal,
    ) -> Result<GateDecision, String> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(GateDecision::Proceed)
    }
}

/// A tool that aborts `signal` (an Esc while it runs) and still finishes.
fn aborting_tool(signal: &AbortSignal) -> Arc<dyn AgentTool> {
    let signal = signal.clone();
    TestTool::new("work", move |_| {
        let signal = signal.clone();
        async move {
            signal.abort(AbortReason::Message("Esc".into()));
            Ok(ToolOutput::text("finished anyway"))
        }
    })
    .arc()
}

#[tokio::test]
async fn a_gate_counts_an_aborted_run_as_a_stop() {
    // With a gate installed, a run aborted during its tools ends at the gate: the gate is not
    // asked, no request is made, and no aborted reply is added (spec §8).
    let gate = CountingGate::default();
    let asked = gate.asked.clone();
    let signal = AbortSignal::new();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "work", json!({}))]),
        reply::text("never"),
    ]);
    let (rec, out) = run_with_signal(
        with_hooks(config(&p, vec![aborting_tool(&signal)]), gate),
        "go",
        vec![],
        signal,
    )
    .await;
    let out = out.unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked for the first call only"
    );
    assert_eq!(p.request_count(), 1);
    let roles: Vec<&str> = out.new_messages().iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    assert_eq!(rec.count("turn_start"), 1);
    assert_eq!(rec.count("turn_end"), 1);
}

#[tokio::test]
async fn no_asides_are_taken_after_an_abort() {
    let a = Asides::default();
    a.entries.lock().unwrap().push("ready");
    let signal = AbortSignal::new();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "work", json!({}))]),
        reply::text("never"),
    ]);
    let (_, out) = run_with_signal(
        with_hooks(config(&p, vec![aborting_tool(&signal)]), a.clone()),
        "go",
        vec![],
        signal,
    )
    .await;
    let out = out.unwrap();
    assert_eq!(
        *a.entries.lock().unwrap(),
        ["ready"],
        "the aside is still the host's"
    );
    assert_eq!(a.committed.load(Ordering::SeqCst), 0);
    assert!(
        out.new_messages()
            .iter()
            .all(|m| m.as_user().is_none_or(|u| u.content.joined_text() == "go")),
        "no aside entered the context"
    );
    let last = out.new_messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

#[tokio::test(start_paused = true)]
async fn a_steer_signals_a_non_interruptible_tool_to_wrap_up() {
    // The cooperative steering signal reaches every running call: a tool that cannot be
    // aborted may still finish early (move its work to the background) when a steer waits.
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let s = q.steering.clone();
    let rec = Recorder::default();
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_for("tool_start:c1").await;
        s.lock().unwrap().push(AgentMessage::user("never mind"));
    });
    let tool = TestTool::new("build", |inv| async move {
        tokio::select! {
            _ = inv.steering.cancelled() => Ok(ToolOutput::text("moved to the background")),
            _ = tokio::time::sleep(Duration::from_secs(5)) => Ok(ToolOutput::text("ran to the end")),
        }
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "build", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, out) = run_recorded(
        with_hooks(config(&p, vec![tool.arc()]), q.clone()),
        "go",
        vec![],
        AbortSignal::new(),
        rec,
    )
    .await;
    out.unwrap();
    assert_eq!(
        rec.tool_results(),
        [(
            "c1".to_string(),
            "moved to the background".to_string(),
            false
        )]
    );
    assert_eq!(
        rec.time_of("tool_end:c1") - rec.time_of("tool_start:c1"),
        STEERING_POLL,
        "signalled at the first poll"
    );
}

#[tokio::test]
async fn without_peek_steering_waits_for_the_boundary() {
    let q = Queue {
        peek: false,
        ..Default::default()
    };
    let echo = TestTool::echo("echo");
    let calls = echo.calls.clone();
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "steer", json!({})),
            reply::call("c2", "echo", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(
            config(&p, vec![steerer(&q, "later"), echo.arc()]),
            q.clone(),
        ),
        "go",
        vec![],
    )
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(rec.tool_results().iter().all(|r| !r.2));
    assert_eq!(
        request_roles(&p, 1).last().map(String::as_str),
        Some("user")
    );
}

#[tokio::test]
async fn external_abort_during_tools_never_dequeues_steering() {
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    q.steering.lock().unwrap().clear();
    let signal = AbortSignal::new();
    let s2 = signal.clone();
    let steering = q.steering.clone();
    let tool = TestTool::new("work", move |_| {
        let s2 = s2.clone();
        let steering = steering.clone();
        async move {
            steering
                .lock()
                .unwrap()
                .push(AgentMessage::user("queued while working"));
            s2.abort(AbortReason::Message("Esc".into()));
            Ok(ToolOutput::text("finished anyway"))
        }
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "work", json!({}))]),
        reply::text("never"),
    ]);
    let (rec, out) = run_with_signal(
        with_hooks(config(&p, vec![tool.arc()]), q.clone()),
        "go",
        vec![],
        signal,
    )
    .await;
    let out = out.unwrap();
    assert_eq!(
        q.steering.lock().unwrap().len(),
        1,
        "the queue is kept for a later continue"
    );
    assert_eq!(rec.tool_results()[0].1, "finished anyway");
    let last = out.new_messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Esc"));
    assert_eq!(p.request_count(), 1, "no request is sent once aborted");
    assert_eq!(rec.count("turn_start"), rec.count("turn_end"));
}

#[tokio::test]
async fn follow_ups_run_after_before_yield() {
    let q = Queue::default();
    q.follow_up
        .lock()
        .unwrap()
        .push(AgentMessage::user("and then this"));
    let p = scripts(vec![reply::text("first"), reply::text("second")]);
    let (rec, out) = run(with_hooks(config(&p, vec![]), q.clone()), "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(q.before_yield.load(Ordering::SeqCst), 2);
    assert_eq!(p.request_count(), 2);
    let roles: Vec<_> = out
        .new_messages()
        .iter()
        .map(|m| m.role().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(rec.count("agent_end"), 1);
}

#[tokio::test]
async fn a_steer_queued_during_before_yield_is_delivered_in_the_same_run() {
    let q = Queue::default();
    *q.steer_in_before_yield.lock().unwrap() = Some(AgentMessage::user("late steer"));
    let p = scripts(vec![reply::text("first"), reply::text("second")]);
    let (rec, out) = run(with_hooks(config(&p, vec![]), q.clone()), "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 2);
    assert!(
        q.steering.lock().unwrap().is_empty(),
        "taken from the queue"
    );
    // The second request ends with the late steer, after the first reply.
    assert_eq!(request_roles(&p, 1), ["user", "assistant", "user"]);
    let last_sent = p.requests()[1].context.messages.last().cloned().unwrap();
    match last_sent.as_ref() {
        Message::User(u) => assert_eq!(u.content.joined_text(), "late steer"),
        other => panic!("expected the steer, got {other:?}"),
    }
    // It opens the second turn, in the same run.
    let k = rec.kinds();
    let second = k.iter().rposition(|x| x == "turn_start").unwrap();
    assert_eq!(k[second + 1], "message_start:user");
    assert_eq!(rec.count("turn_start"), 2);
    assert_eq!(rec.count("agent_end"), 1);
    assert_eq!(q.before_yield.load(Ordering::SeqCst), 2);
    let texts: Vec<String> = out
        .new_messages()
        .iter()
        .map(|m| match m.as_user() {
            Some(u) => u.content.joined_text(),
            None => m
                .as_assistant()
                .map(AssistantMessage::text)
                .unwrap_or_default(),
        })
        .collect();
    assert_eq!(texts, ["go", "first", "late steer", "second"]);
}

#[tokio::test]
async fn error_turns_skip_follow_ups() {
    let q = Queue::default();
    q.follow_up
        .lock()
        .unwrap()
        .push(AgentMessage::user("later"));
    let p = scripts(vec![reply::error(&[], &[], "500 internal error")]);
    let (rec, _) = run(with_hooks(config(&p, vec![]), q.clone()), "go", vec![]).await;
    assert_eq!(q.before_yield.load(Ordering::SeqCst), 0);
    assert_eq!(q.follow_up.lock().unwrap().len(), 1);
    assert_eq!(rec.count("agent_end"), 1);
}

#[derive(Default, Clone)]
struct Asides {
    entries: Arc<Mutex<Vec<&'static str>>>,
    committed: Arc<AtomicUsize>,
    discarded: Arc<Mutex<Vec<String>>>,
}

impl LoopHooks for Asides {
    fn aside_messages(&self) -> Vec<AsideEntry> {
        let kinds = std::mem::take(&mut *self.entries.lock().unwrap());
        kinds
            .into_iter()
            .map(|k| {
                let committed = self.committed.clone();
                let discarded = self.discarded.clone();
                let make = move || {
                    let c = committed.clone();
                    let d = discarded.clone();
                    Injected::with_hooks(
                        AgentMessage::user("background job finished"),
                        AsideHooks {
                            on_commit: Some(Box::new(move || {
                                c.fetch_add(1, Ordering::SeqCst);
                            })),
                            on_discard: Some(Box::new(move |why| d.lock().unwrap().push(why))),
                        },
                    )
                };
                match k {
                    "ready" => AsideEntry::Ready(make()),
                    "null" => AsideEntry::Deferred(Box::new(|| Ok(None))),
                    "throw" => AsideEntry::Deferred(Box::new(|| Err("aside source failed".into()))),
                    _ => AsideEntry::Deferred(Box::new(move || Ok(Some(make())))),
                }
            })
            .collect()
    }
}

#[tokio::test]
async fn asides_join_after_the_batch_and_are_committed() {
    let a = Asides::default();
    a.entries.lock().unwrap().push("ready");
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    run(
        with_hooks(config(&p, vec![TestTool::echo("echo").arc()]), a.clone()),
        "go",
        vec![],
    )
    .await
    .1
    .unwrap();
    assert_eq!(a.committed.load(Ordering::SeqCst), 1);
    assert_eq!(
        request_roles(&p, 1),
        ["user", "assistant", "toolResult", "user"]
    );
}

#[tokio::test]
async fn null_asides_add_nothing_and_throwing_ones_fail_the_run() {
    let a = Asides::default();
    a.entries.lock().unwrap().push("null");
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    run(
        with_hooks(config(&p, vec![TestTool::echo("echo").arc()]), a.clone()),
        "go",
        vec![],
    )
    .await
    .1
    .unwrap();
    assert_eq!(request_roles(&p, 1), ["user", "assistant", "toolResult"]);

    let a = Asides::default();
    a.entries.lock().unwrap().extend(["deferred", "throw"]);
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let (_, out) = run(
        with_hooks(config(&p, vec![TestTool::echo("echo").arc()]), a.clone()),
        "go",
        vec![],
    )
    .await;
    let failure = out.unwrap_err();
    assert_eq!(failure.error.message, "aside source failed");
    assert_eq!(a.committed.load(Ordering::SeqCst), 0);
    assert_eq!(*a.discarded.lock().unwrap(), ["aside source failed"]);
}

#[tokio::test]
async fn a_stop_boundary_holds_asides_for_the_yield_drain() {
    // A text-only reply is a stop boundary: the aside is injected by the final drain and
    // revives the run once, after on_before_yield.
    let a = Asides::default();
    a.entries.lock().unwrap().push("ready");
    let p = scripts(vec![reply::text("first"), reply::text("second")]);
    run(with_hooks(config(&p, vec![]), a.clone()), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(p.request_count(), 2);
    assert_eq!(a.committed.load(Ordering::SeqCst), 1);
}

struct Refresh {
    calls: AtomicUsize,
}

#[async_trait]
impl LoopHooks for Refresh {
    async fn sync_before_model_call(&self, _s: &AbortSignal) -> ContextRefresh {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        ContextRefresh {
            system_prompt: Some(vec![format!("prompt {n}")]),
            tools: (n > 0).then(|| Arc::new(ToolSet::new([TestTool::echo("second").arc()]))),
            ..Default::default()
        }
    }
}

#[tokio::test]
async fn context_is_refreshed_before_every_call() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let c = with_hooks(
        config(&p, vec![TestTool::echo("echo").arc()]),
        Refresh {
            calls: AtomicUsize::new(0),
        },
    );
    run(c, "go", vec![]).await.1.unwrap();
    let reqs = p.requests();
    assert_eq!(reqs[0].context.system_prompt, ["prompt 0"]);
    assert_eq!(reqs[1].context.system_prompt, ["prompt 1"]);
    assert_eq!(reqs[0].context.tools[0].name, "echo");
    assert_eq!(reqs[1].context.tools[0].name, "second");
}

#[tokio::test]
async fn a_provider_restart_does_not_duplicate_the_message() {
    let (mut steps, _) = reply::open(&["first try"], &[]);
    steps.extend(reply::text("second try"));
    let p = scripts(vec![steps]);
    let (rec, out) = run(config(&p, vec![]), "go", vec![]).await;
    assert_eq!(rec.count("message_start"), 2, "user + one assistant");
    let out = out.unwrap();
    assert_eq!(out.new_messages().len(), 2);
    assert_eq!(
        out.new_messages()[1].as_assistant().unwrap().text(),
        "second try"
    );
}

struct Gate {
    stop: bool,
    fail: bool,
    seen: Arc<Mutex<Option<LlmContext>>>,
}

#[async_trait]
impl LoopHooks for Gate {
    fn has_model_gate(&self) -> bool {
        true
    }
    async fn before_model_call(
        &self,
        ctx: &LlmContext,
        _s: &AbortSignal,
    ) -> Result<GateDecision, String> {
        *self.seen.lock().unwrap() = Some(ctx.clone());
        if self.fail {
            return Err("gate exploded".into());
        }
        Ok(if self.stop {
            GateDecision::Stop(Some("budget".into()))
        } else {
            GateDecision::Proceed
        })
    }
    fn transform_provider_context(
        &self,
        ctx: &mut LlmContext,
        _m: &pi::agent::protocol::stream::Model,
    ) {
        ctx.system_prompt.push("added by transform".into());
    }
}

#[tokio::test]
async fn a_gate_sees_the_final_context_and_can_stop_before_any_turn() {
    let seen = Arc::new(Mutex::new(None));
    let p = scripts(vec![reply::text("never")]);
    let (rec, out) = run(
        with_hooks(
            config(&p, vec![]),
            Gate {
                stop: true,
                fail: false,
                seen: seen.clone(),
            },
        ),
        "hi",
        vec![],
    )
    .await;
    out.unwrap();
    assert_eq!(p.request_count(), 0);
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "message_start:user",
            "message_end:user",
            "agent_end"
        ]
    );
    assert_eq!(
        seen.lock().unwrap().as_ref().unwrap().system_prompt,
        ["added by transform"]
    );

    let p = scripts(vec![reply::text("fine")]);
    let (_, out) = run(
        with_hooks(
            config(&p, vec![]),
            Gate {
                stop: false,
                fail: false,
                seen,
            },
        ),
        "hi",
        vec![],
    )
    .await;
    out.unwrap();
    assert_eq!(p.request_count(), 1);
}

#[tokio::test]
async fn a_throwing_gate_opens_the_turn_before_failing() {
    let p = scripts(vec![]);
    let (rec, out) = run(
        with_hooks(
            config(&p, vec![]),
            Gate {
                stop: false,
                fail: true,
                seen: Default::default(),
            },
        ),
        "hi",
        vec![],
    )
    .await;
    assert_eq!(out.unwrap_err().error.message, "gate exploded");
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    let failure = out_failure(&rec);
    assert_eq!(failure.stop_reason, StopReason::Error);
    assert_eq!(failure.error_message.as_deref(), Some("gate exploded"));
}

/// The error reply that closed a failed run.
fn out_failure(rec: &Recorder) -> AssistantMessage {
    rec.agent_end_messages()
        .iter()
        .rev()
        .find_map(|m| m.as_assistant().cloned())
        .expect("a failed run ends with an error reply")
}

#[tokio::test]
async fn useless_flag_is_kept_only_on_success() {
    let t1 = TestTool::new("meh", |_| async {
        let mut o = ToolOutput::text("nothing here");
        o.useless = true;
        Ok(o)
    });
    let t2 = TestTool::new("bad", |_| async {
        let mut o = ToolOutput::error("broken");
        o.useless = true;
        Ok(o)
    });
    let p = scripts(vec![
        reply::tools(&[
            reply::call("a", "meh", json!({})),
            reply::call("b", "bad", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (_, out) = run(config(&p, vec![t1.arc(), t2.arc()]), "go", vec![]).await;
    let out = out.unwrap();
    let results: Vec<_> = out
        .new_messages()
        .iter()
        .filter_map(|m| m.as_tool_result())
        .collect();
    let a = results.iter().find(|r| r.tool_call_id == "a").unwrap();
    let b = results.iter().find(|r| r.tool_call_id == "b").unwrap();
    assert!(a.useless && !a.is_error);
    assert!(!b.useless && b.is_error);
}

#[tokio::test]
async fn continue_checks_the_tail_and_emits_no_prompt() {
    let p = scripts(vec![reply::text("continued")]);
    let r = run_continue(
        vec![],
        config(&p, vec![]),
        SoftState::default(),
        AbortSignal::new(),
        Arc::new(Recorder::default()),
    )
    .await;
    assert!(r.unwrap_err().message.contains("empty"));

    let tail = vec![
        AgentMessage::user("hi"),
        AgentMessage::from(AssistantMessage::default()),
    ];
    let r = run_continue(
        tail,
        config(&p, vec![]),
        SoftState::default(),
        AbortSignal::new(),
        Arc::new(Recorder::default()),
    )
    .await;
    assert!(r.unwrap_err().message.contains("assistant"));

    let rec = Recorder::default();
    let mut fields = serde_json::Map::new();
    fields.insert("content".into(), json!("x"));
    let ctx = vec![
        AgentMessage::user("hi"),
        AgentMessage::from(CustomMessage::new("note", fields)),
    ];
    let out = run_continue(
        ctx,
        config(&p, vec![]),
        SoftState::default(),
        AbortSignal::new(),
        Arc::new(rec.clone()),
    )
    .await
    .unwrap();
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start:assistant",
            "message_update",
            "message_update",
            "message_update",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(out.new_messages().len(), 1);
}

#[derive(Clone)]
enum Before {
    Block,
    Mutate,
    Revise(Value),
}

struct BeforeHook(Before);

#[async_trait]
impl LoopHooks for BeforeHook {
    async fn before_tool_call(
        &self,
        _a: &AssistantMessage,
        _c: &ToolCall,
        args: &mut Value,
        _s: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        Ok(match &self.0 {
            Before::Block => BeforeToolCall::Block(Some("not in this folder".into())),
            Before::Mutate => {
                args["mutated"] = json!(true);
                BeforeToolCall::Proceed
            }
            Before::Revise(v) => BeforeToolCall::Revise(v.clone()),
        })
    }
}

#[tokio::test]
async fn before_tool_call_blocks_mutates_and_revises() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let mk = || TestTool::echo("echo").schema(schema.clone());

    let t = mk();
    let calls = t.calls.clone();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"n": 1}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(config(&p, vec![t.arc()]), BeforeHook(Before::Block)),
        "go",
        vec![],
    )
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(rec.tool_results()[0].1, "not in this folder");

    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"n": 1}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(config(&p, vec![mk().arc()]), BeforeHook(Before::Mutate)),
        "go",
        vec![],
    )
    .await;
    assert!(rec.tool_results()[0].1.contains("\"mutated\":true"));

    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"n": 1}))]),
        reply::text("ok"),
    ]);
    let (rec, out) = run(
        with_hooks(
            config(&p, vec![mk().arc()]),
            BeforeHook(Before::Revise(json!({"n": 7}))),
        ),
        "go",
        vec![],
    )
    .await;
    assert!(rec.tool_results()[0].1.contains("\"n\":7"));
    let a = out.unwrap().new_messages()[1]
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(
        a.tool_calls().next().unwrap().arguments,
        json!({"n": 7}),
        "history shows the revision"
    );
    let start_args = rec.all().iter().find_map(|e| match e {
        AgentEvent::ToolExecutionStart { args, .. } => Some(args.clone()),
        _ => None,
    });
    assert_eq!(*start_args.unwrap(), json!({"n": 7}));

    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({"n": 1}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(
            config(&p, vec![mk().arc()]),
            BeforeHook(Before::Revise(json!({"n": "seven"}))),
        ),
        "go",
        vec![],
    )
    .await;
    assert!(
        rec.tool_results()[0].2,
        "an invalid revision is a validation error"
    );
}

struct After {
    mode: &'static str,
    saw_abort: Arc<AtomicBool>,
}

#[async_trait]
impl LoopHooks for After {
    async fn after_tool_call(
        &self,
        info: AfterToolCallInfo<'_>,
        s: &AbortSignal,
    ) -> Result<Option<ResultOverride>, String> {
        self.saw_abort.store(s.is_aborted(), Ordering::SeqCst);
        match self.mode {
            "override" => Ok(Some(ResultOverride {
                content: Some(vec![ContentBlock::text(format!(
                    "reviewed: {}",
                    info.result.content[0].as_text().unwrap_or("")
                ))]),
                is_error: Some(true),
                ..Default::default()
            })),
            "throw" => Err("review failed".into()),
            _ => Ok(None),
        }
    }
}

#[tokio::test]
async fn after_tool_call_overrides_and_failures() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(
            config(&p, vec![TestTool::echo("echo").arc()]),
            After {
                mode: "override",
                saw_abort: Default::default(),
            },
        ),
        "go",
        vec![],
    )
    .await;
    assert_eq!(
        rec.tool_results()[0],
        ("c1".into(), "reviewed: echo ok: {}".into(), true)
    );

    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(
        with_hooks(
            config(&p, vec![TestTool::echo("echo").arc()]),
            After {
                mode: "throw",
                saw_abort: Default::default(),
            },
        ),
        "go",
        vec![],
    )
    .await;
    assert_eq!(
        rec.tool_results()[0],
        ("c1".into(), "review failed".into(), true)
    );
}

#[tokio::test]
async fn after_tool_call_runs_for_a_completed_tool_even_if_the_run_was_aborted() {
    let signal = AbortSignal::new();
    let s2 = signal.clone();
    let tool = TestTool::new("work", move |_| {
        let s2 = s2.clone();
        async move {
            s2.abort(AbortReason::Requested);
            Ok(ToolOutput::text("done"))
        }
    });
    let saw = Arc::new(AtomicBool::new(false));
    let p = scripts(vec![reply::tools(&[reply::call("c1", "work", json!({}))])]);
    run_with_signal(
        with_hooks(
            config(&p, vec![tool.arc()]),
            After {
                mode: "none",
                saw_abort: saw.clone(),
            },
        ),
        "go",
        vec![],
        signal,
    )
    .await
    .1
    .unwrap();
    assert!(saw.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_terminal_tool_result_ends_the_run_after_the_batch() {
    let signal = AbortSignal::new();
    let s2 = signal.clone();
    let tool = TestTool::new("yield", move |_| {
        let s2 = s2.clone();
        async move {
            s2.abort(AbortReason::TerminalToolResult);
            Ok(ToolOutput::text("handing back"))
        }
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "yield", json!({}))]),
        reply::text("never"),
    ]);
    let (rec, out) = run_with_signal(config(&p, vec![tool.arc()]), "go", vec![], signal).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 1);
    assert_eq!(out.new_messages().last().unwrap().role(), "toolResult");
    assert!(
        out.new_messages()
            .iter()
            .filter_map(|m| m.as_assistant())
            .all(|a| a.stop_reason != StopReason::Aborted)
    );
    assert_eq!(rec.count("agent_end"), 1);
}

#[tokio::test]
async fn external_abort_during_a_stubborn_tool_ends_with_an_aborted_boundary() {
    let signal = AbortSignal::new();
    let (s2, rec) = (signal.clone(), Recorder::default());
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_for("tool_start:c1").await;
        s2.abort(AbortReason::Message("enough".into()));
    });
    let p = scripts(vec![reply::tools(&[
        reply::call("c1", "stubborn", json!({})),
        reply::call("c2", "stubborn", json!({})),
    ])]);
    let tool = TestTool::stubborn("stubborn", 80).exclusive();
    let (rec, out) = run_recorded(config(&p, vec![tool.arc()]), "go", vec![], signal, rec).await;
    let out = out.unwrap();
    let r = rec.tool_results();
    assert_eq!(r[0].1, "stubborn done");
    assert!(r[1].2 && r[1].1.contains("aborted: enough"), "{}", r[1].1);
    let last = out.new_messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("enough"));
}

#[tokio::test]
async fn length_stop_does_not_run_tools_but_continues() {
    let tool = TestTool::echo("write");
    let calls = tool.calls.clone();
    let p = scripts(vec![
        reply::with_stop(
            &[],
            &[reply::call("c1", "write", json!({"content": "cut"}))],
            StopReason::Length,
            None,
        ),
        reply::text("smaller pieces now"),
    ]);
    let (rec, _) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let r = &rec.tool_results()[0];
    assert!(r.2 && r.1.contains("stop_reason: length") && r.1.contains("smaller"));
    assert_eq!(p.request_count(), 2);

    // Length without tool calls is a plain stop.
    let p = scripts(vec![reply::with_stop(
        &["cut"],
        &[],
        StopReason::Length,
        None,
    )]);
    run(config(&p, vec![]), "go", vec![]).await.1.unwrap();
    assert_eq!(p.request_count(), 1);
}

#[tokio::test]
async fn stop_with_tool_calls_is_runnable() {
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let p = scripts(vec![
        reply::with_stop(
            &[],
            &[reply::call("c1", "echo", json!({}))],
            StopReason::Stop,
            None,
        ),
        reply::text("ok"),
    ]);
    run(config(&p, vec![tool.arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn deadline_during_before_yield_leaves_follow_ups_queued() {
    // The deadline passes inside on_before_yield, and the timer has not fired yet when it
    // returns: only the loop's check after the hook keeps the follow-up in its queue.
    struct SlowYield(Queue);
    #[async_trait]
    impl LoopHooks for SlowYield {
        async fn on_before_yield(&self) {
            jump_clock(Duration::from_millis(80));
        }
        async fn follow_up_messages(&self, s: &AbortSignal) -> Vec<AgentMessage> {
            self.0.follow_up_messages(s).await
        }
    }
    let q = Queue::default();
    q.follow_up
        .lock()
        .unwrap()
        .push(AgentMessage::user("later"));
    let p = scripts(vec![reply::text("first")]);
    let mut c = with_hooks(config(&p, vec![]), SlowYield(q.clone()));
    c.deadline = Some(TokioInstant::now() + Duration::from_millis(40));
    let (rec, out) = run(c, "go", vec![]).await;
    out.unwrap();
    assert_eq!(q.follow_up.lock().unwrap().len(), 1);
    assert_eq!(p.request_count(), 1);
    assert_eq!(rec.count("turn_start"), 1);
}

#[tokio::test]
async fn message_updates_carry_deltas_not_the_whole_message() {
    let pieces: Vec<String> = (0..200).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let p = scripts(vec![reply::full(&refs, &[])]);
    let (rec, out) = run(config(&p, vec![]), "go", vec![]).await;
    let mut builder = pi::agent::protocol::stream::MessageBuilder::new(reply::base());
    for e in rec.all() {
        if let AgentEvent::MessageUpdate {
            assistant_message_event,
        } = e
        {
            if let StreamEvent::TextDelta { delta, .. } = &assistant_message_event {
                assert!(delta.len() < 8);
            }
            builder.apply(&assistant_message_event);
        }
    }
    assert_eq!(
        builder.message().text(),
        out.unwrap().new_messages()[1]
            .as_assistant()
            .unwrap()
            .text()
    );
}

#[tokio::test]
async fn on_turn_end_sees_results_and_whether_the_run_continues() {
    #[derive(Default)]
    struct Turns(Mutex<Vec<(usize, bool)>>);
    #[async_trait]
    impl LoopHooks for Turns {
        async fn on_turn_end(&self, _m: &[AgentMessage], info: TurnEndInfo<'_>) {
            self.0
                .lock()
                .unwrap()
                .push((info.tool_results.len(), info.will_continue));
        }
    }
    let hooks = Arc::new(Turns::default());
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let mut c = config(&p, vec![TestTool::echo("echo").arc()]);
    c.hooks = hooks.clone();
    run(c, "go", vec![]).await.1.unwrap();
    assert_eq!(*hooks.0.lock().unwrap(), [(1, true), (0, false)]);
}

// Soft tool requirements.

struct Soft {
    id: &'static str,
    reminder: &'static str,
    /// Cleared by the host once the requirement is met.
    active: Arc<AtomicBool>,
}

impl LoopHooks for Soft {
    fn tool_directive(&self) -> Option<ToolDirective> {
        if !self.active.load(Ordering::SeqCst) {
            return None;
        }
        Some(ToolDirective::Soft(SoftToolRequirement {
            id: self.id.into(),
            tool_name: "todo".into(),
            satisfies: None,
            reminder: vec![AgentMessage::user(self.reminder)],
        }))
    }
}

/// The todo tool satisfies the requirement: the host clears it when the tool runs.
fn soft_config(p: &pi::agent::scripted::ScriptedProvider) -> pi::agent::engine::config::LoopConfig {
    let active = Arc::new(AtomicBool::new(true));
    let a = active.clone();
    let todo = TestTool::new("todo", move |_| {
        let a = a.clone();
        async move {
            a.store(false, Ordering::SeqCst);
            Ok(ToolOutput::text("list updated"))
        }
    });
    with_hooks(
        config(p, vec![todo.arc(), TestTool::echo("bash").arc()]),
        Soft {
            id: "plan",
            reminder: "update the todo list first",
            active,
        },
    )
}

#[tokio::test]
async fn a_compliant_model_never_sees_a_forced_choice() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "todo", json!({}))]),
        reply::text("done"),
    ]);
    let (_, out) = run(soft_config(&p), "go", vec![]).await;
    let out = out.unwrap();
    let reminders = out
        .new_messages()
        .iter()
        .filter(|m| {
            m.as_user()
                .is_some_and(|u| u.content.joined_text().contains("todo list"))
        })
        .count();
    assert_eq!(reminders, 1, "the reminder is injected once");
    assert!(p.requests().iter().all(|r| r.options.tool_choice.is_none()));
}

#[tokio::test]
async fn a_detour_is_skipped_then_the_tool_is_forced_once() {
    let bash = TestTool::echo("bash");
    let bash_calls = bash.calls.clone();
    let p = scripts(vec![
        reply::tools(&[
            reply::call("c1", "todo", json!({})),
            reply::call("c2", "bash", json!({})),
        ]),
        reply::tools(&[reply::call("c3", "todo", json!({}))]),
        reply::text("done"),
    ]);
    // The host clears the requirement once todo has run.
    let active = Arc::new(AtomicBool::new(true));
    let a = active.clone();
    let todo = TestTool::new("todo", move |_| {
        let a = a.clone();
        async move {
            a.store(false, Ordering::SeqCst);
            Ok(ToolOutput::text("planned"))
        }
    });
    let c = with_hooks(
        config(&p, vec![todo.arc(), bash.arc()]),
        Soft {
            id: "plan",
            reminder: "todo first",
            active,
        },
    );
    let (rec, out) = run(c, "go", vec![]).await;
    let out = out.expect("the run ends normally once todo ran");
    assert_eq!(
        out.new_messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "done"
    );
    assert_eq!(p.request_count(), 3);
    assert_eq!(bash_calls.load(Ordering::SeqCst), 0);
    let r = rec.tool_results();
    assert!(r[0].2 && r[0].1.contains("`todo`"), "{}", r[0].1);
    let reqs = p.requests();
    assert_eq!(reqs[0].options.tool_choice, None);
    assert_eq!(
        reqs[1].options.tool_choice,
        Some(ToolChoice::Tool("todo".into()))
    );
    assert_eq!(
        reqs[2].options.tool_choice, None,
        "only one turn carries the forced choice"
    );
}

#[tokio::test]
async fn bare_text_escalates_and_the_run_fails_after_three_forced_turns() {
    let p = scripts((0..6).map(|_| reply::text("I'd rather chat")).collect());
    let (_, out) = run(soft_config(&p), "go", vec![]).await;
    let failure = out.unwrap_err();
    assert!(
        failure.error.message.contains("3 forced turns"),
        "{}",
        failure.error.message
    );
    assert_eq!(p.request_count(), 4);
}

#[tokio::test]
async fn a_hard_none_choice_turns_the_soft_gate_off() {
    let p = scripts(vec![reply::text("fine")]);
    let mut c = soft_config(&p);
    c.tool_choice = Some(ToolChoice::None);
    run(c, "go", vec![]).await.1.unwrap();
    assert_eq!(p.request_count(), 1);
}

#[tokio::test]
async fn telemetry_summarises_the_run_only_when_enabled() {
    let p = scripts(vec![reply::text("ok")]);
    let (rec, _) = run(config(&p, vec![]), "go", vec![]).await;
    assert!(rec.all().iter().all(|e| !matches!(
        e,
        AgentEvent::AgentEnd {
            telemetry: Some(_),
            ..
        }
    )));

    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let mut c = config(&p, vec![TestTool::echo("echo").arc()]);
    c.telemetry = true;
    let (rec, _) = run(c, "go", vec![]).await;
    let summary = rec.all().iter().find_map(|e| match e {
        AgentEvent::AgentEnd { telemetry, .. } => telemetry.clone(),
        _ => None,
    });
    let summary = serde_json::to_value(summary.unwrap()).unwrap();
    assert_eq!(summary["stepCount"], 2);
}

#[tokio::test]
async fn tool_progress_updates_are_streamed() {
    let tool = TestTool::new("prog", |inv| async move {
        inv.progress.update(ToolOutput::text("25%"));
        inv.progress
            .update(ToolOutput::text("\u{1b}[31m75%\u{1b}[0m"));
        Ok(ToolOutput::text("100%"))
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "prog", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    let updates: Vec<String> = rec
        .all()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                partial_result.content[0].as_text().map(str::to_string)
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 2);
    assert_eq!(updates[0], "25%");
    let k = rec.kinds();
    assert!(
        k.iter().position(|x| x == "tool_execution_update").unwrap()
            < k.iter().position(|x| x == "tool_end:c1").unwrap()
    );
}

#[tokio::test]
async fn an_out_of_band_failure_fails_the_run() {
    let (mut steps, _) = reply::open(&["partial"], &[]);
    steps.push(Step::Fail("connection dropped".into()));
    let p = scripts(vec![steps]);
    let (_, out) = run(config(&p, vec![]), "go", vec![]).await;
    assert_eq!(out.unwrap_err().error.message, "connection dropped");
}

#[tokio::test]
async fn refusals_are_kept_but_not_replayed() {
    let mut refusal = reply::base();
    refusal.stop_reason = StopReason::Error;
    refusal.error_message = Some("refused".into());
    refusal.stop_details = Some(StopDetails {
        kind: STOP_REFUSAL.into(),
        ..Default::default()
    });
    let ctx = vec![AgentMessage::user("first"), AgentMessage::from(refusal)];
    let p = scripts(vec![reply::text("ok")]);
    run(config(&p, vec![]), "second", ctx).await.1.unwrap();
    assert_eq!(request_roles(&p, 0), ["user", "user"]);
}

#[tokio::test]
async fn whitespace_only_error_results_get_a_fallback_text() {
    let tool = TestTool::new("quiet", |_| async { Ok(ToolOutput::error("   \n")) });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "quiet", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    let r = &rec.tool_results()[0];
    assert!(r.2);
    assert_eq!(r.1, pi::agent::policy::coerce::EMPTY_ERROR_TEXT);
}

/// Revises call `b` to run alone.
struct MakeExclusive;

#[async_trait]
impl LoopHooks for MakeExclusive {
    async fn before_tool_call(
        &self,
        _assistant: &AssistantMessage,
        call: &ToolCall,
        _args: &mut Value,
        _signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        if call.id == "b" {
            return Ok(BeforeToolCall::Revise(json!({"exclusive": true})));
        }
        Ok(BeforeToolCall::Proceed)
    }
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_resolved_from_prepared_arguments() {
    struct ByArgs;
    #[async_trait]
    impl AgentTool for ByArgs {
        fn name(&self) -> &str {
            "maybe"
        }
        fn description(&self) -> &str {
            "exclusive when asked"
        }
        fn parameters(&self) -> &Value {
            static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
            S.get_or_init(|| json!({"type": "object"}))
        }
        fn concurrency(&self, args: &Value) -> Result<Concurrency, String> {
            Ok(if args["exclusive"] == json!(true) {
                Concurrency::Exclusive
            } else {
                Concurrency::Shared
            })
        }
        async fn execute(
            &self,
            inv: pi::agent::protocol::tool::ToolInvocation,
        ) -> Result<ToolOutput, pi::agent::protocol::tool::ToolError> {
            let ms = if inv.tool_call_id == "a" { 60 } else { 5 };
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(inv.tool_call_id))
        }
    }
    // The model asks for two shared calls; the hook revises b to run alone.
    let p = scripts(vec![
        reply::tools(&[
            reply::call("a", "maybe", json!({})),
            reply::call("b", "maybe", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, out) = run(
        with_hooks(config(&p, vec![Arc::new(ByArgs)]), MakeExclusive),
        "go",
        vec![],
    )
    .await;
    assert_eq!(
        ids(&rec.tool_results()),
        ["a", "b"],
        "b waits for a although a is slower"
    );
    assert_eq!(
        rec.time_of("tool_start:b") - rec.time_of("tool_start:a"),
        Duration::from_millis(60),
        "b starts when a ends"
    );
    // The revision is what history holds.
    let a = out.unwrap().new_messages()[1]
        .as_assistant()
        .unwrap()
        .clone();
    let b = a.tool_calls().find(|c| c.id == "b").unwrap();
    assert_eq!(b.arguments, json!({"exclusive": true}));

    // Without the hook, both share the batch and b finishes first.
    let p = scripts(vec![
        reply::tools(&[
            reply::call("a", "maybe", json!({})),
            reply::call("b", "maybe", json!({})),
        ]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(config(&p, vec![Arc::new(ByArgs)]), "go", vec![]).await;
    assert_eq!(ids(&rec.tool_results()), ["b", "a"]);
}

#[tokio::test]
async fn a_thrown_empty_error_also_gets_the_fallback_text() {
    let tool = TestTool::new("silent", |_| async {
        Err(pi::agent::protocol::tool::ToolError::new(""))
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "silent", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run(config(&p, vec![tool.arc()]), "go", vec![]).await;
    assert_eq!(
        rec.tool_results()[0],
        (
            "c1".into(),
            pi::agent::policy::coerce::EMPTY_ERROR_TEXT.into(),
            true
        )
    );
}

#[tokio::test]
async fn prompt_asides_are_committed_when_they_enter_the_context() {
    let committed = Arc::new(AtomicUsize::new(0));
    let c2 = committed.clone();
    let prompt = Injected::with_hooks(
        AgentMessage::user("with a hook"),
        AsideHooks {
            on_commit: Some(Box::new(move || {
                c2.fetch_add(1, Ordering::SeqCst);
            })),
            on_discard: None,
        },
    );
    let p = scripts(vec![reply::text("ok")]);
    let rec = Recorder::default();
    pi::agent::engine::run::run_prompt(
        vec![prompt],
        vec![],
        config(&p, vec![]),
        SoftState::default(),
        AbortSignal::new(),
        Arc::new(rec.clone()),
    )
    .await
    .into_result()
    .unwrap();
    assert_eq!(
        committed.load(Ordering::SeqCst),
        1,
        "committed exactly once"
    );
}

/// Asides whose thunk takes long enough for the deadline to pass before insertion.
struct SlowAside {
    discarded: Arc<Mutex<Vec<String>>>,
    committed: Arc<AtomicUsize>,
    served: AtomicBool,
}

impl LoopHooks for SlowAside {
    fn aside_messages(&self) -> Vec<AsideEntry> {
        if self.served.swap(true, Ordering::SeqCst) {
            return vec![];
        }
        let d = self.discarded.clone();
        let c = self.committed.clone();
        vec![AsideEntry::Deferred(Box::new(move || {
            jump_clock(Duration::from_millis(80));
            Ok(Some(Injected::with_hooks(
                AgentMessage::user("late news"),
                AsideHooks {
                    on_commit: Some(Box::new(move || {
                        c.fetch_add(1, Ordering::SeqCst);
                    })),
                    on_discard: Some(Box::new(move |why| d.lock().unwrap().push(why))),
                },
            )))
        }))]
    }
}

#[tokio::test(start_paused = true)]
async fn an_aside_taken_just_before_the_deadline_is_discarded_not_inserted() {
    let hooks = SlowAside {
        discarded: Default::default(),
        committed: Default::default(),
        served: AtomicBool::new(false),
    };
    let discarded = hooks.discarded.clone();
    let committed = hooks.committed.clone();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("never"),
    ]);
    let mut c = with_hooks(config(&p, vec![TestTool::echo("echo").arc()]), hooks);
    c.deadline = Some(TokioInstant::now() + Duration::from_millis(40));
    let (_, out) = run(c, "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 1);
    assert_eq!(committed.load(Ordering::SeqCst), 0);
    assert_eq!(*discarded.lock().unwrap(), [DEADLINE_TEXT]);
    assert!(out.new_messages().iter().all(|m| {
        m.as_user()
            .is_none_or(|u| u.content.joined_text() != "late news")
    }));
}

/// Steering with a wake-up: queued messages are noticed at once, not at the next poll.
#[derive(Clone, Default)]
struct Notifying {
    queue: Queue,
    notify: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl LoopHooks for Notifying {
    async fn steering_messages(&self, s: &AbortSignal) -> Vec<AgentMessage> {
        self.queue.steering_messages(s).await
    }
    fn peek_steering(&self) -> SteeringPeek {
        self.queue.peek_steering()
    }
    fn steering_notify(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.notify.clone())
    }
}

#[tokio::test(start_paused = true)]
async fn a_wake_up_interrupts_before_the_poll_would() {
    let hooks = Notifying {
        queue: Queue {
            peek: true,
            ..Default::default()
        },
        notify: Default::default(),
    };
    let h2 = hooks.clone();
    let p = scripts(vec![
        reply::tools(&[reply::call("w", "wait", json!({}))]),
        reply::text("ok"),
    ]);
    let c = with_hooks(
        config(
            &p,
            vec![TestTool::sleeper("wait", 5_000).interruptible().arc()],
        ),
        hooks,
    );
    let rec = Recorder::default();
    let r2 = rec.clone();
    let steer = tokio::spawn(async move {
        r2.wait_for("tool_start:w").await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        h2.queue
            .steering
            .lock()
            .unwrap()
            .push(AgentMessage::user("now"));
        h2.notify.notify_waiters();
    });
    let (rec, _) = run_recorded(c, "go", vec![], AbortSignal::new(), rec).await;
    steer.await.unwrap();
    let r = rec.tool_results();
    assert!(r[0].2 && r[0].1.contains("Skipped"));
    // On tokio's paused clock: queued 20 ms into the wait, the wake-up ends it then; the poll
    // alone would have needed 250 ms.
    let waited = rec.time_of("tool_end:w") - rec.time_of("tool_start:w");
    assert_eq!(waited, Duration::from_millis(20));
}

fn fast_retries(
    mut c: pi::agent::engine::config::LoopConfig,
) -> pi::agent::engine::config::LoopConfig {
    c.retry = pi::agent::engine::config::RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(200),
    };
    c
}

fn retry_events(rec: &Recorder) -> Vec<String> {
    rec.all()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AutoRetryStart { attempt, .. } => Some(format!("retry {attempt}")),
            AgentEvent::AutoRetryEnd { success, .. } => Some(format!("end {success}")),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn transient_failures_before_content_are_retried_quietly() {
    let p = scripts(vec![
        reply::transient_error(&[], &[], "429 rate limited", Some(30)),
        reply::transient_error(&[], &[], "529 overloaded", None),
        reply::text("finally"),
    ]);
    let started = TokioInstant::now();
    let (rec, out) = run(fast_retries(config(&p, vec![])), "go", vec![]).await;
    let out = out.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(30),
        "Retry-After honoured"
    );
    assert_eq!(p.request_count(), 3);
    assert_eq!(retry_events(&rec), ["retry 1", "retry 2", "end true"]);
    assert_eq!(
        rec.count("message_start"),
        2,
        "no message for attempts that never started"
    );
    let roles: Vec<_> = out
        .new_messages()
        .iter()
        .map(|m| m.role().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(rec.count("turn_start"), 1, "retries stay inside the turn");
}

#[tokio::test]
async fn a_failure_after_content_is_shown_then_retried_without_replaying_it() {
    let p = scripts(vec![
        reply::transient_error(&["half an ans"], &[], "connection reset by peer", None),
        reply::text("full answer"),
        reply::text("second"),
    ]);
    let (rec, out) = run(fast_retries(config(&p, vec![])), "go", vec![]).await;
    let out = out.unwrap();
    let ends: Vec<_> = rec
        .all()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => message.as_assistant().cloned(),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(ends[0].is_retried_attempt());
    assert_eq!(ends[0].text(), "half an ans");
    assert_eq!(ends[1].text(), "full answer");
    assert_eq!(
        out.new_messages().len(),
        2,
        "the failed attempt is not in the context"
    );
    assert_eq!(
        request_roles(&p, 1),
        ["user"],
        "the retry does not send the partial"
    );
}

#[tokio::test]
async fn retries_stop_after_the_limit_and_non_transient_errors_are_not_retried() {
    let p = scripts(
        (0..5)
            .map(|_| reply::transient_error(&[], &[], "503 unavailable", None))
            .collect(),
    );
    let (rec, out) = run(fast_retries(config(&p, vec![])), "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 4, "one attempt and three retries");
    assert_eq!(
        retry_events(&rec),
        ["retry 1", "retry 2", "retry 3", "end false"]
    );
    let last = out.new_messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some("503 unavailable"));

    let p = scripts(vec![
        reply::error(&[], &[], "401 invalid key"),
        reply::text("never"),
    ]);
    let (rec, _) = run(fast_retries(config(&p, vec![])), "go", vec![]).await;
    assert_eq!(p.request_count(), 1);
    assert!(retry_events(&rec).is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_abort_during_the_retry_wait_ends_the_run_at_once() {
    let p = scripts(vec![
        reply::transient_error(&[], &[], "429", Some(10_000)),
        reply::text("never"),
    ]);
    let mut c = config(&p, vec![]);
    c.retry.max_delay = Duration::from_secs(60);
    let signal = AbortSignal::new();
    let (s2, rec) = (signal.clone(), Recorder::default());
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_for("auto_retry_start").await;
        s2.abort(AbortReason::Message("Esc".into()));
    });
    let started = TokioInstant::now();
    let (_, out) = run_recorded(c, "go", vec![], signal, rec).await;
    // On the paused clock: the wait was 10 s; the abort ends it without any time passing.
    assert_eq!(started.elapsed(), Duration::ZERO);
    let last = out
        .unwrap()
        .new_messages()
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(p.request_count(), 1);
}

#[tokio::test]
async fn complete_tool_calls_are_salvaged_instead_of_retried() {
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let p = scripts(vec![
        mark_broken(reply::transient_error(
            &[],
            &[reply::call("c1", "echo", json!({}))],
            "stream_read_error: reset",
            None,
        )),
        reply::text("ok"),
    ]);
    let (rec, _) = run(fast_retries(config(&p, vec![tool.arc()])), "go", vec![]).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(retry_events(&rec).is_empty());
}

#[tokio::test]
async fn a_model_repeating_the_same_call_is_stopped() {
    let same = || reply::tools(&[reply::call("c", "echo", json!({"x": 1}))]);
    let p = scripts((0..20).map(|_| same()).collect());
    let (_, out) = run(config(&p, vec![TestTool::echo("echo").arc()]), "go", vec![]).await;
    let failure = out.unwrap_err();
    assert!(
        failure.error.message.contains("same tool call 6 turns"),
        "{}",
        failure.error.message
    );
    assert_eq!(p.request_count(), 6);

    // The same call with a changing answer is polling, not repetition.
    let p = scripts(
        (0..10)
            .map(|_| same())
            .chain([reply::text("it finished")])
            .collect(),
    );
    let polls = Arc::new(AtomicUsize::new(0));
    let n = polls.clone();
    let status = TestTool::new("echo", move |_| {
        let n = n.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text(format!("{}% done", n * 10))) }
    });
    let (_, out) = run(config(&p, vec![status.arc()]), "go", vec![]).await;
    out.unwrap();
    assert_eq!(polls.load(Ordering::SeqCst), 10);
    assert_eq!(p.request_count(), 11);

    // The limit is the config's: two repeats allowed, the third identical request refused.
    let p = scripts((0..20).map(|_| same()).collect());
    let mut c = config(&p, vec![TestTool::echo("echo").arc()]);
    c.max_repeated_tool_turns = Some(2);
    let (_, out) = run(c, "go", vec![]).await;
    assert!(
        out.unwrap_err()
            .error
            .message
            .contains("same tool call 3 turns")
    );
    assert_eq!(p.request_count(), 3);

    // Different arguments are progress, not repetition.
    let scripts_list: Vec<_> = (0..8)
        .map(|i| reply::tools(&[reply::call("c", "echo", json!({"x": i}))]))
        .chain([reply::text("done")])
        .collect();
    let p = scripts(scripts_list);
    run(config(&p, vec![TestTool::echo("echo").arc()]), "go", vec![])
        .await
        .1
        .unwrap();
    assert_eq!(p.request_count(), 9);
}

/// The same script, its final error marked as a stream that broke.
fn mark_broken(mut steps: Vec<Step>) -> Vec<Step> {
    if let Some(Step::Event(StreamEvent::Error { error, .. })) = steps.last_mut() {
        error.stream_broken = true;
    }
    steps
}

// Paths the first version left untested.

#[tokio::test(start_paused = true)]
async fn wait_mode_lets_the_batch_finish_and_delivers_steering_at_the_boundary() {
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let s = q.steering.clone();
    let rec = Recorder::default();
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_for("tool_start:w").await;
        s.lock()
            .unwrap()
            .push(AgentMessage::user("when you are done"));
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("w", "wait", json!({}))]),
        reply::text("ok"),
    ]);
    let mut c = with_hooks(
        config(
            &p,
            vec![TestTool::sleeper("wait", 1_000).interruptible().arc()],
        ),
        q,
    );
    c.interrupt_mode = InterruptMode::Wait;
    let (rec, _) = run_recorded(c, "go", vec![], AbortSignal::new(), rec).await;
    let r = rec.tool_results();
    assert_eq!(
        r[0].1, "wait done",
        "the interruptible tool was not cut short"
    );
    assert_eq!(
        rec.time_of("tool_end:w") - rec.time_of("tool_start:w"),
        Duration::from_millis(1_000)
    );
    let second = request_roles(&p, 1);
    assert_eq!(second, ["user", "assistant", "toolResult", "user"]);
}

#[tokio::test(start_paused = true)]
async fn an_interruptible_resolver_that_fails_means_not_interruptible() {
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let s = q.steering.clone();
    let rec = Recorder::default();
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_for("tool_start:w").await;
        s.lock().unwrap().push(AgentMessage::user("stop"));
    });
    let mut wait = TestTool::sleeper("wait", 600);
    wait.interruptible = Err("cannot tell".into());
    let p = scripts(vec![
        reply::tools(&[reply::call("w", "wait", json!({}))]),
        reply::text("ok"),
    ]);
    let (rec, _) = run_recorded(
        with_hooks(config(&p, vec![wait.arc()]), q),
        "go",
        vec![],
        AbortSignal::new(),
        rec,
    )
    .await;
    assert_eq!(rec.tool_results()[0].1, "wait done");
    assert_eq!(
        rec.time_of("tool_end:w") - rec.time_of("tool_start:w"),
        Duration::from_millis(600)
    );
}

/// A soft requirement for `todo` (until `done` is set), and a gate that stops the call
/// numbered `stop_at`.
struct SoftAndGate {
    calls: AtomicUsize,
    stop_at: usize,
    done: Arc<AtomicBool>,
}

#[async_trait]
impl LoopHooks for SoftAndGate {
    fn tool_directive(&self) -> Option<ToolDirective> {
        if self.done.load(Ordering::SeqCst) {
            return None;
        }
        Some(ToolDirective::Soft(SoftToolRequirement {
            id: "plan".into(),
            tool_name: "todo".into(),
            satisfies: None,
            reminder: vec![AgentMessage::user("todo first")],
        }))
    }
    fn has_model_gate(&self) -> bool {
        true
    }
    async fn before_model_call(
        &self,
        _ctx: &LlmContext,
        _s: &AbortSignal,
    ) -> Result<GateDecision, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(if n == self.stop_at {
            GateDecision::Stop(None)
        } else {
            GateDecision::Proceed
        })
    }
}

#[tokio::test]
async fn soft_state_survives_a_gate_stop_into_the_next_run() {
    let p = scripts(vec![
        reply::tools(&[reply::call("b1", "bash", json!({}))]),
        reply::tools(&[reply::call("t1", "todo", json!({}))]),
        reply::text("done"),
    ]);
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let todo = TestTool::new("todo", move |_| {
        let d = d.clone();
        async move {
            d.store(true, Ordering::SeqCst);
            Ok(ToolOutput::text("planned"))
        }
    });
    let hooks = Arc::new(SoftAndGate {
        calls: AtomicUsize::new(0),
        stop_at: 2,
        done,
    });
    let mut c = config(&p, vec![todo.arc(), TestTool::echo("bash").arc()]);
    c.hooks = hooks.clone();
    // Run 1: the detour is skipped, then the gate stops the forced call.
    let rec = Recorder::default();
    let out = run_prompt(
        prompts(&["go"]),
        vec![],
        c.clone(),
        SoftState::default(),
        AbortSignal::new(),
        Arc::new(rec.clone()),
    )
    .await;
    assert!(out.error.is_none());
    assert_eq!(p.request_count(), 1);
    let soft = out.soft_state.clone();
    assert_eq!(soft.escalations, 1, "the escalation is kept");
    assert_eq!(soft.forced, Some(ToolChoice::Tool("todo".into())));

    // Run 2 starts with the forced call, and the reminder is not injected again.
    let out = run_prompt(
        prompts(&["again"]),
        out.context,
        c,
        soft,
        AbortSignal::new(),
        Arc::new(Recorder::default()),
    )
    .await;
    assert!(out.error.is_none());
    let reqs = p.requests();
    assert_eq!(
        reqs[1].options.tool_choice,
        Some(ToolChoice::Tool("todo".into()))
    );
    let reminders = out
        .context
        .iter()
        .filter(|m| {
            m.as_user()
                .is_some_and(|u| u.content.joined_text() == "todo first")
        })
        .count();
    assert_eq!(reminders, 1);
}

/// A gate that stops every call and whose tool-choice rejection fails.
struct RejectingGate;

#[async_trait]
impl LoopHooks for RejectingGate {
    fn has_model_gate(&self) -> bool {
        true
    }
    async fn before_model_call(
        &self,
        _ctx: &LlmContext,
        _s: &AbortSignal,
    ) -> Result<GateDecision, String> {
        Ok(GateDecision::Stop(None))
    }
    fn on_tool_choice_rejected(&self) -> Result<(), String> {
        Err("could not put the choice back".into())
    }
}

#[tokio::test]
async fn a_failing_tool_choice_rejection_opens_an_error_turn_before_the_inputs() {
    let p = scripts(vec![]);
    let (rec, out) = run(with_hooks(config(&p, vec![]), RejectingGate), "hi", vec![]).await;
    let failure = out.unwrap_err();
    assert_eq!(failure.error.message, "could not put the choice back");
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(p.request_count(), 0);
}

#[tokio::test]
async fn append_only_context_keeps_the_sent_prefix_through_the_loop() {
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::tools(&[reply::call("c2", "echo", json!({}))]),
        reply::text("done"),
    ]);
    let mut c = config(&p, vec![TestTool::echo("echo").arc()]);
    c.system_prompt = vec!["sys".into()];
    c.append_only = Some(Arc::new(Mutex::new(
        pi::agent::policy::append_only::AppendOnlyContext::new(),
    )));
    run(c, "go", vec![]).await.1.unwrap();
    let reqs = p.requests();
    assert_eq!(reqs.len(), 3);
    for pair in reqs.windows(2) {
        let (a, b) = (&pair[0].context, &pair[1].context);
        assert!(b.messages.len() > a.messages.len());
        for (x, y) in a.messages.iter().zip(b.messages.iter()) {
            assert!(
                Arc::ptr_eq(x, y),
                "an earlier message was re-sent as a new object"
            );
        }
        assert_eq!(a.tools, b.tools);
        assert_eq!(a.system_prompt, b.system_prompt);
    }
    assert_eq!(
        request_roles(&p, 2),
        ["user", "assistant", "toolResult", "assistant", "toolResult"]
    );
}

#[tokio::test]
async fn a_tool_turn_resets_the_pause_turn_counter() {
    let paused = || {
        reply::with_stop(
            &["still at it"],
            &[],
            StopReason::Stop,
            Some(StopDetails {
                kind: STOP_PAUSE_TURN.into(),
                ..Default::default()
            }),
        )
    };
    let n = MAX_PAUSED_TURN_CONTINUATIONS as usize;
    let mut list: Vec<_> = (0..n).map(|_| paused()).collect();
    list.push(reply::tools(&[reply::call("c1", "echo", json!({}))]));
    list.extend((0..n).map(|_| paused()));
    list.push(reply::text("finished"));
    let p = scripts(list);
    let (_, out) = run(config(&p, vec![TestTool::echo("echo").arc()]), "go", vec![]).await;
    // Without the reset, the first paused reply after the tool turn would end the run.
    assert_eq!(p.request_count(), 2 * n + 2);
    assert_eq!(
        out.unwrap()
            .new_messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "finished"
    );
}

// ---------------------------------------------------------------------------------------------
// GPT-5 Harmony protocol leaks (spec §13.1).

const LEAK: &str = "Let me read it.commentary to=functions.read {\"path\":\"src/main.rs\"}";

fn gpt5(mut c: pi::agent::engine::config::LoopConfig) -> pi::agent::engine::config::LoopConfig {
    c.model = pi::agent::protocol::stream::Model::new("openai", "openai-responses", "gpt-5");
    c
}

/// Assistant `message_end`s in event order.
fn assistant_ends(rec: &Recorder) -> Vec<AssistantMessage> {
    rec.all()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => message.as_assistant().cloned(),
            _ => None,
        })
        .collect()
}

fn mentions_leak(messages: &[AgentMessage]) -> bool {
    messages.iter().any(|m| {
        m.as_assistant().is_some_and(|a| {
            a.content
                .iter()
                .any(|b| format!("{b:?}").contains("to=functions"))
        })
    })
}

/// A reply with a thinking block, then text.
fn thinking_reply(thinking: &str, text: &str) -> pi::agent::scripted::Script {
    let (mut steps, mut message) = reply::open(&[], &[]);
    steps.extend([
        Step::Event(StreamEvent::ThinkingStart { content_index: 0 }),
        Step::Event(StreamEvent::ThinkingDelta {
            content_index: 0,
            delta: thinking.into(),
        }),
        Step::Event(StreamEvent::ThinkingEnd {
            content_index: 0,
            content: thinking.into(),
            signature: None,
        }),
        Step::Event(StreamEvent::TextStart { content_index: 1 }),
        Step::Event(StreamEvent::TextDelta {
            content_index: 1,
            delta: text.into(),
        }),
        Step::Event(StreamEvent::TextEnd {
            content_index: 1,
            content: text.into(),
            signature: None,
        }),
    ]);
    message.content.push(ContentBlock::Thinking(
        pi::agent::protocol::types::ThinkingContent {
            thinking: thinking.into(),
            ..Default::default()
        },
    ));
    message.content.push(ContentBlock::text(text));
    steps.push(Step::Event(StreamEvent::Done {
        reason: StopReason::Stop,
        message: Box::new(message),
    }));
    steps
}

/// One `on_harmony_leak` call: escalated, retry, signals, surface.
type LeakAudit = (bool, u32, String, String);

/// Counts directives handed out and records the leak audits.
#[derive(Default)]
struct HarmonyAudit {
    directives: Arc<AtomicUsize>,
    hard: bool,
    leaks: Arc<Mutex<Vec<LeakAudit>>>,
}

impl LoopHooks for HarmonyAudit {
    fn tool_directive(&self) -> Option<ToolDirective> {
        self.directives.fetch_add(1, Ordering::SeqCst);
        self.hard
            .then(|| ToolDirective::Hard(ToolChoice::Tool("echo".into())))
    }

    fn on_harmony_leak(&self, info: pi::agent::protocol::hooks::HarmonyLeakInfo<'_>) {
        self.leaks.lock().unwrap().push((
            info.escalated,
            info.retry,
            info.signals.to_string(),
            info.surface.to_string(),
        ));
    }
}

#[tokio::test]
async fn harmony_leak_in_text_is_resampled_in_the_same_turn() {
    let p = scripts(vec![reply::text(LEAK), reply::text("clean answer")]);
    let audit = HarmonyAudit::default();
    let leaks = audit.leaks.clone();
    let mut c = with_hooks(gpt5(config(&p, vec![])), audit);
    c.temperature = Some(0.5);
    let (rec, out) = run(c, "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 2);
    assert_eq!(
        rec.count("turn_start"),
        1,
        "the re-sample stays in the turn"
    );
    assert_eq!(rec.count("turn_end"), 1);
    let ends = assistant_ends(&rec);
    assert_eq!(ends.len(), 2);
    assert!(ends[0].is_retried_attempt(), "shown, then dropped");
    assert_eq!(ends[0].stop_reason, StopReason::Error);
    let why = ends[0].error_message.as_deref().unwrap();
    assert!(why.contains("Harmony") && why.contains("M+C"), "{why}");
    let roles: Vec<&str> = out.new_messages().iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(
        out.new_messages()[1].as_assistant().unwrap().text(),
        "clean answer"
    );
    assert!(!mentions_leak(&out.context));
    assert!(!mentions_leak(&rec.agent_end_messages()));
    assert_eq!(request_roles(&p, 1), ["user"], "the leak is not replayed");
    let temps: Vec<f64> = p
        .requests()
        .iter()
        .map(|r| r.options.temperature.unwrap())
        .collect();
    assert!((temps[0] - 0.5).abs() < 1e-9 && (temps[1] - 0.55).abs() < 1e-9);
    assert_eq!(
        *leaks.lock().unwrap(),
        [(false, 0, "M+C".to_string(), "text".to_string())]
    );
}

#[tokio::test]
async fn harmony_leak_in_thinking_is_resampled() {
    let p = scripts(vec![
        thinking_reply("plan<|channel|>commentary<|message|>", "Here it is."),
        thinking_reply("plan the reply", "Here it is."),
    ]);
    let (rec, out) = run(gpt5(config(&p, vec![])), "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 2);
    assert_eq!(rec.count("turn_start"), 1);
    let ends = assistant_ends(&rec);
    assert!(ends[0].is_retried_attempt());
    assert!(
        ends[0]
            .error_message
            .as_deref()
            .unwrap()
            .contains("thinking")
    );
    let kept = out.new_messages()[1].as_assistant().unwrap();
    assert!(
        matches!(&kept.content[0], ContentBlock::Thinking(t) if t.thinking == "plan the reply")
    );
    assert_eq!(out.new_messages().len(), 2);
}

#[tokio::test]
async fn harmony_leak_three_times_fails_the_turn() {
    let p = scripts(vec![
        reply::text(LEAK),
        reply::text("ok <|start|>assistant"),
        reply::text(LEAK),
        reply::text("never asked"),
    ]);
    let audit = HarmonyAudit::default();
    let leaks = audit.leaks.clone();
    let (rec, out) = run(with_hooks(gpt5(config(&p, vec![])), audit), "go", vec![]).await;
    let failure = out.unwrap_err();
    assert!(
        failure.error.message.contains("persisted after 2 retries"),
        "{}",
        failure.error.message
    );
    assert!(failure.error.message.contains("M+C"));
    assert_eq!(p.request_count(), 3);
    assert_eq!(rec.count("turn_start"), 1);
    assert_eq!(rec.count("turn_end"), 1);
    let ends = assistant_ends(&rec);
    assert_eq!(
        ends.len(),
        4,
        "three discarded attempts and the error reply"
    );
    assert!(ends[..3].iter().all(AssistantMessage::is_retried_attempt));
    assert!(ends[1].error_message.as_deref().unwrap().contains("(H)"));
    let last = out_last(&failure.outcome.context);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some(failure.error.message.as_str())
    );
    assert!(!mentions_leak(&failure.outcome.context));
    let roles: Vec<&str> = failure
        .outcome
        .new_messages()
        .iter()
        .map(AgentMessage::role)
        .collect();
    assert_eq!(roles, ["user", "assistant"]);
    let escalations: Vec<(bool, u32)> = leaks.lock().unwrap().iter().map(|l| (l.0, l.1)).collect();
    assert_eq!(escalations, [(false, 0), (false, 1), (true, 2)]);
}

fn out_last(context: &[AgentMessage]) -> AssistantMessage {
    context.last().unwrap().as_assistant().unwrap().clone()
}

#[tokio::test]
async fn harmony_marker_in_tool_arguments_runs_once() {
    let args = json!({"path": "notes.md", "newText": "commentary to=functions.bash <|call|>"});
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", args)]),
        reply::text("done"),
    ]);
    let tool = TestTool::echo("echo");
    let calls = tool.calls.clone();
    let (rec, out) = run(gpt5(config(&p, vec![tool.arc()])), "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(p.request_count(), 2);
    assert_eq!(rec.count("turn_start"), 2);
    assert!(assistant_ends(&rec).iter().all(|a| !a.is_retried_attempt()));
    let roles: Vec<&str> = out.new_messages().iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
}

#[tokio::test]
async fn harmony_check_skips_models_other_than_gpt5() {
    for model in [
        pi::agent::protocol::stream::Model::new("openai", "openai-responses", "gpt-4.1"),
        pi::agent::protocol::stream::Model::new("anthropic", "anthropic-messages", "gpt-5"),
    ] {
        let p = scripts(vec![reply::text(LEAK), reply::text("unused")]);
        let mut c = config(&p, vec![]);
        c.model = model;
        let (rec, out) = run(c, "go", vec![]).await;
        let out = out.unwrap();
        assert_eq!(p.request_count(), 1);
        assert_eq!(out.new_messages()[1].as_assistant().unwrap().text(), LEAK);
        assert!(assistant_ends(&rec).iter().all(|a| !a.is_retried_attempt()));
    }
}

#[tokio::test]
async fn harmony_resample_reuses_the_hard_tool_choice() {
    let p = scripts(vec![
        reply::text(LEAK),
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("done"),
    ]);
    let audit = HarmonyAudit {
        hard: true,
        ..Default::default()
    };
    let directives = audit.directives.clone();
    let c = with_hooks(gpt5(config(&p, vec![TestTool::echo("echo").arc()])), audit);
    let (_rec, out) = run(c, "go", vec![]).await;
    out.unwrap();
    let choices: Vec<Option<ToolChoice>> = p
        .requests()
        .iter()
        .map(|r| r.options.tool_choice.clone())
        .collect();
    assert_eq!(choices[0], Some(ToolChoice::Tool("echo".into())));
    assert_eq!(choices[1], choices[0], "the re-sample keeps the choice");
    // One directive for the first turn (kept across the re-sample), one for the second.
    assert_eq!(directives.load(Ordering::SeqCst), 2);
}

/// Steering whose wake-up panics when asked for.
#[derive(Clone, Default)]
struct BrokenWakeUp(Queue);

#[async_trait]
impl LoopHooks for BrokenWakeUp {
    async fn steering_messages(&self, s: &AbortSignal) -> Vec<AgentMessage> {
        self.0.steering_messages(s).await
    }
    fn peek_steering(&self) -> SteeringPeek {
        self.0.peek_steering()
    }
    fn steering_notify(&self) -> Option<Arc<tokio::sync::Notify>> {
        panic!("no wake-up here");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_steering_wake_up_falls_back_to_the_poll() {
    let q = Queue {
        peek: true,
        ..Default::default()
    };
    let s = q.steering.clone();
    let rec = Recorder::default();
    let r2 = rec.clone();
    tokio::spawn(async move {
        r2.wait_for("tool_start:w").await;
        s.lock().unwrap().push(AgentMessage::user("now"));
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("w", "wait", json!({}))]),
        reply::text("ok"),
    ]);
    let c = with_hooks(
        config(
            &p,
            vec![TestTool::sleeper("wait", 5_000).interruptible().arc()],
        ),
        BrokenWakeUp(q),
    );
    let (rec, out) = run_recorded(c, "go", vec![], AbortSignal::new(), rec).await;
    let out = out.unwrap();
    // The steer is still noticed, by the poll, and delivered.
    let r = rec.tool_results();
    assert!(r[0].2 && r[0].1.contains("Skipped"), "{r:?}");
    assert_eq!(
        rec.time_of("tool_end:w") - rec.time_of("tool_start:w"),
        STEERING_POLL
    );
    assert_eq!(
        out.new_messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "ok"
    );
}

/// Leak audits that let the deadline pass while the leaked reply is discarded.
struct LeakThenDeadline(Duration);

impl LoopHooks for LeakThenDeadline {
    fn on_harmony_leak(&self, _info: pi::agent::protocol::hooks::HarmonyLeakInfo<'_>) {
        jump_clock(self.0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_right_after_a_resample_closes_the_open_turn() {
    let p = scripts(vec![reply::text(LEAK), reply::text("never asked")]);
    let mut c = with_hooks(
        gpt5(config(&p, vec![])),
        LeakThenDeadline(Duration::from_secs(2)),
    );
    c.deadline = Some(TokioInstant::now() + Duration::from_secs(1));
    let (rec, out) = run(c, "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(p.request_count(), 1, "no re-sample past the deadline");
    assert_eq!(rec.count("turn_start"), 1);
    assert_eq!(rec.count("turn_end"), 1, "the open turn is closed");
    let last = out.new_messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some(DEADLINE_TEXT));
    let k = rec.kinds();
    assert_eq!(
        k[k.len() - 4..],
        [
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert!(!mentions_leak(&out.context));
}

#[tokio::test]
async fn a_progress_sink_stops_working_when_its_tool_has_returned() {
    let go = Arc::new(tokio::sync::Notify::new());
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let done_tx = Arc::new(Mutex::new(Some(done_tx)));
    let g = go.clone();
    let tool = TestTool::new("leaky", move |inv| {
        let g = g.clone();
        let done = done_tx.lock().unwrap().take();
        async move {
            let late = inv.progress.clone();
            // A task the tool leaves behind, still holding the sink.
            tokio::spawn(async move {
                g.notified().await;
                late.update(ToolOutput::text("late"));
                if let Some(d) = done {
                    let _ = d.send(());
                }
            });
            inv.progress.update(ToolOutput::text("early"));
            Ok(ToolOutput::text("finished"))
        }
    });
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "leaky", json!({}))]),
        reply::text("ok"),
    ]);
    let rec = Recorder::default();
    let r2 = rec.clone();
    let c = config(&p, vec![tool.arc()]);
    let run =
        tokio::spawn(async move { run_recorded(c, "go", vec![], AbortSignal::new(), r2).await });
    rec.wait_for("tool_end:c1").await;
    go.notify_one();
    done_rx.await.unwrap();
    run.await.unwrap().1.unwrap();
    let updates: Vec<String> = rec
        .all()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => Some(
                partial_result.content[0]
                    .as_text()
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["early"], "nothing after the call returned");
}

/// A provider whose stream never answers and whose cleanup blocks its thread until released
/// (at most 10 s, so a failing test still ends).
struct StallingCleanup {
    requested: Arc<tokio::sync::Notify>,
    release: Arc<Mutex<Option<std::sync::mpsc::Receiver<()>>>>,
}

struct BlockOnDrop(Option<std::sync::mpsc::Receiver<()>>);

impl Drop for BlockOnDrop {
    fn drop(&mut self) {
        if let Some(rx) = self.0.take() {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }
    }
}

impl pi::agent::protocol::stream::Provider for StallingCleanup {
    fn stream(
        &self,
        _request: pi::agent::protocol::stream::ProviderRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> pi::agent::protocol::stream::EventStream {
        use futures::StreamExt;
        let guard = BlockOnDrop(self.release.lock().unwrap().take());
        self.requested.notify_one();
        futures::stream::poll_fn(move |_| {
            let _ = &guard;
            std::task::Poll::Pending
        })
        .boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_an_aborted_stream_never_blocks_the_boundary() {
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    let requested = Arc::new(tokio::sync::Notify::new());
    let provider = StallingCleanup {
        requested: requested.clone(),
        release: Arc::new(Mutex::new(Some(blocked))),
    };
    let mut c = pi::agent::engine::config::LoopConfig::new(Arc::new(provider), model());
    c.retry.max_retries = 0;
    let signal = AbortSignal::new();
    let rec = Recorder::default();
    let (s2, r2) = (signal.clone(), rec.clone());
    let run = tokio::spawn(async move { run_recorded(c, "go", vec![], s2, r2).await });
    requested.notified().await;
    signal.abort(AbortReason::Requested);
    // The boundary arrives while the stream's cleanup is still stuck.
    rec.wait_for("agent_end").await;
    let _ = release.send(());
    let (_, out) = run.await.unwrap();
    let last = out
        .unwrap()
        .context
        .last()
        .unwrap()
        .as_assistant()
        .unwrap()
        .clone();
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

#[tokio::test(start_paused = true)]
async fn failed_and_aborted_replies_carry_an_error_id() {
    use pi::agent::policy::error_id::{ABORTED, AUTH, DEADLINE, OTHER, RATE_LIMITED, TRANSIENT};
    let last = |out: &pi::agent::engine::run::RunOutcome| {
        out.context
            .iter()
            .rev()
            .find_map(|m| m.as_assistant().cloned())
            .unwrap()
    };
    // A provider error.
    let p = scripts(vec![reply::error(&[], &[], "401 invalid x-api-key")]);
    let (rec, out) = run(config(&p, vec![]), "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(last(&out).error_id, Some(AUTH));
    assert_eq!(
        rec.agent_end_messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .error_id,
        Some(AUTH),
        "what subscribers see carries it too"
    );
    // Retries used up on a rate limit.
    let p = scripts(
        (0..4)
            .map(|_| reply::transient_error(&[], &[], "429 rate limited", None))
            .collect(),
    );
    let (_, out) = run(fast_retries(config(&p, vec![])), "go", vec![]).await;
    assert_eq!(last(&out.unwrap()).error_id, Some(RATE_LIMITED | TRANSIENT));
    // An abort, and the deadline.
    let p = scripts(vec![vec![Step::Stall]]);
    let signal = AbortSignal::new();
    signal.abort(AbortReason::Requested);
    let (_, out) = run_with_signal(config(&p, vec![]), "go", vec![], signal).await;
    assert_eq!(last(&out.unwrap()).error_id, Some(ABORTED));
    let p = scripts(vec![vec![Step::Stall]]);
    let mut c = config(&p, vec![]);
    c.deadline = Some(TokioInstant::now() + Duration::from_secs(1));
    let (_, out) = run(c, "go", vec![]).await;
    assert_eq!(last(&out.unwrap()).error_id, Some(ABORTED | DEADLINE));
    // A run the loop itself failed (an out-of-band failure).
    let p = scripts(vec![vec![Step::Fail("the socket went away".into())]]);
    let (_, out) = run(config(&p, vec![]), "go", vec![]).await;
    let failure = out.unwrap_err();
    assert_eq!(last(&failure.outcome).error_id, Some(OTHER));
    // A successful reply has none.
    let p = scripts(vec![reply::text("fine")]);
    let (_, out) = run(config(&p, vec![]), "go", vec![]).await;
    assert_eq!(last(&out.unwrap()).error_id, None);
}

/// Records every `on_run_end` call (as JSON), and panics in it when asked to.
#[derive(Clone, Default)]
struct RunEnds {
    seen: Arc<Mutex<Vec<(Value, Value)>>>,
    panic: bool,
}

impl LoopHooks for RunEnds {
    fn on_run_end(
        &self,
        summary: &pi::agent::protocol::summary::RunSummary,
        coverage: &pi::agent::protocol::summary::RunCoverage,
    ) {
        self.seen.lock().unwrap().push((
            serde_json::to_value(summary).unwrap(),
            serde_json::to_value(coverage).unwrap(),
        ));
        if self.panic {
            panic!("the telemetry sink fell over");
        }
    }
}

#[tokio::test]
async fn on_run_end_fires_once_per_run_with_telemetry_even_when_it_fails() {
    let telemetry_of = |rec: &Recorder| {
        rec.all().iter().find_map(|e| match e {
            AgentEvent::AgentEnd {
                telemetry,
                coverage,
                ..
            } => Some((
                serde_json::to_value(telemetry.clone().unwrap()).unwrap(),
                serde_json::to_value(coverage.clone().unwrap()).unwrap(),
            )),
            _ => None,
        })
    };
    // A good run: the hook sees what agent_end carries.
    let hooks = RunEnds::default();
    let p = scripts(vec![
        reply::tools(&[reply::call("c1", "echo", json!({}))]),
        reply::text("ok"),
    ]);
    let mut c = with_hooks(
        config(&p, vec![TestTool::echo("echo").arc()]),
        hooks.clone(),
    );
    c.telemetry = true;
    let (rec, out) = run(c, "go", vec![]).await;
    out.unwrap();
    let seen = hooks.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(Some(seen[0].clone()), telemetry_of(&rec));
    assert_eq!(seen[0].0["stepCount"], 2);
    assert_eq!(seen[0].1["toolsInvoked"], json!(["echo"]));

    // A failed run: once as well.
    let hooks = RunEnds::default();
    let p = scripts(vec![vec![Step::Fail("gone".into())]]);
    let mut c = with_hooks(config(&p, vec![]), hooks.clone());
    c.telemetry = true;
    let (_, out) = run(c, "go", vec![]).await;
    assert!(out.is_err());
    assert_eq!(hooks.seen.lock().unwrap().len(), 1);

    // A panicking hook changes nothing.
    let hooks = RunEnds {
        panic: true,
        ..Default::default()
    };
    let p = scripts(vec![reply::text("ok")]);
    let mut c = with_hooks(config(&p, vec![]), hooks.clone());
    c.telemetry = true;
    let (rec, out) = run(c, "go", vec![]).await;
    out.unwrap();
    assert_eq!(rec.count("agent_end"), 1);
    assert_eq!(hooks.seen.lock().unwrap().len(), 1);

    // Without telemetry, no call.
    let hooks = RunEnds::default();
    let p = scripts(vec![reply::text("ok")]);
    run(with_hooks(config(&p, vec![]), hooks.clone()), "go", vec![])
        .await
        .1
        .unwrap();
    assert!(hooks.seen.lock().unwrap().is_empty());
}

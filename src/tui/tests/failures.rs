//! Failures reach the screen: a session write failure, a notice arriving while an answer streams.

use super::*;

// ----- failures reach the screen ----------------------------------------------------------

/// A provider that crashes on every call.
struct Crashing;

impl crate::agent::protocol::stream::Provider for Crashing {
    fn stream(
        &self,
        _request: crate::agent::protocol::stream::ProviderRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> crate::agent::protocol::stream::EventStream {
        panic!("the provider fell over")
    }
}

#[tokio::test]
async fn a_run_that_crashed_shows_its_error_and_the_app_is_idle_again() {
    use crate::agent::engine::facade::{Agent, AgentSettings};
    let agent = Agent::new(AgentSettings::new(
        std::sync::Arc::new(Crashing),
        crate::agent::protocol::stream::Model::new("ollama", "openai-completions", "qwen3:8b"),
    ));
    let mut events = agent.subscribe();
    let (mut app, _port) = app();
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    agent.prompt_text("hello").unwrap();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("the run ends")
            .expect("events");
        let end = matches!(e.event, AgentEvent::AgentEnd { .. });
        app.handle_run_event(e);
        if end {
            break;
        }
    }
    assert!(!app.is_busy(), "the app is idle after the failed run");
    let s = screen(&mut app, 70, 14, Instant::now());
    assert!(s.contains("the provider fell over"), "{s}");
    // And the agent takes the next prompt.
    assert!(agent.prompt_text("again").is_ok());
}

#[test]
fn a_session_write_failure_is_shown_as_an_error_with_its_controls_visible() {
    let (mut app, _port) = app();
    app.handle_host_event(HostEvent::SessionWriteFailed(
        "cannot write session file /x/\u{1b}]0;evil\u{7}.jsonl: No space left on device".into(),
    ));
    let s = screen(&mut app, 100, 12, Instant::now());
    assert!(s.contains("The session file could not be written"), "{s}");
    assert!(s.contains("space left on device"), "{s}");
    assert!(s.contains("␛]0;evil␇"), "{s}");
}

#[test]
fn a_notice_that_arrives_while_an_answer_streams_is_shown_after_it() {
    let (mut app, _port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("write a lot"),
    });
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    let long = "z".repeat(3000);
    let _ = screen(&mut app, 100, 20, Instant::now());
    // The host's report comes in before the agent's message_end is folded in.
    app.handle_host_event(HostEvent::SessionWriteFailed(format!(
        "cannot write session file /tmp/{}/x.jsonl: disk full",
        "a-b".repeat(50)
    )));
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(assistant(vec![ContentBlock::text(
            &long,
        )]))),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(s.contains("could not be written"), "{s}");
    assert!(s.contains("disk full"), "{s}");
}

//! The app driven by keys and agent events: the layout while working, sending, steering, queueing, aborting, scrolling, quitting, the model picker and slash commands.

use super::*;

// ----- layout -----------------------------------------------------------------------------

fn start_turn_with_tool(app: &mut App) {
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("list the files"),
    });
    let a = assistant(vec![ContentBlock::text("Let me check.")]);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(AssistantMessage {
            usage: Usage {
                input: 1200,
                output: 45,
                cache_read: 3000,
                ..Default::default()
            },
            stop_reason: StopReason::ToolUse,
            ..a
        })),
    });
    app.handle_agent_event(AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: Arc::new(json!({"command": "ls"})),
        intent: None,
    });
}

#[test]
fn snapshot_layout_while_working_with_queued_messages() {
    let (mut app, _port) = app();
    start_turn_with_tool(&mut app);
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["also check the tests".into()],
        follow_up: vec!["then write a summary".into()],
    });
    let now = Instant::now();
    app.working = Some(now - Duration::from_secs(3));
    if let Some(Cell::Tool(t)) = app.transcript.get_mut(app.transcript.len() - 1) {
        t.state = ToolState::Running {
            started: now - Duration::from_millis(1500),
        };
    }
    type_text(&mut app, "draft");
    insta::assert_snapshot!(screen(&mut app, 70, 20, now));
}

#[test]
fn snapshot_model_picker_and_completions() {
    let (mut app, _port) = app();
    type_text(&mut app, "/m");
    let now = Instant::now();
    let completions = screen(&mut app, 60, 12, now);
    app.handle_key(with(KeyCode::Char('l'), KeyModifiers::CONTROL));
    type_text(&mut app, "o");
    let picker = screen(&mut app, 60, 12, now);
    insta::assert_snapshot!(format!("{completions}\n{picker}"));
}

// ----- driving the app --------------------------------------------------------------------

#[test]
fn enter_sends_a_prompt_when_idle() {
    let (mut app, port) = app();
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts, [("hello".to_string(), WhenBusy::Steer)]);
    assert!(app.composer.editor.is_empty());
    assert!(app.is_busy(), "the run shows as started at once");
}

#[test]
fn enter_while_a_tool_runs_steers_and_the_queue_is_shown() {
    let (mut app, port) = app();
    start_turn_with_tool(&mut app);
    type_text(&mut app, "use ls -la instead");
    app.handle_key(key(KeyCode::Enter));
    // While a run is active the host delivers it as a steering message.
    assert_eq!(
        port.log().prompts,
        [("use ls -la instead".to_string(), WhenBusy::Steer)]
    );
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["use ls -la instead".into()],
        follow_up: vec![],
    });
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("Steering: use ls -la instead"), "{s}");
    // The loop takes the message: the queue empties and it appears as a user message.
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec![],
        follow_up: vec![],
    });
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("use ls -la instead"),
    });
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(!s.contains("Steering:"), "{s}");
    assert!(s.contains(" use ls -la instead"), "{s}");
}

#[test]
fn alt_enter_queues_a_follow_up() {
    let (mut app, port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    type_text(&mut app, "then summarise");
    app.handle_key(with(KeyCode::Enter, KeyModifiers::ALT));
    assert_eq!(
        port.log().prompts,
        [("then summarise".to_string(), WhenBusy::FollowUp)]
    );
}

#[test]
fn esc_aborts_and_brings_queued_messages_back_into_the_editor() {
    let (mut app, port) = app();
    start_turn_with_tool(&mut app);
    type_text(&mut app, "first steer");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "a follow-up");
    app.handle_key(with(KeyCode::Enter, KeyModifiers::ALT));
    type_text(&mut app, "still typing");
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(port.log().aborts, 1);
    assert_eq!(port.log().took_queued, 1);
    // The status line stops at once, before the run has ended.
    assert!(!app.animating());
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("Stopping..."), "{s}");
    assert!(!s.contains("esc to interrupt"), "{s}");
    // The host hands back what was queued.
    app.handle_host_event(HostEvent::Queued(vec![
        AgentMessage::steering("first steer"),
        user_msg("a follow-up"),
    ]));
    assert_eq!(
        app.composer.editor.text(),
        "first steer\n\na follow-up\n\nstill typing"
    );
    assert!(app.composer.steering.is_empty() && app.composer.follow_up.is_empty());
    // The run ends aborted: the marker is shown and the tool is no longer running.
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(AssistantMessage {
            stop_reason: StopReason::Aborted,
            ..assistant(vec![])
        })),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::Notify(t) if t == "the run was stopped")),
        "an aborted run is said to be stopped"
    );
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("Operation aborted"), "{s}");
    assert!(s.contains("↷ $ ls (skipped)"), "{s}");
    assert!(!s.contains("esc to interrupt"), "{s}");
}

#[test]
fn a_message_queued_as_the_run_ended_is_left_to_the_host() {
    let (mut app, port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    // Typed as the last reply finished: the host queued it, after the run's last look.
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["one more thing".into()],
        follow_up: vec![],
    });
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(assistant(vec![ContentBlock::text(
            "done",
        )]))),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
    // The host runs it (for every front end alike): the UI sends nothing and does not say
    // the work is done.
    let log = port.log();
    assert!(log.prompts.is_empty() && log.with_files.is_empty());
    drop(log);
    assert!(
        !app.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::Notify(_))),
        "no \"done\" for a run that goes on"
    );
    assert!(!app.is_busy(), "shown as working once that run starts");
}

#[test]
fn tool_output_escape_sequences_are_shown_never_run() {
    let (mut app, _port) = app();
    start_turn_with_tool(&mut app);
    app.handle_agent_event(AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        result: ToolOutput::text("ok\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2Jdone"),
        is_error: false,
    });
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("ok␛]52;c;ZXZpbA==␇␛[2Jdone"), "{s}");
    assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s}");
    assert!(s.contains("✓ $ ls"), "{s}");
}

#[test]
fn scrolling_up_stops_following_and_end_follows_again() {
    let (mut app, _port) = app();
    for i in 0..60 {
        app.handle_agent_event(AgentEvent::MessageStart {
            message: user_msg(&format!("message {i}")),
        });
    }
    let now = Instant::now();
    let s = screen(&mut app, 40, 20, now);
    assert!(s.contains("message 59"));
    app.handle_key(key(KeyCode::PageUp));
    assert!(matches!(app.transcript.scroll, Scroll::Anchored { .. }));
    let before = screen(&mut app, 40, 20, now);
    assert!(!before.contains("message 59"), "{before}");
    // New output does not move the view while scrolled up.
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("message 60"),
    });
    let after = screen(&mut app, 40, 20, now);
    assert_eq!(before, after);
    app.handle_key(key(KeyCode::End));
    let s = screen(&mut app, 40, 20, now);
    assert!(s.contains("message 60"), "{s}");
    assert_eq!(app.transcript.scroll, Scroll::Follow);
}

#[test]
fn paging_through_a_long_resumed_session_lays_out_only_what_it_passes() {
    let (mut app, _port) = app();
    let messages: Vec<AgentMessage> = (0..5000)
        .map(|i| user_msg(&format!("prompt number {i}")))
        .collect();
    app.show_messages(&messages);
    let now = Instant::now();
    let s = screen(&mut app, 50, 20, now);
    assert!(s.contains("prompt number 4999"), "{s}");
    let first = app.transcript.laid_out();
    assert!(first < 40, "the first frame laid out {first} cells");
    for _ in 0..3 {
        app.handle_key(key(KeyCode::PageUp));
    }
    let s = screen(&mut app, 50, 20, now);
    assert!(!s.contains("prompt number 4999"), "{s}");
    assert!(s.contains("prompt number 4990"), "{s}");
    assert!(
        app.transcript.laid_out() < 100,
        "{}",
        app.transcript.laid_out()
    );
    // Home goes to the start without laying out the middle; PgDn from there moves down.
    app.handle_key(key(KeyCode::Home));
    let s = screen(&mut app, 50, 20, now);
    assert!(s.contains("prompt number 0"), "{s}");
    app.handle_key(key(KeyCode::PageDown));
    let s = screen(&mut app, 50, 20, now);
    assert!(
        !s.contains("prompt number 0\n") && s.contains("prompt number 6"),
        "{s}"
    );
    assert!(
        app.transcript.laid_out() < 140,
        "{}",
        app.transcript.laid_out()
    );
}

#[test]
fn ctrl_c_clears_then_twice_quits_and_ctrl_d_quits_on_empty() {
    let (mut app, _port) = app();
    type_text(&mut app, "abc");
    let ctrl_c = with(KeyCode::Char('c'), KeyModifiers::CONTROL);
    app.handle_key(ctrl_c);
    assert!(app.composer.editor.is_empty());
    assert!(app.take_effects().is_empty());
    app.handle_key(ctrl_c);
    assert_eq!(app.take_effects(), [Effect::Quit]);
    type_text(&mut app, "x");
    app.handle_key(with(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert!(app.take_effects().is_empty());
    app.handle_key(key(KeyCode::Backspace));
    app.handle_key(with(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert_eq!(app.take_effects(), [Effect::Quit]);
}

#[test]
fn newline_keys_and_history() {
    let (mut app, port) = app();
    type_text(&mut app, "a");
    app.handle_key(with(KeyCode::Enter, KeyModifiers::SHIFT));
    type_text(&mut app, "b");
    app.handle_key(with(KeyCode::Char('j'), KeyModifiers::CONTROL));
    type_text(&mut app, "c");
    assert_eq!(app.composer.editor.text(), "a\nb\nc");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts[0].0, "a\nb\nc");
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.editor.text(), "a\nb\nc");
}

#[test]
fn model_picker_switches_the_model() {
    let (mut app, port) = app();
    type_text(&mut app, "/model");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.popups.model().is_some());
    type_text(&mut app, "gpt");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().models, ["gpt-5"]);
    assert_eq!(app.model.id, "gpt-5");
}

#[test]
fn slash_commands_help_thinking_name_and_quit() {
    let (mut app, port) = app();
    app.run_command("help", "");
    app.run_command("thinking", "high");
    assert_eq!(app.thinking, ThinkingLevel::High);
    assert_eq!(port.log().thinking, [ThinkingLevel::High]);
    app.run_command("name", "refactor");
    assert_eq!(port.log().names, ["refactor"]);
    app.handle_host_event(HostEvent::Named("refactor".into()));
    assert_eq!(app.place.session_name.as_deref(), Some("refactor"));
    let s = screen(&mut app, 70, 150, Instant::now());
    assert!(
        s.contains("  Esc                              close the / list"),
        "{s}"
    );
    assert!(s.contains("  /thinking [level]  thinking level"), "{s}");
    assert!(s.contains("• refactor"), "{s}");
    type_text(&mut app, "/quit");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.take_effects(), [Effect::Quit]);
}

#[test]
fn a_large_paste_collapses_and_is_sent_whole() {
    let (mut app, port) = app();
    let big: String = (0..30).map(|i| format!("row {i}\n")).collect();
    app.handle_paste(&big);
    assert_eq!(app.composer.editor.text(), "[paste #1 +30 lines]");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts[0].0, big);
}

/// A plan mode run that ends with `text` as its answer.
fn plan_answered(app: &mut App, text: &str) {
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(assistant(vec![ContentBlock::text(
            text,
        )]))),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
}

#[test]
fn a_plan_is_put_to_the_person_to_accept_edit_or_reject() {
    let (mut app, port) = app();
    let now = Instant::now();
    app.run_command("plan", "");
    assert!(app.planning);
    plan_answered(&mut app, "1. Rename the module.\n2. Fix the imports.");
    insta::assert_snapshot!(screen(&mut app, 80, 14, now));

    // `r`: still planning, nothing sent.
    app.handle_key(key(KeyCode::Char('r')));
    assert!(app.planning && app.popups.plan().is_none());
    assert!(port.log().prompts.is_empty());

    // `e`: plan mode off, the plan in the editor to change and send.
    plan_answered(&mut app, "1. Rename the module.");
    app.handle_key(key(KeyCode::Char('e')));
    assert!(!app.planning);
    assert_eq!(
        app.composer.editor.text(),
        "Carry out this plan:\n\n1. Rename the module."
    );
    app.composer.editor.set_text("");

    // Enter: plan mode off and the model told to act on it.
    app.run_command("plan", "on");
    plan_answered(&mut app, "1. Rename the module.");
    app.handle_key(key(KeyCode::Enter));
    assert!(!app.planning);
    let log = port.log();
    assert_eq!(log.plan_modes, [true, false, true, false]);
    assert_eq!(log.prompts.len(), 1);
    assert!(log.prompts[0].0.contains("Carry it out now"));
    drop(log);

    // Not in plan mode: no question after a run.
    plan_answered(&mut app, "done");
    assert!(app.popups.plan().is_none());
}

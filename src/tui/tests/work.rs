//! Work shown as it happens: the footer's counts, compaction, shell-like editing keys, Alt+Up, `!` commands.

use super::*;

#[test]
fn the_footer_counts_what_came_after_the_last_reported_usage() {
    let (mut app, _sent) = app();
    let mut a = assistant(vec![ContentBlock::text("read it")]);
    a.usage.input = 1_000;
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(a)),
    });
    assert_eq!(app.context_tokens(), 1_000);
    // A 40,000-character prompt after it: ~10,000 tokens more, as compaction counts them.
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: user_msg(&"x".repeat(40_000)),
    });
    assert_eq!(app.context_tokens(), 11_000);
    let s = screen(&mut app, 80, 12, Instant::now());
    assert!(s.contains("8.6%/128k"), "{s}");
    // The next reply's usage covers it again.
    let mut b = assistant(vec![ContentBlock::text("done")]);
    b.usage.input = 12_000;
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(b)),
    });
    assert_eq!(app.context_tokens(), 12_000);
}

#[test]
fn compaction_shows_a_status_then_the_counts_and_the_summary() {
    use crate::agent::protocol::events::{CompactionReason, CompactionResult};
    let (mut app, sent) = app();
    let now = Instant::now();
    app.run_command("compact", "the parser work");
    assert_eq!(sent.log().compacts, [Some("the parser work".to_string())]);
    app.handle_agent_event(AgentEvent::CompactionStart {
        reason: CompactionReason::Manual,
    });
    assert!(screen(&mut app, 80, 14, now).contains("Compacting context..."));
    app.handle_agent_event(AgentEvent::CompactionEnd {
        reason: CompactionReason::Manual,
        result: Some(CompactionResult {
            summary: "## Goal\nFix the parser.\n## Next Steps\n1. Run the tests".into(),
            first_kept_entry_id: None,
            tokens_before: 120_000,
            tokens_after: 9_500,
            details: json!({}),
            first_kept: None,
        }),
        aborted: false,
        will_retry: false,
        error_message: None,
    });
    let s = screen(&mut app, 80, 14, now);
    assert!(s.contains("Context compacted: 120k → 9.5k tokens"), "{s}");
    assert!(
        s.contains("## Goal") && s.contains("Fix the parser."),
        "{s}"
    );
    assert!(!s.contains("Compacting context"), "{s}");
    assert!(app.working.is_none());
    assert_eq!(app.context_tokens(), 9_500);

    // A failed or stopped one says the conversation is unchanged.
    app.handle_agent_event(AgentEvent::CompactionEnd {
        reason: CompactionReason::Threshold,
        result: None,
        aborted: false,
        will_retry: false,
        error_message: Some("quota exceeded".into()),
    });
    app.handle_agent_event(AgentEvent::CompactionEnd {
        reason: CompactionReason::Threshold,
        result: None,
        aborted: true,
        will_retry: false,
        error_message: None,
    });
    let s = screen(&mut app, 80, 14, now);
    assert!(
        s.contains("Compaction failed; the conversation is as it was: quota exceeded"),
        "{s}"
    );
    assert!(
        s.contains("Compaction stopped; the conversation is as it was"),
        "{s}"
    );
}

#[test]
fn editing_keys_work_as_in_a_shell_line_editor() {
    let (mut app, sent) = app();
    let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    let alt = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
    type_text(&mut app, "fix the parser now");
    app.handle_key(ctrl('w'));
    assert_eq!(app.composer.editor.text(), "fix the parser ");
    app.handle_key(alt('b'));
    app.handle_key(alt('b'));
    type_text(&mut app, "old ");
    assert_eq!(app.composer.editor.text(), "fix old the parser ");
    app.handle_key(alt('f'));
    app.handle_key(ctrl('k'));
    assert_eq!(app.composer.editor.text(), "fix old the");
    app.handle_key(ctrl('u'));
    assert_eq!(
        app.composer.editor.text(),
        "",
        "Ctrl+U deletes to the line start, it does not undo"
    );
    type_text(&mut app, "abc");
    app.handle_key(ctrl('a'));
    type_text(&mut app, ">");
    app.handle_key(ctrl('e'));
    type_text(&mut app, "<");
    assert_eq!(app.composer.editor.text(), ">abc<");

    // A backslash before Enter is a line break; Enter alone sends.
    app.composer.editor.clear();
    type_text(&mut app, "line one\\");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "line two");
    assert_eq!(app.composer.editor.text(), "line one\nline two");
    assert!(sent.log().prompts.is_empty());
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(sent.log().prompts[0].0, "line one\nline two");
}

#[test]
fn alt_up_pulls_queued_messages_back() {
    let (mut app, sent) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    type_text(&mut app, "steer this");
    app.handle_key(key(KeyCode::Enter));
    // The agent reports its queue.
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["steer this".into()],
        follow_up: vec![],
    });
    assert_eq!(app.composer.steering.len(), 1);
    app.handle_key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT));
    assert_eq!(sent.log().took_queued, 1);
    assert!(app.composer.steering.is_empty());
    app.handle_host_event(HostEvent::Queued(vec![user_msg("steer this")]));
    assert_eq!(app.composer.editor.text(), "steer this");
    // Nothing queued: nothing asked.
    app.handle_key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT));
    assert_eq!(sent.log().took_queued, 1);
}

#[test]
fn bang_runs_a_command_and_shows_it_as_a_cell() {
    let (mut app, sent) = app();
    let now = Instant::now();
    type_text(&mut app, "!ls -la");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "!!git status");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        sent.log().shells,
        [
            ("ls -la".to_string(), true),
            ("git status".to_string(), false)
        ]
    );
    assert!(sent.log().prompts.is_empty(), "not sent to the model");
    assert!(app.working.is_some(), "Esc can stop it");
    let done = |command: &str, output: &str, included: bool| {
        HostEvent::ShellDone(Box::new(crate::host::shell::ShellResult {
            command: command.into(),
            output: output.into(),
            exit_code: Some(0),
            cancelled: false,
            failed: false,
            included,
            refused: None,
        }))
    };
    app.handle_host_event(done("ls -la", "total 0", true));
    assert!(app.working.is_some(), "the second still runs");
    app.handle_host_event(done("git status", "On branch main", false));
    let s = screen(&mut app, 70, 20, now);
    assert!(s.contains("$ ls -la") && s.contains("total 0"), "{s}");
    assert!(
        s.contains("$ git status") && s.contains("On branch main"),
        "{s}"
    );
    assert!(s.contains("not part of the conversation"), "{s}");
    assert!(app.working.is_none());
}

#[test]
fn a_refused_bang_command_says_why_and_stops_showing_work() {
    let (mut app, _sent) = app();
    type_text(&mut app, "!ls");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.working.is_some());
    app.handle_host_event(HostEvent::ShellDone(Box::new(
        crate::host::shell::ShellResult {
            command: "ls".into(),
            output: String::new(),
            exit_code: None,
            cancelled: false,
            failed: true,
            included: false,
            refused: Some("no shell to run the command in".into()),
        },
    )));
    let s = screen(&mut app, 70, 14, Instant::now());
    assert!(
        s.contains("↷ $ ls") && s.contains("no shell to run the command in"),
        "{s}"
    );
    assert!(app.working.is_none());
}

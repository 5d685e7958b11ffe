//! Sessions: the tree view, its filters and labels, Esc Esc, forks, the picker's rename and delete, resumed cells.

use super::*;

// ----- sessions: the tree, forks, the picker's questions, resumed cells --------------------

/// A session with two branches from the first answer, a label and a model change, in the
/// Node.js pi's format.
fn branched_session() -> crate::session::Session {
    let ts = "2026-12-01T10:00:00.000Z";
    let msg = |id: &str, parent: Option<&str>, m: serde_json::Value| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts, "message": m})
            .to_string()
    };
    let user = |t: &str| json!({"role": "user", "content": t, "timestamp": 1});
    let answer = |t: &str| {
        json!({"role": "assistant", "content": [{"type": "text", "text": t}],
               "api": "anthropic-messages", "provider": "anthropic", "model": "m",
               "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                         "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                    "cacheWrite": 0, "total": 0}},
               "stopReason": "stop", "timestamp": 2})
    };
    let lines = [
        json!({"type": "session", "version": 3, "id": "s1", "timestamp": ts, "cwd": "/w"})
            .to_string(),
        json!({"type": "model_change", "id": "m0", "parentId": null, "timestamp": ts,
               "provider": "anthropic", "modelId": "m"})
        .to_string(),
        msg("u1", Some("m0"), user("set up the parser")),
        msg("a1", Some("u1"), answer("Done: parser scaffolded.")),
        msg("u2", Some("a1"), user("try approach A")),
        msg("a2", Some("u2"), answer("Approach A works but is slow.")),
        msg("u3", Some("a1"), user("try approach B instead")),
        msg("a3", Some("u3"), answer("Approach B is fast.")),
        json!({"type": "label", "id": "l1", "parentId": "a3", "timestamp": ts,
               "targetId": "a1", "label": "baseline"})
        .to_string(),
    ];
    crate::session::Session::read(std::io::Cursor::new(lines.join("\n")), None).unwrap()
}

fn no_file_changes(target: &str) -> HostEvent {
    HostEvent::RewindPlan(Box::new(crate::host::rewind::RewindPlan {
        target: target.into(),
        plan: crate::checkpoint::rewind::Plan::default(),
    }))
}

fn tree_of(session: &crate::session::Session) -> crate::host::SessionTree {
    let leaf = session.leaf_id().map(str::to_string);
    crate::host::SessionTree {
        rows: crate::session::tree_rows::tree_rows(session, leaf.as_deref()),
        leaf,
    }
}

#[test]
fn the_tree_view_shows_branches_labels_and_the_current_position() {
    let (mut app, sent) = app();
    let now = Instant::now();
    app.run_command("tree", "");
    assert_eq!(sent.log().trees, 1);
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&branched_session()))));
    assert!(app.popups.tree().is_some());
    insta::assert_snapshot!(screen(&mut app, 80, 16, now));

    // Up from the current position (the last answer) is the prompt of that branch: Enter asks
    // what to do with the branch left behind; Enter again goes there without a summary.
    app.handle_key(key(KeyCode::Up));
    app.handle_key(key(KeyCode::Enter));
    assert!(screen(&mut app, 80, 16, now).contains("Leave the current branch"));
    app.handle_key(key(KeyCode::Enter));
    assert!(app.popups.tree().is_none());
    // First: what the move does to files. Nothing here, so it moves at once.
    assert_eq!(sent.log().rewind_plans, ["u3"]);
    assert!(sent.log().navigated.is_empty());
    app.handle_host_event(no_file_changes("u3"));
    assert_eq!(sent.log().navigated, ["u3"]);

    // `f`: a summary focused on what is typed; the status shows the work until the answer.
    app.run_command("tree", "");
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&branched_session()))));
    app.handle_key(key(KeyCode::Home));
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(key(KeyCode::Char('f')));
    type_text(&mut app, "speed");
    assert!(screen(&mut app, 80, 16, now).contains("Focus: speed"));
    app.handle_key(key(KeyCode::Enter));
    app.handle_host_event(no_file_changes("u1"));
    assert_eq!(
        sent.log().summarized,
        [("u1".to_string(), Some("speed".to_string()))]
    );
    assert!(screen(&mut app, 80, 16, now).contains("Summarizing the branch"));
    app.handle_host_event(HostEvent::Failed("Stopped: nothing moved".into()));
    assert!(app.working.is_none());
}

#[test]
fn the_tree_filters_as_you_type_cycles_filters_and_edits_labels() {
    let (mut app, sent) = app();
    let now = Instant::now();
    app.run_command("tree", "");
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&branched_session()))));
    type_text(&mut app, "approach");
    let s = screen(&mut app, 80, 16, now);
    assert!(
        s.contains("try approach A") && s.contains("Approach B is fast"),
        "{s}"
    );
    assert!(!s.contains("set up the parser"), "{s}");
    // Esc clears the query first, then closes.
    app.handle_key(key(KeyCode::Esc));
    assert!(screen(&mut app, 80, 16, now).contains("set up the parser"));
    // Ctrl+O: no tools, prompts only.
    app.handle_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    app.handle_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let s = screen(&mut app, 80, 16, now);
    assert!(
        s.contains("prompts only") && !s.contains("Approach B is fast"),
        "{s}"
    );
    // Shift+L on the selected prompt: type a label, Enter sends it; an empty one clears.
    app.handle_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
    type_text(&mut app, "retry here");
    assert!(screen(&mut app, 80, 16, now).contains("Label: retry here"));
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        sent.log().labels,
        [
            ("u3".to_string(), Some("retry here".to_string())),
            ("u3".to_string(), None)
        ]
    );
    app.handle_key(key(KeyCode::Esc));
    assert!(app.popups.tree().is_none());
}

#[test]
fn esc_twice_on_an_empty_idle_editor_asks_for_the_tree() {
    let (mut app, sent) = app();
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(sent.log().trees, 0);
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(sent.log().trees, 1);
    // Not with text in the editor.
    let (mut app, sent) = app_with_text("draft");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(sent.log().trees, 0);
}

fn app_with_text(text: &str) -> (App, Sent) {
    let (mut app, sent) = app();
    app.composer.editor.set_text(text);
    (app, sent)
}

#[test]
fn fork_offers_only_prompts_and_a_moved_conversation_replaces_the_screen() {
    let (mut app, sent) = app();
    let now = Instant::now();
    app.run_command("fork", "");
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&branched_session()))));
    let s = screen(&mut app, 80, 16, now);
    assert!(s.contains("Fork before:"), "{s}");
    assert!(!s.contains("Approach B is fast"), "{s}");
    app.handle_key(key(KeyCode::Home));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(sent.log().forks, ["u1"]);
    app.run_command("clone", "");
    assert_eq!(sent.log().clones, 1);

    app.handle_host_event(HostEvent::Navigated(Box::new(crate::host::Navigated {
        messages: vec![user_msg("set up the parser")],
        draft: Some("try approach B instead".into()),
        model: model("m", "anthropic"),
        thinking: ThinkingLevel::Low,
        warnings: Vec::new(),
    })));
    assert_eq!(app.composer.editor.text(), "try approach B instead");
    let s = screen(&mut app, 80, 16, now);
    assert!(
        s.contains("set up the parser") && s.contains("new branch"),
        "{s}"
    );
}

#[test]
fn the_picker_renames_and_deletes_after_asking() {
    let (mut app, sent) = app();
    let now = Instant::now();
    app.open_sessions();
    let info = |id: &str, name: Option<&str>, first: &str| SessionInfo {
        path: std::path::PathBuf::from(format!("/s/{id}.jsonl")),
        id: id.into(),
        cwd: "/home/me/src/parser".into(),
        name: name.map(Into::into),
        parent_session: None,
        created: String::new(),
        modified: std::time::SystemTime::now(),
        size: 10,
        first_message: Some(first.into()),
    };
    app.handle_host_event(HostEvent::Sessions {
        scope: ListScope::CurrentFolder,
        sessions: vec![
            info("aaa", Some("Parser work"), "set up the parser"),
            info("bbb", None, "fix the flaky test"),
        ],
    });
    app.handle_host_event(HostEvent::MessageCounts(vec![(
        std::path::PathBuf::from("/s/aaa.jsonl"),
        12,
    )]));
    let s = screen(&mut app, 100, 10, now);
    assert!(s.contains("Parser work · set up the parser"), "{s}");
    assert!(s.contains("12 msg") && s.contains("…/src/parser"), "{s}");
    // Ctrl+R: the current name to edit.
    app.handle_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL));
    for _ in 0.."Parser work".len() {
        app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut app, "Lexer");
    assert!(screen(&mut app, 100, 10, now).contains("New name: Lexer"));
    app.handle_key(key(KeyCode::Enter));
    // Ctrl+D asks; anything but y keeps the file; y deletes.
    app.handle_key(key(KeyCode::Down));
    app.handle_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert!(screen(&mut app, 100, 10, now).contains("y deletes the file"));
    app.handle_key(key(KeyCode::Char('n')));
    app.handle_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
    app.handle_key(key(KeyCode::Char('y')));
    let log = sent.log();
    assert_eq!(
        log.renamed,
        [(
            std::path::PathBuf::from("/s/aaa.jsonl"),
            "Lexer".to_string()
        )]
    );
    assert_eq!(log.deleted, [std::path::PathBuf::from("/s/bbb.jsonl")]);
}

#[test]
fn a_resumed_session_shows_errors_aborts_and_summaries() {
    let (mut app, _sent) = app();
    let now = Instant::now();
    let mut failed = assistant(vec![]);
    failed.stop_reason = StopReason::Error;
    failed.error_message = Some("upstream exploded".into());
    let mut aborted = assistant(vec![ContentBlock::text("half an answer")]);
    aborted.stop_reason = StopReason::Aborted;
    app.show_messages(&[
        crate::session::branch_context::branch_summary_message("Tried approach A; too slow.", 0),
        user_msg("go"),
        AgentMessage::from(Message::Assistant(failed)),
        user_msg("again"),
        AgentMessage::from(Message::Assistant(aborted)),
    ]);
    insta::assert_snapshot!(screen(&mut app, 70, 24, now));
}

#[test]
fn a_branch_whose_first_entry_is_hidden_keeps_its_connector() {
    // The Node pi's tree fixture: the first branch starts with a thinking-level change, which
    // the default filter hides.
    let text = include_str!("../../../tests/fixtures/node_v3_tree_session.jsonl");
    let session = crate::session::Session::read(std::io::Cursor::new(text), None).unwrap();
    let (mut app, _sent) = app();
    app.run_command("tree", "");
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&session))));
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(
        s.contains("├─ you: [module-split] Try the module split first."),
        "{s}"
    );
    assert!(s.contains("└─ branch summary:"), "{s}");
}

fn two_files_changed(target: &str) -> HostEvent {
    use crate::checkpoint::rewind::{Action, FileState, Plan, PlannedFile};
    let file = |path: &str, action, state, diff: &str| PlannedFile {
        path: path.into(),
        action,
        state,
        diff: diff.into(),
        wanted: None,
        made_folder: None,
    };
    HostEvent::RewindPlan(Box::new(crate::host::rewind::RewindPlan {
        target: target.into(),
        plan: Plan {
            files: vec![
                file(
                    "/w/src/parser.rs",
                    Action::Restore,
                    FileState::Ready,
                    "--- a\n+++ b\n@@ -1 +1 @@\n-fast path\n+slow path\n",
                ),
                file("/w/notes.md", Action::Delete, FileState::ChangedSince, ""),
            ],
        },
    }))
}

#[test]
fn a_rewind_that_changes_files_shows_them_and_asks_how_far() {
    let (mut app, sent) = app();
    let now = Instant::now();
    app.cwd = std::path::PathBuf::from("/w");
    app.run_command("rewind", "");
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&branched_session()))));
    assert!(screen(&mut app, 80, 16, now).contains("Rewind to before:"));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(sent.log().rewind_plans, ["u3"]);
    app.handle_host_event(two_files_changed("u3"));
    insta::assert_snapshot!(screen(&mut app, 80, 16, now));

    // `d` shows what the files become; `d` again goes back.
    app.handle_key(key(KeyCode::Char('d')));
    let s = screen(&mut app, 80, 16, now);
    assert!(s.contains("-fast path") && s.contains("+slow path"), "{s}");
    app.handle_key(key(KeyCode::Char('d')));
    // `f` overwrites the file changed since; `3` is code only: no move.
    app.handle_key(key(KeyCode::Char('f')));
    assert!(screen(&mut app, 80, 16, now).contains("overwriting a change made since"));
    app.handle_key(key(KeyCode::Char('3')));
    assert_eq!(sent.log().restores, [("u3".to_string(), true, true)]);
    assert!(sent.log().navigated.is_empty());

    // Enter: code and conversation, as one operation; what was put back is said after the move.
    app.run_command("rewind", "");
    app.handle_host_event(HostEvent::Tree(Box::new(tree_of(&branched_session()))));
    app.handle_key(key(KeyCode::Enter));
    app.handle_host_event(two_files_changed("u3"));
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        sent.log().rewinds,
        [(
            "u3".to_string(),
            crate::host::rewind::RewindMode::Both,
            false
        )]
    );
    assert_eq!(sent.log().restores.len(), 1);
    assert!(sent.log().navigated.is_empty());
    app.handle_host_event(HostEvent::Navigated(Box::new(crate::host::Navigated {
        messages: Vec::new(),
        draft: Some("try approach B instead".into()),
        model: app.model.clone(),
        thinking: app.thinking,
        warnings: Vec::new(),
    })));
    app.handle_host_event(HostEvent::FilesRestored(Box::new(
        crate::host::rewind::FilesRestored {
            restored: vec!["/w/src/parser.rs".into()],
            kept: vec!["/w/notes.md".into()],
            failed: Vec::new(),
        },
    )));
    let s = screen(&mut app, 80, 16, now);
    assert!(
        s.contains("Files put back: 1; kept as they are (changed since the agent did): notes.md"),
        "{s}"
    );
}

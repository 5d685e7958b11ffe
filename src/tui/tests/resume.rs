//! The `/resume` picker: its look, filtering, opening, refusing while busy, an empty listing.

use super::*;

#[test]
fn snapshot_session_picker() {
    let (mut app, port) = app();
    open_picker(&mut app, &port);
    let now = Instant::now();
    let here = screen(&mut app, 70, 12, now);
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(port.log().listed.last(), Some(&ListScope::AllFolders));
    app.handle_host_event(listing(ListScope::AllFolders));
    let all = screen(&mut app, 70, 12, now);
    type_text(&mut app, "data");
    let filtered = screen(&mut app, 70, 12, now);
    insta::assert_snapshot!(format!("{here}\n{all}\n{filtered}"));
}

#[test]
fn resume_filters_opens_and_shows_the_transcript() {
    let (mut app, port) = app();
    app.transcript.push(Cell::User("an earlier prompt".into()));
    open_picker(&mut app, &port);
    type_text(&mut app, "zzz nothing");
    assert_eq!(app.popups.sessions().map(|p| p.matches().len()), Some(0));
    // The filter edits as a shell line: Ctrl+W drops a word, Ctrl+U the rest.
    app.handle_key(with(KeyCode::Char('w'), KeyModifiers::CONTROL));
    assert_eq!(app.popups.sessions().unwrap().query, "zzz ");
    app.handle_key(with(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(app.popups.sessions().unwrap().query, "");
    type_text(&mut app, "parser");
    assert_eq!(app.popups.sessions().map(|p| p.matches().len()), Some(1));
    app.handle_key(key(KeyCode::Enter));
    assert!(app.popups.sessions().is_none());
    let path = std::path::PathBuf::from("/sessions/a1b2c3.jsonl");
    assert_eq!(port.log().opened, std::slice::from_ref(&path));
    app.handle_host_event(opened(path));
    // The conversation goes on with the session's own model and level.
    assert_eq!(app.model.id, "sonnet-test");
    assert_eq!(app.thinking, ThinkingLevel::High);
    let text = screen(&mut app, 70, 20, Instant::now());
    assert!(!text.contains("an earlier prompt"), "{text}");
    assert!(text.contains("fix the failing parser test"), "{text}");
    assert!(text.contains("Let me run the tests."), "{text}");
    assert!(text.contains("cargo test"), "{text}");
    assert!(text.contains("FAILED"), "{text}");
    assert!(text.contains("fails on empty input"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn resume_is_refused_while_the_agent_works_and_esc_closes_the_picker() {
    let (mut app, port) = app();
    open_picker(&mut app, &port);
    app.handle_key(key(KeyCode::Esc));
    assert!(app.popups.sessions().is_none());
    app.handle_agent_event(AgentEvent::AgentStart);
    open_picker(&mut app, &port);
    app.handle_key(key(KeyCode::Enter));
    assert!(port.log().opened.is_empty());
    let text = screen(&mut app, 70, 12, Instant::now());
    assert!(
        text.contains("Cannot resume while the agent is working"),
        "{text}"
    );
}

#[test]
fn resume_without_session_files_says_so() {
    let (mut app, port) = app();
    app.saving = false;
    app.run_command("resume", "");
    assert!(port.log().listed.is_empty());
    assert!(app.popups.sessions().is_none());
    let text = screen(&mut app, 70, 12, Instant::now());
    assert!(text.contains("not saved"), "{text}");
}

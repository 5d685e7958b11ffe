//! What the screen says is true: unknown commands are answered and not sent, `//` sends a
//! literal slash, notices say what happened (fork, clone, pause), the footer says "no model"
//! until one is ready, and hints name the keys as keybindings.json binds them.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyModifiers};

use super::{app, key, model, opened, screen, type_text, with};
use crate::host::{HostEvent, OpenedFrom};
use crate::tui::cells::Cell;
use crate::tui::keymap::Keymap;

fn notices(app: &crate::tui::app::App) -> Vec<String> {
    (0..app.transcript.len())
        .filter_map(|i| match app.transcript.get(i) {
            Some(Cell::Notice(t)) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_unknown_command_is_answered_with_the_nearest_and_not_sent() {
    let (mut app, port) = app();
    for (typed, said) in [
        ("/clear", "Unknown command /clear; did you mean /new?"),
        ("/cost", "Unknown command /cost; did you mean /session?"),
        ("/modle gpt", "Unknown command /modle; did you mean /model?"),
        (
            "/zzzzzzzz",
            "Unknown command /zzzzzzzz; /help lists the commands",
        ),
    ] {
        type_text(&mut app, typed);
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(notices(&app).last().map(String::as_str), Some(said));
        assert!(app.composer.editor.is_empty());
    }
    assert!(port.log().prompts.is_empty(), "{:?}", port.log().prompts);
    assert!(app.working.is_none(), "nothing was started");
}

#[test]
fn a_prompt_template_is_offered_and_sent_for_the_host_to_expand() {
    use crate::config::prompt_templates::{Source, parse};
    let (mut app, port) = app();
    let review = parse(
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1",
        "review".into(),
        Source::Project,
        "review.md".into(),
    );
    app.commands.add_templates(&[review]);
    type_text(&mut app, "/rev");
    let offered: Vec<String> = app
        .commands
        .completions(&app.composer.editor.text())
        .iter()
        .map(|c| format!("/{} {} {}", c.name, c.args, c.help))
        .collect();
    assert_eq!(offered, ["/review <file> Review a file (project)"]);
    type_text(&mut app, "iew src/main.rs");
    app.handle_key(key(KeyCode::Enter));
    let sent: Vec<_> = port.log().prompts.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(sent, ["/review src/main.rs"]);
    assert!(notices(&app).is_empty(), "{:?}", notices(&app));
}

#[test]
fn a_double_slash_sends_the_rest_as_a_literal_prompt() {
    let (mut app, port) = app();
    type_text(&mut app, "//clear means what?");
    app.handle_key(key(KeyCode::Enter));
    let sent: Vec<_> = port.log().prompts.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(sent, ["/clear means what?"]);
    // A path is a prompt as before.
    type_text(&mut app, "/usr/bin/ls is missing");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts[1].0, "/usr/bin/ls is missing");
}

#[test]
fn fork_clone_and_resume_say_what_happened() {
    let dir = std::env::temp_dir();
    for (from, said) in [
        (
            OpenedFrom::Resumed,
            "Resumed session a1b2c3 with anthropic/sonnet-test",
        ),
        (
            OpenedFrom::Forked,
            "Forked into the new session a1b2c3 with anthropic/sonnet-test",
        ),
        (
            OpenedFrom::Cloned,
            "Cloned into the new session a1b2c3 with anthropic/sonnet-test",
        ),
    ] {
        let (mut app, _port) = app();
        let HostEvent::Opened(mut o) = opened(dir.join("s.jsonl")) else {
            unreachable!()
        };
        o.from = from;
        app.handle_host_event(HostEvent::Opened(o));
        assert_eq!(notices(&app).last().map(String::as_str), Some(said));
    }
}

#[test]
fn the_pause_notice_is_one_clean_sentence_naming_the_live_keys() {
    let (mut app, _port) = app();
    app.handle_key(with(KeyCode::Char('s'), KeyModifiers::CONTROL));
    assert_eq!(
        notices(&app).last().map(String::as_str),
        Some(
            "Paused: pi waits before its next model call or tool (what runs now finishes). \
             Ctrl+S goes on; Esc aborts."
        )
    );
    let s = screen(&mut app, 120, 20, Instant::now());
    let line = s
        .lines()
        .find(|l| l.contains("Paused:"))
        .unwrap_or_default()
        .trim_matches('"')
        .trim_end();
    assert_eq!(
        line,
        "Paused: pi waits before its next model call or tool (what runs now finishes). Ctrl+S \
         goes on; Esc aborts."
    );

    let (keys, _) = Keymap::with_user(r#"{ "app.agent.pause": "alt+p" }"#);
    let (mut app, _port) = super::app();
    app.set_keys(keys);
    app.handle_key(with(KeyCode::Char('p'), KeyModifiers::ALT));
    assert!(
        notices(&app)
            .last()
            .is_some_and(|n| n.ends_with("Alt+P goes on; Esc aborts.")),
        "{:?}",
        notices(&app)
    );
}

#[test]
fn the_footer_says_no_model_until_one_is_ready() {
    let (mut app, _port) = app();
    app.set_model_chosen(false);
    let footer = |app: &mut crate::tui::app::App| {
        let s = screen(app, 80, 12, Instant::now());
        s.lines().last().unwrap_or_default().to_string()
    };
    let s = footer(&mut app);
    assert!(s.contains("no model"), "{s}");
    assert!(!s.contains("qwen3"), "{s}");
    // A model chosen in the picker is ready once its provider has a key.
    app.providers_without_key.insert("openai".into());
    app.run_command("model", "gpt-5");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.model.id, "gpt-5");
    assert!(footer(&mut app).contains("no model"));
    app.run_command("model", "qwen3");
    app.handle_key(key(KeyCode::Enter));
    let s = footer(&mut app);
    assert!(s.contains("qwen3:8b"), "{s}");
    assert!(!s.contains("no model"), "{s}");
    let _ = model("x", "y");
}

#[test]
fn the_header_and_help_name_remapped_keys() {
    let (keys, _) =
        Keymap::with_user(r#"{ "app.model.select": "ctrl+y", "app.tools.expand": "alt+x" }"#);
    let (mut app, _port) = app();
    app.set_keys(keys);
    app.show_header("9.9.9", true);
    app.run_command("help", "");
    let s = screen(&mut app, 120, 120, Instant::now());
    assert!(s.contains("Ctrl+Y model"), "{s}");
    assert!(!s.contains("Ctrl+L model"), "{s}");
    assert!(s.contains("  Ctrl+Y "), "{s}");
    assert!(s.contains("  Alt+X "), "{s}");
    assert!(s.contains("  Ctrl+S "), "{s}");
    assert!(s.contains("  Alt+A "), "{s}");
}

#[test]
fn a_refusal_while_working_names_the_key_that_stops_the_work() {
    let (keys, _) = Keymap::with_user(r#"{ "app.interrupt": "ctrl+x" }"#);
    let (mut app, _port) = app();
    app.set_keys(keys);
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    app.run_command("compact", "");
    assert_eq!(
        notices(&app).last().map(String::as_str),
        Some("Cannot compact while the agent is working; press Ctrl+X first")
    );
}

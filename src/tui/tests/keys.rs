//! Keys through the keymap: a keybindings.json remap moves an action to its new key and the old
//! key stops doing it, editing actions can be remapped as well, and Ctrl+G asks the loop for
//! the external editor and takes its text (or its failure) back.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyModifiers};

use super::{app, key, screen, type_text, with};
use crate::agent::protocol::events::AgentEvent;
use crate::tui::app::Effect;
use crate::tui::keymap::Keymap;

const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const ALT: KeyModifiers = KeyModifiers::ALT;

fn remapped(json: &str) -> Keymap {
    let (keys, warnings) = Keymap::with_user(json);
    assert!(warnings.is_empty(), "{warnings:?}");
    keys
}

#[test]
fn a_remapped_action_moves_to_its_new_key_and_the_old_key_no_longer_does_it() {
    let (mut app, port) = app();
    app.keys = remapped(r#"{"app.model.select": "ctrl+x", "app.model.cycleForward": "alt+n"}"#);
    app.handle_key(with(KeyCode::Char('l'), CTRL));
    assert!(
        app.popups.model().is_none(),
        "Ctrl+L no longer opens the picker"
    );
    assert_eq!(app.composer.editor.text(), "", "nor does it type anything");
    app.handle_key(with(KeyCode::Char('x'), CTRL));
    assert!(app.popups.model().is_some(), "Ctrl+X does");
    app.handle_key(key(KeyCode::Esc));

    app.handle_key(with(KeyCode::Char('p'), CTRL));
    assert!(port.log().models.is_empty(), "Ctrl+P no longer cycles");
    app.handle_key(with(KeyCode::Char('n'), ALT));
    assert_eq!(port.log().models, ["claude-sonnet-4-5"]);
}

#[test]
fn submit_and_new_line_can_swap_keys() {
    let (mut app, port) = app();
    app.keys = remapped(r#"{"tui.input.submit": "ctrl+enter", "tui.input.newLine": "enter"}"#);
    type_text(&mut app, "one");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "two");
    assert_eq!(app.composer.editor.text(), "one\ntwo");
    // Shift+Enter belonged to newLine and now to nothing: it neither sends nor breaks.
    app.handle_key(with(KeyCode::Enter, KeyModifiers::SHIFT));
    assert_eq!(app.composer.editor.text(), "one\ntwo");
    assert!(port.log().prompts.is_empty());
    app.handle_key(with(KeyCode::Enter, CTRL));
    assert_eq!(port.log().prompts[0].0, "one\ntwo");
}

#[test]
fn editing_actions_follow_the_keymap_too() {
    let (mut app, _port) = app();
    app.keys = remapped(
        r#"{"tui.editor.deleteToLineStart": "alt+u", "tui.editor.cursorLineStart": ["home"]}"#,
    );
    type_text(&mut app, "keep this");
    app.handle_key(with(KeyCode::Char('u'), CTRL));
    assert_eq!(
        app.composer.editor.text(),
        "keep this",
        "Ctrl+U is nobody's now (not undo)"
    );
    app.handle_key(with(KeyCode::Char('a'), CTRL));
    type_text(&mut app, "!");
    assert_eq!(
        app.composer.editor.text(),
        "keep this!",
        "Ctrl+A no longer goes to the start"
    );
    app.handle_key(with(KeyCode::Char('u'), ALT));
    assert_eq!(app.composer.editor.text(), "");
    // Keys no action ever had still reach the text area (Shift+letters, redo...).
    type_text(&mut app, "Ab");
    assert_eq!(app.composer.editor.text(), "Ab");
}

#[test]
fn ctrl_d_quits_on_an_empty_editor_and_deletes_forward_otherwise() {
    let (mut app, _port) = app();
    type_text(&mut app, "ab");
    app.handle_key(key(KeyCode::Home));
    app.handle_key(with(KeyCode::Char('d'), CTRL));
    assert_eq!(app.composer.editor.text(), "b");
    assert!(app.take_effects().is_empty());
    app.handle_key(with(KeyCode::Char('d'), CTRL));
    app.handle_key(with(KeyCode::Char('d'), CTRL));
    assert_eq!(app.take_effects(), [Effect::Quit]);
}

#[test]
fn a_remapped_clear_names_its_key_in_the_hint() {
    let (mut app, _port) = app();
    app.keys = remapped(r#"{"app.clear": "alt+c"}"#);
    app.handle_key(with(KeyCode::Char('c'), ALT));
    assert_eq!(
        app.composer.hint.as_deref(),
        Some("Press Alt+C again to quit")
    );
    app.handle_key(with(KeyCode::Char('c'), ALT));
    assert_eq!(app.take_effects(), [Effect::Quit]);
}

#[test]
fn ctrl_g_hands_the_text_to_the_external_editor_and_takes_it_back() {
    let (mut app, _port) = app();
    type_text(&mut app, "draft");
    app.handle_paste(&"pasted line\n".repeat(12));
    app.handle_key(with(KeyCode::Char('g'), CTRL));
    let full = format!("draft{}", "pasted line\n".repeat(12));
    assert_eq!(
        app.take_effects(),
        [Effect::ExternalEditor(full)],
        "the editor gets the whole text, pastes expanded"
    );
    // The agent went on meanwhile: its events are folded in when the TUI is back.
    app.handle_agent_event(AgentEvent::AgentStart);
    app.external_edit_done(Ok("from the editor".into()));
    assert_eq!(app.composer.editor.text(), "from the editor");
    assert_eq!(
        app.composer.editor.take(),
        "from the editor",
        "no paste marker left behind"
    );

    type_text(&mut app, "kept as it was");
    app.handle_key(with(KeyCode::Char('g'), CTRL));
    assert_eq!(app.take_effects().len(), 1);
    app.external_edit_done(Err(
        "The editor `nope` was not found (set $VISUAL or $EDITOR); the text is unchanged".into(),
    ));
    assert_eq!(app.composer.editor.text(), "kept as it was");
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(s.contains("The editor `nope` was not found"), "{s}");
}

#[test]
fn help_lists_what_keybindings_json_changed() {
    let (mut app, _port) = app();
    app.keys = remapped(r#"{"app.model.select": ["ctrl+x", "f2"], "app.suspend": []}"#);
    app.run_command("help", "");
    let s = screen(&mut app, 100, 60, Instant::now());
    assert!(s.contains("Changed in keybindings.json"), "{s}");
    assert!(
        s.contains("Ctrl+X, F2  choose a model (app.model.select)"),
        "{s}"
    );
    assert!(
        s.contains("(none)  suspend (resume with fg) (app.suspend)"),
        "{s}"
    );
}

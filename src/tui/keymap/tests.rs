//! The keymap's tests: key strings, defaults, the person's bindings, clashes and mistakes.

use super::*;

fn k(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, mods)
}

const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const ALT: KeyModifiers = KeyModifiers::ALT;

#[test]
fn the_readme_lists_every_action_with_its_default_keys() {
    let readme = include_str!("../../../README.md");
    for s in ACTIONS {
        let keys = if s.keys.is_empty() {
            "none".to_string()
        } else {
            let quoted: Vec<String> = s.keys.iter().map(|k| format!("`{k}`")).collect();
            quoted.join(", ")
        };
        let row = format!("| `{}` | {keys} |", s.id);
        assert!(readme.contains(&row), "README.md lacks {row}");
    }
}

#[test]
fn key_strings_parse_into_keys() {
    let cases = [
        ("ctrl+p", KeyCode::Char('p'), CTRL),
        ("shift+ctrl+p", KeyCode::Char('p'), CTRL | SHIFT),
        ("Ctrl+Shift+P", KeyCode::Char('p'), CTRL | SHIFT),
        ("alt+up", KeyCode::Up, ALT),
        ("shift+tab", KeyCode::Tab, SHIFT),
        ("escape", KeyCode::Esc, KeyModifiers::NONE),
        ("esc", KeyCode::Esc, KeyModifiers::NONE),
        ("return", KeyCode::Enter, KeyModifiers::NONE),
        ("alt+enter", KeyCode::Enter, ALT),
        ("pageUp", KeyCode::PageUp, KeyModifiers::NONE),
        ("pagedown", KeyCode::PageDown, KeyModifiers::NONE),
        ("ctrl+alt+backspace", KeyCode::Backspace, CTRL | ALT),
        ("space", KeyCode::Char(' '), KeyModifiers::NONE),
        ("ctrl+-", KeyCode::Char('-'), CTRL),
        ("ctrl++", KeyCode::Char('+'), CTRL),
        ("+", KeyCode::Char('+'), KeyModifiers::NONE),
        ("ctrl+]", KeyCode::Char(']'), CTRL),
        ("f5", KeyCode::F(5), KeyModifiers::NONE),
        ("delete", KeyCode::Delete, KeyModifiers::NONE),
        ("ctrl+1", KeyCode::Char('1'), CTRL),
    ];
    for (text, code, mods) in cases {
        assert_eq!(Key::parse(text), Some(Key { code, mods }), "{text}");
    }
    for bad in [
        "",
        "ctrl+",
        "hyper+x",
        "ctrl+foo",
        "f13",
        "f0",
        "ctrl+shift",
        "+x",
        "clear",
    ] {
        assert_eq!(Key::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn events_match_keys_however_the_terminal_spells_them() {
    let map = Keymap::default();
    // Shift+Ctrl+P arrives as 'P' with or without Shift, or as 'p' with Shift.
    for e in [
        k(KeyCode::Char('P'), CTRL),
        k(KeyCode::Char('P'), CTRL | SHIFT),
        k(KeyCode::Char('p'), CTRL | SHIFT),
    ] {
        assert_eq!(map.actions(&e), [Action::ModelCycleBackward], "{e:?}");
    }
    assert_eq!(
        map.actions(&k(KeyCode::BackTab, KeyModifiers::NONE)),
        [Action::ThinkingCycle]
    );
    assert_eq!(
        map.actions(&k(KeyCode::BackTab, SHIFT)),
        [Action::ThinkingCycle]
    );
    assert_eq!(map.actions(&k(KeyCode::Char('j'), CTRL)), [Action::NewLine]);
    // Byte 0x1F (Ctrl+- in xterm and tmux) reaches crossterm as Ctrl+7.
    assert_eq!(map.actions(&k(KeyCode::Char('7'), CTRL)), [Action::Undo]);
    assert_eq!(map.actions(&k(KeyCode::Char('-'), CTRL)), [Action::Undo]);
    // A typed symbol with Shift is the symbol.
    let question = k(KeyCode::Char('?'), SHIFT);
    assert_eq!(Key::of(&question), Key::parse("?").unwrap());
    assert!(
        map.actions(&k(KeyCode::Char('x'), KeyModifiers::NONE))
            .is_empty()
    );
}

#[test]
fn the_defaults_have_every_action_once_and_no_clash_but_the_shared_pair() {
    for s in ACTIONS {
        assert_eq!(s.action.spec().id, s.id);
        for key in s.keys {
            assert!(Key::parse(key).is_some(), "{}: {key}", s.id);
        }
    }
    let ids: HashSet<&str> = ACTIONS.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), ACTIONS.len());
    for id in NODE_ONLY {
        assert!(!ids.contains(id), "{id}");
    }
    let map = Keymap::default();
    for (key, actions) in &map.by_key {
        if actions.len() > 1 {
            assert_eq!(
                actions,
                &[Action::Exit, Action::DeleteCharForward],
                "{key:?}"
            );
        }
    }
    assert_eq!(
        map.actions(&k(KeyCode::Char('d'), CTRL)),
        [Action::Exit, Action::DeleteCharForward]
    );
    assert!(map.released.is_empty());
}

#[test]
fn the_persons_keys_replace_an_actions_defaults() {
    let (map, warnings) = Keymap::with_user(
        r#"{
            "app.model.select": "ctrl+x",
            "tui.editor.cursorUp": ["up", "alt+k"],
            "tui.input.submit": ["ctrl+enter"],
            "tui.input.newLine": "enter"
        }"#,
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        map.actions(&k(KeyCode::Char('x'), CTRL)),
        [Action::ModelSelect]
    );
    assert!(map.actions(&k(KeyCode::Char('l'), CTRL)).is_empty());
    assert!(map.released(&k(KeyCode::Char('l'), CTRL)));
    assert_eq!(map.actions(&k(KeyCode::Char('k'), ALT)), [Action::CursorUp]);
    assert_eq!(
        map.actions(&k(KeyCode::Up, KeyModifiers::NONE)),
        [Action::CursorUp]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Enter, KeyModifiers::NONE)),
        [Action::NewLine]
    );
    assert_eq!(map.actions(&k(KeyCode::Enter, CTRL)), [Action::Submit]);
    // Shift+Enter was newLine's and is nobody's now.
    assert!(map.released(&k(KeyCode::Enter, SHIFT)));
    assert_eq!(map.label(Action::ModelSelect).as_deref(), Some("Ctrl+X"));
    // An empty list unbinds.
    let (map, warnings) = Keymap::with_user(r#"{"app.suspend": []}"#);
    assert!(warnings.is_empty());
    assert!(map.actions(&k(KeyCode::Char('z'), CTRL)).is_empty());
    // Older ids are the same actions.
    let (map, warnings) = Keymap::with_user(r#"{"expandTools": "ctrl+e", "cursorLineEnd": "end"}"#);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        map.actions(&k(KeyCode::Char('e'), CTRL)),
        [Action::ToolsExpand]
    );
}

#[test]
fn unknown_ids_bad_keys_and_broken_files_are_warnings() {
    let (map, warnings) = Keymap::with_user(
        r#"{
            "app.model.selct": "ctrl+x",
            "app.tree.editLabel": "shift+l",
            "app.thinking.toggle": ["ctrl+foo", "alt+t"],
            "app.tools.expand": ["hyper+o"],
            "app.exit": 3
        }"#,
    );
    assert_eq!(
        warnings,
        [
            "unknown action \"app.model.selct\" (ignored)",
            "\"app.tree.editLabel\" is not an action this pi has (ignored)",
            "\"app.thinking.toggle\": \"ctrl+foo\" is not a key pi knows",
            "\"app.tools.expand\": \"hyper+o\" is not a key pi knows",
            "\"app.tools.expand\" keeps its default keys",
            "\"app.exit\": expected a key or an array of keys (keeping its defaults)",
        ]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Char('t'), ALT)),
        [Action::ThinkingToggle]
    );
    assert!(map.actions(&k(KeyCode::Char('t'), CTRL)).is_empty());
    assert_eq!(
        map.actions(&k(KeyCode::Char('o'), CTRL)),
        [Action::ToolsExpand]
    );
    assert_eq!(map.actions(&k(KeyCode::Char('d'), CTRL))[0], Action::Exit);

    let (map, warnings) = Keymap::with_user("{\n  \"app.exit\": \"ctrl+q\",\n  oops\n}");
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("not valid JSON at line 3, column 3"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].ends_with("using the default keys"),
        "{warnings:?}"
    );
    assert_eq!(map.actions(&k(KeyCode::Char('d'), CTRL))[0], Action::Exit);
    let (_, warnings) = Keymap::with_user("[1, 2]");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn a_clash_is_won_by_the_persons_binding_and_reported() {
    // Ctrl+Y is yank's by default.
    let (map, warnings) = Keymap::with_user(r#"{"app.model.select": "ctrl+y"}"#);
    assert_eq!(
        warnings,
        ["\"ctrl+y\" now does app.model.select, no longer tui.editor.yank"]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Char('y'), CTRL)),
        [Action::ModelSelect]
    );
    assert!(map.keys(Action::Yank).is_empty());

    // Two of the person's own: the first in the file keeps the key.
    let (map, warnings) = Keymap::with_user(
        r#"{"app.tools.expand": "alt+x", "app.thinking.toggle": ["alt+x", "alt+t"]}"#,
    );
    assert_eq!(
        warnings,
        [
            "\"alt+x\" is given to both app.tools.expand and app.thinking.toggle; app.tools.expand keeps it"
        ]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Char('x'), ALT)),
        [Action::ToolsExpand]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Char('t'), ALT)),
        [Action::ThinkingToggle]
    );

    // The Emacs example: Ctrl+D deletes forward and still quits on an empty editor;
    // Ctrl+P moves up instead of cycling models.
    let (map, warnings) = Keymap::with_user(
        r#"{
            "tui.editor.cursorUp": ["up", "ctrl+p"],
            "tui.editor.deleteCharForward": ["delete", "ctrl+d"],
            "tui.editor.deleteCharBackward": ["backspace", "ctrl+h"]
        }"#,
    );
    assert_eq!(
        warnings,
        ["\"ctrl+p\" now does tui.editor.cursorUp, no longer app.model.cycleForward"]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Char('d'), CTRL)),
        [Action::Exit, Action::DeleteCharForward]
    );
    assert_eq!(
        map.actions(&k(KeyCode::Char('p'), CTRL)),
        [Action::CursorUp]
    );
}

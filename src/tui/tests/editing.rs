//! The editor as drawn: snapshots of a prompt wrapped to the width (words, CJK and emoji), of
//! a prompt taller than its room (scrolled to the cursor, the rules saying what is hidden),
//! and the keys that move through wrapped rows, undo and bring back pastes.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyModifiers};

use super::{app, key, screen, type_text, with};

const CTRL: KeyModifiers = KeyModifiers::CONTROL;

#[test]
fn snapshot_a_long_prompt_wraps_and_keeps_its_start() {
    let (mut app, _port) = app();
    type_text(
        &mut app,
        "Please read src/main.rs and explain why the parser rejects an empty header line, \
         then propose the smallest change that fixes it without touching the lexer",
    );
    insta::assert_snapshot!(screen(&mut app, 40, 20, Instant::now()));
}

#[test]
fn snapshot_wide_characters_wrap_by_their_width() {
    let (mut app, _port) = app();
    type_text(
        &mut app,
        "日本語のテキストを折り返す 😀😀 emoji and 中文 mixed in",
    );
    insta::assert_snapshot!(screen(&mut app, 20, 14, Instant::now()));
}

#[test]
fn snapshot_a_tall_prompt_scrolls_to_the_cursor() {
    let (mut app, _port) = app();
    for i in 1..=20 {
        type_text(&mut app, &format!("line {i}"));
        if i < 20 {
            app.handle_key(with(KeyCode::Char('j'), CTRL));
        }
    }
    let bottom = screen(&mut app, 40, 14, Instant::now());
    for _ in 0..17 {
        app.handle_key(key(KeyCode::Up));
    }
    let middle = screen(&mut app, 40, 14, Instant::now());
    insta::assert_snapshot!(format!("{bottom}\n{middle}"));
}

#[test]
fn up_and_down_move_through_wrapped_rows_before_history() {
    let (mut app, port) = app();
    type_text(&mut app, "earlier prompt");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts.len(), 1);
    // 59 characters in a 30-column editor: two rows.
    let text = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll";
    type_text(&mut app, text);
    screen(&mut app, 30, 14, Instant::now());
    app.handle_key(key(KeyCode::Up));
    let (_, col) = app.composer.editor.cursor();
    assert!(col < text.len(), "moved up a row, not into history: {col}");
    assert_eq!(app.composer.editor.text(), text);
    app.handle_key(key(KeyCode::Up));
    app.handle_key(key(KeyCode::Up));
    assert_eq!(
        app.composer.editor.text(),
        text,
        "Up on the first row of a draft"
    );
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Down));
    assert_eq!(
        app.composer.editor.cursor(),
        (0, text.len()),
        "back at the end"
    );
}

#[test]
fn the_undo_byte_undoes_and_a_recalled_paste_is_sent_whole() {
    let (mut app, port) = app();
    type_text(&mut app, "abc");
    // What crossterm makes of byte 0x1F.
    app.handle_key(with(KeyCode::Char('7'), CTRL));
    assert_eq!(app.composer.editor.text(), "ab");
    app.handle_key(with(KeyCode::Char('-'), CTRL));
    assert_eq!(app.composer.editor.text(), "a");

    app.composer.editor.clear();
    let big: String = (0..30).map(|i| format!("row {i}\n")).collect();
    type_text(&mut app, "see ");
    app.handle_paste(&big);
    assert_eq!(app.composer.editor.text(), "see [paste #1 +30 lines]");
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.editor.text(), "see [paste #1 +30 lines]");
    app.handle_key(key(KeyCode::Enter));
    let log = port.log();
    assert_eq!(log.prompts.len(), 2);
    assert_eq!(log.prompts[0].0, log.prompts[1].0);
    assert!(log.prompts[1].0.contains("row 29"), "{:?}", log.prompts[1]);
}

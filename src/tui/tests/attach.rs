//! The editor's `@` file picker, Tab path completion, pasted images and prompts that carry
//! files: driven through [`App`] with a recording port, the picker also as a snapshot.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyModifiers};

use super::{app, key, screen, type_text, with};
use crate::agent::protocol::command::WhenBusy;
use crate::agent::protocol::events::AgentEvent;
use crate::attach::{self, Attachment, FileRef};
use crate::host::HostEvent;
use crate::tui::cells::Cell;
use crate::tui::files::FileIndex;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn project() -> FileIndex {
    FileIndex::fixed(
        [
            "Cargo.toml",
            "README.md",
            "src/main.rs",
            "src/lib.rs",
            "src/tui/app.rs",
            "src/tui/editor.rs",
            "docs/my notes.md",
        ]
        .map(String::from)
        .to_vec(),
    )
}

#[test]
fn snapshot_file_picker_open_on_a_filter() {
    let (mut app, _port) = app();
    app.composer.files = project();
    type_text(&mut app, "look at @srcrs");
    let picker = screen(&mut app, 60, 14, Instant::now());
    app.handle_key(key(KeyCode::Down));
    let moved = screen(&mut app, 60, 14, Instant::now());
    insta::assert_snapshot!(format!("{picker}\n{moved}"));
}

#[test]
fn at_opens_the_picker_and_enter_puts_the_chosen_path_after_it() {
    let (mut app, port) = app();
    app.composer.files = project();
    type_text(&mut app, "explain @");
    let p = app.composer.file_picker.as_ref().unwrap();
    assert_eq!((p.row, p.col, p.query.as_str()), (0, 8, ""));
    assert_eq!(p.found.total, 7, "every file, nearest the top first");
    assert_eq!(p.chosen(), Some("README.md"));
    type_text(&mut app, "edi");
    assert_eq!(
        app.composer.file_picker.as_ref().unwrap().chosen(),
        Some("src/tui/editor.rs")
    );
    app.handle_key(key(KeyCode::Enter));
    assert!(app.composer.file_picker.is_none());
    assert_eq!(app.composer.editor.text(), "explain @src/tui/editor.rs ");
    assert!(
        port.log().prompts.is_empty(),
        "Enter chose, it did not send"
    );
    type_text(&mut app, "and @lib");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(
        app.composer.editor.text(),
        "explain @src/tui/editor.rs and @src/lib.rs "
    );
}

#[test]
fn arrows_move_esc_closes_and_a_path_with_spaces_is_quoted() {
    let (mut app, _port) = app();
    app.composer.files = project();
    type_text(&mut app, "@rs");
    let first = app
        .composer
        .file_picker
        .as_ref()
        .unwrap()
        .chosen()
        .map(String::from);
    app.handle_key(key(KeyCode::Down));
    let second = app
        .composer
        .file_picker
        .as_ref()
        .unwrap()
        .chosen()
        .map(String::from);
    assert_ne!(first, second);
    app.handle_key(key(KeyCode::Up));
    assert_eq!(
        app.composer
            .file_picker
            .as_ref()
            .unwrap()
            .chosen()
            .map(String::from),
        first
    );
    app.handle_key(key(KeyCode::Esc));
    assert!(app.composer.file_picker.is_none());
    assert_eq!(app.composer.editor.text(), "@rs", "Esc keeps the text");

    app.composer.editor.clear();
    type_text(&mut app, "@notes");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.composer.editor.text(), "@\"docs/my notes.md\" ");
}

#[test]
fn the_picker_opens_only_at_a_word_start_and_closes_when_the_word_ends() {
    let (mut app, _port) = app();
    app.composer.files = project();
    type_text(&mut app, "mail bob@");
    assert!(
        app.composer.file_picker.is_none(),
        "an @ inside a word is text"
    );
    app.composer.editor.clear();
    type_text(&mut app, "@src");
    assert!(app.composer.file_picker.is_some());
    type_text(&mut app, " ");
    assert!(
        app.composer.file_picker.is_none(),
        "a space ends the filter"
    );
    type_text(&mut app, "@x");
    app.handle_key(key(KeyCode::Backspace));
    app.handle_key(key(KeyCode::Backspace));
    assert!(
        app.composer.file_picker.is_none(),
        "deleting the @ closes it"
    );
    type_text(&mut app, "@m");
    app.handle_key(key(KeyCode::Left));
    app.handle_key(key(KeyCode::Left));
    assert!(
        app.composer.file_picker.is_none(),
        "moving before the @ closes it"
    );
}

#[test]
fn enter_with_nothing_matching_sends_the_prompt() {
    let (mut app, port) = app();
    app.composer.files = project();
    type_text(&mut app, "ping @nobody-by-that-name");
    assert_eq!(app.composer.file_picker.as_ref().unwrap().chosen(), None);
    app.handle_key(key(KeyCode::Enter));
    assert!(app.composer.file_picker.is_none());
    let log = port.log();
    assert_eq!(
        log.with_files,
        [(
            "ping @nobody-by-that-name".to_string(),
            Vec::<String>::new(),
            WhenBusy::Steer
        )],
        "a prompt with an @ word goes to the host, which attaches what exists"
    );
}

#[test]
fn prompts_without_files_go_as_before() {
    let (mut app, port) = app();
    type_text(&mut app, "hello bob@example.com");
    app.handle_key(key(KeyCode::Enter));
    let log = port.log();
    assert_eq!(log.prompts.len(), 1);
    assert!(log.with_files.is_empty());
}

#[test]
fn tab_completes_the_path_before_the_cursor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/tui")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
    std::fs::write(dir.path().join("src/mod_a.rs"), "").unwrap();
    std::fs::write(dir.path().join("src/mod_b.rs"), "").unwrap();
    let (mut app, _port) = app();
    app.set_cwd(dir.path().to_path_buf());
    type_text(&mut app, "read sr");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.editor.text(), "read src/");
    type_text(&mut app, "ma");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.editor.text(), "read src/main.rs ");
    type_text(&mut app, "and src/mo");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.editor.text(), "read src/main.rs and src/mod_");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.hint.as_deref(), Some("mod_a.rs  mod_b.rs"));
    // After an @ too (the picker closed first with Esc).
    app.composer.editor.clear();
    type_text(&mut app, "@src/t");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.editor.text(), "@src/tui/");
    // `/` commands still complete first.
    app.composer.editor.clear();
    type_text(&mut app, "/mo");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.editor.text(), "/model ");
}

#[test]
fn a_pasted_image_path_becomes_a_chip_and_goes_with_the_next_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("my shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let (mut app, port) = app();
    app.set_cwd(dir.path().to_path_buf());
    // A terminal drop: the path, quoted.
    app.handle_paste(&format!("'{}'", shot.display()));
    assert!(
        app.composer.editor.is_empty(),
        "the path is not pasted as text"
    );
    assert_eq!(app.composer.attachments.len(), 1);
    assert_eq!(app.composer.attachments[0].chip(), "[image: my shot.png]");
    // The same image again is not attached twice; other text pastes as text.
    app.handle_paste(&shot.display().to_string().replace(' ', "\\ "));
    assert_eq!(app.composer.attachments.len(), 1);
    app.handle_paste("what is in it?");
    let s = screen(&mut app, 70, 10, Instant::now());
    assert!(s.contains("[image: my shot.png]"), "{s}");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.composer.attachments.is_empty());
    assert_eq!(
        port.log().with_files,
        [(
            "what is in it?".to_string(),
            vec!["my shot.png".to_string()],
            WhenBusy::Steer
        )]
    );
}

#[test]
fn chips_are_removed_with_backspace_or_ctrl_c_and_can_be_sent_alone() {
    let (mut app, port) = app();
    let chip = |name: &str| FileRef {
        name: name.into(),
        path: format!("/tmp/{name}").into(),
        image: true,
    };
    app.composer.attachments = vec![chip("a.png"), chip("b.png")];
    app.handle_key(key(KeyCode::Backspace));
    assert_eq!(app.composer.attachments, [chip("a.png")]);
    app.handle_key(with(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.composer.attachments.is_empty());
    assert!(app.take_effects().is_empty(), "clearing is not quitting");
    app.composer.attachments = vec![chip("c.png")];
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().with_files[0].1, ["c.png"]);
}

#[test]
fn a_sent_prompt_shows_its_files_as_chips_and_notices_are_shown() {
    let (mut app, _port) = app();
    let built = attach::build(
        "explain",
        vec![Attachment::Text {
            name: "src/main.rs".into(),
            text: "fn main() {}".into(),
        }],
        true,
    );
    app.handle_agent_event(AgentEvent::MessageStart {
        message: built.message,
    });
    let user = (0..app.transcript.len())
        .find_map(|i| match app.transcript.get_mut(i) {
            Some(Cell::User(t)) => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(user, "[file: src/main.rs]\nexplain");
    app.handle_host_event(HostEvent::Notice(
        "qwen3:8b does not take images, so this was sent without shot.png".into(),
    ));
    let s = screen(&mut app, 80, 12, Instant::now());
    assert!(s.contains("does not take images"), "{s}");
}

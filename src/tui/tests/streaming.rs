//! A streaming answer as the person sees it: snapshots of the live cell at several points of
//! one stream (an open paragraph, open bold, a list and a code block still growing), and the
//! open line drawn before its newline arrives.

use std::time::Instant;

use ratatui::style::Modifier;

use super::{answer, app, cells_screen, view};
use crate::agent::protocol::events::AgentEvent;
use crate::agent::protocol::stream::StreamEvent;
use crate::agent::protocol::types::{AgentMessage, AssistantMessage, Message};
use crate::tui::app::App;

fn start(app: &mut App) {
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(AssistantMessage::default())),
    });
}

fn delta(app: &mut App, text: &str) {
    app.handle_agent_event(AgentEvent::MessageUpdate {
        assistant_message_event: StreamEvent::TextDelta {
            content_index: 0,
            delta: text.into(),
        },
    });
}

/// The transcript's rows as plain text, one per line, trailing blanks trimmed.
fn transcript(app: &mut App, w: usize, h: usize) -> String {
    let view = app.view(Instant::now());
    app.transcript
        .visible(w, h, &view)
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn snapshot_a_streaming_answer_at_several_points() {
    let (mut app, _port) = app();
    start(&mut app);
    let pieces = [
        "Here is the plan for the fix, which I will explain in a sentence long enough to wrap",
        " across rows, and **the important pa",
        "rt** first:\n\n1. read the",
        " file\n2. change `parse",
        "` and\n3. test\n\n```rust\nfn main() {\n    let x = \"unfinished str",
        "ing\";\n}\n```\n\nDone",
    ];
    let mut frames = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        delta(&mut app, piece);
        frames.push(format!(
            "--- after delta {} ---\n{}",
            i + 1,
            transcript(&mut app, 44, 40)
        ));
    }
    insta::assert_snapshot!(frames.join("\n"));
}

#[test]
fn the_open_line_is_drawn_before_its_newline_and_its_bold_is_bold() {
    let (mut app, _port) = app();
    start(&mut app);
    delta(&mut app, "Hello **wor");
    let view = app.view(Instant::now());
    let rows = app.transcript.visible(40, 10, &view);
    let text: Vec<String> = rows.iter().map(ToString::to_string).collect();
    assert_eq!(text[0], "Hello wor", "{text:?}");
    let bold = rows[0]
        .spans
        .iter()
        .find(|s| s.content == "wor")
        .expect("a span of its own");
    assert!(bold.style.add_modifier.contains(Modifier::BOLD));
    // Escapes in the open line are shown, never sent to the terminal.
    delta(&mut app, "ld**\nsecond \u{1b}[31mline");
    let s = transcript(&mut app, 40, 10);
    assert!(s.contains("Hello world"), "{s}");
    assert!(s.contains("second ␛[31mline"), "{s}");
    assert!(!s.contains('\u{1b}'));
}

#[test]
fn the_finished_answer_looks_like_the_last_streamed_frame() {
    let md = "Text with **bold** and a list:\n\n- one\n- two\n\n```py\nprint(1)\n```\n\nEnd.";
    let (mut app, _port) = app();
    start(&mut app);
    for piece in md.as_bytes().chunks(5) {
        delta(&mut app, &String::from_utf8_lossy(piece));
    }
    let streamed = transcript(&mut app, 40, 20);
    let finished = cells_screen(vec![answer(md)], &view(Instant::now()), 40, 20);
    let finished: Vec<&str> = finished
        .lines()
        .map(|l| l.trim_matches('"').trim_end())
        .filter(|l| !l.is_empty())
        .collect();
    let streamed: Vec<&str> = streamed.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(streamed, finished);
}

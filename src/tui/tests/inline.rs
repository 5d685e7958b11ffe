//! Inline mode with the whole app: the live region's layout (snapshots), and a conversation
//! streamed frame by frame through the inline renderer into an emulator that keeps its
//! scrollback: every line of it ends up there once, in order, whatever the view toggles did
//! meanwhile.

use std::time::Instant;

use ratatui::buffer::Buffer;

use super::{app, assistant};
use crate::agent::protocol::events::AgentEvent;
use crate::agent::protocol::stream::StreamEvent;
use crate::agent::protocol::types::{AgentMessage, Message};
use crate::approval::{ApprovalMode, ApprovalRequest};
use crate::host::HostEvent;
use crate::tui::app::App;
use crate::tui::inline::InlineScreen;
use crate::tui::inline::emulator::Term;
use crate::tui::printed::Printed;
use crate::tui::render;
use crate::tui::screen::inline_frame;

fn text_of(buf: &Buffer) -> String {
    let area = buf.area;
    (0..area.height)
        .map(|y| {
            let row: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
            row.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn start_answer(app: &mut App) {
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
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

fn thinking(app: &mut App, text: &str) {
    app.handle_agent_event(AgentEvent::MessageUpdate {
        assistant_message_event: StreamEvent::ThinkingDelta {
            content_index: 0,
            delta: text.into(),
        },
    });
}

fn end_answer(app: &mut App, message: crate::agent::protocol::types::AssistantMessage) {
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(message)),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: Vec::new(),
        telemetry: None,
        coverage: None,
    });
}

#[test]
fn snapshot_the_live_region_while_an_answer_streams() {
    let (mut app, _port) = app();
    start_answer(&mut app);
    delta(
        &mut app,
        "First paragraph of the answer.\n\nSecond one, still ",
    );
    let now = Instant::now();
    let view = app.view(now);
    let split = Printed::default().split(&mut app.transcript, 60, &view, 10);
    let live = render::draw_live(&mut app, &split.live, 60, 20, now);
    insta::assert_snapshot!(text_of(&live));
}

#[test]
fn snapshot_an_approval_grows_the_live_region_above_the_editor() {
    let (mut app, _port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    app.approval_mode = ApprovalMode::Ask;
    app.handle_host_event(HostEvent::Approval(Box::new(ApprovalRequest {
        id: 1,
        tool: "bash".into(),
        subject: "cargo test -q".into(),
        detail: None,
        session_scope: "commands starting with `cargo test`".into(),
    })));
    let now = Instant::now();
    let live = render::draw_live(&mut app, &[], 70, 24, now);
    insta::assert_snapshot!(text_of(&live));
}

/// Stream `lines` numbered lines into `app`, a few at a time, drawing a frame after each
/// piece; `between` runs before each frame.
fn stream(
    app: &mut App,
    screen: &mut InlineScreen<Vec<u8>>,
    printed: &mut Printed,
    term: &mut Term,
    text: &str,
    mut between: impl FnMut(&mut App, usize),
) {
    let now = Instant::now();
    for (n, piece) in text.as_bytes().chunks(23).enumerate() {
        delta(app, &String::from_utf8_lossy(piece));
        between(app, n);
        inline_frame(app, printed, screen, now).unwrap();
        term.process(&std::mem::take(screen.out()));
    }
}

#[test]
fn a_long_streamed_answer_reaches_the_scrollback_whole_and_once() {
    let (mut app, _port) = app();
    let (w, h) = (60, 16);
    let mut screen = InlineScreen::new(Vec::new(), w, h);
    let mut printed = Printed::default();
    let mut term = Term::new(h, w);
    let body: String = (0..80)
        .map(|i| format!("Line {i:02} of the answer.\n\n"))
        .collect();
    start_answer(&mut app);
    stream(
        &mut app,
        &mut screen,
        &mut printed,
        &mut term,
        &body,
        |_, _| {},
    );
    // While it streams, the screen's bottom is the live region and the scrollback fills.
    let rows = term.screen_rows();
    assert!(rows.iter().any(|r| r.contains("Working...")), "{rows:#?}");
    assert!(term.all_rows().len() > 60);
    end_answer(
        &mut app,
        assistant(vec![crate::agent::protocol::types::ContentBlock::text(
            &body,
        )]),
    );
    inline_frame(&mut app, &mut printed, &mut screen, Instant::now()).unwrap();
    term.process(&std::mem::take(screen.out()));
    let all = term.all_rows();
    let mut last = 0;
    for i in 0..80 {
        let line = format!("Line {i:02} of the answer.");
        let at: Vec<usize> = all
            .iter()
            .enumerate()
            .filter(|(_, r)| r.contains(&line))
            .map(|(n, _)| n)
            .collect();
        assert_eq!(at.len(), 1, "{line} once:\n{all:#?}");
        assert!(at[0] > last || i == 0, "{line} in order:\n{all:#?}");
        last = at[0];
    }
}

#[test]
fn toggling_the_views_while_an_answer_is_half_printed_loses_no_line() {
    let (mut app, _port) = app();
    let (w, h) = (50, 14);
    let mut screen = InlineScreen::new(Vec::new(), w, h);
    let mut printed = Printed::default();
    let mut term = Term::new(h, w);
    start_answer(&mut app);
    thinking(
        &mut app,
        "thought one\nthought two\nthought three\nthought four",
    );
    app.handle_agent_event(AgentEvent::MessageUpdate {
        assistant_message_event: StreamEvent::TextStart { content_index: 1 },
    });
    let body: String = (0..40).map(|i| format!("Row {i:02}.\n\n")).collect();
    let now = Instant::now();
    for (n, piece) in body.as_bytes().chunks(11).enumerate() {
        app.handle_agent_event(AgentEvent::MessageUpdate {
            assistant_message_event: StreamEvent::TextDelta {
                content_index: 1,
                delta: String::from_utf8_lossy(piece).into_owned(),
            },
        });
        // Ctrl+T hides the thinking half-way, Ctrl+O expands tools later.
        if n == 20 {
            app.show_thinking = false;
            app.transcript.invalidate_view();
        }
        if n == 40 {
            app.expand_tools = true;
            app.transcript.invalidate_view();
        }
        inline_frame(&mut app, &mut printed, &mut screen, now).unwrap();
        term.process(&std::mem::take(screen.out()));
    }
    let message = {
        use crate::agent::protocol::types::{ContentBlock, ThinkingContent};
        assistant(vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "thought one\nthought two\nthought three\nthought four".into(),
                thinking_signature: None,
                item_id: None,
            }),
            ContentBlock::text(&body),
        ])
    };
    end_answer(&mut app, message);
    inline_frame(&mut app, &mut printed, &mut screen, now).unwrap();
    term.process(&std::mem::take(screen.out()));
    let all = term.all_rows();
    for i in 0..40 {
        let line = format!("Row {i:02}.");
        let n = all.iter().filter(|r| r.contains(&line)).count();
        assert!(n >= 1, "{line} missing:\n{all:#?}");
        assert_eq!(n, 1, "{line} printed {n} times:\n{all:#?}");
    }
    assert_eq!(
        all.iter().filter(|r| r.contains("thought one")).count(),
        1,
        "{all:#?}"
    );
}

#[test]
fn a_run_ending_and_an_approval_waiting_ask_for_a_notification() {
    use crate::tui::app::Effect;
    let (mut app, _port) = app();
    start_answer(&mut app);
    app.handle_host_event(HostEvent::Approval(Box::new(ApprovalRequest {
        id: 1,
        tool: "bash".into(),
        subject: "make".into(),
        detail: None,
        session_scope: "commands starting with `make`".into(),
    })));
    assert_eq!(
        app.take_effects(),
        [Effect::Notify("bash waits for your approval".into())]
    );
    end_answer(&mut app, assistant(vec![]));
    assert_eq!(
        app.take_effects(),
        [Effect::Notify("the run is done".into())]
    );
}

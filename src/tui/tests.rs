//! Tests of what the person sees and what keys do: insta snapshots on ratatui's `TestBackend`
//! for each cell kind, the layout, the queued-message display and the model picker, and tests
//! that drive [`App`] with key events and hand-made agent events through a recording port.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::widgets::Paragraph;
use serde_json::json;

use super::app::{App, Effect, Place};
use super::cells::{Cell, ToolCell, ToolState, View};
use super::port::{Port, message_text};
use super::render;
use super::transcript::{Scroll, Transcript};
use crate::agent::protocol::command::{AgentCommand, WhenBusy};
use crate::agent::protocol::events::AgentEvent;
use crate::agent::protocol::stream::StreamEvent;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Message, StopReason, ThinkingContent, ToolCall,
    ToolResultMessage, Usage,
};
use crate::host::view::{ListScope, SessionInfo};
use crate::host::{Command, Commands, HostEvent, Opened};
use crate::provider::catalog::ModelInfo;

mod approval;
mod attach;
mod dialect;
mod editing;
mod inline;
mod keys;
mod streaming;
mod truthful;

/// What the app sent to the host, sorted by kind.
#[derive(Default)]
struct Log {
    /// Prompts with how they are delivered while a run is active.
    prompts: Vec<(String, WhenBusy)>,
    /// Prompts sent with files: the text, the files' names, the delivery.
    with_files: Vec<(String, Vec<String>, WhenBusy)>,
    aborts: usize,
    took_queued: usize,
    continued: usize,
    models: Vec<String>,
    thinking: Vec<ThinkingLevel>,
    listed: Vec<ListScope>,
    opened: Vec<std::path::PathBuf>,
    names: Vec<String>,
    exports: Vec<Option<std::path::PathBuf>>,
    stats: usize,
    new_sessions: usize,
    trees: usize,
    shells: Vec<(String, bool)>,
    compacts: Vec<Option<String>>,
    navigated: Vec<String>,
    summarized: Vec<(String, Option<String>)>,
    labels: Vec<(String, Option<String>)>,
    forks: Vec<String>,
    clones: usize,
    renamed: Vec<(std::path::PathBuf, String)>,
    deleted: Vec<std::path::PathBuf>,
    logins: Vec<(String, String)>,
    local_searches: usize,
    approvals: Vec<(u64, crate::approval::Decision)>,
    approval_modes: Vec<crate::approval::ApprovalMode>,
    mcp_status: usize,
}

/// The receiving end of the app's port.
struct Sent {
    rx: RefCell<tokio::sync::mpsc::UnboundedReceiver<Command>>,
    log: RefCell<Log>,
}

impl Sent {
    /// Everything sent so far.
    fn log(&self) -> std::cell::Ref<'_, Log> {
        let mut rx = self.rx.borrow_mut();
        let mut log = self.log.borrow_mut();
        while let Ok(c) = rx.try_recv() {
            match c {
                Command::Agent(AgentCommand::Prompt {
                    messages,
                    when_busy,
                    ..
                }) => {
                    for m in messages {
                        log.prompts.push((message_text(&m), when_busy));
                    }
                }
                Command::PromptWithFiles {
                    text,
                    files,
                    when_busy,
                } => log.with_files.push((
                    text,
                    files.into_iter().map(|f| f.name).collect(),
                    when_busy,
                )),
                Command::Agent(AgentCommand::Abort { .. }) => log.aborts += 1,
                Command::Agent(AgentCommand::Continue { .. }) => log.continued += 1,
                Command::Agent(AgentCommand::Compact { focus, .. }) => log.compacts.push(focus),
                Command::TakeQueued => log.took_queued += 1,
                Command::SetModel(m) => log.models.push(m.id.clone()),
                Command::SetThinking(t) => log.thinking.push(t),
                Command::ListSessions(scope) => log.listed.push(scope),
                Command::OpenSession(p) => log.opened.push(p),
                Command::NameSession(n) => log.names.push(n),
                Command::Export(p) => log.exports.push(p),
                Command::Stats => log.stats += 1,
                Command::McpStatus => log.mcp_status += 1,
                Command::NewSession => log.new_sessions += 1,
                Command::Tree => log.trees += 1,
                Command::Shell { command, include } => log.shells.push((command, include)),
                Command::Login { provider, key } => log.logins.push((provider, key.0)),
                Command::FindLocalModels => log.local_searches += 1,
                Command::Approve { id, decision } => log.approvals.push((id, decision)),
                Command::SetApproval(mode) => log.approval_modes.push(mode),
                Command::Navigate(id) => log.navigated.push(id),
                Command::NavigateSummarized { target, focus } => {
                    log.summarized.push((target, focus))
                }
                Command::Label { target, label } => log.labels.push((target, label)),
                Command::Fork(id) => log.forks.push(id),
                Command::Clone => log.clones += 1,
                Command::RenameSession { path, name, .. } => log.renamed.push((path, name)),
                Command::DeleteSession { path, .. } => log.deleted.push(path),
                other => panic!("unexpected command {other:?}"),
            }
        }
        drop(log);
        self.log.borrow()
    }
}

fn model(id: &str, provider: &str) -> ModelInfo {
    ModelInfo {
        id: id.into(),
        name: id.into(),
        provider: provider.into(),
        api: crate::provider::catalog::Api::OpenAiCompletions,
        base_url: String::new(),
        context_window: 128_000,
        max_tokens: 16_384,
        reasoning: true,
        images: false,
        pricing: Default::default(),
        headers: Vec::new(),
        compat: Default::default(),
    }
}

fn app() -> (App, Sent) {
    let (commands, rx) = Commands::detached();
    let port = Sent {
        rx: RefCell::new(rx),
        log: RefCell::new(Log::default()),
    };
    let mut app = App::new(
        Port::new(commands),
        model("qwen3:8b", "ollama"),
        ThinkingLevel::Medium,
    );
    app.place = Place {
        cwd: "~/src/demo".into(),
        branch: Some("main".into()),
        session_name: None,
    };
    app.models = vec![
        model("qwen3:8b", "ollama"),
        model("claude-sonnet-4-5", "anthropic"),
        model("gpt-5", "openai"),
    ];
    (app, port)
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn with(code: KeyCode, m: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, m)
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
}

fn screen(app: &mut App, w: u16, h: u16, now: Instant) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render::draw(f, app, now)).unwrap();
    term.backend().to_string()
}

fn cells_screen(cells: Vec<Cell>, view: &View, w: u16, h: u16) -> String {
    let mut t = Transcript::default();
    for c in cells {
        t.push(c);
    }
    let rows = t.visible(w as usize, h as usize, view);
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| f.render_widget(Paragraph::new(rows), f.area()))
        .unwrap();
    term.backend().to_string()
}

fn view(now: Instant) -> View {
    View {
        show_thinking: true,
        expand_tools: false,
        now,
        expand_key: "Ctrl+O".into(),
    }
}

fn assistant(blocks: Vec<ContentBlock>) -> AssistantMessage {
    AssistantMessage {
        content: blocks,
        ..Default::default()
    }
}

fn user_msg(text: &str) -> AgentMessage {
    AgentMessage::user(text)
}

fn tool(name: &str, args: serde_json::Value, state: ToolState, output: &str) -> Cell {
    Cell::Tool(ToolCell {
        id: "t1".into(),
        name: name.into(),
        args: Arc::new(args),
        state,
        output: output.into(),
        diff: None,
        saved: None,
    })
}

// ----- snapshots of cells -----------------------------------------------------------------

#[test]
fn snapshot_user_and_assistant_markdown() {
    let now = Instant::now();
    let md = "## Plan\n\nI will **read** the file, then run `cargo test`:\n\n1. read `src/main.rs`\n2. fix the *bug*\n\n> a quote\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nSee [docs](https://example.com).";
    let cells = vec![
        Cell::User("fix the failing test please".into()),
        Cell::assistant(assistant(vec![ContentBlock::text(md)]), false),
    ];
    insta::assert_snapshot!(cells_screen(cells, &view(now), 60, 28));
}

/// The screen with its colours: ratatui's buffer dump lists each run of cells whose style
/// changes, so a snapshot shows which code got which colour.
fn styled_cells_screen(cells: Vec<Cell>, w: u16, h: u16) -> String {
    let mut t = Transcript::default();
    for c in cells {
        t.push(c);
    }
    let rows = t.visible(w as usize, h as usize, &view(Instant::now()));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| f.render_widget(Paragraph::new(rows), f.area()))
        .unwrap();
    format!("{:?}", term.backend().buffer())
}

fn answer(md: &str) -> Cell {
    Cell::assistant(assistant(vec![ContentBlock::text(md)]), false)
}

#[test]
fn snapshot_highlighted_rust_and_python() {
    let md = "Rust:\n\n```rust\n// add one\nfn inc(x: u32) -> u32 {\n    x + 1\n}\n```\n\nPython:\n\n```py\ndef greet(name):\n    return f\"hi {name}\"\n```";
    insta::assert_snapshot!(styled_cells_screen(vec![answer(md)], 40, 14));
}

#[test]
fn snapshot_unknown_language_code_block_is_plain() {
    let md = "```klingon\nqapla' 42\n```\n\n```\nno language\n```";
    insta::assert_snapshot!(styled_cells_screen(vec![answer(md)], 30, 6));
}

#[test]
fn a_streaming_answer_shows_the_same_rows_as_the_finished_one() {
    let (mut app, _port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    let md = "## Plan\n\n- read\n- fix\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.\n";
    let now = Instant::now();
    for piece in md.as_bytes().chunks(7) {
        let delta = String::from_utf8_lossy(piece).into_owned();
        app.handle_agent_event(AgentEvent::MessageUpdate {
            assistant_message_event: StreamEvent::TextDelta {
                content_index: 0,
                delta,
            },
        });
        screen(&mut app, 40, 24, now);
    }
    let streamed = screen(&mut app, 40, 24, now);
    let finished = cells_screen(vec![answer(md)], &view(now), 40, 24);
    for row in finished.lines().map(|l| l.trim_matches('"').trim_end()) {
        assert!(streamed.contains(row), "{row:?} missing from\n{streamed}");
    }
}

#[test]
fn snapshot_thinking_shown_and_hidden() {
    let now = Instant::now();
    let msg = assistant(vec![
        ContentBlock::Thinking(ThinkingContent {
            thinking: "The user wants a greeting.\nKeep it short.".into(),
            ..Default::default()
        }),
        ContentBlock::text("Hello!"),
    ]);
    let shown = cells_screen(vec![Cell::assistant(msg.clone(), false)], &view(now), 40, 6);
    let mut hidden_view = view(now);
    hidden_view.show_thinking = false;
    let hidden = cells_screen(vec![Cell::assistant(msg, false)], &hidden_view, 40, 4);
    insta::assert_snapshot!(format!("{shown}\n{hidden}"));
}

#[test]
fn snapshot_tool_cells() {
    let now = Instant::now();
    let long: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let cells = vec![
        tool(
            "bash",
            json!({"command": "cargo build"}),
            ToolState::Running {
                started: now - Duration::from_millis(2300),
            },
            "Compiling pi\n",
        ),
        tool(
            "bash",
            json!({"command": "seq 12"}),
            ToolState::Done {
                ok: true,
                took: Duration::from_millis(300),
            },
            &long,
        ),
        tool(
            "read",
            json!({"path": "src/lib.rs", "offset": 10, "limit": 31}),
            ToolState::Done {
                ok: true,
                took: Duration::from_millis(10),
            },
            &long,
        ),
        tool(
            "grep",
            json!({"pattern": "TODO", "path": "src"}),
            ToolState::Done {
                ok: false,
                took: Duration::from_millis(50),
            },
            "grep: src: permission denied",
        ),
        tool("edit", json!({"path": "a.rs"}), ToolState::Skipped, ""),
        Cell::Tool(ToolCell {
            id: "t2".into(),
            name: "edit".into(),
            args: Arc::new(json!({"path": "src/a.rs"})),
            state: ToolState::Done {
                ok: true,
                took: Duration::from_millis(4),
            },
            output: "Edited src/a.rs".into(),
            diff: Some(" 10 fn a() {\n-11     old();\n+11     new();\n 12 }".into()),
            saved: None,
        }),
    ];
    insta::assert_snapshot!(cells_screen(cells, &view(now), 60, 40));
}

#[test]
fn snapshot_tool_output_expanded() {
    let now = Instant::now();
    let long: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    let mut v = view(now);
    v.expand_tools = true;
    let cells = vec![tool(
        "bash",
        json!({"command": "seq 8"}),
        ToolState::Done {
            ok: true,
            took: Duration::from_millis(1200),
        },
        &long,
    )];
    insta::assert_snapshot!(cells_screen(cells, &v, 40, 11));
}

#[test]
fn snapshot_write_cell_shows_the_content_collapsed_then_expanded() {
    let now = Instant::now();
    let content: String = (1..=13).map(|i| format!("fn f{i}() {{}}\n")).collect();
    let written = || {
        tool(
            "write",
            json!({"path": "src/gen.rs", "content": content}),
            ToolState::Done {
                ok: true,
                took: Duration::from_millis(3),
            },
            "Successfully wrote 156 bytes to src/gen.rs",
        )
    };
    let refused = tool(
        "write",
        json!({"path": "/etc/x", "content": "secret"}),
        ToolState::Done {
            ok: false,
            took: Duration::from_millis(1),
        },
        "permission denied: /etc/x",
    );
    // The expand key is named as keybindings.json binds it.
    let mut collapsed = view(now);
    collapsed.expand_key = "Alt+X".into();
    let mut expanded = view(now);
    expanded.expand_tools = true;
    let a = cells_screen(vec![written(), refused], &collapsed, 50, 17);
    let b = cells_screen(vec![written()], &expanded, 50, 15);
    assert!(!a.contains("Successfully wrote"), "{a}");
    insta::assert_snapshot!(format!("{a}\n{b}"));
}

#[test]
fn snapshot_divider_error_aborted_notice() {
    let now = Instant::now();
    let cells = vec![
        Cell::Divider,
        Cell::Error("401 Unauthorized: check your API key".into()),
        Cell::Aborted("Operation aborted".into()),
        Cell::Notice("overloaded — retrying (1/3) in 2.0s".into()),
    ];
    insta::assert_snapshot!(cells_screen(cells, &view(now), 50, 9));
}

// ----- layout -----------------------------------------------------------------------------

fn start_turn_with_tool(app: &mut App) {
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("list the files"),
    });
    let a = assistant(vec![ContentBlock::text("Let me check.")]);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(AssistantMessage {
            usage: Usage {
                input: 1200,
                output: 45,
                cache_read: 3000,
                ..Default::default()
            },
            stop_reason: StopReason::ToolUse,
            ..a
        })),
    });
    app.handle_agent_event(AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: Arc::new(json!({"command": "ls"})),
        intent: None,
    });
}

#[test]
fn snapshot_layout_while_working_with_queued_messages() {
    let (mut app, _port) = app();
    start_turn_with_tool(&mut app);
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["also check the tests".into()],
        follow_up: vec!["then write a summary".into()],
    });
    let now = Instant::now();
    app.working = Some(now - Duration::from_secs(3));
    if let Some(Cell::Tool(t)) = app.transcript.get_mut(app.transcript.len() - 1) {
        t.state = ToolState::Running {
            started: now - Duration::from_millis(1500),
        };
    }
    type_text(&mut app, "draft");
    insta::assert_snapshot!(screen(&mut app, 70, 20, now));
}

#[test]
fn snapshot_model_picker_and_completions() {
    let (mut app, _port) = app();
    type_text(&mut app, "/m");
    let now = Instant::now();
    let completions = screen(&mut app, 60, 12, now);
    app.handle_key(with(KeyCode::Char('l'), KeyModifiers::CONTROL));
    type_text(&mut app, "o");
    let picker = screen(&mut app, 60, 12, now);
    insta::assert_snapshot!(format!("{completions}\n{picker}"));
}

// ----- driving the app --------------------------------------------------------------------

#[test]
fn enter_sends_a_prompt_when_idle() {
    let (mut app, port) = app();
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts, [("hello".to_string(), WhenBusy::Steer)]);
    assert!(app.editor.is_empty());
    assert!(app.is_busy(), "the run shows as started at once");
}

#[test]
fn enter_while_a_tool_runs_steers_and_the_queue_is_shown() {
    let (mut app, port) = app();
    start_turn_with_tool(&mut app);
    type_text(&mut app, "use ls -la instead");
    app.handle_key(key(KeyCode::Enter));
    // While a run is active the host delivers it as a steering message.
    assert_eq!(
        port.log().prompts,
        [("use ls -la instead".to_string(), WhenBusy::Steer)]
    );
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["use ls -la instead".into()],
        follow_up: vec![],
    });
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("Steering: use ls -la instead"), "{s}");
    // The loop takes the message: the queue empties and it appears as a user message.
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec![],
        follow_up: vec![],
    });
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("use ls -la instead"),
    });
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(!s.contains("Steering:"), "{s}");
    assert!(s.contains(" use ls -la instead"), "{s}");
}

#[test]
fn alt_enter_queues_a_follow_up() {
    let (mut app, port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    type_text(&mut app, "then summarise");
    app.handle_key(with(KeyCode::Enter, KeyModifiers::ALT));
    assert_eq!(
        port.log().prompts,
        [("then summarise".to_string(), WhenBusy::FollowUp)]
    );
}

#[test]
fn esc_aborts_and_brings_queued_messages_back_into_the_editor() {
    let (mut app, port) = app();
    start_turn_with_tool(&mut app);
    type_text(&mut app, "first steer");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "a follow-up");
    app.handle_key(with(KeyCode::Enter, KeyModifiers::ALT));
    type_text(&mut app, "still typing");
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(port.log().aborts, 1);
    assert_eq!(port.log().took_queued, 1);
    // The status line stops at once, before the run has ended.
    assert!(!app.animating());
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("Stopping..."), "{s}");
    assert!(!s.contains("esc to interrupt"), "{s}");
    // The host hands back what was queued.
    app.handle_host_event(HostEvent::Queued(vec![
        AgentMessage::steering("first steer"),
        user_msg("a follow-up"),
    ]));
    assert_eq!(
        app.editor.text(),
        "first steer\n\na follow-up\n\nstill typing"
    );
    assert!(app.steering.is_empty() && app.follow_up.is_empty());
    // The run ends aborted: the marker is shown and the tool is no longer running.
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(AssistantMessage {
            stop_reason: StopReason::Aborted,
            ..assistant(vec![])
        })),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
    assert_eq!(port.log().continued, 0, "an aborted run is not continued");
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("Operation aborted"), "{s}");
    assert!(s.contains("↷ $ ls (skipped)"), "{s}");
    assert!(!s.contains("esc to interrupt"), "{s}");
}

#[test]
fn a_message_queued_as_the_run_ended_is_sent_on() {
    let (mut app, port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    // Typed as the last reply finished: the host queued it, after the run's last look.
    app.handle_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["one more thing".into()],
        follow_up: vec![],
    });
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(assistant(vec![ContentBlock::text(
            "done",
        )]))),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
    assert_eq!(port.log().continued, 1, "the queued message starts a run");
    assert!(!app.is_busy(), "shown as working once that run starts");
}

#[test]
fn tool_output_escape_sequences_are_shown_never_run() {
    let (mut app, _port) = app();
    start_turn_with_tool(&mut app);
    app.handle_agent_event(AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        result: ToolOutput::text("ok\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2Jdone"),
        is_error: false,
    });
    let s = screen(&mut app, 60, 16, Instant::now());
    assert!(s.contains("ok␛]52;c;ZXZpbA==␇␛[2Jdone"), "{s}");
    assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s}");
    assert!(s.contains("✓ $ ls"), "{s}");
}

#[test]
fn scrolling_up_stops_following_and_end_follows_again() {
    let (mut app, _port) = app();
    for i in 0..60 {
        app.handle_agent_event(AgentEvent::MessageStart {
            message: user_msg(&format!("message {i}")),
        });
    }
    let now = Instant::now();
    let s = screen(&mut app, 40, 20, now);
    assert!(s.contains("message 59"));
    app.handle_key(key(KeyCode::PageUp));
    assert!(matches!(app.transcript.scroll, Scroll::Anchored { .. }));
    let before = screen(&mut app, 40, 20, now);
    assert!(!before.contains("message 59"), "{before}");
    // New output does not move the view while scrolled up.
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("message 60"),
    });
    let after = screen(&mut app, 40, 20, now);
    assert_eq!(before, after);
    app.handle_key(key(KeyCode::End));
    let s = screen(&mut app, 40, 20, now);
    assert!(s.contains("message 60"), "{s}");
    assert_eq!(app.transcript.scroll, Scroll::Follow);
}

#[test]
fn paging_through_a_long_resumed_session_lays_out_only_what_it_passes() {
    let (mut app, _port) = app();
    let messages: Vec<AgentMessage> = (0..5000)
        .map(|i| user_msg(&format!("prompt number {i}")))
        .collect();
    app.show_messages(&messages);
    let now = Instant::now();
    let s = screen(&mut app, 50, 20, now);
    assert!(s.contains("prompt number 4999"), "{s}");
    let first = app.transcript.laid_out();
    assert!(first < 40, "the first frame laid out {first} cells");
    for _ in 0..3 {
        app.handle_key(key(KeyCode::PageUp));
    }
    let s = screen(&mut app, 50, 20, now);
    assert!(!s.contains("prompt number 4999"), "{s}");
    assert!(s.contains("prompt number 4990"), "{s}");
    assert!(
        app.transcript.laid_out() < 100,
        "{}",
        app.transcript.laid_out()
    );
    // Home goes to the start without laying out the middle; PgDn from there moves down.
    app.handle_key(key(KeyCode::Home));
    let s = screen(&mut app, 50, 20, now);
    assert!(s.contains("prompt number 0"), "{s}");
    app.handle_key(key(KeyCode::PageDown));
    let s = screen(&mut app, 50, 20, now);
    assert!(
        !s.contains("prompt number 0\n") && s.contains("prompt number 6"),
        "{s}"
    );
    assert!(
        app.transcript.laid_out() < 140,
        "{}",
        app.transcript.laid_out()
    );
}

#[test]
fn ctrl_c_clears_then_twice_quits_and_ctrl_d_quits_on_empty() {
    let (mut app, _port) = app();
    type_text(&mut app, "abc");
    let ctrl_c = with(KeyCode::Char('c'), KeyModifiers::CONTROL);
    app.handle_key(ctrl_c);
    assert!(app.editor.is_empty());
    assert!(app.take_effects().is_empty());
    app.handle_key(ctrl_c);
    assert_eq!(app.take_effects(), [Effect::Quit]);
    type_text(&mut app, "x");
    app.handle_key(with(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert!(app.take_effects().is_empty());
    app.handle_key(key(KeyCode::Backspace));
    app.handle_key(with(KeyCode::Char('d'), KeyModifiers::CONTROL));
    assert_eq!(app.take_effects(), [Effect::Quit]);
}

#[test]
fn newline_keys_and_history() {
    let (mut app, port) = app();
    type_text(&mut app, "a");
    app.handle_key(with(KeyCode::Enter, KeyModifiers::SHIFT));
    type_text(&mut app, "b");
    app.handle_key(with(KeyCode::Char('j'), KeyModifiers::CONTROL));
    type_text(&mut app, "c");
    assert_eq!(app.editor.text(), "a\nb\nc");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts[0].0, "a\nb\nc");
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.editor.text(), "a\nb\nc");
}

#[test]
fn model_picker_switches_the_model() {
    let (mut app, port) = app();
    type_text(&mut app, "/model");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.popups.model().is_some());
    type_text(&mut app, "gpt");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().models, ["gpt-5"]);
    assert_eq!(app.model.id, "gpt-5");
}

#[test]
fn slash_commands_help_thinking_name_and_quit() {
    let (mut app, port) = app();
    app.run_command("help", "");
    app.run_command("thinking", "high");
    assert_eq!(app.thinking, ThinkingLevel::High);
    assert_eq!(port.log().thinking, [ThinkingLevel::High]);
    app.run_command("name", "refactor");
    assert_eq!(port.log().names, ["refactor"]);
    app.handle_host_event(HostEvent::Named("refactor".into()));
    assert_eq!(app.place.session_name.as_deref(), Some("refactor"));
    let s = screen(&mut app, 70, 150, Instant::now());
    assert!(
        s.contains("  Esc                              close the / list"),
        "{s}"
    );
    assert!(s.contains("  /thinking [level]  thinking level"), "{s}");
    assert!(s.contains("• refactor"), "{s}");
    type_text(&mut app, "/quit");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.take_effects(), [Effect::Quit]);
}

#[test]
fn a_large_paste_collapses_and_is_sent_whole() {
    let (mut app, port) = app();
    let big: String = (0..30).map(|i| format!("row {i}\n")).collect();
    app.handle_paste(&big);
    assert_eq!(app.editor.text(), "[paste #1 +30 lines]");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().prompts[0].0, big);
}

// ----- the session picker -----------------------------------------------------------------

fn saved(id: &str, name: Option<&str>, first: &str, cwd: &str, ago: u64, size: u64) -> SessionInfo {
    SessionInfo {
        path: std::path::PathBuf::from(format!("/sessions/{id}.jsonl")),
        id: id.into(),
        cwd: cwd.into(),
        name: name.map(Into::into),
        parent_session: None,
        created: String::new(),
        modified: std::time::SystemTime::now() - Duration::from_secs(ago),
        size,
        first_message: Some(first.into()),
    }
}

/// What the host would list for `scope`.
fn listing(scope: ListScope) -> HostEvent {
    let mut v = vec![
        saved(
            "a1b2c3",
            None,
            "fix the failing parser test",
            "/demo",
            300,
            812,
        ),
        saved(
            "d4e5f6",
            Some("Release notes"),
            "write the changelog",
            "/demo",
            3 * 3600 + 5,
            4300,
        ),
    ];
    if scope == ListScope::AllFolders {
        v.push(saved(
            "0789ab",
            None,
            "tune the database indexes",
            "/db",
            2 * 86_400 + 5,
            1_363_149,
        ));
    }
    HostEvent::Sessions { scope, sessions: v }
}

/// What the host answers when it opened `a1b2c3`.
fn opened(path: std::path::PathBuf) -> HostEvent {
    let call = AssistantMessage {
        content: vec![
            ContentBlock::text("Let me run the tests."),
            ContentBlock::ToolCall(ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "cargo test"}),
                intent: None,
                thought_signature: None,
            }),
        ],
        ..Default::default()
    };
    let result = ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text("test parser ... FAILED")],
        details: None,
        is_error: true,
        useless: false,
        timestamp: 0,
    };
    HostEvent::Opened(Box::new(Opened {
        path,
        session_id: "a1b2c3".into(),
        messages: vec![
            user_msg("fix the failing parser test"),
            AgentMessage::from(Message::Assistant(call)),
            AgentMessage::from(Message::ToolResult(result)),
            AgentMessage::from(Message::Assistant(assistant(vec![ContentBlock::text(
                "The **parser** test fails on empty input.",
            )]))),
        ],
        model: model("sonnet-test", "anthropic"),
        thinking: ThinkingLevel::High,
        name: None,
        warnings: Vec::new(),
        draft: None,
        from: crate::host::OpenedFrom::Resumed,
    }))
}

/// `/resume`, answered by the host with this folder's listing.
fn open_picker(app: &mut App, port: &Sent) {
    type_text(app, "/resume");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().listed.last(), Some(&ListScope::CurrentFolder));
    assert!(
        app.popups.sessions().is_none(),
        "the picker waits for the listing"
    );
    app.handle_host_event(listing(ListScope::CurrentFolder));
    assert!(app.popups.sessions().is_some());
}

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

// ----- themes -----------------------------------------------------------------------------

/// A mixed transcript drawn with `theme` on this thread: its text and its buffer.
fn themed_cells(theme: super::theme::Theme) -> (String, ratatui::buffer::Buffer) {
    super::theme::scoped(theme, || {
        let md = "# Title\n\nRun `cargo test`, see [docs](https://x.dev).";
        let cells = vec![
            Cell::User("hello".into()),
            Cell::assistant(assistant(vec![ContentBlock::text(md)]), false),
            Cell::Tool(ToolCell {
                id: "t1".into(),
                name: "edit".into(),
                args: Arc::new(json!({"path": "a.rs"})),
                state: ToolState::Done {
                    ok: true,
                    took: Duration::from_millis(10),
                },
                output: String::new(),
                diff: Some("-1 old\n+1 new".into()),
                saved: None,
            }),
            Cell::Error("boom".into()),
        ];
        let mut t = Transcript::default();
        for c in cells {
            t.push(c);
        }
        let rows = t.visible(40, 16, &view(Instant::now()));
        let mut term = Terminal::new(TestBackend::new(40, 16)).unwrap();
        term.draw(|f| f.render_widget(Paragraph::new(rows), f.area()))
            .unwrap();
        (term.backend().to_string(), term.backend().buffer().clone())
    })
}

/// Foreground and background of the first cell where `needle` starts.
fn colours_at(
    buf: &ratatui::buffer::Buffer,
    needle: &str,
) -> (ratatui::style::Color, ratatui::style::Color) {
    let area = buf.area;
    for y in 0..area.height {
        let row: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
        if let Some(byte) = row.find(needle) {
            let x = row[..byte].chars().count() as u16;
            let c = &buf[(x, y)];
            return (c.fg, c.bg);
        }
    }
    panic!("{needle:?} is not on screen");
}

/// Runs of same-coloured, non-blank text per row: what a reviewer needs to see a palette.
fn style_runs(buf: &ratatui::buffer::Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut runs: Vec<(ratatui::style::Color, ratatui::style::Color, String)> = Vec::new();
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            match runs.last_mut() {
                Some(r) if r.0 == c.fg && r.1 == c.bg => r.2.push_str(c.symbol()),
                _ => runs.push((c.fg, c.bg, c.symbol().to_string())),
            }
        }
        for (fg, bg, text) in runs {
            if !text.trim().is_empty() {
                out.push_str(&format!("{y:>2} {fg:?}/{bg:?} {:?}\n", text.trim_end()));
            }
        }
    }
    out
}

#[test]
fn the_light_theme_draws_the_same_text_in_its_own_colours() {
    use super::theme::Theme;
    use ratatui::style::Color;
    let (dark_text, dark) = themed_cells(Theme::DARK);
    let (light_text, light) = themed_cells(Theme::LIGHT);
    assert_eq!(dark_text, light_text, "themes change colours, not text");
    for (buf, t) in [(&dark, Theme::DARK), (&light, Theme::LIGHT)] {
        assert_eq!(colours_at(buf, "hello"), (t.user_fg, t.user_bg));
        assert_eq!(colours_at(buf, "Title").0, t.heading_1);
        assert_eq!(colours_at(buf, "cargo test").0, t.code);
        assert_eq!(colours_at(buf, "docs").0, t.link);
        assert_eq!(colours_at(buf, "(https").0, t.dim);
        assert_eq!(colours_at(buf, "✓").0, t.success);
        assert_eq!(colours_at(buf, "+1 new").0, t.diff_added);
        assert_eq!(colours_at(buf, "-1 old").0, t.diff_removed);
        assert_eq!(colours_at(buf, "Error: boom").0, t.error);
    }
    // The dark palette is the UI's look from before themes: the existing snapshots hold.
    assert_eq!(
        colours_at(&dark, "hello"),
        (Color::White, Color::Indexed(236))
    );
    assert_eq!(colours_at(&dark, "Title").0, Color::Magenta);
    assert_ne!(colours_at(&light, "Title").0, Color::Magenta);
    insta::assert_snapshot!(style_runs(&light));
}

#[test]
fn the_theme_reaches_the_footer_editor_and_popups() {
    use super::theme::Theme;
    use crate::config::theme::{ColorValue, ThemeName};
    use ratatui::style::Color;
    let mut overrides = std::collections::BTreeMap::new();
    overrides.insert("accent".to_string(), ColorValue::Rgb(1, 2, 3));
    let theme = Theme::build(ThemeName::Light, &overrides);
    let now = Instant::now();
    let buf = super::theme::scoped(theme, || {
        let (mut app, _) = app();
        type_text(&mut app, "/");
        let mut term = Terminal::new(TestBackend::new(60, 16)).unwrap();
        term.draw(|f| render::draw(f, &mut app, now)).unwrap();
        term.backend().buffer().clone()
    });
    assert_eq!(colours_at(&buf, "~/src/demo").0, theme.dim);
    assert_eq!(
        colours_at(&buf, "─").0,
        theme.thinking[3],
        "medium thinking rule"
    );
    // The selected completion uses the overridden accent.
    let selected = (0..16)
        .flat_map(|y| (0..60).map(move |x| (x, y)))
        .map(|p| buf[p].fg)
        .any(|fg| fg == Color::Rgb(1, 2, 3));
    assert!(selected, "{}", style_runs(&buf));
}

// ----- failures reach the screen ----------------------------------------------------------

/// A provider that crashes on every call.
struct Crashing;

impl crate::agent::protocol::stream::Provider for Crashing {
    fn stream(
        &self,
        _request: crate::agent::protocol::stream::ProviderRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> crate::agent::protocol::stream::EventStream {
        panic!("the provider fell over")
    }
}

#[tokio::test]
async fn a_run_that_crashed_shows_its_error_and_the_app_is_idle_again() {
    use crate::agent::engine::facade::{Agent, AgentSettings};
    let agent = Agent::new(AgentSettings::new(
        std::sync::Arc::new(Crashing),
        crate::agent::protocol::stream::Model::new("ollama", "openai-completions", "qwen3:8b"),
    ));
    let mut events = agent.subscribe();
    let (mut app, _port) = app();
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    agent.prompt_text("hello").unwrap();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("the run ends")
            .expect("events");
        let end = matches!(e.event, AgentEvent::AgentEnd { .. });
        app.handle_run_event(e);
        if end {
            break;
        }
    }
    assert!(!app.is_busy(), "the app is idle after the failed run");
    let s = screen(&mut app, 70, 14, Instant::now());
    assert!(s.contains("the provider fell over"), "{s}");
    // And the agent takes the next prompt.
    assert!(agent.prompt_text("again").is_ok());
}

#[test]
fn a_session_write_failure_is_shown_as_an_error_with_its_controls_visible() {
    let (mut app, _port) = app();
    app.handle_host_event(HostEvent::SessionWriteFailed(
        "cannot write session file /x/\u{1b}]0;evil\u{7}.jsonl: No space left on device".into(),
    ));
    let s = screen(&mut app, 100, 12, Instant::now());
    assert!(s.contains("The session file could not be written"), "{s}");
    assert!(s.contains("space left on device"), "{s}");
    assert!(s.contains("␛]0;evil␇"), "{s}");
}

#[test]
fn a_notice_that_arrives_while_an_answer_streams_is_shown_after_it() {
    let (mut app, _port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("write a lot"),
    });
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    let long = "z".repeat(3000);
    let _ = screen(&mut app, 100, 20, Instant::now());
    // The host's report comes in before the agent's message_end is folded in.
    app.handle_host_event(HostEvent::SessionWriteFailed(format!(
        "cannot write session file /tmp/{}/x.jsonl: disk full",
        "a-b".repeat(50)
    )));
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(assistant(vec![ContentBlock::text(
            &long,
        )]))),
    });
    app.handle_agent_event(AgentEvent::AgentEnd {
        messages: vec![],
        telemetry: None,
        coverage: None,
    });
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(s.contains("could not be written"), "{s}");
    assert!(s.contains("disk full"), "{s}");
}

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

fn tree_of(session: &crate::session::Session) -> crate::host::SessionTree {
    let leaf = session.leaf_id().map(str::to_string);
    crate::host::SessionTree {
        rows: crate::session::tree::tree_rows(session, leaf.as_deref()),
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
    app.editor.set_text(text);
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
    assert_eq!(app.editor.text(), "try approach B instead");
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
        crate::session::context::branch_summary_message("Tried approach A; too slow.", 0),
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
    let text = include_str!("../../tests/fixtures/node_v3_tree_session.jsonl");
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
    assert_eq!(app.editor.text(), "fix the parser ");
    app.handle_key(alt('b'));
    app.handle_key(alt('b'));
    type_text(&mut app, "old ");
    assert_eq!(app.editor.text(), "fix old the parser ");
    app.handle_key(alt('f'));
    app.handle_key(ctrl('k'));
    assert_eq!(app.editor.text(), "fix old the");
    app.handle_key(ctrl('u'));
    assert_eq!(
        app.editor.text(),
        "",
        "Ctrl+U deletes to the line start, it does not undo"
    );
    type_text(&mut app, "abc");
    app.handle_key(ctrl('a'));
    type_text(&mut app, ">");
    app.handle_key(ctrl('e'));
    type_text(&mut app, "<");
    assert_eq!(app.editor.text(), ">abc<");

    // A backslash before Enter is a line break; Enter alone sends.
    app.editor.clear();
    type_text(&mut app, "line one\\");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "line two");
    assert_eq!(app.editor.text(), "line one\nline two");
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
    assert_eq!(app.steering.len(), 1);
    app.handle_key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT));
    assert_eq!(sent.log().took_queued, 1);
    assert!(app.steering.is_empty());
    app.handle_host_event(HostEvent::Queued(vec![user_msg("steer this")]));
    assert_eq!(app.editor.text(), "steer this");
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

#[test]
fn ctrl_p_cycles_the_scoped_models_with_their_levels() {
    let (mut app, port) = app();
    let ctrl = KeyModifiers::CONTROL;
    // Without a scope: the models whose provider has a key.
    app.providers_without_key = ["openai".to_string()].into_iter().collect();
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    assert_eq!(app.model.id, "claude-sonnet-4-5");
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    assert_eq!(app.model.id, "qwen3:8b", "openai has no key and is skipped");
    // With a scope: its order and levels, backwards with Shift.
    app.scoped_models = vec![
        (model("qwen3:8b", "ollama"), None),
        (model("gpt-5", "openai"), Some(ThinkingLevel::High)),
        (
            model("claude-sonnet-4-5", "anthropic"),
            Some(ThinkingLevel::Low),
        ),
    ];
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    assert_eq!(
        (app.model.id.as_str(), app.thinking),
        ("gpt-5", ThinkingLevel::High)
    );
    app.handle_key(with(KeyCode::Char('p'), ctrl | KeyModifiers::SHIFT));
    assert_eq!(app.model.id, "qwen3:8b");
    app.handle_key(with(KeyCode::Char('P'), ctrl | KeyModifiers::SHIFT));
    assert_eq!(
        (app.model.id.as_str(), app.thinking),
        ("claude-sonnet-4-5", ThinkingLevel::Low)
    );
    assert_eq!(
        port.log().models,
        [
            "claude-sonnet-4-5",
            "qwen3:8b",
            "gpt-5",
            "qwen3:8b",
            "claude-sonnet-4-5"
        ]
    );
    // A scope of one model it is already on says so.
    app.scoped_models = vec![(model("claude-sonnet-4-5", "anthropic"), None)];
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    let s = screen(&mut app, 100, 30, Instant::now());
    assert!(s.contains("No other model to switch to"), "{s}");
}

#[test]
fn the_picker_opens_on_the_current_model_marks_keyless_ones_and_edits_its_filter() {
    let (mut app, _port) = app();
    app.model = model("my-local-model", "ollama");
    app.providers_without_key = ["openai".to_string()].into_iter().collect();
    app.run_command("model", "");
    let matches: Vec<String> = app.picker_matches().iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        matches[0], "my-local-model",
        "listed though not in the catalogue"
    );
    assert_eq!(app.popups.model().unwrap().selected, 0);
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("ollama/my-local-model  128k  (current)"), "{s}");
    assert!(s.contains("openai/gpt-5  128k  no key"), "{s}");
    type_text(&mut app, "gpt five");
    let ctrl = KeyModifiers::CONTROL;
    app.handle_key(with(KeyCode::Char('w'), ctrl));
    assert_eq!(app.popups.model().unwrap().query, "gpt ");
    app.handle_key(with(KeyCode::Char('u'), ctrl));
    assert_eq!(app.popups.model().unwrap().query, "");
    app.handle_key(key(KeyCode::Esc));
    // Reopened on a catalogued model, the selection starts on it.
    app.model = model("gpt-5", "openai");
    app.run_command("model", "");
    let p = app.popups.model().unwrap();
    assert_eq!(app.picker_matches()[p.selected].id, "gpt-5");
}

#[test]
fn the_picker_takes_an_uncatalogued_id_as_model_and_rpc_take_it() {
    let (mut app, port) = app();
    let catalog = std::sync::Arc::new(crate::provider::catalog::Catalog::builtin(&|_| None));
    app.catalog = Some(catalog.clone());
    // `/model provider/id` naming an id the catalogue does not list, on a known provider.
    app.run_command("model", "anthropic/claude-opus-9");
    let named: Vec<String> = app
        .picker_matches()
        .iter()
        .map(|m| format!("{}/{}", m.provider, m.id))
        .collect();
    assert_eq!(named, ["anthropic/claude-opus-9"]);
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().models, ["claude-opus-9"]);
    assert_eq!(app.model.id, "claude-opus-9");
    // The warning is the one `--model` and RPC `set_model` give.
    let (_, warning) =
        crate::setup::select::model_by_id(&catalog, "anthropic", "claude-opus-9", None).unwrap();
    let warning = warning.expect("an uncatalogued id is warned about");
    let s = screen(&mut app, 400, 30, Instant::now());
    assert!(s.contains(&warning), "{s}");
    // An unknown provider names nothing, as it is refused there.
    app.run_command("model", "nobody/x");
    assert!(app.picker_matches().is_empty());
    // Typing the id in the open picker names it too.
    app.handle_key(key(KeyCode::Esc));
    app.run_command("model", "");
    type_text(&mut app, "openai/gpt-9");
    assert_eq!(app.picker_matches()[0].id, "gpt-9");
}

#[test]
fn shift_tab_on_a_model_that_does_not_reason_says_so() {
    let (mut app, port) = app();
    let mut plain = model("llama3", "ollama");
    plain.reasoning = false;
    app.model = plain;
    app.thinking = ThinkingLevel::Off;
    app.handle_key(key(KeyCode::BackTab));
    assert!(port.log().thinking.is_empty());
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(s.contains("llama3 does not reason"), "{s}");
}

#[test]
fn the_start_header_shows_model_folder_and_keys_until_the_first_prompt() {
    let (mut app, _port) = app();
    app.show_header("9.9.9", true);
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(
        s.contains("pi 9.9.9 · ollama/qwen3:8b · thinking medium · ~/src/demo"),
        "{s}"
    );
    assert!(
        s.contains("/help commands · Esc interrupt · Ctrl+D quit"),
        "{s}"
    );
    app.run_command("thinking", "high");
    let s = screen(&mut app, 100, 40, Instant::now());
    assert!(s.contains("pi 9.9.9"), "a command keeps it: {s}");
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    let s = screen(&mut app, 100, 40, Instant::now());
    assert!(!s.contains("pi 9.9.9"), "{s}");
}

#[test]
fn the_start_header_names_the_sandbox_when_there_is_one() {
    let (mut app, _port) = app();
    app.sandbox = Some("sandbox read-only (Landlock ABI 7)".into());
    app.show_header("9.9.9", true);
    let s = screen(&mut app, 120, 20, Instant::now());
    assert!(
        s.contains("~/src/demo · sandbox read-only (Landlock ABI 7)"),
        "{s}"
    );
}

#[test]
fn login_takes_a_pasted_key_without_showing_it_and_switches_model() {
    let (mut app, port) = app();
    app.key_providers = vec![
        ("anthropic".into(), Some("ANTHROPIC_API_KEY".into())),
        ("groq".into(), Some("GROQ_API_KEY".into())),
    ];
    app.providers_without_key = ["anthropic".to_string(), "groq".to_string()]
        .into_iter()
        .collect();
    app.show_welcome("No model to talk to.");
    app.run_command("login", "");
    assert_eq!(port.log().local_searches, 1);
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("looking for local servers"), "{s}");
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Enter));
    app.handle_paste("gsk-very-secret-key");
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("API key for groq"), "{s}");
    assert!(
        s.contains("•••") && !s.contains("gsk-very-secret-key"),
        "{s}"
    );
    app.handle_key(key(KeyCode::Enter));
    assert!(app.popups.login().is_none());
    assert_eq!(
        port.log().logins,
        [("groq".to_string(), "gsk-very-secret-key".to_string())]
    );
    assert!(app.editor.is_empty(), "the key never reaches the editor");
    let mut groq = model("openai/gpt-oss-120b", "groq");
    groq.reasoning = true;
    app.handle_host_event(HostEvent::LoggedIn(crate::host::login::LoggedIn {
        provider: "groq".into(),
        file: Some(std::path::PathBuf::from("/nowhere/auth.json")),
        model: Some(groq),
    }));
    assert_eq!(app.model.id, "openai/gpt-oss-120b");
    assert!(!app.providers_without_key.contains("groq"));
    let s = screen(&mut app, 100, 30, Instant::now());
    assert!(s.contains("Welcome to pi. No model is ready yet."), "{s}");
    assert!(
        s.contains(
            "Saved the key for groq in /nowhere/auth.json · model: groq/openai/gpt-oss-120b"
        ),
        "{s}"
    );
    assert!(!s.contains("gsk-very-secret-key"));
}

#[test]
fn login_offers_local_servers_first() {
    let (mut app, port) = app();
    app.key_providers = vec![("anthropic".into(), None)];
    app.run_command("login", "");
    app.handle_host_event(HostEvent::LocalModels(vec![model("qwen3:8b", "ollama")]));
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(
        s.contains("ollama/qwen3:8b  local server, no key needed"),
        "{s}"
    );
    app.model = model("claude-sonnet-4-5", "anthropic");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.model.id, "qwen3:8b");
    assert_eq!(port.log().models, ["qwen3:8b"]);
}

#[test]
fn slash_mcp_asks_the_host_and_lists_the_servers() {
    use crate::host::view::{ServerState, ServerStatus, ToolEntry};
    let (mut app, port) = app();
    let names: Vec<_> = app
        .commands
        .completions("/mc")
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(names, ["mcp"]);
    type_text(&mut app, "/mcp");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().mcp_status, 1);
    app.handle_host_event(HostEvent::McpStatus(vec![
        ServerStatus {
            name: "docs".into(),
            endpoint: "docs-server --stdio".into(),
            state: ServerState::Ready,
            tools: vec![
                ToolEntry {
                    name: "mcp__docs__search".into(),
                    remote: "search".into(),
                },
                ToolEntry {
                    name: "mcp__docs__fetch".into(),
                    remote: "fetch".into(),
                },
            ],
        },
        ServerStatus {
            name: "web".into(),
            endpoint: "http://127.0.0.1:9/mcp".into(),
            state: ServerState::Starting,
            tools: vec![],
        },
        ServerStatus {
            name: "gone".into(),
            endpoint: "nope".into(),
            state: ServerState::Failed("cannot run `nope`: not found".into()),
            tools: vec![],
        },
        ServerStatus {
            name: "off".into(),
            endpoint: "x".into(),
            state: ServerState::Disabled,
            tools: vec![],
        },
    ]));
    let s = screen(&mut app, 80, 30, Instant::now());
    for line in [
        "MCP servers:",
        "docs (docs-server --stdio): ready with 2 tools",
        "mcp__docs__search",
        "mcp__docs__fetch",
        "web (http://127.0.0.1:9/mcp): starting",
        "gone (nope): failed: cannot run `nope`: not found",
        "off (x): disabled",
    ] {
        assert!(s.contains(line), "missing {line:?} in\n{s}");
    }
}

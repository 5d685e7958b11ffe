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
use super::port::Port;
use super::render;
use super::transcript::{Scroll, Transcript};
use crate::agent::protocol::command::WhenBusy;
use crate::agent::protocol::events::AgentEvent;
use crate::agent::protocol::stream::StreamEvent;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::tool::ToolOutput;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Message, StopReason, ThinkingContent, ToolCall,
    ToolResultMessage, Usage,
};
use crate::host::view::{ListScope, SessionInfo};
use crate::host::{Commands, HostEvent, Op, OpBody, Opened};
use crate::provider::catalog::ModelInfo;

mod approval;
mod attach;
mod cells;
mod components;
mod dialect;
mod driving;
mod editing;
mod failures;
mod inline;
mod keys;
mod models;
mod resume;
mod streaming;
mod themes;
mod tree;
mod truthful;
mod work;

/// What the app sent to the host, sorted by kind.
#[derive(Default)]
struct Log {
    /// Prompts with how they are delivered while a run is active.
    prompts: Vec<(String, WhenBusy)>,
    /// Prompts sent with files: the text, the files' names, the delivery.
    with_files: Vec<(String, Vec<String>, WhenBusy)>,
    aborts: usize,
    took_queued: usize,
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
    rewind_plans: Vec<String>,
    plan_modes: Vec<bool>,
    restores: Vec<(String, bool, bool)>,
    rewinds: Vec<(String, crate::host::rewind::RewindMode, bool)>,
    summarized: Vec<(String, Option<String>)>,
    labels: Vec<(String, Option<String>)>,
    forks: Vec<String>,
    clones: usize,
    renamed: Vec<(std::path::PathBuf, String)>,
    deleted: Vec<std::path::PathBuf>,
    logins: Vec<(String, String)>,
    /// Sign-in operations, in order (`sign-in P`, `paste L`, `cancel`, `logout P`).
    sign_ins: Vec<String>,
    local_searches: usize,
    approvals: Vec<(u64, crate::approval::Decision)>,
    approval_modes: Vec<crate::approval::ApprovalMode>,
    mcp_status: usize,
}

/// The receiving end of the app's port.
struct Sent {
    rx: RefCell<tokio::sync::mpsc::UnboundedReceiver<Op>>,
    log: RefCell<Log>,
}

impl Sent {
    /// Everything sent so far.
    fn log(&self) -> std::cell::Ref<'_, Log> {
        let mut rx = self.rx.borrow_mut();
        let mut log = self.log.borrow_mut();
        while let Ok(op) = rx.try_recv() {
            match op.body {
                // Sorted as the UI decided: plain text, or with files to read.
                OpBody::Prompt(p)
                    if p.files.is_empty() && !crate::attach::mentions::any(&p.text) =>
                {
                    log.prompts.push((p.text, p.when_busy))
                }
                OpBody::Prompt(p) => log.with_files.push((
                    p.text,
                    p.files.into_iter().map(|f| f.name).collect(),
                    p.when_busy,
                )),
                OpBody::Abort { .. } => log.aborts += 1,
                OpBody::Compact { focus } => log.compacts.push(focus),
                OpBody::TakeQueued => log.took_queued += 1,
                OpBody::SetModel { id, .. } => log.models.push(id),
                OpBody::SetThinking { level } => log.thinking.push(level),
                OpBody::ListSessions { scope } => log.listed.push(scope),
                OpBody::OpenSession { path } => log.opened.push(path),
                OpBody::NameSession { name } => log.names.push(name),
                OpBody::Export { path } => log.exports.push(path),
                OpBody::Stats => log.stats += 1,
                OpBody::McpStatus => log.mcp_status += 1,
                OpBody::NewSession => log.new_sessions += 1,
                OpBody::Tree => log.trees += 1,
                OpBody::Shell { command, include } => log.shells.push((command, include)),
                OpBody::Login { provider, key } => log.logins.push((provider, key.0)),
                OpBody::FindLocalModels => log.local_searches += 1,
                OpBody::SignIn { provider } => log.sign_ins.push(format!("sign-in {provider}")),
                OpBody::SignInPaste { line } => log.sign_ins.push(format!("paste {line}")),
                OpBody::CancelSignIn => log.sign_ins.push("cancel".into()),
                OpBody::Logout { provider } => log.sign_ins.push(format!("logout {provider}")),
                OpBody::Approve { request, decision } => log.approvals.push((request, decision)),
                OpBody::SetApproval { mode } => log.approval_modes.push(mode),
                OpBody::Navigate { target } => log.navigated.push(target),
                OpBody::RewindPlan { target } => log.rewind_plans.push(target),
                OpBody::SetPlanMode { on } => log.plan_modes.push(on),
                OpBody::RestoreFiles {
                    target,
                    force,
                    record,
                } => log.restores.push((target, force, record)),
                OpBody::Rewind {
                    target,
                    mode,
                    force,
                } => log.rewinds.push((target, mode, force)),
                OpBody::NavigateSummarized { target, focus } => {
                    log.summarized.push((target, focus))
                }
                OpBody::Label { target, label } => log.labels.push((target, label)),
                OpBody::Fork { target } => log.forks.push(target),
                OpBody::Clone => log.clones += 1,
                OpBody::RenameSession { path, name, .. } => log.renamed.push((path, name)),
                OpBody::DeleteSession { path, .. } => log.deleted.push(path),
                other => panic!("unexpected operation {other:?}"),
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

//! The app state: what the screen shows, and what keys and agent events do to it.
//!
//! [`App`] is driven by two inputs, both synchronous and cheap: [`App::handle_key`] (and
//! paste/mouse) and [`App::handle_agent_event`]. It talks to the agent only through
//! its [`Port`] to the host, whose answers come back through [`App::handle_run_event`] and
//! [`App::handle_host_event`], so tests drive it with a port on a plain channel and hand-made
//! events. Side effects that need the terminal (quit, suspend, OSC 52 copy, the external
//! editor, a notification) are returned as [`Effect`]s for the loop in `mod.rs` to carry out. Drawing lives in
//! `render.rs`. Keys are looked up in the [`Keymap`] (the Node.js pi's action ids, remappable
//! in keybindings.json); popups keep their own keys.
//!
//! Running-turn input: Enter sends, or steers while a run is active; Alt+Enter queues a
//! follow-up; the queues are the agent's, shown from its `queue_update` events (and a run that
//! ends with messages still queued is continued with them). Esc aborts the run and brings the
//! queued texts back into the editor, ahead of anything typed since.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use super::cells::{self, Cell, ToolCell, ToolState, View, output_text};
use super::complete::{self, Completion};
use super::editor::{Edit, Editor};
use super::files::FileIndex;
use super::keymap::{Action, Keymap};
use super::popup::file_picker::{self, FilePicker};
use super::popup::model::{self, Catalogue, ModelPicker};
use super::popup::sessions::SessionPicker;
use super::popup::tree::{LeaveWith, TreeAction, TreePurpose, TreeView};
use super::popup::{self, Popup};
pub use super::port::Delivery;
use super::port::{Port, shown_text, typed_text};
use super::sanitize::sanitize;
use super::slash;
use super::transcript::Transcript;
use crate::agent::protocol::events::{AgentEvent, CompactionReason, RunEvent, RunId};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, Message, StopReason, Usage, UsageTotals,
};
use crate::approval::{ApprovalMode, Decision};
use crate::attach::{self, FileRef};
use crate::host::view::ListScope;
use crate::host::{HostEvent, Opened, SessionStats};
use crate::provider::catalog::ModelInfo;

/// What the loop must do outside the app state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    Quit,
    Suspend,
    /// Put text on the clipboard with OSC 52.
    Copy(String),
    /// Ctrl+G: edit this text (the editor's, paste markers expanded) in `$VISUAL`/`$EDITOR`,
    /// then hand the result to [`App::external_edit_done`].
    ExternalEditor(String),
    /// Something needs the person (a run ended, an approval waits): tell them if the terminal
    /// is not focused (see `notify.rs`).
    Notify(String),
}

/// What the footer shows about where we are.
#[derive(Clone, Debug, Default)]
pub struct Place {
    pub cwd: String,
    pub branch: Option<String>,
    pub session_name: Option<String>,
}

/// Two presses of Esc this close together (with nothing to stop) open the tree.
const DOUBLE_ESC: Duration = Duration::from_millis(500);

pub struct App {
    port: Port,
    pub transcript: Transcript,
    pub editor: Editor,
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
    /// When the current run started.
    pub working: Option<Instant>,
    /// Esc was pressed: the run is ending (the status line stops at once).
    pub stopping: bool,
    pub retry: Option<String>,
    pub show_thinking: bool,
    pub expand_tools: bool,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub models: Vec<ModelInfo>,
    /// The catalogue, to name a model it does not list by `provider/id` in the picker.
    pub catalog: Option<std::sync::Arc<crate::provider::catalog::Catalog>>,
    /// The models Ctrl+P cycles through (`--models` / `enabled_models`), with the level each
    /// pattern names; empty: every model whose provider has a key.
    pub scoped_models: Vec<(ModelInfo, Option<ThinkingLevel>)>,
    /// Providers with no key (marked in the model picker, skipped by Ctrl+P).
    pub providers_without_key: std::collections::HashSet<String>,
    /// The start-up header's cell, blanked when the first prompt is sent.
    header_cell: Option<usize>,
    /// Providers that take an API key, for `/login`.
    pub key_providers: Vec<(String, Option<String>)>,
    /// The open popups (model and session pickers, tree, login); keys go to the top one.
    pub popups: popup::Stack,
    /// Tool calls waiting for the person's approval.
    pub approval: super::popup::approval::ApprovalPrompt,
    /// How tool calls that can change things are approved (Alt+A cycles it).
    pub approval_mode: ApprovalMode,
    /// When the person paused the agent (Ctrl+S), while it stays paused.
    pub paused_since: Option<Instant>,
    pub place: Place,
    /// Running totals for the footer.
    pub totals: UsageTotals,
    /// Sessions are saved in this run (not `--no-session`).
    pub saving: bool,
    /// The sandbox in a few words, for the start-up header (`None`: off).
    pub sandbox: Option<String>,
    /// `/resume` asked for a listing that has not arrived yet.
    awaiting_sessions: bool,
    /// A move in the tree waits for the summary of the branch it leaves.
    summarizing: bool,
    /// The cells of `!` commands sent, oldest first (the host runs them in order).
    shell_cells: std::collections::VecDeque<usize>,
    /// The status line shows work because of a `!` command (not a run).
    shell_owns_status: bool,
    /// `/tree` or `/fork` asked for the tree, which has not arrived yet.
    awaiting_tree: Option<TreePurpose>,
    /// When Esc was last pressed with nothing to stop (twice quickly opens the tree).
    last_idle_esc: Option<Instant>,
    /// The text of the last finished answer (for `/copy`).
    last_answer: Option<String>,
    /// How the last reply ended (a run that ended normally takes what is still queued).
    last_stop: Option<StopReason>,
    /// Events of runs up to this one belong to a session that was left (`/new`).
    stale_runs: RunId,
    /// The session's folder (paths typed or pasted are relative to it).
    pub cwd: PathBuf,
    /// Files and images waiting to go with the next prompt (shown as chips above the editor).
    pub attachments: Vec<FileRef>,
    /// The folder's files for the `@` picker (listed when first needed).
    pub files: FileIndex,
    /// The `@` picker, when open.
    pub file_picker: Option<FilePicker>,
    /// The `/` completion list was dismissed with Esc for the current text.
    pub completion_dismissed: bool,
    pub completion_selected: usize,
    /// A transient hint in the status line (e.g. "press Ctrl+C again to quit").
    pub hint: Option<String>,
    streaming: Option<usize>,
    tools: HashMap<String, usize>,
    last_ctrl_c: Option<Instant>,
    /// Estimated tokens of the messages after the last reply that reported usage.
    context_after: u64,
    /// Size of the transcript viewport at the last draw (for paging).
    pub viewport: (u16, u16),
    pub dirty: bool,
    effects: Vec<Effect>,
    /// Which key does what (the defaults, or keybindings.json over them); set with
    /// [`App::set_keys`].
    pub keys: Keymap,
    /// How collapsed output names the key that expands it.
    expand_key: std::sync::Arc<str>,
    /// What can be typed after `/`.
    pub commands: slash::CommandTable,
    /// A model was chosen (at start-up, or since); with its provider's key it is ready.
    model_chosen: bool,
}

impl App {
    pub fn new(port: Port, model: ModelInfo, thinking: ThinkingLevel) -> Self {
        App {
            port,
            transcript: Transcript::default(),
            editor: Editor::default(),
            steering: Vec::new(),
            follow_up: Vec::new(),
            working: None,
            stopping: false,
            retry: None,
            show_thinking: true,
            expand_tools: false,
            model,
            thinking,
            models: Vec::new(),
            catalog: None,
            scoped_models: Vec::new(),
            providers_without_key: Default::default(),
            header_cell: None,
            key_providers: Vec::new(),
            popups: popup::Stack::default(),
            approval: Default::default(),
            approval_mode: ApprovalMode::default(),
            paused_since: None,
            place: Place::default(),
            totals: UsageTotals::default(),
            saving: true,
            sandbox: None,
            awaiting_sessions: false,
            summarizing: false,
            shell_cells: Default::default(),
            shell_owns_status: false,
            awaiting_tree: None,
            last_idle_esc: None,
            last_answer: None,
            last_stop: None,
            stale_runs: 0,
            cwd: PathBuf::from("."),
            attachments: Vec::new(),
            files: FileIndex::lazy(PathBuf::from(".")),
            file_picker: None,
            completion_dismissed: false,
            completion_selected: 0,
            hint: None,
            streaming: None,
            tools: HashMap::new(),
            last_ctrl_c: None,
            context_after: 0,
            viewport: (80, 20),
            dirty: true,
            effects: Vec::new(),
            keys: Keymap::default(),
            expand_key: "Ctrl+O".into(),
            commands: slash::CommandTable::default(),
            model_chosen: true,
        }
    }

    /// Use these keys (keybindings.json over the defaults); hints name them from now on.
    pub fn set_keys(&mut self, keys: Keymap) {
        self.expand_key = super::help::key_or(&keys, Action::ToolsExpand, "/help").into();
        self.keys = keys;
        self.transcript.invalidate_view();
    }

    /// Whether a model was chosen at start-up (`false`: none was found).
    pub fn set_model_chosen(&mut self, chosen: bool) {
        self.model_chosen = chosen;
    }

    /// A model is chosen and its provider has a key: prompts can go to it.
    pub fn model_ready(&self) -> bool {
        self.model_chosen && !self.providers_without_key.contains(&self.model.provider)
    }

    /// Work in `cwd`: paths are relative to it and the `@` picker lists it.
    pub fn set_cwd(&mut self, cwd: PathBuf) {
        self.files = FileIndex::lazy(cwd.clone());
        self.cwd = cwd;
    }

    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn view(&self, now: Instant) -> View {
        View {
            show_thinking: self.show_thinking,
            expand_tools: self.expand_tools,
            now,
            expand_key: self.expand_key.clone(),
        }
    }

    /// Something on screen moves by itself (spinner, elapsed time, a file list growing under
    /// the open `@` picker).
    pub fn animating(&self) -> bool {
        (self.working.is_some() && !self.stopping)
            || self.paused_since.is_some()
            || (self.file_picker.is_some() && self.files.is_listing())
    }

    /// A run is active (or a prompt was just sent to start one).
    pub fn is_busy(&self) -> bool {
        self.working.is_some()
    }

    /// The `/` completions to show, if any.
    pub fn completions(&self) -> Vec<&slash::Command> {
        if self.completion_dismissed || self.editor.line_count() > 1 {
            return Vec::new();
        }
        self.commands.completions(&self.editor.text())
    }

    // ----- agent events -------------------------------------------------------------------

    /// An event from the agent, with its run; events of a session left behind are dropped.
    pub fn handle_run_event(&mut self, event: RunEvent) {
        if event.run.is_some_and(|r| r <= self.stale_runs) {
            return;
        }
        self.handle_agent_event(event.event);
    }

    pub fn handle_agent_event(&mut self, event: AgentEvent) {
        self.dirty = true;
        match event {
            AgentEvent::AgentStart => {
                if self.working.is_none() {
                    self.working = Some(Instant::now());
                }
            }
            AgentEvent::AgentEnd { .. } => {
                // Whatever still waited for an answer was refused by the run's end.
                self.approval.clear();
                self.working = None;
                self.stopping = false;
                self.retry = None;
                self.finish_streaming();
                // Messages queued as the run was ending would otherwise wait for the next
                // prompt; an error or abort keeps them queued for the person to decide.
                let ended_well = !matches!(
                    self.last_stop,
                    Some(StopReason::Error | StopReason::Aborted)
                );
                if ended_well && (!self.steering.is_empty() || !self.follow_up.is_empty()) {
                    // Shown as working once the run starts (the queue may have emptied).
                    self.port.continue_run();
                } else {
                    self.effects.push(Effect::Notify(
                        match self.last_stop {
                            Some(StopReason::Error) => "the run ended with an error",
                            Some(StopReason::Aborted) => "the run was stopped",
                            _ => "the run is done",
                        }
                        .into(),
                    ));
                }
                for (_, idx) in self.tools.drain() {
                    if let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                        && matches!(t.state, ToolState::Running { .. })
                    {
                        t.state = ToolState::Skipped;
                    }
                }
            }
            AgentEvent::TurnStart | AgentEvent::TurnEnd { .. } => {}
            AgentEvent::MessageStart { message } => match message.as_llm() {
                Some(Message::User(_)) => {
                    if !self.transcript.is_empty()
                        && !matches!(self.transcript.last(), Some(Cell::Divider))
                    {
                        self.transcript.push(Cell::Divider);
                    }
                    self.transcript.push(Cell::User(shown_text(&message)));
                }
                Some(Message::Assistant(a)) => {
                    self.finish_streaming();
                    let idx = self.transcript.push(Cell::assistant(a.clone(), true));
                    self.streaming = Some(idx);
                }
                _ => {}
            },
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                if let Some(idx) = self.streaming
                    && let Some(Cell::Assistant(a)) = self.transcript.get_mut(idx)
                {
                    a.builder.apply(&assistant_message_event);
                }
            }
            AgentEvent::MessageEnd { message } => {
                self.count_after(&message);
                if let Some(Message::Assistant(a)) = message.as_llm() {
                    let idx = match self.streaming.take() {
                        Some(i) => i,
                        None => self.transcript.push(Cell::assistant(a.clone(), false)),
                    };
                    if let Some(cell) = self.transcript.get_mut(idx) {
                        *cell = Cell::assistant(a.clone(), false);
                    }
                    self.add_usage(&a.usage);
                    if !a.is_retried_attempt() {
                        self.last_stop = Some(a.stop_reason);
                        let text = a.text();
                        if !text.trim().is_empty() {
                            self.last_answer = Some(text);
                        }
                    }
                    self.push_stop_cell(a);
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                ..
            } => {
                let idx = self.transcript.push(Cell::Tool(ToolCell {
                    id: tool_call_id.clone(),
                    name: tool_name,
                    args,
                    state: ToolState::Running {
                        started: Instant::now(),
                    },
                    output: String::new(),
                    diff: None,
                    saved: None,
                }));
                self.tools.insert(tool_call_id, idx);
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                if let Some(&idx) = self.tools.get(&tool_call_id)
                    && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                {
                    t.output = sanitize(&output_text(&partial_result.content));
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => {
                if let Some(idx) = self.tools.remove(&tool_call_id)
                    && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                {
                    t.state = match (&t.state, result.never_ran()) {
                        (_, true) => ToolState::Skipped,
                        (ToolState::Running { started }, _) => ToolState::Done {
                            ok: !is_error,
                            took: started.elapsed(),
                        },
                        _ => ToolState::Done {
                            ok: !is_error,
                            took: Duration::ZERO,
                        },
                    };
                    t.output = sanitize(&output_text(&result.content));
                    t.diff = result
                        .details
                        .get("diff")
                        .and_then(serde_json::Value::as_str)
                        .map(sanitize);
                }
            }
            AgentEvent::CompactionStart { reason } => {
                if self.working.is_none() {
                    self.working = Some(Instant::now());
                }
                self.retry = Some(match reason {
                    CompactionReason::Overflow => {
                        "Compacting context (the model said it was too long)...".into()
                    }
                    _ => "Compacting context...".into(),
                });
            }
            AgentEvent::CompactionEnd {
                reason,
                result,
                aborted,
                error_message,
                ..
            } => {
                self.retry = None;
                if reason == CompactionReason::Manual {
                    // `/compact` is a run of its own, with no agent_end.
                    self.working = None;
                    self.stopping = false;
                }
                match (result, aborted, error_message) {
                    (Some(r), _, _) => {
                        let expand =
                            super::help::key_or(&self.keys, Action::ToolsExpand, "expanding");
                        self.transcript.push(Cell::Notice(format!(
                            "Context compacted: {} → {} tokens ({expand} shows the whole summary)",
                            super::units::tokens(r.tokens_before),
                            super::units::tokens(r.tokens_after),
                        )));
                        self.transcript.push(Cell::Summary(cells::Summary {
                            kind: cells::SummaryKind::Compaction,
                            text: r.summary,
                        }));
                        self.totals.context = r.tokens_after;
                        self.context_after = 0;
                    }
                    (None, true, _) => {
                        self.transcript.push(Cell::Aborted(
                            "Compaction stopped; the conversation is as it was".into(),
                        ));
                    }
                    (None, false, e) => {
                        self.transcript.push(Cell::Error(format!(
                            "Compaction failed; the conversation is as it was: {}",
                            e.unwrap_or_else(|| "no reason given".into())
                        )));
                    }
                }
                self.transcript.follow();
            }
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                let wait = delay_ms as f64 / 1000.0;
                self.retry = Some(format!("Retrying ({attempt}/{max_attempts}) in {wait:.0}s"));
                self.transcript.push(Cell::Notice(format!(
                    "{} — retrying ({attempt}/{max_attempts}) in {wait:.1}s",
                    error_message
                )));
            }
            AgentEvent::AutoRetryEnd { .. } => self.retry = None,
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => {
                self.steering = steering;
                self.follow_up = follow_up;
            }
        }
    }

    fn finish_streaming(&mut self) {
        if let Some(idx) = self.streaming.take()
            && let Some(Cell::Assistant(a)) = self.transcript.get_mut(idx)
        {
            a.streaming = false;
        }
    }

    fn add_usage(&mut self, u: &Usage) {
        self.totals.add(u);
        if u.context_tokens() > 0 {
            self.context_after = 0;
        }
    }

    /// A message that counts toward the context after the last reported usage (a prompt, a
    /// tool result): estimated as the compaction accounting does.
    fn count_after(&mut self, message: &AgentMessage) {
        if message.as_assistant().is_none() {
            self.context_after += crate::agent::policy::compaction::estimate_tokens(message);
        }
    }

    /// Tokens in context, as compaction counts them: the last reply's usage plus estimates
    /// for what came after it.
    pub fn context_tokens(&self) -> u64 {
        self.totals.context + self.context_after
    }

    // ----- keys ---------------------------------------------------------------------------

    /// A paste (or a file dropped on the terminal, which pastes its path): image paths
    /// attach their images; anything else is text for the editor.
    pub fn handle_paste(&mut self, text: &str) {
        self.dirty = true;
        if self.approval.is_open() {
            self.approval.paste(text);
            return;
        }
        if let Some(l) = self.popups.login_mut() {
            l.paste(text);
            return;
        }
        if self.file_picker.is_none()
            && let Some(images) = attach::dropped::images(&self.cwd, text)
        {
            for image in images {
                if !self.attachments.iter().any(|a| a.path == image.path) {
                    self.attachments.push(image);
                }
            }
            return;
        }
        self.editor.paste(text);
        self.sync_file_picker();
    }

    pub fn handle_mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollUp => self.scroll_up(3),
            MouseEventKind::ScrollDown => self.scroll_down(3),
            _ => {}
        }
    }

    fn scroll_up(&mut self, rows: usize) {
        self.dirty = true;
        let view = self.view(Instant::now());
        let (w, h) = self.viewport;
        self.transcript
            .scroll_up(rows, w as usize, h as usize, &view);
    }

    fn scroll_down(&mut self, rows: usize) {
        self.dirty = true;
        let view = self.view(Instant::now());
        let (w, h) = self.viewport;
        self.transcript
            .scroll_down(rows, w as usize, h as usize, &view);
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        let actions = self.keys.actions(&key).to_vec();
        if !actions.contains(&Action::Clear) {
            self.hint = None;
        }
        if self.approval.is_open() {
            self.approval_key(key);
            return;
        }
        if !self.popups.is_empty() {
            self.popup_key(key);
            return;
        }
        if self.file_picker.is_some() && self.file_picker_key(key) {
            return;
        }
        // The first of the key's actions that applies (Ctrl+D quits only on an empty editor,
        // else deletes forward); a key with none types into the editor, unless it lost its
        // default action to keybindings.json.
        let done = actions.into_iter().any(|a| self.perform(a, key));
        if !done && !self.keys.released(&key) {
            self.unbound_key(key);
        }
        self.sync_file_picker();
    }

    /// Do what `action` means; false when it does not apply now.
    fn perform(&mut self, action: Action, key: KeyEvent) -> bool {
        let page = (self.viewport.1 as usize).saturating_sub(2).max(1);
        match action {
            Action::Interrupt => self.escape(),
            Action::Clear => self.clear_or_quit(),
            Action::Exit => {
                if !self.editor.is_empty() {
                    return false;
                }
                self.quit();
            }
            Action::Suspend => self.effects.push(Effect::Suspend),
            Action::ExternalEditor => self
                .effects
                .push(Effect::ExternalEditor(self.editor.expanded())),
            Action::ThinkingToggle => {
                self.show_thinking = !self.show_thinking;
                self.transcript.invalidate_view();
            }
            Action::ToolsExpand => {
                self.expand_tools = !self.expand_tools;
                self.transcript.invalidate_view();
            }
            Action::ModelSelect => self.open_picker(""),
            Action::ModelCycleForward => self.cycle_model(true),
            Action::ModelCycleBackward => self.cycle_model(false),
            Action::ThinkingCycle => self.cycle_thinking(),
            Action::ApprovalCycle => self.cycle_approval(),
            Action::PauseToggle => self.toggle_pause(),
            Action::FollowUp => self.submit(Delivery::FollowUp),
            Action::Dequeue => {
                if !self.steering.is_empty() || !self.follow_up.is_empty() {
                    self.port.take_queued();
                    self.steering.clear();
                    self.follow_up.clear();
                }
            }
            Action::SessionNew => self.run_command("new", ""),
            Action::SessionTree => self.open_tree(TreePurpose::Navigate),
            Action::SessionFork => self.open_tree(TreePurpose::Fork),
            Action::SessionResume => self.open_sessions(),
            Action::NewLine => self.editor.newline(),
            Action::Submit => {
                // Right after a `\` it is a line break (where Shift+Enter is not seen).
                if self.editor.backslash_newline() {
                    return true;
                }
                if let Some((name, takes_args, needs_args)) = self.selected_completion()
                    && self.editor.text() != format!("/{name}")
                    && !needs_args
                    && !takes_args
                {
                    self.editor.set_text(&format!("/{name}"));
                }
                self.submit(Delivery::Steer)
            }
            Action::Tab => {
                if let Some((name, takes_args, _)) = self.selected_completion() {
                    let suffix = if takes_args { " " } else { "" };
                    self.editor.set_text(&format!("/{name}{suffix}"));
                } else {
                    self.complete_path();
                }
            }
            Action::CursorUp => {
                if !self.completions().is_empty() {
                    self.completion_selected = self.completion_selected.saturating_sub(1);
                } else if !self.editor.history_prev() {
                    self.edit(Edit::Up);
                }
            }
            Action::CursorDown => {
                let n = self.completions().len();
                if n > 0 {
                    self.completion_selected =
                        (self.completion_selected + 1).min(n.saturating_sub(1));
                } else if !self.editor.history_next() {
                    self.edit(Edit::Down);
                }
            }
            // With nothing to move in, Home and End move through the conversation.
            Action::CursorLineStart if key.code == KeyCode::Home && self.editor.is_empty() => {
                self.transcript.scroll_to_top()
            }
            Action::CursorLineEnd if key.code == KeyCode::End && self.editor.is_empty() => {
                self.transcript.follow()
            }
            Action::PageUp => self.scroll_up(page),
            Action::PageDown => self.scroll_down(page),
            Action::DeleteCharBackward
                if self.editor.is_empty() && !self.attachments.is_empty() =>
            {
                self.attachments.pop();
            }
            Action::CursorLeft => self.edit(Edit::Left),
            Action::CursorRight => self.edit(Edit::Right),
            Action::CursorWordLeft => self.edit(Edit::WordLeft),
            Action::CursorWordRight => self.edit(Edit::WordRight),
            Action::CursorLineStart => self.edit(Edit::LineStart),
            Action::CursorLineEnd => self.edit(Edit::LineEnd),
            Action::DeleteCharBackward => self.edit(Edit::DeleteCharBackward),
            Action::DeleteCharForward => self.edit(Edit::DeleteCharForward),
            Action::DeleteWordBackward => self.edit(Edit::DeleteWordBackward),
            Action::DeleteWordForward => self.edit(Edit::DeleteWordForward),
            Action::DeleteToLineStart => self.edit(Edit::DeleteToLineStart),
            Action::DeleteToLineEnd => self.edit(Edit::DeleteToLineEnd),
            Action::Yank => self.edit(Edit::Yank),
            Action::Undo => self.edit(Edit::Undo),
        }
        true
    }

    /// Ctrl+C: clear the editor and attachments; on an empty one, twice quickly quits.
    fn clear_or_quit(&mut self) {
        let now = Instant::now();
        if !self.editor.is_empty() || !self.attachments.is_empty() {
            self.editor.clear();
            self.attachments.clear();
            self.last_ctrl_c = Some(now);
        } else if self
            .last_ctrl_c
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(1000))
        {
            self.quit();
        } else {
            self.last_ctrl_c = Some(now);
            let key = self.keys.label(Action::Clear).unwrap_or_default();
            self.hint = Some(format!("Press {key} again to quit"));
        }
    }

    /// An edit of the text; a change brings back the `/` list if Esc had closed it.
    fn edit(&mut self, edit: Edit) {
        let before = self.editor.text();
        self.editor.edit(edit);
        if self.editor.text() != before {
            self.completion_dismissed = false;
            self.completion_selected = 0;
        }
    }

    /// A key no action claims: Ctrl+Home/End scroll, anything else goes to the text area.
    fn unbound_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Home if ctrl => self.transcript.scroll_to_top(),
            KeyCode::End if ctrl => self.transcript.follow(),
            _ => {
                let before = self.editor.text();
                self.editor.input(key);
                if self.editor.text() != before {
                    self.completion_dismissed = false;
                    self.completion_selected = 0;
                }
                if key.code == KeyCode::Char('@') && !ctrl && !alt {
                    self.open_file_picker();
                }
            }
        }
    }

    /// The text came back from the external editor (Ctrl+G), or the editor failed and the
    /// text stays as it was.
    pub fn external_edit_done(&mut self, outcome: Result<String, String>) {
        self.dirty = true;
        match outcome {
            Ok(text) => {
                self.editor.replace_all(&text);
                self.completion_dismissed = false;
                self.completion_selected = 0;
                self.file_picker = None;
            }
            Err(why) => self.notice(sanitize(&why)),
        }
    }

    // ----- `@` files and paths ----------------------------------------------------------

    /// An `@` was just typed: at the start of a word it opens the file picker.
    fn open_file_picker(&mut self) {
        let (row, col) = self.editor.cursor();
        let Some(at) = col.checked_sub(1) else {
            return;
        };
        let line: Vec<char> = self.editor.line(row).chars().collect();
        let word_start = at == 0 || line.get(at - 1).is_some_and(|c| c.is_whitespace());
        if line.get(at) == Some(&'@') && word_start {
            self.files.refresh();
            self.file_picker = Some(FilePicker::new(row, at));
        }
    }

    /// Keep the picker on the text after its `@`; close it once the cursor leaves that word.
    fn sync_file_picker(&mut self) {
        let Some(p) = self.file_picker.as_mut() else {
            return;
        };
        let (row, col) = self.editor.cursor();
        let line: Vec<char> = self.editor.line(row).chars().collect();
        let query: Option<String> = (row == p.row && line.get(p.col) == Some(&'@'))
            .then(|| line.get(p.col + 1..col))
            .flatten()
            .map(|typed| typed.iter().collect());
        match query {
            Some(q) if !q.contains(char::is_whitespace) => {
                p.set_query(q);
                p.refresh(&mut self.files);
            }
            _ => self.file_picker = None,
        }
    }

    /// Match the open picker against the file list as it is now (it may still be growing).
    pub fn refresh_file_picker(&mut self) {
        if let Some(p) = self.file_picker.as_mut() {
            p.refresh(&mut self.files);
        }
    }

    /// A key while the picker is open; `false` when the key is not the picker's (it then
    /// edits the text as usual).
    fn file_picker_key(&mut self, key: KeyEvent) -> bool {
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        let Some(p) = self.file_picker.as_mut() else {
            return false;
        };
        match key.code {
            KeyCode::Esc => self.file_picker = None,
            KeyCode::Up => p.up(),
            KeyCode::Down => p.down(),
            KeyCode::Enter | KeyCode::Tab if plain => {
                let Some(path) = p.chosen().map(str::to_string) else {
                    // Nothing to choose: the key does what it does without the picker.
                    self.file_picker = None;
                    return false;
                };
                let typed = self.editor.cursor().1.saturating_sub(p.col);
                self.file_picker = None;
                self.editor
                    .replace_before_cursor(typed, &file_picker::insertion(&path));
            }
            _ => return false,
        }
        true
    }

    /// Tab outside the `/` list: complete the path before the cursor.
    fn complete_path(&mut self) {
        let (word, len) = self.editor.word_before_cursor();
        let (at, path) = match word.strip_prefix('@') {
            Some(rest) => ("@", rest),
            None => ("", word.as_str()),
        };
        if path.is_empty() || path.starts_with('"') {
            return;
        }
        match complete::complete(&self.cwd, path) {
            Completion::None => {}
            Completion::Replace(with) => {
                self.editor
                    .replace_before_cursor(len, &format!("{at}{with}"));
            }
            Completion::Choices(names) => {
                self.hint = Some(sanitize(&names.join("  ")));
            }
        }
    }

    /// The `/` list's chosen command, as (name, takes arguments, arguments required).
    fn selected_completion(&self) -> Option<(String, bool, bool)> {
        let list = self.completions();
        list.get(self.completion_selected.min(list.len().saturating_sub(1)))
            .map(|c| {
                (
                    c.name.to_string(),
                    !c.args.is_empty(),
                    c.args.starts_with('<'),
                )
            })
    }

    fn quit(&mut self) {
        if self.is_busy() {
            self.port.abort();
        }
        self.effects.push(Effect::Quit);
    }

    /// Esc: close the completion list, else abort the run; the queued messages come back into
    /// the editor (see [`App::restore_queued`]).
    fn escape(&mut self) {
        if !self.completions().is_empty() {
            self.completion_dismissed = true;
            return;
        }
        if !self.is_busy() {
            // Esc twice on an empty editor opens the tree, as in the Node pi.
            let now = Instant::now();
            if self.editor.is_empty()
                && self
                    .last_idle_esc
                    .is_some_and(|t| now.duration_since(t) < DOUBLE_ESC)
            {
                self.last_idle_esc = None;
                self.open_tree(TreePurpose::Navigate);
            } else {
                self.last_idle_esc = Some(now);
            }
            return;
        }
        self.port.abort();
        self.stopping = true;
        self.port.take_queued();
        self.steering.clear();
        self.follow_up.clear();
    }

    /// Put queued texts back into the editor, ahead of anything typed since.
    fn restore_queued(&mut self, messages: &[AgentMessage]) {
        let mut restored: Vec<String> = messages.iter().map(typed_text).collect();
        if restored.is_empty() {
            return;
        }
        if !self.editor.is_empty() {
            restored.push(self.editor.text());
        }
        self.editor.set_text(&restored.join("\n\n"));
    }

    pub fn submit(&mut self, delivery: Delivery) {
        if self.editor.is_empty() && self.attachments.is_empty() {
            return;
        }
        self.file_picker = None;
        let text = self.editor.take();
        self.completion_dismissed = false;
        self.completion_selected = 0;
        if text.trim().is_empty() && self.attachments.is_empty() {
            return;
        }
        let text = match self.commands.classify(&text) {
            slash::Line::Known(name, args) => {
                let (name, args) = (name.to_string(), args.to_string());
                self.run_command(&name, &args);
                return;
            }
            // Not a command: said so, and nothing is sent (the text stays in the history).
            slash::Line::Unknown(name) => {
                let nearest = self
                    .commands
                    .nearest(name)
                    .map(|c| format!("; did you mean /{}?", c.name))
                    .unwrap_or_else(|| "; /help lists the commands".to_string());
                let name = sanitize(name);
                self.notice(format!("Unknown command /{name}{nearest}"));
                return;
            }
            slash::Line::Literal(rest) => rest.to_string(),
            slash::Line::Prompt => text,
        };
        // `!command` runs it and adds its output to the conversation; `!!command` only shows it.
        if let Some(rest) = text.trim_start().strip_prefix('!') {
            let (command, include) = match rest.strip_prefix('!') {
                Some(r) => (r.trim(), false),
                None => (rest.trim(), true),
            };
            if !command.is_empty() {
                self.run_shell(command.to_string(), include);
                return;
            }
        }
        self.transcript.follow();
        self.hide_header();
        // Starts a run, or steers / follows up the one running: the host decides, so a run
        // ending at this very moment loses nothing. Files (attached, or named with `@`) are
        // read by the host, off this task.
        if self.attachments.is_empty() && !attach::mentions::any(&text) {
            self.port.prompt(text, delivery);
        } else {
            let files = std::mem::take(&mut self.attachments);
            self.port.prompt_with_files(text, files, delivery);
        }
        if self.working.is_none() {
            self.working = Some(Instant::now());
        }
    }

    // ----- commands -----------------------------------------------------------------------

    /// No model could be found: say what is missing and how to set one up.
    pub fn show_welcome(&mut self, missing: &str) {
        self.transcript.push(Cell::Info(format!(
            "Welcome to pi. No model is ready yet.\n{missing}\n\n  /login   paste an API key \
             for a provider, or pick a local server found on this machine\n  /model   choose a \
             model\n"
        )));
        self.transcript.follow();
    }

    /// Open `/login` and look for local servers meanwhile.
    pub fn open_login(&mut self) {
        let providers: Vec<super::popup::login::Choice> = self
            .key_providers
            .iter()
            .map(|(id, env)| super::popup::login::Choice::Provider {
                id: id.clone(),
                env: env.clone(),
                has_key: !self.providers_without_key.contains(id),
            })
            .collect();
        self.popups
            .push(Popup::Login(super::popup::login::LoginView::new(providers)));
        self.port.find_local_models();
    }

    fn login_done(&mut self, outcome: super::popup::login::Outcome) {
        use super::popup::login::Outcome;
        match outcome {
            Outcome::Nothing => {}
            Outcome::Close => self.popups.close_login(),
            Outcome::Save { provider, key } => {
                self.popups.close_login();
                self.notice(format!("Saving the key for {provider}…"));
                self.port.login(provider, key);
            }
            Outcome::UseLocal(m) => {
                self.popups.close_login();
                self.notice(format!("Model: {}/{}", m.provider, m.id));
                self.set_model(m);
            }
        }
    }

    /// Show the start-up header: what pi talks to, where, and the keys to know.
    /// `ready`: a model was found (else the header says there is none yet).
    pub fn show_header(&mut self, version: &str, ready: bool) {
        let level = if self.model.reasoning {
            format!(" · thinking {}", self.thinking.as_str())
        } else {
            String::new()
        };
        let model = if ready {
            format!("{}/{}{level}", self.model.provider, self.model.id)
        } else {
            "no model yet (/login)".to_string()
        };
        let sandbox = self
            .sandbox
            .as_deref()
            .map(|s| format!(" · {s}"))
            .unwrap_or_default();
        let text = format!(
            "pi {version} · {model} · {}{sandbox}\n{}",
            self.place.cwd,
            super::help::header_keys(&self.keys)
        );
        self.header_cell = Some(self.transcript.push(Cell::Info(text)));
        self.transcript.follow();
    }

    /// The header has done its job once a prompt is sent: its cell becomes empty (cells are
    /// addressed by position, so it stays in place).
    fn hide_header(&mut self) {
        if let Some(i) = self.header_cell.take()
            && let Some(cell) = self.transcript.get_mut(i)
        {
            *cell = Cell::Info(String::new());
        }
    }

    /// A key while a tool call waits for approval.
    fn approval_key(&mut self, key: KeyEvent) {
        use super::popup::approval::Outcome;
        let shown = self.approval.current().cloned();
        match self.approval.key(key) {
            Outcome::Nothing => {}
            Outcome::Abort => self.escape(),
            Outcome::Answer(id, decision) => {
                if let Some(r) = shown {
                    let subject = if r.tool == "bash" {
                        super::shown_command::one_line(&r.subject)
                    } else {
                        sanitize(&r.subject)
                    };
                    let what = format!("{} {subject}", r.tool);
                    self.notice(match &decision {
                        Decision::Once => format!("Allowed {what}"),
                        Decision::Session => {
                            format!(
                                "Allowed {what}, and from now on {} for the session",
                                sanitize(&r.session_scope)
                            )
                        }
                        Decision::Refuse(None) => format!("Refused {what}"),
                        Decision::Refuse(Some(why)) => {
                            format!("Refused {what}: {}", sanitize(why))
                        }
                    });
                }
                self.port.approve(id, decision);
            }
        }
    }

    /// Ctrl+S: hold the agent back at its next step (a model call or a tool start), or let it
    /// go on. Nothing running is stopped; Esc still aborts.
    fn toggle_pause(&mut self) {
        match self.paused_since.take() {
            None => {
                self.paused_since = Some(Instant::now());
                self.port.set_paused(true);
                let go_on = super::help::key_or(&self.keys, Action::PauseToggle, "the pause key");
                let abort = super::help::key_or(&self.keys, Action::Interrupt, "interrupting");
                self.notice(format!(
                    "Paused: pi waits before its next model call or tool (what runs now \
                     finishes). {go_on} goes on; {abort} aborts."
                ));
            }
            Some(since) => {
                self.port.set_paused(false);
                self.notice(format!(
                    "Going on after a pause of {}",
                    super::units::short_duration(since.elapsed())
                ));
            }
        }
    }

    /// Alt+A: the next approval mode.
    fn cycle_approval(&mut self) {
        self.approval_mode = self.approval_mode.next();
        self.port.set_approval(self.approval_mode);
        self.notice(match self.approval_mode {
            ApprovalMode::Auto => "Approval: auto — every tool call runs",
            ApprovalMode::Ask => {
                "Approval: ask — bash, edit, write and MCP calls wait for your y/a/n"
            }
            ApprovalMode::ReadOnly => {
                "Approval: read-only — only read, grep, find and ls run; other calls are refused"
            }
        });
    }

    pub fn notice(&mut self, text: impl Into<String>) {
        self.transcript.push(Cell::Notice(text.into()));
        self.transcript.follow();
    }

    pub fn run_command(&mut self, name: &str, args: &str) {
        self.dirty = true;
        match name {
            "help" => {
                let text = super::help::text(&self.keys, &self.commands);
                self.transcript.push(Cell::Info(text));
                self.transcript.follow();
            }
            "model" => self.open_picker(args),
            "login" => self.open_login(),
            "resume" => self.open_sessions(),
            "thinking" => {
                if args.is_empty() {
                    self.cycle_thinking();
                } else {
                    match args.parse::<ThinkingLevel>() {
                        Ok(level) => self.set_thinking(level),
                        Err(e) => {
                            self.transcript.push(Cell::Error(e));
                        }
                    }
                }
            }
            "new" => self.port.new_session(),
            "name" => {
                if args.trim().is_empty() {
                    self.transcript
                        .push(Cell::Error("usage: /name <name>".into()));
                } else {
                    self.port.name_session(args.trim().to_string());
                }
            }
            "session" => self.port.stats(),
            "mcp" => self.port.mcp_status(),
            "compact" => {
                if self.refuse_when_busy("compact") {
                    return;
                }
                let focus = (!args.trim().is_empty()).then(|| args.trim().to_string());
                self.port.compact(focus);
            }
            "tree" => self.open_tree(TreePurpose::Navigate),
            "fork" => self.open_tree(TreePurpose::Fork),
            "clone" => {
                if self.refuse_when_not_saving() || self.refuse_when_busy("clone the session") {
                    return;
                }
                self.port.clone_session();
            }
            "copy" => match self.last_answer.clone() {
                Some(text) => {
                    let n = text.chars().count();
                    self.effects.push(Effect::Copy(text));
                    self.notice(format!("Copied the last answer ({n} characters)"));
                }
                None => self.notice("Nothing to copy yet"),
            },
            "export" => {
                let path = (!args.trim().is_empty()).then(|| PathBuf::from(args.trim()));
                self.port.export(path);
            }
            "quit" => self.quit(),
            _ => {}
        }
    }

    /// Talk to `model` from now on (the agent and the footer).
    fn set_model(&mut self, model: ModelInfo) {
        self.port.set_model(&model);
        self.model = model;
        self.model_chosen = true;
    }

    fn set_thinking(&mut self, level: ThinkingLevel) {
        self.thinking = level;
        self.port.set_thinking(level);
        self.notice(format!("Thinking level: {}", level.as_str()));
    }

    /// Ctrl+P / Shift+Ctrl+P: the next or previous model of the scope.
    fn cycle_model(&mut self, forward: bool) {
        let without_key = &self.providers_without_key;
        let Some((model, level)) = crate::setup::patterns::cycle(
            &self.scoped_models,
            &self.models,
            &|p| !without_key.contains(p),
            &self.model,
            forward,
        ) else {
            let choose = super::help::key_or(&self.keys, Action::ModelSelect, "/model");
            self.notice(format!(
                "No other model to switch to: name some with --models or enabled_models, or \
                 choose one with {choose}"
            ));
            return;
        };
        let label = format!("Model: {}/{}", model.provider, model.id);
        let reasoning = model.reasoning;
        self.set_model(model);
        match level {
            Some(l) if reasoning => {
                self.thinking = l;
                self.port.set_thinking(l);
                self.notice(format!("{label} · thinking {}", l.as_str()));
            }
            _ => self.notice(label),
        }
    }

    fn cycle_thinking(&mut self) {
        if !self.model.reasoning {
            self.notice(format!(
                "{} does not reason, so there is no thinking level to change",
                self.model.id
            ));
            return;
        }
        self.set_thinking(self.thinking.cycled());
    }

    // ----- host events -------------------------------------------------------------------

    /// An answer from the host (sessions, exports, names, queued messages, failures).
    pub fn handle_host_event(&mut self, event: HostEvent) {
        self.dirty = true;
        match event {
            HostEvent::Sessions { scope, sessions } => match self.popups.sessions_mut() {
                Some(p) => p.set_scope(scope, sessions),
                None if self.awaiting_sessions => {
                    self.awaiting_sessions = false;
                    self.popups
                        .push(Popup::Sessions(SessionPicker::new(scope, sessions)));
                }
                None => {}
            },
            HostEvent::MessageCounts(counts) => {
                if let Some(p) = self.popups.sessions_mut() {
                    p.counts.extend(counts);
                }
            }
            HostEvent::Opened(opened) => self.resume(*opened),
            HostEvent::NewSession { after_run, .. } => {
                self.stale_runs = after_run;
                self.clear_conversation();
                self.place.session_name = None;
                self.notice("New conversation");
            }
            HostEvent::Exported(path) => self.notice(format!(
                "Exported to {}",
                sanitize(&crate::host::view::short_path(&path))
            )),
            HostEvent::Approval(request) => {
                self.effects.push(Effect::Notify(format!(
                    "{} waits for your approval",
                    sanitize(&request.tool)
                )));
                self.approval.push(*request);
            }
            // The TUI asks for the tree instead (`/fork` picks from it).
            HostEvent::ForkPoints(_) => {}
            HostEvent::LoggedIn(done) => {
                self.providers_without_key.remove(&done.provider);
                let saved = match &done.file {
                    Some(f) => format!(
                        "Saved the key for {} in {}",
                        sanitize(&done.provider),
                        sanitize(&crate::host::view::short_path(f))
                    ),
                    None => format!(
                        "Using the key for {} in this run (no home folder to save it in)",
                        sanitize(&done.provider)
                    ),
                };
                match done.model {
                    Some(m) => {
                        self.notice(format!("{saved} · model: {}/{}", m.provider, m.id));
                        self.model = m;
                        self.model_chosen = true;
                    }
                    None => self.notice(saved),
                }
            }
            HostEvent::LocalModels(models) => {
                if let Some(l) = self.popups.login_mut() {
                    l.add_local(models);
                }
            }
            HostEvent::Named(name) => {
                self.place.session_name = Some(sanitize(&name));
                self.notice(format!("Session named “{}”", sanitize(&name)));
            }
            HostEvent::Stats(stats) => {
                self.transcript.push(Cell::Info(stats_text(&stats)));
                self.transcript.follow();
            }
            HostEvent::Queued(messages) => self.restore_queued(&messages),
            HostEvent::SessionWriteFailed(why) => {
                self.transcript.push(Cell::Error(format!(
                    "The session file could not be written: {} (kept in memory; retried with \
                     the next entry)",
                    sanitize(&why)
                )));
                self.transcript.follow();
            }
            HostEvent::Tree(tree) => match (self.popups.tree_mut(), self.awaiting_tree.take()) {
                (Some(view), _) => view.refresh(*tree),
                (None, Some(purpose)) => {
                    if tree.rows.is_empty() {
                        self.notice("Nothing in this session yet");
                    } else {
                        self.popups.push(Popup::Tree(TreeView::new(purpose, *tree)));
                    }
                }
                (None, None) => {}
            },
            HostEvent::ShellDone(r) => self.shell_done(*r),
            HostEvent::Navigated(nav) => {
                self.end_summarizing();
                self.navigated(*nav)
            }
            HostEvent::Notice(text) => self.notice(sanitize(&text)),
            HostEvent::McpStatus(servers) => {
                let text = crate::host::view::describe_servers(&servers);
                self.transcript.push(Cell::Info(sanitize(&text)));
                self.transcript.follow();
            }
            // Only RPC mode asks for it.
            HostEvent::CompactionRecorded(_) => {}
            HostEvent::Failed(why) => {
                self.end_summarizing();
                self.awaiting_sessions = false;
                self.awaiting_tree = None;
                self.transcript.push(Cell::Error(sanitize(&why)));
                self.transcript.follow();
            }
        }
    }

    /// Forget what the screen shows of the conversation.
    fn clear_conversation(&mut self) {
        self.transcript.clear();
        self.header_cell = None;
        self.tools.clear();
        self.streaming = None;
        self.totals = UsageTotals::default();
        self.context_after = 0;
        self.last_answer = None;
        self.last_stop = None;
    }

    // ----- session picker -----------------------------------------------------------------

    /// Open the `/resume` picker on this folder's sessions (once the host has listed them).
    pub fn open_sessions(&mut self) {
        self.dirty = true;
        if !self.saving {
            self.notice("Sessions are not saved in this run (--no-session)");
            return;
        }
        self.awaiting_sessions = true;
        self.port.list_sessions(ListScope::CurrentFolder);
    }

    fn sessions_done(&mut self, outcome: super::popup::sessions::Outcome) {
        use super::popup::sessions::Outcome;
        match outcome {
            Outcome::Nothing => {}
            Outcome::Close => self.popups.close_sessions(),
            Outcome::Rename { path, name, scope } => self.port.rename_session(path, name, scope),
            Outcome::Delete { path, scope } => self.port.delete_session(path, scope),
            Outcome::List(scope) => self.port.list_sessions(scope),
            Outcome::Open(path) => {
                self.popups.close_sessions();
                if self.is_busy() {
                    self.notice("Cannot resume while the agent is working; press Esc first");
                } else {
                    self.port.open_session(path);
                }
            }
        }
    }

    /// Show a session the host opened: its conversation replaces the screen's.
    pub fn resume(&mut self, opened: Opened) {
        self.clear_conversation();
        self.model = opened.model;
        self.thinking = opened.thinking;
        self.place.session_name = opened.name.as_deref().map(sanitize);
        self.show_messages(&opened.messages);
        for w in opened.warnings {
            self.notice(sanitize(&w));
        }
        let what = match opened.from {
            crate::host::OpenedFrom::Resumed => "Resumed session",
            crate::host::OpenedFrom::Forked => "Forked into the new session",
            crate::host::OpenedFrom::Cloned => "Cloned into the new session",
        };
        self.notice(format!(
            "{what} {} with {}/{}",
            sanitize(&opened.session_id),
            sanitize(&self.model.provider),
            sanitize(&self.model.id)
        ));
        if let Some(draft) = opened.draft {
            self.editor.set_text(&draft);
        }
    }

    // ----- `!` commands -----------------------------------------------------------------

    fn run_shell(&mut self, command: String, include: bool) {
        if include && self.refuse_when_busy("add a command's output (use !! to only look)") {
            return;
        }
        self.transcript.follow();
        let idx = self.transcript.push(Cell::Tool(ToolCell {
            id: "shell".into(),
            name: "bash".into(),
            args: std::sync::Arc::new(serde_json::json!({ "command": command })),
            state: ToolState::Running {
                started: Instant::now(),
            },
            output: String::new(),
            diff: None,
            saved: None,
        }));
        self.shell_cells.push_back(idx);
        if self.working.is_none() {
            self.working = Some(Instant::now());
            self.shell_owns_status = true;
        }
        self.port.shell(command, include);
    }

    fn shell_done(&mut self, r: crate::host::shell::ShellResult) {
        if let Some(idx) = self.shell_cells.pop_front()
            && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
        {
            t.state = match r.refused {
                Some(_) => ToolState::Skipped,
                None => ToolState::Done {
                    ok: !r.failed && !r.cancelled,
                    took: Duration::ZERO,
                },
            };
            t.output = sanitize(&r.output);
        }
        if let Some(why) = &r.refused {
            self.transcript.push(Cell::Error(why.clone()));
        } else if r.cancelled {
            self.transcript
                .push(Cell::Aborted("Command stopped".into()));
        } else if !r.included {
            self.notice("Shown only: the output is not part of the conversation");
        }
        if self.shell_cells.is_empty() && std::mem::take(&mut self.shell_owns_status) {
            self.working = None;
            self.stopping = false;
        }
    }

    // ----- the tree ---------------------------------------------------------------------

    fn refuse_when_not_saving(&mut self) -> bool {
        if !self.saving {
            self.notice("Sessions are not saved in this run (--no-session)");
        }
        !self.saving
    }

    fn refuse_when_busy(&mut self, what: &str) -> bool {
        let busy = self.is_busy();
        if busy {
            self.notice(format!(
                "Cannot {what} while the agent is working; press Esc first"
            ));
        }
        busy
    }

    /// Ask the host for the tree; the view opens when it arrives.
    pub fn open_tree(&mut self, purpose: TreePurpose) {
        self.dirty = true;
        if self.refuse_when_not_saving() {
            return;
        }
        let what = match purpose {
            TreePurpose::Navigate => "move in the tree",
            TreePurpose::Fork => "fork",
        };
        if self.refuse_when_busy(what) {
            return;
        }
        self.awaiting_tree = Some(purpose);
        self.port.tree();
    }

    fn tree_done(&mut self, action: TreeAction) {
        match action {
            TreeAction::None => {}
            TreeAction::Close => self.popups.close_tree(),
            TreeAction::Label { target, label } => self.port.label(target, label),
            TreeAction::Choose(id) => {
                self.popups.close_tree();
                if self.refuse_when_busy("fork") {
                    return;
                }
                self.port.fork(id);
            }
            TreeAction::Move { target, leave } => {
                self.popups.close_tree();
                if self.refuse_when_busy("move in the tree") {
                    return;
                }
                match leave {
                    LeaveWith::NoSummary => self.port.navigate(target),
                    LeaveWith::Summary | LeaveWith::FocusedSummary(_) => {
                        let focus = match leave {
                            LeaveWith::FocusedSummary(f) => Some(f),
                            _ => None,
                        };
                        self.port.navigate_summarized(target, focus);
                        // Shown as work (Esc stops it) until the host answers.
                        self.summarizing = true;
                        self.working = Some(Instant::now());
                        self.retry = Some("Summarizing the branch you are leaving...".into());
                    }
                }
            }
        }
    }

    fn end_summarizing(&mut self) {
        if std::mem::take(&mut self.summarizing) {
            self.working = None;
            self.retry = None;
            self.stopping = false;
        }
    }

    /// The host moved the conversation to another point of the session.
    fn navigated(&mut self, nav: crate::host::Navigated) {
        self.clear_conversation();
        self.model = nav.model;
        self.thinking = nav.thinking;
        self.show_messages(&nav.messages);
        for w in nav.warnings {
            self.notice(sanitize(&w));
        }
        match nav.draft {
            Some(draft) => {
                self.editor.set_text(&draft);
                self.notice("Moved before this prompt: edit it and send to start a new branch");
            }
            None => self.notice("Moved: the conversation goes on from here"),
        }
    }

    /// What a finished reply's stop reason adds below it: its error, the abort, a cut-off note.
    /// A retried attempt's error is not shown (the retry notice says it).
    fn push_stop_cell(&mut self, a: &AssistantMessage) {
        match a.stop_reason {
            StopReason::Error if !a.is_retried_attempt() => {
                let m = a
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "the model call failed".into());
                self.transcript.push(Cell::Error(m));
            }
            StopReason::Aborted => {
                self.transcript
                    .push(Cell::Aborted("Operation aborted".into()));
            }
            StopReason::Length => {
                self.transcript.push(Cell::Notice(
                    "The answer was cut off at the output token limit.".into(),
                ));
            }
            _ => {}
        }
    }

    /// Render saved messages as cells, as they looked when they happened: user prompts,
    /// answers (thinking per the toggle), one tool cell per call with its result and diff,
    /// errors and aborts, and summaries of condensed or abandoned parts of the conversation.
    pub fn show_messages(&mut self, messages: &[AgentMessage]) {
        let mut calls: HashMap<String, usize> = HashMap::new();
        for m in messages {
            self.count_after(m);
            match m.as_llm() {
                Some(Message::User(u)) => {
                    if let Some(summary) = cells::Summary::of(u) {
                        self.transcript.push(Cell::Summary(summary));
                        continue;
                    }
                    if !self.transcript.is_empty() {
                        self.transcript.push(Cell::Divider);
                    }
                    self.transcript.push(Cell::User(sanitize(&shown_text(m))));
                }
                Some(Message::Assistant(a)) => {
                    self.transcript.push(Cell::assistant(a.clone(), false));
                    self.add_usage(&a.usage);
                    if !a.is_retried_attempt() {
                        self.last_stop = Some(a.stop_reason);
                        if !a.text().trim().is_empty() {
                            self.last_answer = Some(a.text());
                        }
                    }
                    self.push_stop_cell(a);
                    for call in a.tool_calls() {
                        let idx = self.transcript.push(Cell::Tool(ToolCell {
                            id: call.id.clone(),
                            name: sanitize(&call.name),
                            args: std::sync::Arc::new(call.arguments.clone()),
                            state: ToolState::Skipped,
                            output: String::new(),
                            diff: None,
                            saved: None,
                        }));
                        calls.insert(call.id.clone(), idx);
                    }
                }
                Some(Message::ToolResult(r)) => {
                    if let Some(idx) = calls.remove(&r.tool_call_id)
                        && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                    {
                        t.state = ToolState::Done {
                            ok: !r.is_error,
                            took: Duration::ZERO,
                        };
                        t.saved = Some(m.clone());
                    }
                }
                _ => {}
            }
        }
        self.transcript.follow();
    }

    // ----- popups -----------------------------------------------------------------------

    /// A key for the top popup; what it answers is carried out here.
    fn popup_key(&mut self, key: KeyEvent) {
        let page = (self.viewport.1 as usize).saturating_sub(4).max(1);
        let catalogue = Catalogue {
            models: &self.models,
            current: &self.model,
            catalog: self.catalog.as_deref(),
            without_key: &self.providers_without_key,
        };
        match self.popups.top_mut() {
            None => {}
            Some(Popup::Model(p)) => match p.key(key, &catalogue) {
                model::Outcome::Nothing => {}
                model::Outcome::Close => self.popups.close_model(),
                model::Outcome::Chosen(m, warning) => {
                    self.popups.close_model();
                    self.notice(format!("Model: {}/{}", m.provider, m.id));
                    if let Some(w) = warning {
                        self.notice(format!("warning: {w}"));
                    }
                    self.set_model(m);
                }
            },
            Some(Popup::Sessions(p)) => {
                let outcome = p.key(key);
                self.sessions_done(outcome);
            }
            Some(Popup::Tree(v)) => {
                let action = v.key(key, page);
                self.tree_done(action);
            }
            Some(Popup::Login(v)) => {
                let outcome = v.key(key);
                self.login_done(outcome);
            }
        }
    }

    /// What the model picker chooses from.
    pub fn catalogue(&self) -> Catalogue<'_> {
        Catalogue {
            models: &self.models,
            current: &self.model,
            catalog: self.catalog.as_deref(),
            without_key: &self.providers_without_key,
        }
    }

    fn open_picker(&mut self, query: &str) {
        let picker = ModelPicker::open(query, &self.catalogue());
        self.popups.push(Popup::Model(picker));
    }

    /// Models the open model picker lists (none when it is closed).
    pub fn picker_matches(&self) -> Vec<&ModelInfo> {
        match self.popups.model() {
            Some(p) => p.matches(&self.catalogue()),
            None => Vec::new(),
        }
    }
}

/// What `/session` shows.
fn stats_text(s: &SessionStats) -> String {
    let mut out = format!(
        "Session{}\n  id: {}\n",
        s.name
            .as_deref()
            .map(|n| format!(" “{}”", sanitize(n)))
            .unwrap_or_default(),
        sanitize(&s.session_id)
    );
    match &s.path {
        Some(p) => out.push_str(&format!(
            "  file: {}\n",
            sanitize(&crate::host::view::short_path(p))
        )),
        None => out.push_str("  file: not saved (--no-session)\n"),
    }
    if let Some(parent) = &s.parent_session {
        out.push_str(&format!("  forked from: {}\n", sanitize(parent)));
    }
    let u = &s.usage;
    out.push_str(&format!(
        "  messages: {} user, {} assistant, {} tool calls, {} tool results\n  tokens: ↑{} ↓{} cache read {} cache write {}\n  cost: ${:.3}\n",
        s.user_messages,
        s.assistant_messages,
        s.tool_calls,
        s.tool_results,
        u.input,
        u.output,
        u.cache_read,
        u.cache_write,
        u.cost
    ));
    if s.context_window > 0 {
        let pct = u.context as f64 * 100.0 / s.context_window as f64;
        out.push_str(&format!(
            "  context: {} of {} tokens ({pct:.1}%)",
            u.context, s.context_window
        ));
    } else {
        out.push_str(&format!("  context: {} tokens", u.context));
    }
    out
}

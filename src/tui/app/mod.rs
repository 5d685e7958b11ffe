//! The app state: what the screen shows, and what keys and agent events do to it.
//!
//! [`App`] is driven by two inputs, both synchronous and cheap: [`App::handle_key`] (and
//! paste/mouse) and [`App::handle_agent_event`]. It talks to the agent only through
//! its [`Port`] to the host, whose answers come back through [`App::handle_run_event`] and
//! [`App::handle_host_event`], so tests drive it with a port on a plain channel and hand-made
//! events. Side effects that need the terminal (quit, suspend, OSC 52 copy, the external
//! editor, a notification) are returned as [`Effect`]s for the loop in `mod.rs` to carry out.
//! The components draw themselves (`render.rs` lays them out). Keys go to a waiting approval,
//! else to the top of the popup stack, else through the [`Keymap`] (the Node.js pi's action
//! ids, remappable in keybindings.json) to the composer and the transcript; popups keep their
//! own keys and answer with outcomes this module carries out. The `impl App` is split by
//! concern across this folder's files.
//!
//! Running-turn input: Enter sends, or steers while a run is active; Alt+Enter queues a
//! follow-up; the queues are the agent's, shown from its `queue_update` events (a run that ends
//! with messages still queued is continued with them by the host). Esc aborts the run and
//! brings the queued texts back into the editor, ahead of anything typed since.

mod agent_events;
mod commands;
mod host_events;
mod keys;
mod plan;
mod popups;
mod prompt;
mod sessions;
mod shell;
mod tree;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use crate::agent::protocol::events::{AgentEvent, CompactionReason, RunEvent, RunId};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, Message, StopReason, Usage, UsageTotals,
};
use crate::approval::{ApprovalMode, Decision};
use crate::attach;
use crate::host::view::ListScope;
use crate::host::{HostEvent, Opened, SessionStats};
use crate::provider::catalog::ModelInfo;
use crate::tui::cells::{self, Cell, ToolCell, ToolState, View, output_text};
use crate::tui::complete::{self, Completion};
use crate::tui::composer::{Composer, Status};
use crate::tui::editor::Edit;
use crate::tui::files::FileIndex;
use crate::tui::footer::Footer;
pub use crate::tui::footer::Place;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::popup::file_picker::{self, FilePicker};
use crate::tui::popup::model::{self, Catalogue, ModelPicker};
use crate::tui::popup::sessions::SessionPicker;
use crate::tui::popup::tree::{LeaveWith, TreeAction, TreePurpose, TreeView};
use crate::tui::popup::{self, Popup};
pub use crate::tui::port::Delivery;
use crate::tui::port::{Port, shown_text, typed_text};
use crate::tui::sanitize::sanitize;
use crate::tui::slash;
use crate::tui::transcript::Transcript;

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

/// Two presses of Esc this close together (with nothing to stop) open the tree.
const DOUBLE_ESC: Duration = Duration::from_millis(500);

pub struct App {
    port: Port,
    pub transcript: Transcript,
    /// What is being written: the editor, queued messages, attachments, the `@` picker.
    pub composer: Composer,
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
    /// Providers whose subscription is signed in to (for `/login` and `/logout`).
    pub signed_in: std::collections::HashSet<String>,
    /// The start-up header's cell, blanked when the first prompt is sent.
    header_cell: Option<usize>,
    /// Providers that take an API key, for `/login`.
    pub key_providers: Vec<(String, Option<String>)>,
    /// The open popups (model and session pickers, tree, login); keys go to the top one.
    pub popups: popup::Stack,
    /// Tool calls waiting for the person's approval.
    pub approval: crate::tui::popup::approval::ApprovalPrompt,
    /// How tool calls that can change things are approved (Alt+A cycles it).
    pub approval_mode: ApprovalMode,
    /// Plan mode is on.
    pub planning: bool,
    /// The themes `/theme` offers, and the one in use.
    pub themes: crate::tui::popup::theme::Themes,
    /// The model's task list (`todo` tool), shown above the editor.
    pub todos: crate::tui::todos::Todos,
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
    /// A move in the tree waiting for the host to say what it does to the files.
    pending_move: Option<(String, LeaveWith)>,
    /// Files were put back for a move still to come: what was done, said once it is shown.
    restore_then_move: Option<Option<crate::host::rewind::FilesRestored>>,
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
            composer: Composer::default(),
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
            signed_in: Default::default(),
            header_cell: None,
            key_providers: Vec::new(),
            popups: popup::Stack::default(),
            approval: Default::default(),
            approval_mode: ApprovalMode::default(),
            planning: false,
            themes: Default::default(),
            todos: Default::default(),
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
            pending_move: None,
            restore_then_move: None,
            last_idle_esc: None,
            last_answer: None,
            last_stop: None,
            stale_runs: 0,
            cwd: PathBuf::from("."),
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
        self.expand_key = crate::tui::help::key_or(&keys, Action::ToolsExpand, "/help").into();
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
        self.composer.files = FileIndex::lazy(cwd.clone());
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
            || (self.composer.file_picker.is_some() && self.composer.files.is_listing())
    }

    /// A run is active (or a prompt was just sent to start one).
    pub fn is_busy(&self) -> bool {
        self.working.is_some()
    }

    /// The `/` completions to show, if any.
    pub fn completions(&self) -> Vec<&slash::Command> {
        if self.composer.completion_dismissed || self.composer.editor.line_count() > 1 {
            return Vec::new();
        }
        self.commands.completions(&self.composer.editor.text())
    }

    /// What the status line tells of the work, for one frame.
    pub fn status(&self) -> Status<'_> {
        Status {
            working: self.working,
            stopping: self.stopping,
            paused_since: self.paused_since,
            retry: self.retry.as_deref(),
            thinking: self.thinking,
            keys: &self.keys,
        }
    }

    /// What the footer shows, for one frame.
    pub fn footer(&self) -> Footer<'_> {
        Footer {
            place: &self.place,
            totals: &self.totals,
            context_tokens: self.context_tokens(),
            model: self.model_ready().then_some(&self.model),
            thinking: self.thinking,
            approval: self.approval_mode,
            planning: self.planning,
            paused_since: self.paused_since,
            subscription: crate::provider::subscription::Kind::from_provider(&self.model.provider)
                .filter(|k| self.signed_in.contains(k.provider())),
        }
    }
}

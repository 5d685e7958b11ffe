//! The UI's end of the host: the commands it sends, as short methods.
//!
//! Every method only puts an operation on the host's channel and returns, so nothing the
//! agent, a tool or the disk does can block a keypress. Answers come back on the one event
//! stream the loop feeds to the app. Tests build a port on a plain channel and read the
//! operations the app sent.

use std::path::PathBuf;

use crate::agent::protocol::command::WhenBusy;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{AgentMessage, Message};
use crate::attach::{self, FileRef};
use crate::host::view::ListScope;
use crate::host::{Commands, OpBody, Prompt};
use crate::provider::catalog::ModelInfo;

/// How a submitted message is delivered while the agent works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Steer,
    FollowUp,
}

impl Delivery {
    fn when_busy(self) -> WhenBusy {
        match self {
            Delivery::Steer => WhenBusy::Steer,
            Delivery::FollowUp => WhenBusy::FollowUp,
        }
    }
}

/// Sends the UI's commands to the host.
#[derive(Clone, Debug)]
pub struct Port {
    commands: Commands,
}

impl Port {
    pub fn new(commands: Commands) -> Self {
        Port { commands }
    }

    fn send(&self, body: OpBody) {
        self.commands.send(body);
    }

    /// Start a run with `text` and `files` (the files given and those `text` names with `@`,
    /// read by the host), or deliver it as `delivery` says if one is running.
    pub fn prompt(&self, text: String, files: Vec<FileRef>, delivery: Delivery) {
        self.send(OpBody::Prompt(Prompt {
            text,
            files,
            mentions: true,
            when_busy: delivery.when_busy(),
            ..Prompt::default()
        }));
    }

    /// Save `key` for `provider` (in `auth.json`) and use it; answered with
    /// `HostEvent::LoggedIn`.
    pub fn login(&self, provider: String, key: String) {
        self.send(OpBody::Login {
            provider,
            key: crate::host::login::SecretKey(key),
        });
    }

    /// Sign in to `provider`'s subscription; answered with `HostEvent::SignInNotice`s, then
    /// `HostEvent::SignedIn` or `HostEvent::Failed`.
    pub fn sign_in(&self, provider: String) {
        self.send(OpBody::SignIn { provider });
    }

    /// A line pasted for the sign-in under way.
    pub fn sign_in_paste(&self, line: String) {
        self.send(OpBody::SignInPaste { line });
    }

    pub fn cancel_sign_in(&self) {
        self.send(OpBody::CancelSignIn);
    }

    /// Sign out of `provider` (or drop its stored key).
    pub fn logout(&self, provider: String) {
        self.send(OpBody::Logout { provider });
    }

    /// Look for local model servers; answered with `HostEvent::LocalModels`.
    pub fn find_local_models(&self) {
        self.send(OpBody::FindLocalModels);
    }

    /// Answer an approval request.
    pub fn approve(&self, id: u64, decision: crate::approval::Decision) {
        self.send(OpBody::Approve {
            request: id,
            decision,
        });
    }

    /// Close or open the pause gate.
    pub fn set_paused(&self, paused: bool) {
        self.send(OpBody::SetPaused { paused });
    }

    /// Keep the theme chosen for the next start.
    pub fn remember_theme(&self, name: &str) {
        self.send(OpBody::RememberTheme {
            name: name.to_string(),
        });
    }

    pub fn set_plan_mode(&self, on: bool) {
        self.send(OpBody::SetPlanMode { on });
    }

    pub fn set_approval(&self, mode: crate::approval::ApprovalMode) {
        self.send(OpBody::SetApproval { mode });
    }

    pub fn abort(&self) {
        self.send(OpBody::Abort { reason: None });
    }

    /// Empty the queues; their messages come back as `HostEvent::Queued`.
    pub fn take_queued(&self) {
        self.send(OpBody::TakeQueued);
    }

    pub fn set_model(&self, model: &ModelInfo) {
        self.send(OpBody::SetModel {
            provider: model.provider.clone(),
            id: model.id.clone(),
        });
    }

    pub fn set_thinking(&self, level: ThinkingLevel) {
        self.send(OpBody::SetThinking { level });
    }

    pub fn new_session(&self) {
        self.send(OpBody::NewSession);
    }

    pub fn list_sessions(&self, scope: ListScope) {
        self.send(OpBody::ListSessions { scope });
    }

    pub fn open_session(&self, path: PathBuf) {
        self.send(OpBody::OpenSession { path });
    }

    pub fn rename_session(&self, path: PathBuf, name: String, scope: ListScope) {
        self.send(OpBody::RenameSession { path, name, scope });
    }

    pub fn delete_session(&self, path: PathBuf, scope: ListScope) {
        self.send(OpBody::DeleteSession { path, scope });
    }

    pub fn export(&self, path: Option<PathBuf>) {
        self.send(OpBody::Export { path });
    }

    pub fn name_session(&self, name: String) {
        self.send(OpBody::NameSession { name });
    }

    pub fn stats(&self) {
        self.send(OpBody::Stats);
    }

    /// Ask for the MCP servers' state (answered with `HostEvent::McpStatus`).
    pub fn mcp_status(&self) {
        self.send(OpBody::McpStatus);
    }

    /// Condense the conversation now.
    pub fn compact(&self, focus: Option<String>) {
        self.send(OpBody::Compact { focus });
    }

    /// Run a `!` command (`include`: its output joins the conversation).
    pub fn shell(&self, command: String, include: bool) {
        self.send(OpBody::Shell { command, include });
    }

    pub fn tree(&self) {
        self.send(OpBody::Tree);
    }

    pub fn navigate(&self, entry_id: String) {
        self.send(OpBody::Navigate { target: entry_id });
    }

    /// Move in the tree after summarising the branch left behind.
    pub fn navigate_summarized(&self, target: String, focus: Option<String>) {
        self.send(OpBody::NavigateSummarized { target, focus });
    }

    /// Ask what a move to `target` would do to the files.
    pub fn rewind_plan(&self, target: String) {
        self.send(OpBody::RewindPlan { target });
    }

    /// Go back to `target` as one operation (files and conversation as `mode` says).
    pub fn rewind(&self, target: String, mode: crate::host::rewind::RewindMode, force: bool) {
        self.send(OpBody::Rewind {
            target,
            mode,
            force,
        });
    }

    /// Put the files back as they were at `target`.
    pub fn restore_files(&self, target: String, force: bool, record: bool) {
        self.send(OpBody::RestoreFiles {
            target,
            force,
            record,
        });
    }

    pub fn label(&self, target: String, label: Option<String>) {
        self.send(OpBody::Label { target, label });
    }

    pub fn fork(&self, entry_id: String) {
        self.send(OpBody::Fork { target: entry_id });
    }

    pub fn clone_session(&self) {
        self.send(OpBody::Clone);
    }
}

/// A message as the transcript shows it: a user message's attached files as chips
/// (`[file: src/main.rs]`) instead of their contents.
pub fn shown_text(m: &AgentMessage) -> String {
    match m.as_llm() {
        Some(Message::User(u)) => {
            crate::host::view::without_hook_context(&attach::shown_text(&u.content)).to_string()
        }
        _ => message_text(m),
    }
}

/// What was typed of a user message, without its attached files (for the editor).
pub fn typed_text(m: &AgentMessage) -> String {
    match m.as_llm() {
        Some(Message::User(u)) => {
            crate::host::view::without_hook_context(&attach::message::typed_text(&u.content))
                .to_string()
        }
        _ => message_text(m),
    }
}

/// The text of a queued or user message.
pub fn message_text(m: &AgentMessage) -> String {
    match m.as_llm() {
        Some(Message::User(u)) => u.content.joined_text(),
        Some(Message::Assistant(a)) => a.text(),
        Some(Message::ToolResult(r)) => r.text(),
        _ => String::new(),
    }
}

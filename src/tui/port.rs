//! The UI's end of the host: the commands it sends, as short methods.
//!
//! Every method only puts a command on the host's channel and returns, so nothing the agent,
//! a tool or the disk does can block a keypress. Answers come back as events (agent events and
//! host events) that the loop feeds to the app. Tests build a port on a plain channel and read
//! the commands the app sent.

use std::path::PathBuf;

use crate::agent::protocol::command::{AgentCommand, WhenBusy};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{AgentMessage, Message};
use crate::attach::{self, FileRef};
use crate::host::view::ListScope;
use crate::host::{Command, Commands};
use crate::provider::catalog::ModelInfo;

/// How a submitted message is delivered while the agent works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Steer,
    FollowUp,
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

    fn agent(&self, command: AgentCommand) {
        self.commands.agent(command);
    }

    /// Start a run with `text`, or deliver it as `delivery` says if one is running.
    pub fn prompt(&self, text: String, delivery: Delivery) {
        let (message, when_busy) = match delivery {
            Delivery::Steer => (AgentMessage::steering(text), WhenBusy::Steer),
            Delivery::FollowUp => (AgentMessage::user(text), WhenBusy::FollowUp),
        };
        self.agent(AgentCommand::Prompt {
            messages: vec![message],
            when_busy,
            reply: None,
        });
    }

    /// Like [`Port::prompt`], with files: those given and the ones `text` names with `@`
    /// are read by the host and sent with it.
    pub fn prompt_with_files(&self, text: String, files: Vec<FileRef>, delivery: Delivery) {
        let when_busy = match delivery {
            Delivery::Steer => WhenBusy::Steer,
            Delivery::FollowUp => WhenBusy::FollowUp,
        };
        self.commands.send(Command::PromptWithFiles {
            text,
            files,
            when_busy,
        });
    }

    /// Save `key` for `provider` (in `auth.json`) and use it; answered with
    /// `HostEvent::LoggedIn`.
    pub fn login(&self, provider: String, key: String) {
        self.commands.send(Command::Login {
            provider,
            key: crate::host::login::SecretKey(key),
        });
    }

    /// Look for local model servers; answered with `HostEvent::LocalModels`.
    pub fn find_local_models(&self) {
        self.commands.send(Command::FindLocalModels);
    }

    /// Run what is queued (messages that missed the end of a run).
    pub fn continue_run(&self) {
        self.agent(AgentCommand::Continue { reply: None });
    }

    /// Answer an approval request.
    pub fn approve(&self, id: u64, decision: crate::approval::Decision) {
        self.commands.send(Command::Approve { id, decision });
    }

    /// Close or open the pause gate.
    pub fn set_paused(&self, paused: bool) {
        self.agent(AgentCommand::SetPaused(paused));
    }

    pub fn set_approval(&self, mode: crate::approval::ApprovalMode) {
        self.commands.send(Command::SetApproval(mode));
    }

    pub fn abort(&self) {
        self.agent(AgentCommand::Abort { reason: None });
    }

    /// Empty the queues; their messages come back as `HostEvent::Queued`.
    pub fn take_queued(&self) {
        self.commands.send(Command::TakeQueued);
    }

    pub fn set_model(&self, model: &ModelInfo) {
        self.commands
            .send(Command::SetModel(Box::new(model.clone())));
    }

    pub fn set_thinking(&self, level: ThinkingLevel) {
        self.commands.send(Command::SetThinking(level));
    }

    pub fn new_session(&self) {
        self.commands.send(Command::NewSession);
    }

    pub fn list_sessions(&self, scope: ListScope) {
        self.commands.send(Command::ListSessions(scope));
    }

    pub fn open_session(&self, path: PathBuf) {
        self.commands.send(Command::OpenSession(path));
    }

    pub fn rename_session(&self, path: PathBuf, name: String, scope: ListScope) {
        self.commands
            .send(Command::RenameSession { path, name, scope });
    }

    pub fn delete_session(&self, path: PathBuf, scope: ListScope) {
        self.commands.send(Command::DeleteSession { path, scope });
    }

    pub fn export(&self, path: Option<PathBuf>) {
        self.commands.send(Command::Export(path));
    }

    pub fn name_session(&self, name: String) {
        self.commands.send(Command::NameSession(name));
    }

    pub fn stats(&self) {
        self.commands.send(Command::Stats);
    }

    /// Ask for the MCP servers' state (answered with `HostEvent::McpStatus`).
    pub fn mcp_status(&self) {
        self.commands.send(Command::McpStatus);
    }

    /// Condense the conversation now.
    pub fn compact(&self, focus: Option<String>) {
        self.agent(AgentCommand::Compact { focus, reply: None });
    }

    /// Run a `!` command (`include`: its output joins the conversation).
    pub fn shell(&self, command: String, include: bool) {
        self.commands.send(Command::Shell { command, include });
    }

    pub fn tree(&self) {
        self.commands.send(Command::Tree);
    }

    pub fn navigate(&self, entry_id: String) {
        self.commands.send(Command::Navigate(entry_id));
    }

    /// Move in the tree after summarising the branch left behind.
    pub fn navigate_summarized(&self, target: String, focus: Option<String>) {
        self.commands
            .send(Command::NavigateSummarized { target, focus });
    }

    pub fn label(&self, target: String, label: Option<String>) {
        self.commands.send(Command::Label { target, label });
    }

    pub fn fork(&self, entry_id: String) {
        self.commands.send(Command::Fork(entry_id));
    }

    pub fn clone_session(&self) {
        self.commands.send(Command::Clone);
    }
}

/// A message as the transcript shows it: a user message's attached files as chips
/// (`[file: src/main.rs]`) instead of their contents.
pub fn shown_text(m: &AgentMessage) -> String {
    match m.as_llm() {
        Some(Message::User(u)) => attach::shown_text(&u.content),
        _ => message_text(m),
    }
}

/// What was typed of a user message, without its attached files (for the editor).
pub fn typed_text(m: &AgentMessage) -> String {
    match m.as_llm() {
        Some(Message::User(u)) => attach::message::typed_text(&u.content),
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

//! Approval: whether a tool call that can change things runs at once, waits for the person, or
//! is refused.
//!
//! Three modes ([`ApprovalMode`]): `auto` runs everything (the default), `ask` stops each
//! `bash`, `edit`, `write` and MCP call until the person answers, `read-only` refuses them.
//! `read`, `grep`, `find` and `ls` never ask. Rules from config ([`rules`]) apply in every
//! mode: a `deny` rule refuses a call even in `auto`, an `allow` rule lets it through without
//! asking (even in `read-only`). The [`gate::Gate`] is the loop hook that decides; a front end
//! that can ask the person answers its [`ApprovalRequest`]s with a [`Decision`]. Every refusal
//! reaches the model as an error tool result saying why. `write` and `edit` calls on files
//! that decide what pi trusts ([`protected`]) are put to the person in every mode, `auto`
//! included, and refused where nobody can answer.

pub(crate) mod command;
pub mod gate;
pub(crate) mod protected;
pub mod rules;
pub(crate) mod scope;

pub use gate::Gate;

/// How tool calls that can change things are handled.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Everything runs (deny rules still refuse).
    #[default]
    Auto,
    /// Calls that can change things wait for the person (allow rules let some through).
    Ask,
    /// Calls that can change things are refused (allow rules let some through).
    ReadOnly,
}

impl ApprovalMode {
    pub(crate) fn parse(text: &str) -> Option<ApprovalMode> {
        match text.trim() {
            "auto" => Some(ApprovalMode::Auto),
            "ask" => Some(ApprovalMode::Ask),
            "read-only" | "readonly" | "read_only" => Some(ApprovalMode::ReadOnly),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Ask => "ask",
            ApprovalMode::ReadOnly => "read-only",
        }
    }

    /// The next mode in the cycle auto → ask → read-only → auto.
    pub(crate) fn next(self) -> ApprovalMode {
        match self {
            ApprovalMode::Auto => ApprovalMode::Ask,
            ApprovalMode::Ask => ApprovalMode::ReadOnly,
            ApprovalMode::ReadOnly => ApprovalMode::Auto,
        }
    }
}

/// The tools that only look: they never ask and run in every mode.
pub(crate) const LOOKING_TOOLS: &[&str] = &["read", "grep", "find", "ls"];

/// Whether a call of `tool` may change something (every tool but the looking ones, MCP tools
/// included: pi cannot know what a server's tool does). The subagent tool (`task`) changes
/// nothing itself: each call its subagent makes goes through the same gate; `todo` only keeps
/// the model's task list.
pub(crate) fn may_change(tool: &str) -> bool {
    !(LOOKING_TOOLS.contains(&tool) || tool == "task" || tool == "todo")
}

/// A call waiting for the person's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    pub id: u64,
    pub tool: String,
    /// What the call acts on, in one line: the command, or the file.
    pub subject: String,
    /// More to look at before answering: the diff an edit or write would apply, or an MCP
    /// call's arguments.
    pub detail: Option<String>,
    /// What "allow for this session" covers, in words ("`git status` commands", "every edit").
    pub session_scope: String,
}

/// The person's answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run this call.
    Once,
    /// Run this call and, for the rest of this session, calls like it (the same tool; for
    /// `bash`, commands starting the same way).
    Session,
    /// Do not run it; the reason, if given, goes to the model.
    Refuse(Option<String>),
}

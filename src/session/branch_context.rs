//! From a loaded session to the messages an agent resumes with.
//!
//! The context is the branch from the leaf up to the root, in order:
//!
//! * `message` entries give their message; messages of the Node.js `pi`'s own roles that our
//!   loop would not send (`bashExecution`, `custom`, summaries) become user messages, so the
//!   model sees what the other program's model saw;
//! * `custom_message` entries become user messages; `branch_summary` entries become a user
//!   message that introduces the summary;
//! * if a `compaction` is on the branch, the latest one decides: first its summary (as a user
//!   message with a short preamble), then the entries from its `firstKeptEntryId` up to it,
//!   then everything after it;
//! * the model is the last `model_change` or assistant message on the branch, the thinking
//!   level the last `thinking_level_change`;
//! * a message of a role this pi does not know becomes a user message quoting it (the load
//!   warns about it), so nothing in the history is hidden from the model;
//! * tool calls without results (the process died while a tool ran) are answered with
//!   placeholder results, so a provider accepts the history: a call the file records as started
//!   (a `pi/tool_started` entry) is reported as started with an unknown outcome, any other as
//!   possibly started; neither is ever called "not run", so the model checks before repeating
//!   it. They are added only to the context, never written to the file;
//! * a tool result whose call is gone (a damaged or hand-edited file) becomes a user message
//!   quoting it, never a bare result a provider would reject.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::entry::{EntryKind, SessionEntry};
use super::load::Session;
use super::recorder::TOOL_STARTED;
use super::time::ms_from_iso;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{
    AgentMessage, ContentBlock, CustomMessage, ToolCall, ToolResultMessage, UserContent,
    UserMessage,
};

/// Start of the placeholder result for a call the file records as started but not finished.
pub const STARTED_TOOL_TEXT: &str = "This tool call started, but the session ended before it \
finished, so its outcome is unknown: it may have done some or all of its work. Check its effects \
before running it again.";

/// The placeholder result for an unfinished call the file does not record as started.
pub const UNFINISHED_TOOL_TEXT: &str = "The session ended before this tool call finished; it \
may or may not have started. Check its effects before running it again.";

/// A `provider`/`modelId` pair as recorded in the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

/// Where a context message came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageOrigin {
    /// A `message` entry (possibly converted to a user message).
    Message(String),
    /// A `custom_message` entry.
    CustomMessage(String),
    /// The summary of a `compaction` entry.
    CompactionSummary(String),
    /// A `branch_summary` entry.
    BranchSummary(String),
    /// A result made up for a tool call the file has no result for.
    Placeholder,
}

impl MessageOrigin {
    /// The id of the entry the message came from.
    pub fn entry_id(&self) -> Option<&str> {
        match self {
            MessageOrigin::Message(id)
            | MessageOrigin::CustomMessage(id)
            | MessageOrigin::CompactionSummary(id)
            | MessageOrigin::BranchSummary(id) => Some(id),
            MessageOrigin::Placeholder => None,
        }
    }

    /// [`MessageOrigin::entry_id`], taken.
    pub fn into_entry_id(self) -> Option<String> {
        match self {
            MessageOrigin::Message(id)
            | MessageOrigin::CustomMessage(id)
            | MessageOrigin::CompactionSummary(id)
            | MessageOrigin::BranchSummary(id) => Some(id),
            MessageOrigin::Placeholder => None,
        }
    }
}

/// What an agent needs to resume a session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionContext {
    /// Ready for `Agent::replace_messages`.
    pub messages: Vec<AgentMessage>,
    /// One per message: where it came from.
    pub origins: Vec<MessageOrigin>,
    /// The model in use at the leaf, if the branch records one.
    pub model: Option<ModelRef>,
    /// The thinking level at the leaf, if the branch records one this version knows.
    pub thinking_level: Option<ThinkingLevel>,
    /// The entry the context ends at (new entries become its children).
    pub leaf_id: Option<String>,
    /// How many placeholder results were added for unfinished tool calls.
    pub placeholders: usize,
    /// How many tool results without their call were turned into user messages.
    pub orphan_results: usize,
}

/// Preamble of the user message that carries a compaction summary (the loop's, so a summary
/// read from a file and one made live look the same to the model).
pub use crate::agent::protocol::compaction::SUMMARY_PREAMBLE as COMPACTION_PREAMBLE;

/// Preamble of the user message that carries a branch summary.
pub const BRANCH_PREAMBLE: &str = "The conversation went down another path from here, which \
was then left. This summarizes what happened on that path:";

fn synthetic_user(text: String, timestamp: i64) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content: UserContent::Text(text),
        synthetic: true,
        steering: false,
        attribution: None,
        timestamp,
    })
}

/// The user message standing in for a compaction summary.
pub(crate) fn compaction_summary_message(summary: &str, timestamp: i64) -> AgentMessage {
    crate::agent::protocol::compaction::summary_message(summary, timestamp)
}

/// The user message standing in for a branch summary.
pub(crate) fn branch_summary_message(summary: &str, timestamp: i64) -> AgentMessage {
    synthetic_user(
        format!("{BRANCH_PREAMBLE}\n\n<summary>\n{summary}\n</summary>"),
        timestamp,
    )
}

fn entry_ms(e: &SessionEntry) -> i64 {
    ms_from_iso(&e.timestamp).unwrap_or(0)
}

fn field_str<'a>(c: &'a CustomMessage, key: &str) -> Option<&'a str> {
    c.fields.get(key).and_then(Value::as_str)
}

fn field_ms(c: &CustomMessage) -> i64 {
    c.fields
        .get("timestamp")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Content of a `custom`-role message or `custom_message` entry as user content.
fn user_content_of(value: Option<&Value>) -> UserContent {
    value
        .and_then(|v| serde_json::from_value::<UserContent>(v.clone()).ok())
        .unwrap_or_else(|| UserContent::Text(String::new()))
}

/// A user `!command` run, described for the model.
fn bash_execution_text(c: &CustomMessage) -> String {
    let command = field_str(c, "command").unwrap_or("");
    let output = field_str(c, "output").unwrap_or("");
    let mut text = format!(
        "Ran `{command}`\n```\n{}\n```",
        output.trim_end_matches('\n')
    );
    if c.fields.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n(the command was cancelled)");
    } else if let Some(code) = c.fields.get("exitCode").and_then(Value::as_i64)
        && code != 0
    {
        text.push_str(&format!("\n(exit code {code})"));
    }
    if c.fields.get("truncated").and_then(Value::as_bool) == Some(true) {
        match field_str(c, "fullOutputPath") {
            Some(p) => text.push_str(&format!("\n(output truncated; full output in {p})")),
            None => text.push_str("\n(output truncated)"),
        }
    }
    text
}

/// Messages of the Node.js `pi`'s extra roles, as our loop should see them. `None` drops the
/// message (a `!!` command kept out of the context).
pub(crate) fn convert_custom(message: AgentMessage) -> Option<AgentMessage> {
    let AgentMessage::Custom(c) = message else {
        return Some(message);
    };
    let ts = field_ms(&c);
    Some(match c.role.as_str() {
        "bashExecution" => {
            if c.fields.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            synthetic_user(bash_execution_text(&c), ts)
        }
        "custom" => AgentMessage::from(UserMessage {
            content: user_content_of(c.fields.get("content")),
            synthetic: true,
            steering: false,
            attribution: None,
            timestamp: ts,
        }),
        "compactionSummary" => compaction_summary_message(field_str(&c, "summary")?, ts),
        "branchSummary" => branch_summary_message(field_str(&c, "summary")?, ts),
        // A role this pi does not know (a newer program's): quoted, never silently dropped.
        _ => synthetic_user(unknown_role_text(&c), ts),
    })
}

/// A message of a role this pi does not know, quoted for the model.
fn unknown_role_text(c: &CustomMessage) -> String {
    let body = match c.fields.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(content @ Value::Array(_)) => match user_content_of(Some(content)) {
            UserContent::Text(text) => text,
            UserContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| b.as_text())
                .collect::<Vec<_>>()
                .join("\n"),
        },
        _ => {
            let mut fields = c.fields.clone();
            fields.remove("timestamp");
            Value::Object(fields).to_string()
        }
    };
    format!(
        "(A message with the role `{}` from the saved session, which this pi does not know; \
         it is quoted here for reference.)\n{body}",
        c.role
    )
}

/// One step of building a context: a message entry to take, or a message made here.
enum Step {
    Entry(usize),
    Made(AgentMessage, MessageOrigin),
}

struct Plan {
    steps: Vec<Step>,
    model: Option<ModelRef>,
    thinking_level: Option<ThinkingLevel>,
    /// Ids of the tool calls recorded as started on the branch.
    started: HashSet<String>,
}

/// What [`scan`] finds on a branch.
struct Scan {
    model: Option<ModelRef>,
    thinking_level: Option<ThinkingLevel>,
    /// The latest compaction's position in the path.
    compaction_at: Option<usize>,
    started: HashSet<String>,
}

fn step_for(entries: &[SessionEntry], i: usize) -> Option<Step> {
    let e = &entries[i];
    match &e.kind {
        EntryKind::Message(_) => Some(Step::Entry(i)),
        EntryKind::CustomMessage(c) => Some(Step::Made(
            AgentMessage::from(UserMessage {
                content: c.content.clone(),
                synthetic: true,
                steering: false,
                attribution: None,
                timestamp: entry_ms(e),
            }),
            MessageOrigin::CustomMessage(e.id.clone()),
        )),
        EntryKind::BranchSummary(b) if !b.summary.is_empty() => Some(Step::Made(
            branch_summary_message(&b.summary, entry_ms(e)),
            MessageOrigin::BranchSummary(e.id.clone()),
        )),
        _ => None,
    }
}

/// The model, thinking level, latest compaction and started tool calls on a branch.
fn scan(entries: &[SessionEntry], path: &[usize]) -> Scan {
    // The latest (provider, model) named, copied once at the end: every assistant message
    // names one, and a long session has ten thousand of them.
    let mut model: Option<(&str, &str)> = None;
    let mut thinking_level = None;
    let mut compaction_at = None;
    let mut started = HashSet::new();
    for (pos, &i) in path.iter().enumerate() {
        match &entries[i].kind {
            EntryKind::ModelChange { provider, model_id } => {
                model = Some((provider, model_id));
            }
            EntryKind::Message(m)
                if let Some(a) = m.as_assistant()
                    && !a.model.is_empty() =>
            {
                model = Some((&a.provider, &a.model));
            }
            EntryKind::ThinkingLevelChange { thinking_level: t } => {
                thinking_level = t.parse::<ThinkingLevel>().ok();
            }
            EntryKind::Compaction(_) => compaction_at = Some(pos),
            EntryKind::Custom {
                custom_type,
                data: Some(data),
            } if custom_type == TOOL_STARTED => {
                if let Some(id) = data.get("toolCallId").and_then(Value::as_str) {
                    started.insert(id.to_string());
                }
            }
            _ => {}
        }
    }
    Scan {
        model: model.map(|(provider, model_id)| ModelRef {
            provider: provider.to_string(),
            model_id: model_id.to_string(),
        }),
        thinking_level,
        compaction_at,
        started,
    }
}

fn plan(entries: &[SessionEntry], path: &[usize]) -> Plan {
    let Scan {
        model,
        thinking_level,
        compaction_at,
        started,
    } = scan(entries, path);
    let mut steps = Vec::with_capacity(path.len());
    match compaction_at {
        Some(cpos) => {
            let ce = &entries[path[cpos]];
            if let EntryKind::Compaction(c) = &ce.kind {
                steps.push(Step::Made(
                    compaction_summary_message(&c.summary, entry_ms(ce)),
                    MessageOrigin::CompactionSummary(ce.id.clone()),
                ));
                if let Some(first) = path[..cpos]
                    .iter()
                    .position(|&i| entries[i].id == c.first_kept_entry_id)
                {
                    steps.extend(
                        path[first..cpos]
                            .iter()
                            .filter_map(|&i| step_for(entries, i)),
                    );
                }
            }
            steps.extend(
                path[cpos + 1..]
                    .iter()
                    .filter_map(|&i| step_for(entries, i)),
            );
        }
        None => steps.extend(path.iter().filter_map(|&i| step_for(entries, i))),
    }
    Plan {
        steps,
        model,
        thinking_level,
        started,
    }
}

/// Tool calls left without a result: (index of the message after which results end, call).
/// Results may follow their call with custom messages between; the next message of any other
/// kind closes the calls.
fn unanswered(messages: &[AgentMessage]) -> Vec<(usize, &ToolCall, i64)> {
    let mut missing = Vec::new();
    let mut open: Vec<&ToolCall> = Vec::new();
    let mut open_ts = 0;
    let mut last = 0;
    for (i, m) in messages.iter().enumerate() {
        if let Some(r) = m.as_tool_result() {
            open.retain(|c| c.id != r.tool_call_id);
            last = i;
            continue;
        }
        match m {
            AgentMessage::Custom(_) => last = i,
            other => {
                missing.extend(open.drain(..).map(|c| (last, c, open_ts)));
                if let Some(a) = other.as_assistant()
                    && !a.is_provider_refusal()
                    && !a.is_retried_attempt()
                {
                    for c in a.tool_calls() {
                        if !open.iter().any(|o| o.id == c.id) {
                            open.push(c);
                        }
                    }
                    open_ts = a.timestamp;
                }
                last = i;
            }
        }
    }
    missing.extend(open.drain(..).map(|c| (last, c, open_ts)));
    missing
}

/// The result standing in for a call the file has no result for.
fn unfinished_result(call: &ToolCall, started: bool, timestamp: i64) -> ToolResultMessage {
    let text = if started {
        STARTED_TOOL_TEXT
    } else {
        UNFINISHED_TOOL_TEXT
    };
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![ContentBlock::text(text)],
        details: Some(json!({
            "__synthetic": true,
            "source": "session_ended",
            "execution": if started { "started" } else { "unknown" },
        })),
        is_error: true,
        useless: false,
        timestamp,
    }
}

/// Answer tool calls that have no result (see [`unanswered`]) with placeholder results.
fn add_placeholders(
    messages: Vec<AgentMessage>,
    origins: Vec<MessageOrigin>,
    started: &HashSet<String>,
) -> (Vec<AgentMessage>, Vec<MessageOrigin>, usize) {
    let missing: Vec<(usize, AgentMessage)> = unanswered(&messages)
        .into_iter()
        .map(|(after, call, ts)| {
            let r = unfinished_result(call, started.contains(&call.id), ts);
            (after, r.into())
        })
        .collect();
    if missing.is_empty() {
        return (messages, origins, 0);
    }
    let added = missing.len();
    let mut out = Vec::with_capacity(messages.len() + added);
    let mut out_origins = Vec::with_capacity(messages.len() + added);
    let mut missing = missing.into_iter().peekable();
    for (i, (m, origin)) in messages.into_iter().zip(origins).enumerate() {
        out.push(m);
        out_origins.push(origin);
        while let Some((_, p)) = missing.next_if(|(after, _)| *after == i) {
            out.push(p);
            out_origins.push(MessageOrigin::Placeholder);
        }
    }
    (out, out_origins, added)
}

/// Turn each tool result whose call is not in the assistant message it follows into a user
/// message quoting it. Returns how many were turned.
fn repair_orphans(messages: &mut [AgentMessage]) -> usize {
    // Found first, borrowing the call ids (a turn has a handful of calls: a list beats
    // hashing, and nothing is copied); repaired after.
    let mut orphans = Vec::new();
    let mut calls: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if let Some(r) = m.as_tool_result() {
            match calls.iter().position(|c| *c == r.tool_call_id) {
                Some(at) => {
                    calls.swap_remove(at);
                }
                None => orphans.push(i),
            }
            continue;
        }
        match m {
            AgentMessage::Custom(_) => {}
            other => {
                calls.clear();
                if let Some(a) = other.as_assistant()
                    && !a.is_provider_refusal()
                    && !a.is_retried_attempt()
                {
                    for c in a.tool_calls() {
                        if !calls.contains(&c.id.as_str()) {
                            calls.push(&c.id);
                        }
                    }
                }
            }
        }
    }
    for &i in &orphans {
        let Some(r) = messages[i].as_tool_result() else {
            continue;
        };
        let text = format!(
            "(A result of the `{}` tool whose call is missing from the saved session; \
             it is quoted here for reference.)\n{}",
            r.tool_name,
            r.text()
        );
        let timestamp = r.timestamp;
        messages[i] = AgentMessage::from(UserMessage {
            content: UserContent::Text(text),
            synthetic: true,
            steering: false,
            attribution: None,
            timestamp,
        });
    }
    orphans.len()
}

fn build(
    plan: Plan,
    leaf_id: Option<String>,
    mut take: impl FnMut(usize) -> (AgentMessage, String),
) -> SessionContext {
    let mut messages = Vec::with_capacity(plan.steps.len());
    let mut origins = Vec::with_capacity(plan.steps.len());
    for step in plan.steps {
        match step {
            Step::Entry(i) => {
                let (m, id) = take(i);
                if let Some(m) = convert_custom(m) {
                    messages.push(m);
                    origins.push(MessageOrigin::Message(id));
                }
            }
            Step::Made(m, origin) => {
                messages.push(m);
                origins.push(origin);
            }
        }
    }
    let orphan_results = repair_orphans(&mut messages);
    let (messages, origins, placeholders) = add_placeholders(messages, origins, &plan.started);
    SessionContext {
        messages,
        origins,
        model: plan.model,
        thinking_level: plan.thinking_level,
        leaf_id,
        placeholders,
        orphan_results,
    }
}

fn message_of(e: &SessionEntry) -> AgentMessage {
    match &e.kind {
        EntryKind::Message(m) => m.clone(),
        // Plans only point at message entries.
        _ => AgentMessage::from(CustomMessage::new("missing", Default::default())),
    }
}

impl Session {
    /// The context at the leaf (the last entry), cloning the messages.
    pub fn context(&self) -> SessionContext {
        self.context_at(self.leaf_id())
    }

    /// The context at any entry (`None`: an empty conversation).
    pub fn context_at(&self, leaf: Option<&str>) -> SessionContext {
        let path = self.path_indices(leaf);
        let leaf_id = path.last().map(|&i| self.entries[i].id.clone());
        let plan = plan(&self.entries, &path);
        build(plan, leaf_id, |i| {
            (message_of(&self.entries[i]), self.entries[i].id.clone())
        })
    }

    /// The context at the leaf, moving the messages out instead of copying them (for resuming
    /// a large session with the least memory).
    pub fn into_context(mut self) -> SessionContext {
        let path = self.path_indices(self.leaf_id());
        let leaf_id = path.last().map(|&i| self.entries[i].id.clone());
        let plan = plan(&self.entries, &path);
        let entries = &mut self.entries;
        build(plan, leaf_id, |i| {
            let e = &mut entries[i];
            let kind = std::mem::replace(&mut e.kind, EntryKind::SessionInfo { name: None });
            let m = match kind {
                EntryKind::Message(m) => m,
                _ => AgentMessage::from(CustomMessage::new("missing", Default::default())),
            };
            (m, std::mem::take(&mut e.id))
        })
    }

    /// The model and thinking level recorded at the leaf, without building messages.
    pub(crate) fn current_settings(&self) -> (Option<ModelRef>, Option<ThinkingLevel>) {
        let path = self.path_indices(self.leaf_id());
        let found = scan(&self.entries, &path);
        (found.model, found.thinking_level)
    }
}

//! Compaction, the pure part: how full the context is, where to cut a long conversation, and
//! what to ask the model for a summary of the part cut off.
//!
//! The rules are the Node.js `pi`'s (`compaction.md`), so either program continues the other's
//! compacted sessions:
//!
//! * **Accounting.** Tokens in context = the last reply's usage (input + cache reads and writes
//!   + output) plus an estimate (characters / 4) for every message after it.
//! * **When.** When that passes `window − reserve_tokens` (and compaction is enabled).
//! * **Where.** Walking back from the newest message, adding estimates until
//!   `keep_recent_tokens` is reached; the cut goes to the nearest message that may start the
//!   kept part — a user or assistant message (or an extension's), never a tool result, so a call
//!   and its result stay together. When the cut falls inside a turn (a single turn larger than
//!   the budget), the turn is split: the turns before it are summarised, and the start of that
//!   turn is summarised apart.
//! * **What.** The summary builds on the previous one (a conversation that was compacted
//!   before starts with its summary message); the files read and changed accumulate (from the
//!   tool calls summarised, and from the `<read-files>` / `<modified-files>` lists of the previous
//!   summary). Tool results are cut to a bounded size in the request.
//!
//! Nothing here talks to a provider or a file: the loop (or a host) sends [`SummaryRequest`]s
//! and writes the entry.

use std::collections::BTreeSet;
use std::ops::Range;

pub use crate::agent::protocol::compaction::{
    CompactionSettings, SUMMARY_PREAMBLE, summary_message, summary_of,
};
use crate::agent::protocol::types::{AgentMessage, ContentBlock, Message, UserContent};

/// Characters of one tool result kept in a summary request.
pub const MAX_TOOL_RESULT_CHARS: usize = 2_000;

/// Estimated tokens of a text: characters / 4, rounded up.
fn text_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

fn content_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.chars().count(),
            ContentBlock::Thinking(t) => t.thinking.chars().count(),
            ContentBlock::ToolCall(c) => c.name.len() + c.arguments.to_string().len(),
            // An image counts as a fixed amount, as the Node pi estimates it.
            ContentBlock::Image(_) => 4_800,
            ContentBlock::RedactedThinking(_) => 0,
        })
        .sum()
}

fn user_chars(c: &UserContent) -> usize {
    match c {
        UserContent::Text(s) => s.chars().count(),
        UserContent::Blocks(b) => content_chars(b),
    }
}

/// Estimated tokens of one message (characters / 4).
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message.as_llm() {
        Some(Message::User(u)) => user_chars(&u.content),
        Some(Message::Developer(d)) => user_chars(&d.content),
        Some(Message::Assistant(a)) => content_chars(&a.content),
        Some(Message::ToolResult(r)) => content_chars(&r.content) + r.tool_name.len(),
        None => serde_json::to_string(message).map_or(0, |s| s.len()),
    };
    text_tokens(chars)
}

/// How full the context is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextTokens {
    pub tokens: u64,
    /// Whether a reply's reported usage is part of it (else it is all estimate).
    pub from_usage: bool,
}

/// Tokens in context: the last reply's usage plus estimates for what came after it. Replies
/// that failed or were cut off report no usable usage and are skipped, and so are replies
/// older than a summary the conversation starts with: their usage counted the turns the
/// summary replaced.
pub fn context_tokens(messages: &[AgentMessage]) -> ContextTokens {
    let since = messages
        .first()
        .filter(|m| summary_of(m).is_some())
        .and_then(AgentMessage::as_llm)
        .map_or(i64::MIN, Message::timestamp);
    for (i, m) in messages.iter().enumerate().rev() {
        if let Some(a) = m.as_assistant()
            && a.timestamp >= since
        {
            let u = &a.usage;
            let used = u.input + u.cache_read + u.cache_write + u.output;
            if used > 0 {
                let after: u64 = messages[i + 1..].iter().map(estimate_tokens).sum();
                return ContextTokens {
                    tokens: used + after,
                    from_usage: true,
                };
            }
        }
    }
    ContextTokens {
        tokens: messages.iter().map(estimate_tokens).sum(),
        from_usage: false,
    }
}

/// Whether a context of `tokens` should be compacted for a model with `window` tokens.
pub fn should_compact(tokens: u64, window: u64, settings: &CompactionSettings) -> bool {
    let reserve = settings.for_window(window).reserve_tokens;
    settings.enabled && window > 0 && tokens > window.saturating_sub(reserve)
}

/// Whether the kept part may start at this message (never at a tool result).
fn is_cut_point(m: &AgentMessage) -> bool {
    match m.as_llm() {
        Some(Message::ToolResult(_)) => false,
        Some(_) => true,
        // bashExecution, custom and summary messages stand on their own.
        None => true,
    }
}

fn is_user(m: &AgentMessage) -> bool {
    matches!(m.as_llm(), Some(Message::User(_)))
}

/// Files the summarised part read and changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileOps {
    pub read: BTreeSet<String>,
    pub modified: BTreeSet<String>,
}

impl FileOps {
    /// Add the files of the tool calls in `messages` (read → read; write and edit → modified).
    pub fn add_calls(&mut self, messages: &[AgentMessage]) {
        for a in messages.iter().filter_map(AgentMessage::as_assistant) {
            for call in a.tool_calls() {
                let Some(path) = call.arguments.get("path").and_then(|p| p.as_str()) else {
                    continue;
                };
                match call.name.as_str() {
                    "read" => {
                        self.read.insert(path.to_string());
                    }
                    "write" | "edit" => {
                        self.modified.insert(path.to_string());
                    }
                    _ => {}
                }
            }
        }
    }

    /// Add the lists a previous summary ends with.
    pub fn add_from_summary(&mut self, summary: &str) {
        for (tag, set) in [
            ("read-files", &mut self.read),
            ("modified-files", &mut self.modified),
        ] {
            let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
            if let Some(start) = summary.find(&open)
                && let Some(len) = summary[start..].find(&close)
            {
                let body = &summary[start + open.len()..start + len];
                set.extend(
                    body.lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(str::to_string),
                );
            }
        }
    }

    /// The lists as the summary ends with them (files both read and changed count as changed).
    pub fn render(&self) -> String {
        let read: Vec<&str> = self
            .read
            .iter()
            .filter(|f| !self.modified.contains(*f))
            .map(String::as_str)
            .collect();
        let mut out = String::new();
        if !read.is_empty() {
            out.push_str(&format!(
                "<read-files>\n{}\n</read-files>\n",
                read.join("\n")
            ));
        }
        if !self.modified.is_empty() {
            let modified: Vec<&str> = self.modified.iter().map(String::as_str).collect();
            out.push_str(&format!(
                "<modified-files>\n{}\n</modified-files>\n",
                modified.join("\n")
            ));
        }
        out
    }

    /// `details` of the `compaction` entry (`readFiles`, `modifiedFiles`).
    pub fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "readFiles": self.read.iter().collect::<Vec<_>>(),
            "modifiedFiles": self.modified.iter().collect::<Vec<_>>(),
        })
    }
}

/// What a compaction of a conversation would do (indices into its messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The previous summary (the conversation starts with one).
    pub previous_summary: Option<String>,
    /// Complete turns to summarise.
    pub history: Range<usize>,
    /// The start of a turn too large to keep whole, summarised apart (a split turn).
    pub turn_prefix: Option<Range<usize>>,
    /// The first message kept as it is.
    pub first_kept: usize,
    /// Tokens in context before compacting.
    pub tokens_before: u64,
    /// Files read and changed, the previous summary's included.
    pub files: FileOps,
}

/// Plan a compaction asked for by the person (`/compact`): as [`plan`], but when all of the
/// conversation is within `keep_recent_tokens`, keep only the last exchange (from the newest
/// user message on) and condense what came before it. `None` only when there is nothing
/// before that exchange.
pub fn plan_on_request(messages: &[AgentMessage], keep_recent_tokens: u64) -> Option<Plan> {
    plan(messages, keep_recent_tokens).or_else(|| {
        let last_user = messages.iter().rposition(is_user)?;
        let tokens: u64 = messages[last_user..].iter().map(estimate_tokens).sum();
        plan(messages, tokens.max(1)).filter(|p| p.first_kept <= last_user)
    })
}

/// Plan the compaction of `messages`, keeping about `keep_recent_tokens` of the newest.
/// `None` when there is nothing before the part to keep.
pub fn plan(messages: &[AgentMessage], keep_recent_tokens: u64) -> Option<Plan> {
    let previous = messages.first().and_then(summary_of).map(str::to_string);
    let start = usize::from(previous.is_some());
    if messages.len() <= start + 1 {
        return None;
    }
    // Walk back until the newest messages hold the budget.
    let mut kept = 0u64;
    let mut reach = None;
    for i in (start..messages.len()).rev() {
        kept += estimate_tokens(&messages[i]);
        if kept >= keep_recent_tokens {
            reach = Some(i);
            break;
        }
    }
    // All of it fits the budget: nothing to condense.
    let reach = reach?;
    // The nearest message at or after the reach that may start the kept part (keeping less
    // rather than cutting a call from its result); else the nearest before it.
    let cut = (reach..messages.len())
        .find(|&i| i > start && is_cut_point(&messages[i]))
        .or_else(|| {
            (start + 1..reach)
                .rev()
                .find(|&i| is_cut_point(&messages[i]))
        })?;
    let turn_start = (start..=cut).rev().find(|&i| is_user(&messages[i]));
    let (history, turn_prefix) = match turn_start {
        Some(t) if t < cut => (start..t, Some(t..cut)),
        _ => (start..cut, None),
    };
    let mut files = FileOps::default();
    if let Some(p) = &previous {
        files.add_from_summary(p);
    }
    files.add_calls(&messages[start..cut]);
    Some(Plan {
        previous_summary: previous,
        history,
        turn_prefix,
        first_kept: cut,
        tokens_before: context_tokens(messages).tokens,
        files,
    })
}

/// The messages as plain text for a summary request: `[User]: …`, `[Assistant]: …`,
/// `[Assistant thinking]: …`, `[Tool call]: name {args}`, `[Tool result]: …` (cut to
/// `max_tool_chars`).
pub fn serialize(messages: &[AgentMessage], max_tool_chars: usize) -> String {
    let mut out = String::new();
    for m in messages {
        match m.as_llm() {
            Some(Message::User(u)) => {
                out.push_str(&format!("[User]: {}\n\n", u.content.joined_text()));
            }
            Some(Message::Developer(d)) => {
                out.push_str(&format!("[Instructions]: {}\n\n", d.content.joined_text()));
            }
            Some(Message::Assistant(a)) => {
                for b in &a.content {
                    match b {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            out.push_str(&format!("[Assistant]: {}\n\n", t.text));
                        }
                        ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                            out.push_str(&format!("[Assistant thinking]: {}\n\n", t.thinking));
                        }
                        ContentBlock::ToolCall(c) => {
                            out.push_str(&format!("[Tool call]: {} {}\n\n", c.name, c.arguments));
                        }
                        _ => {}
                    }
                }
                if let Some(e) = &a.error_message {
                    out.push_str(&format!("[Assistant error]: {e}\n\n"));
                }
            }
            Some(Message::ToolResult(r)) => {
                let text = r.text();
                let total = text.chars().count();
                let shown: String = text.chars().take(max_tool_chars).collect();
                out.push_str(&format!("[Tool result: {}]: {shown}", r.tool_name));
                if total > max_tool_chars {
                    out.push_str(&format!(" … ({} more characters)", total - max_tool_chars));
                }
                out.push_str("\n\n");
            }
            None => {
                if let Ok(s) = serde_json::to_string(m) {
                    let shown: String = s.chars().take(max_tool_chars).collect();
                    out.push_str(&format!("[{}]: {shown}\n\n", m.role()));
                }
            }
        }
    }
    out
}

/// The instructions a summary request is sent with (no tools are offered).
pub const SUMMARY_SYSTEM_PROMPT: &str = "You write the working notes that let a coding agent \
carry on a long task after the older part of its conversation is removed. You are given that \
part as a transcript. Do not continue the conversation and do not answer questions in it: \
only write the notes, in the format asked for, in the language the user wrote in.";

const FORMAT: &str = "Write the notes in exactly this markdown structure (leave a section \
out only when there is nothing for it):

## Goal
What the user wants done, in one or two sentences.

## Constraints & Preferences
- Requirements, conventions and preferences the user stated.

## Progress
### Done
- [x] What is finished.
### In Progress
- [ ] What was being worked on when the transcript ends.
### Blocked
- Problems still open.

## Key Decisions
- **Decision**: why it was made.

## Next Steps
1. What should happen next, in order.

## Critical Context
- Exact names, paths, commands, values and error messages needed to continue.

Be concrete and brief; keep identifiers exactly as written.";

/// How many characters of transcript a summary request may carry for a model of `window`
/// tokens (the request must fit the model too: ~3 characters a token, to be safe, after the
/// reserve); a model of unknown window gets 400,000.
pub fn transcript_budget(window: u64, reserve_tokens: u64) -> usize {
    if window == 0 {
        return 400_000;
    }
    (window.saturating_sub(reserve_tokens) as usize)
        .saturating_mul(3)
        .max(8_000)
}

/// `text` cut to its last `budget` characters (the newest part), saying how much went.
fn newest(text: String, budget: usize) -> String {
    let total = text.chars().count();
    if total <= budget {
        return text;
    }
    let skip = total - budget;
    let rest: String = text.chars().skip(skip).collect();
    format!("[… {skip} earlier characters of the transcript left out to fit]\n{rest}")
}

/// One request to the model: the system prompt and the user message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryRequest {
    pub system: String,
    pub prompt: String,
}

/// The request summarising the history (complete turns), building on the previous summary.
/// `budget_chars` bounds the transcript's part of the request (the request must fit the
/// model's window too): the newest part is kept.
pub fn history_request(
    messages: &[AgentMessage],
    plan: &Plan,
    focus: Option<&str>,
    max_tool_chars: usize,
    budget_chars: usize,
) -> SummaryRequest {
    let mut prompt = String::new();
    if let Some(previous) = &plan.previous_summary {
        prompt.push_str(&format!(
            "Notes written earlier, covering the conversation before this transcript. Keep \
             what is still true, update what changed, and fold in the new part:\n\n\
             <previous-notes>\n{previous}\n</previous-notes>\n\n"
        ));
    }
    prompt.push_str(&format!(
        "<transcript>\n{}</transcript>\n\n{FORMAT}",
        newest(
            serialize(&messages[plan.history.clone()], max_tool_chars),
            budget_chars
        )
    ));
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        prompt.push_str(&format!("\n\nGive particular attention to: {f}"));
    }
    SummaryRequest {
        system: SUMMARY_SYSTEM_PROMPT.to_string(),
        prompt,
    }
}

/// The request summarising the start of a split turn, apart from the history.
pub fn turn_prefix_request(
    messages: &[AgentMessage],
    prefix: Range<usize>,
    focus: Option<&str>,
    max_tool_chars: usize,
    budget_chars: usize,
) -> SummaryRequest {
    let mut prompt = format!(
        "This transcript is the beginning of the current turn: the user's request and the \
             first steps taken for it. The rest of the turn follows it and is kept as it is. \
             Write short notes on what was asked and what these steps did and found, so the \
             rest of the turn makes sense without them.\n\n<transcript>\n{}</transcript>",
        newest(serialize(&messages[prefix], max_tool_chars), budget_chars)
    );
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        prompt.push_str(&format!("\n\nGive particular attention to: {f}"));
    }
    SummaryRequest {
        system: SUMMARY_SYSTEM_PROMPT.to_string(),
        prompt,
    }
}

/// The request summarising a branch the person leaves in `/tree`: what was tried there and
/// what came of it, so the branch continued can use it.
pub fn branch_request(
    messages: &[AgentMessage],
    focus: Option<&str>,
    max_tool_chars: usize,
    budget_chars: usize,
) -> SummaryRequest {
    let mut prompt = format!(
        "This transcript is a branch of the conversation that the user is now leaving to go on \
         from an earlier point. Write notes on what was tried on it, what was found and what \
         came of it, so the conversation can go on without it.\n\n<transcript>\n{}</transcript>\n\n{FORMAT}",
        newest(serialize(messages, max_tool_chars), budget_chars)
    );
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        prompt.push_str(&format!("\n\nGive particular attention to: {f}"));
    }
    SummaryRequest {
        system: SUMMARY_SYSTEM_PROMPT.to_string(),
        prompt,
    }
}

/// The summary stored in the entry: the history notes, the split turn's notes if any, and the
/// file lists.
pub fn assemble(history: &str, turn_prefix: Option<&str>, files: &FileOps) -> String {
    let mut out = history.trim().to_string();
    if let Some(p) = turn_prefix.map(str::trim).filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("## Current Turn So Far\n");
        out.push_str(p);
    }
    let lists = files.render();
    if !lists.is_empty() {
        out.push_str("\n\n");
        out.push_str(lists.trim_end());
    }
    out
}

/// The conversation after compaction: the summary, then the kept messages.
pub fn compacted(
    messages: &[AgentMessage],
    first_kept: usize,
    summary: &str,
    timestamp: i64,
) -> Vec<AgentMessage> {
    let mut out = Vec::with_capacity(messages.len().saturating_sub(first_kept) + 1);
    out.push(summary_message(summary, timestamp));
    out.extend(messages[first_kept..].iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{
        AssistantMessage, StopReason, ToolCall, ToolResultMessage, Usage,
    };
    use serde_json::json;

    fn user(text: &str) -> AgentMessage {
        AgentMessage::user(text)
    }

    fn reply(text: &str, usage: u64) -> AgentMessage {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content = vec![ContentBlock::text(text)];
        a.stop_reason = StopReason::Stop;
        a.usage = Usage {
            input: usage,
            ..Usage::default()
        };
        AgentMessage::from(Message::Assistant(a))
    }

    fn call(id: &str, name: &str, path: &str) -> AgentMessage {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content = vec![ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({ "path": path }),
            intent: None,
            thought_signature: None,
        })];
        a.stop_reason = StopReason::ToolUse;
        AgentMessage::from(Message::Assistant(a))
    }

    fn result(id: &str, name: &str, text: &str) -> AgentMessage {
        AgentMessage::from(Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: name.into(),
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: false,
            useless: false,
            timestamp: 0,
        }))
    }

    /// `n` characters of text: n / 4 tokens.
    fn chars(n: usize) -> String {
        "x".repeat(n)
    }

    #[test]
    fn context_tokens_are_the_last_usage_plus_estimates_after_it() {
        let messages = vec![
            user(&chars(4_000)),
            reply("ok", 1_500),
            user(&chars(400)),
            result("c", "read", &chars(40)),
        ];
        let t = context_tokens(&messages);
        assert!(t.from_usage);
        assert_eq!(t.tokens, 1_500 + 100 + 10 + 1);
        // Without any usage, all of it is estimated.
        let t = context_tokens(&messages[..1]);
        assert_eq!((t.tokens, t.from_usage), (1_000, false));
        let s = CompactionSettings::default();
        assert!(!should_compact(100_000, 128_000, &s));
        assert!(should_compact(120_000, 128_000, &s));
        assert!(!should_compact(
            120_000,
            128_000,
            &CompactionSettings {
                enabled: false,
                ..s
            }
        ));
        assert!(!should_compact(120_000, 0, &s));
    }

    #[test]
    fn usage_from_before_a_summary_does_not_count() {
        let mut old = reply("kept from before", 90_000);
        if let AgentMessage::Llm(m) = &mut old
            && let Message::Assistant(a) = std::sync::Arc::make_mut(m)
        {
            a.timestamp = 10;
        }
        let messages = vec![summary_message(&chars(400), 20), old, user(&chars(40))];
        let t = context_tokens(&messages);
        assert!(!t.from_usage);
        assert!(t.tokens < 1_000, "{t:?}");
    }

    #[test]
    fn compact_on_request_keeps_the_last_exchange_when_all_fits_the_budget() {
        let messages = vec![
            user("first"),
            call("c1", "read", "a.txt"),
            result("c1", "read", "aaa"),
            reply("read it", 0),
            user("second"),
            reply("done", 0),
        ];
        assert!(plan(&messages, 20_000).is_none());
        let p = plan_on_request(&messages, 20_000).unwrap();
        assert_eq!(p.first_kept, 4);
        assert_eq!(p.history, 0..4);
        // One exchange only: nothing before it.
        assert!(plan_on_request(&messages[..2], 20_000).is_none());
    }

    #[test]
    fn the_cut_keeps_the_budget_and_never_separates_a_call_from_its_result() {
        // Four turns of ~1,000 tokens each; keep ~1,500: the cut lands on a turn's start.
        let mut m = Vec::new();
        for i in 0..4 {
            m.push(user(&format!("task {i} {}", chars(2_000))));
            m.push(call(&format!("c{i}"), "read", &format!("f{i}.rs")));
            m.push(result(&format!("c{i}"), "read", &chars(2_000)));
        }
        let p = plan(&m, 1_500).unwrap();
        assert!(p.first_kept > 0 && p.first_kept < m.len());
        assert!(!matches!(
            m[p.first_kept].as_llm(),
            Some(Message::ToolResult(_))
        ));
        // Every kept tool result has its call kept too.
        assert!(matches!(
            m[p.first_kept].as_llm(),
            Some(Message::User(_)) | Some(Message::Assistant(_))
        ));
        assert_eq!(p.files.read.len(), p.first_kept.div_ceil(3));
    }

    #[test]
    fn a_turn_larger_than_the_budget_is_split_and_its_start_summarised_apart() {
        let mut m = vec![user("earlier task"), reply("done", 10)];
        m.push(user("one big task"));
        for i in 0..6 {
            m.push(call(&format!("c{i}"), "edit", &format!("src/m{i}.rs")));
            m.push(result(&format!("c{i}"), "edit", &chars(4_000)));
        }
        let p = plan(&m, 2_500).unwrap();
        let prefix = p.turn_prefix.clone().unwrap();
        assert_eq!(p.history, 0..2);
        assert_eq!(prefix.start, 2, "the split turn starts at its prompt");
        assert_eq!(prefix.end, p.first_kept);
        assert!(matches!(
            m[p.first_kept].as_llm(),
            Some(Message::Assistant(_))
        ));
        assert!(p.files.modified.contains("src/m0.rs"));
        let req = turn_prefix_request(&m, prefix.clone(), Some("the edits"), 100, 100_000);
        assert!(
            req.prompt
                .contains("Give particular attention to: the edits")
        );
        assert!(req.prompt.contains("one big task"));
        assert!(
            req.prompt.contains("more characters"),
            "tool results are cut"
        );
        // A transcript over the budget keeps its newest part.
        let req = turn_prefix_request(&m, prefix, None, 100, 300);
        assert!(
            req.prompt
                .contains("earlier characters of the transcript left out")
        );
        assert!(!req.prompt.contains("one big task"));
        assert!(req.prompt.contains("[Tool result: edit]"));
    }

    #[test]
    fn summaries_build_on_the_previous_one_and_files_accumulate() {
        let first = assemble(
            "## Goal\nShip it",
            None,
            &FileOps {
                read: ["a.rs".to_string()].into(),
                modified: ["b.rs".to_string()].into(),
            },
        );
        let mut m = vec![summary_message(&first, 0)];
        assert_eq!(summary_of(&m[0]), Some(first.as_str()));
        for i in 0..3 {
            m.push(user(&format!("step {i} {}", chars(2_000))));
            m.push(call(&format!("c{i}"), "write", &format!("new{i}.rs")));
            m.push(result(&format!("c{i}"), "write", "ok"));
            m.push(reply("done", 10));
        }
        let p = plan(&m, 600).unwrap();
        assert_eq!(p.previous_summary.as_deref(), Some(first.as_str()));
        assert_eq!(
            p.history.start, 1,
            "the old summary is not summarised as a message"
        );
        assert!(p.files.read.contains("a.rs") && p.files.modified.contains("b.rs"));
        assert!(p.files.modified.contains("new0.rs"));
        let req = history_request(&m, &p, Some("the database schema"), 500, 100_000);
        assert!(req.prompt.contains("<previous-notes>\n## Goal\nShip it"));
        assert!(req.prompt.contains("the database schema"));
        let summary = assemble("## Goal\nShip it, then more", None, &p.files);
        assert!(summary.contains("<read-files>\na.rs\n</read-files>"));
        assert!(summary.contains("<modified-files>\nb.rs\nnew0.rs"));
        let after = compacted(&m, p.first_kept, &summary, 5);
        assert_eq!(after.len(), m.len() - p.first_kept + 1);
        assert_eq!(summary_of(&after[0]), Some(summary.as_str()));
        assert_eq!(p.files.details()["modifiedFiles"][0], "b.rs");
    }

    #[test]
    fn nothing_to_compact_in_a_short_conversation() {
        assert_eq!(plan(&[], 100), None);
        assert_eq!(plan(&[user("hi")], 100), None);
        // Everything fits the budget: nothing to condense.
        let m = vec![user("hi"), reply("hello", 5)];
        assert_eq!(plan(&m, 1_000_000), None);
    }
}

//! Transcript cells: each kind of thing the transcript shows, rendering itself for a width.
//!
//! A [`Cell`] is pure data plus `lines(width, view)`. Finished cells are cached by the
//! transcript (see `transcript.rs`); a cell reports [`Cell::is_live`] while its look still
//! changes with time (a running tool's spinner, a streaming message), and those are rendered
//! every frame. All model and tool text is passed through `sanitize` on the way in or out.
//!
//! Tool cells: one per call, created by `tool_execution_start`, with a tool-specific header
//! (`$ command`, `read path:10-40`, `edit path`, `grep /pattern/ in dir`, ...), a spinner and
//! elapsed time while running, then ✓/✗ and the time taken. Output is collapsed (bash: last
//! lines; read/write: first lines; others: first lines) unless the view expands tools (Ctrl+O).
//! A write shows the content it writes, not its one-line result.
//! Diffs (`edit` results with a `diff` detail, or text that looks like a unified diff) are
//! coloured.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::markdown;
use super::open_line;
use super::rows::Rows;
use super::sanitize::sanitize;
use super::theme::{self, fg};
use super::wrap::{wrap_all, wrap_line};
use crate::agent::protocol::stream::MessageBuilder;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Message, UserContent, UserMessage,
};

/// Braille spinner frames.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// How the transcript is being viewed; changing it re-renders every cell.
#[derive(Clone, Debug)]
pub struct View {
    pub show_thinking: bool,
    pub expand_tools: bool,
    pub now: Instant,
    /// The key that expands collapsed output, as hints name it (`Ctrl+O`).
    pub expand_key: Arc<str>,
}

impl View {
    pub fn spinner(&self, since: Instant) -> &'static str {
        let ticks = self.now.saturating_duration_since(since).as_millis() / 80;
        SPINNER[(ticks as usize) % SPINNER.len()]
    }
}

#[derive(Clone, Debug)]
pub enum ToolState {
    Running {
        started: Instant,
    },
    Done {
        ok: bool,
        took: Duration,
    },
    /// The loop never ran it (skipped by steering, aborted before it started).
    Skipped,
}

#[derive(Clone, Debug)]
pub struct ToolCell {
    pub id: String,
    pub name: String,
    pub args: Arc<Value>,
    pub state: ToolState,
    /// Sanitised output text (partial while running).
    pub output: String,
    pub diff: Option<String>,
    /// A resumed session's result, made into `output` and `diff` only when the cell is first
    /// drawn: opening a long session does not copy every tool output up front.
    pub saved: Option<AgentMessage>,
}

impl ToolCell {
    /// The output and the diff to show (from the saved result, if any).
    fn texts(&self) -> (Cow<'_, str>, Option<Cow<'_, str>>) {
        match self.saved.as_ref().and_then(|m| m.as_llm()) {
            Some(Message::ToolResult(r)) => (
                Cow::Owned(sanitize(&output_text(&r.content))),
                r.details
                    .as_ref()
                    .and_then(|d| d.get("diff"))
                    .and_then(Value::as_str)
                    .map(|d| Cow::Owned(sanitize(d))),
            ),
            _ => (
                Cow::Borrowed(self.output.as_str()),
                self.diff.as_deref().map(Cow::Borrowed),
            ),
        }
    }
}

/// A tool result's text as one string (images as a short marker), before sanitising.
pub fn output_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            ContentBlock::Image(i) => Some(format!("[image {}]", i.mime_type)),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Clone, Debug)]
pub struct AssistantCell {
    pub builder: MessageBuilder,
    pub streaming: bool,
    /// Rows of the streaming text's finished blocks, so a frame parses only the new part.
    stream: StreamRows,
}

/// A [`markdown::StreamCache`] behind a `RefCell`, because rendering takes `&self`. A clone
/// starts empty (the cache is only an accelerator; its rows are recomputed on demand).
#[derive(Default)]
struct StreamRows(RefCell<markdown::StreamCache>);

impl Clone for StreamRows {
    fn clone(&self) -> Self {
        StreamRows::default()
    }
}

impl std::fmt::Debug for StreamRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamRows")
    }
}

impl StreamRows {
    fn rows(&self, text: &str, width: usize) -> Rows {
        match self.0.try_borrow_mut() {
            Ok(mut cache) => cache.rows(text, width),
            Err(_) => markdown::render(&open_line::shown(text), width).into(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Cell {
    User(String),
    Assistant(AssistantCell),
    Tool(ToolCell),
    Divider,
    Error(String),
    Aborted(String),
    /// A dim one-line notice (retries, model changes, ...).
    Notice(String),
    /// Plain multi-line information (help, /session).
    Info(String),
    /// A summary standing in for condensed or abandoned parts of the conversation.
    Summary(Summary),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryKind {
    /// Earlier turns condensed (a `compaction` entry).
    Compaction,
    /// A branch left behind in `/tree` (a `branch_summary` entry).
    Branch,
}

#[derive(Clone, Debug)]
pub struct Summary {
    pub kind: SummaryKind,
    pub text: String,
}

/// Lines of a summary shown while tool output is collapsed (Ctrl+O shows all).
const SUMMARY_PREVIEW_LINES: usize = 4;

impl Summary {
    /// The summary a resumed session's stand-in user message carries, if it is one.
    pub fn of(message: &UserMessage) -> Option<Summary> {
        use crate::host::view::{BRANCH_PREAMBLE, COMPACTION_PREAMBLE};
        if !message.synthetic {
            return None;
        }
        let UserContent::Text(text) = &message.content else {
            return None;
        };
        let (kind, rest) = if let Some(rest) = text.strip_prefix(COMPACTION_PREAMBLE) {
            (SummaryKind::Compaction, rest)
        } else if let Some(rest) = text.strip_prefix(BRANCH_PREAMBLE) {
            (SummaryKind::Branch, rest)
        } else {
            return None;
        };
        let rest = rest.trim();
        let inner = rest
            .strip_prefix("<summary>")
            .and_then(|r| r.strip_suffix("</summary>"))
            .unwrap_or(rest);
        Some(Summary {
            kind,
            text: inner.trim().to_string(),
        })
    }

    fn lines(&self, width: usize, view: &View) -> Vec<Line<'static>> {
        let title = match self.kind {
            SummaryKind::Compaction => "Earlier turns condensed; the model sees this summary:",
            SummaryKind::Branch => "Summary of the branch left behind:",
        };
        let mut lines = vec![Line::styled(
            format!("▍ {title}"),
            fg(|t| t.accent).add_modifier(Modifier::BOLD),
        )];
        let text = sanitize(&self.text);
        let all: Vec<&str> = text.lines().collect();
        let shown = if view.expand_tools {
            all.len()
        } else {
            all.len().min(SUMMARY_PREVIEW_LINES)
        };
        for l in &all[..shown] {
            lines.push(Line::styled(format!("▍ {l}"), dim()));
        }
        if shown < all.len() {
            lines.push(Line::styled(
                format!(
                    "▍ … {} more lines ({} to expand)",
                    all.len() - shown,
                    view.expand_key
                ),
                dim(),
            ));
        }
        wrap_all(&lines, width)
    }
}

fn dim() -> Style {
    Style::new().fg(theme::current().dim)
}

/// " (1.2s)", or nothing when the time is unknown (a resumed session's tools).
fn took_tail(took: Duration) -> String {
    if took.is_zero() {
        String::new()
    } else {
        format!(" ({})", secs(took))
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

impl Cell {
    /// The cell's look still changes with time or input: do not cache it.
    pub fn is_live(&self) -> bool {
        match self {
            Cell::Assistant(a) => a.streaming,
            Cell::Tool(t) => matches!(t.state, ToolState::Running { .. }),
            _ => false,
        }
    }

    pub fn assistant(message: AssistantMessage, streaming: bool) -> Cell {
        Cell::Assistant(AssistantCell {
            builder: MessageBuilder::new(message),
            streaming,
            stream: StreamRows::default(),
        })
    }

    /// [`Cell::lines`] as shared chunks: a streaming answer's finished blocks are not copied.
    pub fn rows(&self, width: usize, view: &View) -> Rows {
        match self {
            Cell::Assistant(a) => {
                let mut rows = assistant_rows(a, width.max(4), view);
                if !rows.is_empty() {
                    rows.push(Line::default());
                }
                rows
            }
            _ => self.lines(width, view).into(),
        }
    }

    /// Rendered rows for `width` columns, ending with a blank spacer row.
    pub fn lines(&self, width: usize, view: &View) -> Vec<Line<'static>> {
        let width = width.max(4);
        let mut out = match self {
            Cell::User(text) => user_lines(text, width),
            Cell::Assistant(a) => assistant_rows(a, width, view).to_vec(),
            Cell::Tool(t) => tool_lines(t, width, view),
            Cell::Divider => vec![Line::styled("─".repeat(width), dim())],
            Cell::Error(m) => wrap_all(
                &sanitize(m)
                    .lines()
                    .enumerate()
                    .map(|(i, l)| {
                        let p = if i == 0 { "Error: " } else { "" };
                        Line::styled(format!("{p}{l}"), fg(|t| t.error))
                    })
                    .collect::<Vec<_>>(),
                width,
            ),
            Cell::Aborted(m) => vec![Line::styled(
                sanitize(m),
                fg(|t| t.error).add_modifier(Modifier::DIM),
            )],
            Cell::Notice(m) => wrap_all(&[Line::styled(sanitize(m), fg(|t| t.warning))], width),
            Cell::Summary(summary) => summary.lines(width, view),
            Cell::Info(m) => wrap_all(
                &sanitize(m)
                    .lines()
                    .map(|l| Line::from(l.to_string()))
                    .collect::<Vec<_>>(),
                width,
            ),
        };
        if !out.is_empty() {
            out.push(Line::default());
        }
        out
    }
}

fn user_lines(text: &str, width: usize) -> Vec<Line<'static>> {
    let t = theme::current();
    let style = Style::new().bg(t.user_bg).fg(t.user_fg);
    let mut out = Vec::new();
    for l in sanitize(text).lines() {
        let line = Line::from(format!(" {l}"));
        for row in wrap_line(&line, width.saturating_sub(1), 1) {
            let w = row.width();
            let mut spans = row.spans;
            spans.push(Span::raw(" ".repeat(width.saturating_sub(w))));
            out.push(Line::from(spans).style(style));
        }
    }
    if out.is_empty() {
        out.push(Line::styled(" ".repeat(width), style));
    }
    out
}

fn assistant_rows(a: &AssistantCell, width: usize, view: &View) -> Rows {
    let message = a.builder.message();
    let mut out = Rows::default();
    let blocks = message.content.len();
    for (i, block) in message.content.iter().enumerate() {
        let last = i + 1 == blocks;
        match block {
            ContentBlock::Text(t) => {
                if t.text.trim().is_empty() {
                    continue;
                }
                // The block still streaming is drawn whole, its open line included.
                let rows = if a.streaming && last {
                    a.stream.rows(&t.text, width)
                } else {
                    markdown::render(&t.text, width).into()
                };
                if rows.is_empty() {
                    continue;
                }
                if !out.is_empty() {
                    out.push(Line::default());
                }
                out.append(rows);
            }
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                if !out.is_empty() {
                    out.push(Line::default());
                }
                let style = dim().add_modifier(Modifier::ITALIC);
                if view.show_thinking {
                    let lines: Vec<Line<'static>> = sanitize(&t.thinking)
                        .trim()
                        .lines()
                        .map(|l| Line::styled(l.to_string(), style))
                        .collect();
                    out.extend(wrap_all(&lines, width));
                } else {
                    out.push(Line::styled("Thinking...", style));
                }
            }
            _ => {}
        }
    }
    out
}

/// The header a tool call is shown with.
pub fn tool_header(name: &str, args: &Value) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(sanitize);
    let n = |k: &str| args.get(k).and_then(Value::as_u64);
    let path = s("path").or_else(|| s("file_path")).unwrap_or_default();
    match name {
        "bash" => {
            let cmd = s("command").unwrap_or_default();
            match n("timeout") {
                Some(t) => format!("$ {cmd} (timeout {t}s)"),
                None => format!("$ {cmd}"),
            }
        }
        "read" => match (n("offset"), n("limit")) {
            (Some(o), Some(l)) => format!("read {path}:{o}-{}", o + l.saturating_sub(1)),
            (Some(o), None) => format!("read {path}:{o}"),
            (None, Some(l)) => format!("read {path}:1-{l}"),
            _ => format!("read {path}"),
        },
        "edit" | "write" | "ls" => {
            format!("{name} {}", if path.is_empty() { ".".into() } else { path })
        }
        "grep" => format!(
            "grep /{}/ in {}",
            s("pattern").unwrap_or_default(),
            if path.is_empty() { ".".into() } else { path }
        ),
        "find" => format!(
            "find {} in {}",
            s("pattern").unwrap_or_default(),
            if path.is_empty() { ".".into() } else { path }
        ),
        "task" => format!(
            "subagent {}: {}",
            s("subagent_type").unwrap_or_else(|| "general-purpose".into()),
            s("description").unwrap_or_default()
        ),
        _ => {
            let mut a = sanitize(&args.to_string());
            if a.chars().count() > 80 {
                a = a.chars().take(79).collect::<String>() + "…";
            }
            if a == "{}" {
                name.to_string()
            } else {
                format!("{name} {a}")
            }
        }
    }
}

fn tool_lines(t: &ToolCell, width: usize, view: &View) -> Vec<Line<'static>> {
    let header = tool_header(&t.name, &t.args);
    let (mark, mark_style, tail) = match &t.state {
        ToolState::Running { started } => (
            view.spinner(*started).to_string(),
            fg(|t| t.accent),
            format!(" ({})", secs(view.now.saturating_duration_since(*started))),
        ),
        ToolState::Done { ok: true, took } => ("✓".into(), fg(|t| t.success), took_tail(*took)),
        ToolState::Done { ok: false, took } => ("✗".into(), fg(|t| t.error), took_tail(*took)),
        ToolState::Skipped => ("↷".into(), dim(), " (skipped)".into()),
    };
    let head = Line::from(vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(header, Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(tail, dim()),
    ]);
    let mut out = wrap_line(&head, width, 2);
    let (output, diff_text) = t.texts();
    let failed = matches!(t.state, ToolState::Done { ok: false, .. });
    // A write shows what it writes (its result only says how much); a failed one, why.
    let written = (t.name == "write" && !failed)
        .then(|| t.args.get("content").and_then(Value::as_str))
        .flatten()
        .map(sanitize);
    let body: &str = match &written {
        Some(content) => content,
        None => diff_text.as_deref().unwrap_or(&output),
    };
    let all: Vec<&str> = body.trim_end_matches('\n').lines().collect();
    if all.is_empty() || all.iter().all(|l| l.trim().is_empty()) {
        return out;
    }
    let limit = match t.name.as_str() {
        "bash" => 5,
        "read" | "write" => 10,
        "grep" => 15,
        _ => 20,
    };
    let diff = written.is_none() && diff_text.is_some();
    let style_of = |l: &str| {
        if diff && l.starts_with('+') {
            fg(|t| t.diff_added)
        } else if diff && l.starts_with('-') {
            fg(|t| t.diff_removed)
        } else if failed {
            fg(|t| t.error)
        } else {
            dim()
        }
    };
    let shown: Vec<&str>;
    let mut note = None;
    if view.expand_tools || all.len() <= limit {
        shown = all.clone();
    } else if t.name == "bash" {
        shown = all[all.len() - limit..].to_vec();
        out.push(Line::styled(
            format!(
                "  … ({} earlier lines, {} to expand)",
                all.len() - limit,
                view.expand_key
            ),
            dim(),
        ));
    } else {
        shown = all[..limit].to_vec();
        note = Some(format!(
            "  … ({} more lines, {} to expand)",
            all.len() - limit,
            view.expand_key
        ));
    }
    for l in shown {
        let line = Line::styled(format!("  {l}"), style_of(l));
        out.extend(wrap_line(&line, width, 2));
    }
    if let Some(n) = note {
        out.push(Line::styled(n, dim()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_headers_are_tool_specific() {
        assert_eq!(
            tool_header("bash", &json!({"command": "ls -la"})),
            "$ ls -la"
        );
        assert_eq!(
            tool_header(
                "read",
                &json!({"path": "src/a.rs", "offset": 10, "limit": 31})
            ),
            "read src/a.rs:10-40"
        );
        assert_eq!(tool_header("edit", &json!({"path": "x.rs"})), "edit x.rs");
        assert_eq!(
            tool_header(
                "task",
                &json!({"description": "find the loader", "prompt": "…", "subagent_type": "explorer"})
            ),
            "subagent explorer: find the loader"
        );
        assert_eq!(
            tool_header("grep", &json!({"pattern": "fn main", "path": "src"})),
            "grep /fn main/ in src"
        );
        assert_eq!(
            tool_header("bash", &json!({"command": "a\u{1b}[2Jb"})),
            "$ a␛[2Jb"
        );
    }
}

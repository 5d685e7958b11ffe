//! The composer: what is being written and what waits with it. It owns the editor, the
//! queued steering and follow-up messages (as the agent's queue updates show them), the files
//! attached to the next prompt, the status line's hint, the `@` picker and the `/` list's
//! state; it draws the queue, the status line (the work it is lent as a [`Status`]), the
//! attachment chips and the editor between two rules coloured by the thinking level. The `@`
//! picker and the `/` list are drawn over the conversation just above it.

use std::path::PathBuf;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::cells::SPINNER;
use super::editor::Editor;
use super::files::FileIndex;
use super::help::key_or;
use super::keymap::{Action, Keymap};
use super::popup::file_picker::FilePicker;
use super::sanitize::sanitize;
use super::theme::{self, fg};
use super::units::{short_duration, truncate};
use super::wrap::width as text_width;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::attach::FileRef;

/// What is being written, and what waits to be sent with it.
pub struct Composer {
    pub editor: Editor,
    /// Queued messages, as the agent's queue updates show them.
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
    /// Files and images waiting to go with the next prompt (shown as chips above the editor).
    pub attachments: Vec<FileRef>,
    /// A transient hint in the status line (e.g. "press Ctrl+C again to quit").
    pub hint: Option<String>,
    /// The folder's files for the `@` picker (listed when first needed).
    pub files: FileIndex,
    /// The `@` picker, when open.
    pub file_picker: Option<FilePicker>,
    /// The `/` completion list was dismissed with Esc for the current text.
    pub completion_dismissed: bool,
    pub completion_selected: usize,
}

impl Default for Composer {
    fn default() -> Self {
        Composer {
            editor: Editor::default(),
            steering: Vec::new(),
            follow_up: Vec::new(),
            attachments: Vec::new(),
            hint: None,
            files: FileIndex::lazy(PathBuf::from(".")),
            file_picker: None,
            completion_dismissed: false,
            completion_selected: 0,
        }
    }
}

/// What the status line tells of the work (the app's, lent for one frame).
pub struct Status<'a> {
    /// When the current work started.
    pub working: Option<Instant>,
    pub stopping: bool,
    pub paused_since: Option<Instant>,
    /// What the status line says instead of "Working..." (a retry, a summary being made).
    pub retry: Option<&'a str>,
    pub thinking: ThinkingLevel,
    pub keys: &'a Keymap,
}

/// A key as the status line names it (lower case, as it always has: `esc`, `ctrl+s`).
fn key_name(keys: &Keymap, action: Action, otherwise: &str) -> String {
    key_or(keys, action, otherwise).to_lowercase()
}

pub fn thinking_color(level: ThinkingLevel) -> Color {
    let t = theme::current().thinking;
    match level {
        ThinkingLevel::Off | ThinkingLevel::Inherit => t[0],
        ThinkingLevel::Minimal => t[1],
        ThinkingLevel::Low => t[2],
        ThinkingLevel::Medium => t[3],
        ThinkingLevel::High => t[4],
        ThinkingLevel::Xhigh | ThinkingLevel::Max => t[5],
    }
}

impl Composer {
    pub fn queued_lines(&self, keys: &Keymap, width: usize) -> Vec<Line<'static>> {
        let app = self;
        let mut out = Vec::new();
        let style = fg(|t| t.dim);
        for (label, list) in [("Steering", &app.steering), ("Follow-up", &app.follow_up)] {
            for m in list {
                let first = sanitize(m).lines().next().unwrap_or_default().to_string();
                out.push(Line::from(vec![
                    Span::styled(format!(" {label}: "), style.add_modifier(Modifier::BOLD)),
                    Span::styled(
                        truncate(&first, width.saturating_sub(label.len() + 4)),
                        style,
                    ),
                ]));
            }
        }
        if !out.is_empty() {
            let esc = key_or(keys, Action::Interrupt, "Interrupting");
            out.push(Line::styled(
                format!(" ↳ {esc} interrupts and brings queued messages back to the editor"),
                style,
            ));
        }
        out
    }

    pub fn status_line(&self, status: &Status<'_>, now: Instant) -> Line<'static> {
        if let Some(h) = &self.hint {
            return Line::styled(format!(" {h}"), fg(|t| t.warning));
        }
        let app = status;
        let Some(start) = app.working else {
            return Line::default();
        };
        if app.stopping {
            return Line::styled(" ■ Stopping...", fg(|t| t.dim));
        }
        if let Some(since) = app.paused_since {
            return Line::from(vec![
                Span::styled(" ⏸ Paused ", fg(|t| t.warning).add_modifier(Modifier::BOLD)),
                Span::raw(short_duration(now.saturating_duration_since(since))),
                Span::styled(
                    format!(
                        " (waits before its next step · {} goes on · {} aborts)",
                        key_name(app.keys, Action::PauseToggle, "/help"),
                        key_name(app.keys, Action::Interrupt, "/help"),
                    ),
                    fg(|t| t.dim),
                ),
            ]);
        }
        let elapsed = now.saturating_duration_since(start);
        let frame = SPINNER[(elapsed.as_millis() / 80) as usize % SPINNER.len()];
        let label = app.retry.unwrap_or("Working...").to_string();
        Line::from(vec![
            Span::styled(format!(" {frame} "), fg(|t| t.accent)),
            Span::raw(label),
            Span::styled(
                format!(
                    " ({}s · {} to interrupt)",
                    elapsed.as_secs(),
                    key_name(app.keys, Action::Interrupt, "/help")
                ),
                fg(|t| t.dim),
            ),
        ])
    }

    /// The files and images waiting for the next prompt, as one row of chips.
    pub fn chips_line(&self, width: usize) -> Option<Line<'static>> {
        let app = self;
        if app.attachments.is_empty() {
            return None;
        }
        let chips: Vec<String> = app
            .attachments
            .iter()
            .map(|a| sanitize(&a.chip()))
            .collect();
        let chips = chips.join(" ");
        let hint = "  (Backspace on an empty editor removes the last)";
        let room = width.saturating_sub(1);
        let mut spans = vec![Span::styled(
            format!(" {}", truncate(&chips, room)),
            fg(|t| t.accent),
        )];
        if text_width(&chips) + text_width(hint) < room {
            spans.push(Span::styled(hint, fg(|t| t.dim)));
        }
        Some(Line::from(spans))
    }

    /// The status line, then the editor between its rules (the rules say how many rows
    /// scrolled out of it).
    pub fn draw_status(&self, status: &Status<'_>, area: Rect, buf: &mut Buffer, now: Instant) {
        Paragraph::new(self.status_line(status, now)).render(area, buf);
    }
}

/// The editor between two rules coloured by `thinking`, in `area`.
pub fn draw_editor(editor: &mut Editor, thinking: ThinkingLevel, area: Rect, buf: &mut Buffer) {
    let rule = Style::new().fg(thinking_color(thinking));
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(rule);
    let inner = block.inner(area);
    block.render(area, buf);
    let hidden = editor.draw(inner, buf);
    draw_hidden_rows(buf, area, hidden, rule);
}

/// "↑ 3 more" / "↓ 2 more" at the right of the editor's rules when its text is taller than
/// its room.
fn draw_hidden_rows(buf: &mut Buffer, area: Rect, (above, below): (usize, usize), rule: Style) {
    for (n, arrow, y) in [
        (above, '↑', area.y),
        (below, '↓', area.bottom().saturating_sub(1)),
    ] {
        if n == 0 || area.height < 2 {
            continue;
        }
        let label = format!(" {arrow} {n} more ");
        let w = text_width(&label) as u16;
        if w + 2 <= area.width {
            buf.set_string(area.right() - w - 1, y, label, rule);
        }
    }
}

//! The rewind question: a move to an earlier point (`/rewind`, `/tree`, Esc Esc) would change
//! files the agent wrote, so before doing it the person sees which, and chooses: code and
//! conversation (Enter), the conversation only, or the code only. `d` shows what each file
//! becomes as a diff; a file someone changed since the agent did is listed as kept unless `f`
//! says to overwrite it too.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::checkpoint::rewind::{Action, FileState, PlannedFile};
use crate::tui::sanitize::sanitize;
use crate::tui::theme::fg;
use crate::tui::units::truncate;

use super::tree::LeaveWith;

pub use crate::host::rewind::RewindMode;

const MODES: [(RewindMode, &str); 3] = [
    (RewindMode::Both, "Restore code and conversation"),
    (
        RewindMode::Conversation,
        "Conversation only (files stay as they are)",
    ),
    (RewindMode::Code, "Code only (the conversation stays here)"),
];

#[derive(Clone, Debug)]
pub struct RewindView {
    pub target: String,
    /// What the move leaves behind is summarised or not (from the tree's question).
    pub leave: LeaveWith,
    pub files: Vec<PlannedFile>,
    pub selected: usize,
    /// Overwrite files changed since.
    pub force: bool,
    /// The diff is shown, from this line.
    pub diff_from: Option<usize>,
}

/// `path` as shown: relative to the working folder when inside it.
pub(crate) fn relative(path: &std::path::Path, cwd: &std::path::Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// What a key asks of the app.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    Cancel,
    Chosen { mode: RewindMode, force: bool },
}

impl RewindView {
    pub fn new(target: String, leave: LeaveWith, files: Vec<PlannedFile>) -> Self {
        RewindView {
            target,
            leave,
            files,
            selected: 0,
            force: false,
            diff_from: None,
        }
    }

    fn conflicts(&self) -> usize {
        self.files
            .iter()
            .filter(|f| f.state == FileState::ChangedSince)
            .count()
    }

    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(from) = self.diff_from.as_mut() {
            match key.code {
                KeyCode::Esc | KeyCode::Char('d' | 'q') => self.diff_from = None,
                KeyCode::Up | KeyCode::Char('k') => *from = from.saturating_sub(1),
                KeyCode::Down | KeyCode::Char('j') => *from += 1,
                KeyCode::PageUp => *from = from.saturating_sub(10),
                KeyCode::PageDown | KeyCode::Char(' ') => *from += 10,
                KeyCode::Home => *from = 0,
                _ => {}
            }
            return Outcome::Nothing;
        }
        match key.code {
            KeyCode::Esc => Outcome::Cancel,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Outcome::Cancel,
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                Outcome::Nothing
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(MODES.len() - 1);
                Outcome::Nothing
            }
            KeyCode::Char(c @ '1'..='3') => {
                self.selected = (c as usize) - ('1' as usize);
                self.chosen()
            }
            KeyCode::Enter => self.chosen(),
            KeyCode::Char('d') => {
                self.diff_from = Some(0);
                Outcome::Nothing
            }
            KeyCode::Char('f') if self.conflicts() > 0 => {
                self.force = !self.force;
                Outcome::Nothing
            }
            _ => Outcome::Nothing,
        }
    }

    fn chosen(&self) -> Outcome {
        Outcome::Chosen {
            mode: MODES[self.selected.min(MODES.len() - 1)].0,
            force: self.force,
        }
    }

    fn file_line(&self, f: &PlannedFile, cwd: &std::path::Path, width: usize) -> Line<'static> {
        let shown = relative(&f.path, cwd);
        let (mark, what) = match f.action {
            Action::Restore => ("M", "put back"),
            Action::Delete => ("D", "delete (the agent made it)"),
        };
        let (style, note) = match f.state {
            FileState::Ready => (fg(|t| t.accent), what.to_string()),
            FileState::ChangedSince if self.force => (
                fg(|t| t.warning),
                format!("{what}, overwriting a change made since"),
            ),
            FileState::ChangedSince => (
                fg(|t| t.warning),
                "changed since the agent did: kept (f overwrites)".to_string(),
            ),
            FileState::Unavailable => (
                fg(|t| t.error),
                "cannot be put back: its earlier content was not saved".to_string(),
            ),
        };
        let name = truncate(
            &sanitize(&shown),
            width.saturating_sub(note.len() + 8).max(10),
        );
        Line::from(vec![
            Span::styled(format!("   {mark} "), style),
            Span::raw(name),
            Span::styled(format!("  {note}"), fg(|t| t.dim)),
        ])
    }

    fn diff_lines(&self, cwd: &std::path::Path) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for f in &self.files {
            let name = relative(&f.path, cwd);
            out.push(Line::from(Span::styled(
                sanitize(&name),
                Style::new().add_modifier(Modifier::BOLD),
            )));
            if f.diff.is_empty() {
                let what = match f.action {
                    Action::Delete => "  (deleted)",
                    Action::Restore => "  (no text diff: binary, or not saved)",
                };
                out.push(Line::from(Span::styled(what, fg(|t| t.dim))));
                continue;
            }
            for l in f.diff.lines().skip(2) {
                let style = if l.starts_with('+') {
                    fg(|t| t.diff_added)
                } else if l.starts_with('-') {
                    fg(|t| t.diff_removed)
                } else if l.starts_with("@@") {
                    fg(|t| t.dim)
                } else {
                    Style::default()
                };
                out.push(Line::from(Span::styled(sanitize(l), style)));
            }
        }
        out
    }

    /// The question at the bottom of `area`; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect, cwd: &std::path::Path) -> Rect {
        let width = area.width as usize;
        let mut lines = Vec::new();
        let hints;
        if let Some(from) = self.diff_from {
            let all = self.diff_lines(cwd);
            let room = area.height.saturating_sub(3) as usize;
            let from = from.min(all.len().saturating_sub(room.max(1)));
            lines.push(Line::from(Span::styled(
                " What the files become",
                Style::new().add_modifier(Modifier::BOLD),
            )));
            lines.extend(all.into_iter().skip(from).take(room));
            hints = " ↑↓ PgUp PgDn scroll · d or Esc back ";
        } else {
            let n = self.files.len();
            lines.push(Line::from(Span::styled(
                format!(
                    " Rewind: {n} file{} the agent changed",
                    if n == 1 { "" } else { "s" }
                ),
                Style::new().add_modifier(Modifier::BOLD),
            )));
            let room = (area.height as usize)
                .saturating_sub(MODES.len() + 4)
                .max(1);
            for f in self.files.iter().take(room) {
                lines.push(self.file_line(f, cwd, width));
            }
            if n > room {
                lines.push(Line::from(Span::styled(
                    format!("   … and {} more (d shows all)", n - room),
                    fg(|t| t.dim),
                )));
            }
            for (i, (_, label)) in MODES.iter().enumerate() {
                let style = if i == self.selected {
                    fg(|t| t.accent).add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                };
                lines.push(Line::from(vec![
                    Span::styled(if i == self.selected { " › " } else { "   " }, style),
                    Span::styled(format!("{} {label}", i + 1), style),
                ]));
            }
            hints = if self.conflicts() > 0 {
                " Enter do it · ↑↓ choose · d diff · f overwrite changed files · Esc back "
            } else {
                " Enter do it · ↑↓ choose · d diff · Esc back "
            };
        }
        let h = (lines.len() as u16 + 1).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(hints);
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        popup
    }
}

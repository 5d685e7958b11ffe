//! The approval prompt: a tool call waiting for the person, shown over the bottom of the
//! conversation with the command or the diff it would apply.
//!
//! `y` runs it, `a` runs it and every call like it for the rest of the session, `n` refuses
//! it — first asking for an optional reason for the model (typed on the prompt's last line,
//! sent with Enter). Esc aborts the whole run, as everywhere. Requests that arrive while one is
//! shown wait their turn. A request taller than the room scrolls (↑/↓, PgUp/PgDn, Home/End),
//! and `y`/`a` wait until its last line has been on screen. The state is plain data (the
//! drawing notes how far it can scroll and whether the end was seen); the app acts on the
//! [`Outcome`].

use std::cell::Cell;
use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::approval::{ApprovalRequest, Decision};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::sanitize::sanitize;
use crate::tui::theme::fg;
use crate::tui::units::truncate;
use crate::tui::wrap::wrap_line;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApprovalPrompt {
    pub queue: VecDeque<ApprovalRequest>,
    /// The reason being typed after `n` (`None`: choosing).
    pub reason: Option<String>,
    /// The first body line shown (set by the keys, kept in range by the drawing).
    pub scroll: Cell<usize>,
    /// The largest useful `scroll`, as the last drawing found it.
    pub max_scroll: Cell<usize>,
    /// Whether the request's last line has been on screen.
    pub bottom_seen: Cell<bool>,
    /// Whether lines below were never shown (then `y` and `a` wait).
    pub unread: Cell<bool>,
}

/// Rows PgUp/PgDn move.
const PAGE: usize = 10;

/// What a key asks the app to do.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Nothing,
    /// Answer request `id`.
    Answer(u64, Decision),
    /// Esc: abort the run.
    Abort,
}

impl ApprovalPrompt {
    pub fn is_open(&self) -> bool {
        !self.queue.is_empty()
    }

    pub fn current(&self) -> Option<&ApprovalRequest> {
        self.queue.front()
    }

    pub fn push(&mut self, request: ApprovalRequest) {
        self.queue.push_back(request);
    }

    /// Forget every request (the run ended; the gate has stopped waiting).
    pub fn clear(&mut self) {
        self.queue.clear();
        self.fresh();
    }

    /// Forget what was read and typed for the request that was shown.
    fn fresh(&mut self) {
        self.reason = None;
        self.scroll.set(0);
        self.max_scroll.set(0);
        self.bottom_seen.set(false);
        self.unread.set(false);
    }

    fn scroll_by(&self, down: bool, rows: usize) {
        let s = self.scroll.get();
        let s = if down {
            (s + rows).min(self.max_scroll.get())
        } else {
            s.saturating_sub(rows)
        };
        self.scroll.set(s);
    }

    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        let Some(id) = self.current().map(|r| r.id) else {
            return Outcome::Nothing;
        };
        if key.code == KeyCode::Esc {
            return Outcome::Abort;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(reason) = self.reason.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let reason = self.reason.take().filter(|r| !r.trim().is_empty());
                    return self.answered(id, Decision::Refuse(reason));
                }
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char('u') if ctrl => reason.clear(),
                KeyCode::Char(c) if !ctrl => reason.push(c),
                _ => {}
            }
            return Outcome::Nothing;
        }
        if ctrl {
            return Outcome::Nothing;
        }
        match key.code {
            KeyCode::Up => self.scroll_by(false, 1),
            KeyCode::Down => self.scroll_by(true, 1),
            KeyCode::PageUp => self.scroll_by(false, PAGE),
            KeyCode::PageDown => self.scroll_by(true, PAGE),
            KeyCode::Home => self.scroll.set(0),
            KeyCode::End => self.scroll.set(self.max_scroll.get()),
            // Nothing is allowed unseen.
            KeyCode::Char('y' | 'Y' | 'a' | 'A') if self.unread.get() => {}
            KeyCode::Char('y' | 'Y') => return self.answered(id, Decision::Once),
            KeyCode::Char('a' | 'A') => return self.answered(id, Decision::Session),
            KeyCode::Char('n' | 'N') => self.reason = Some(String::new()),
            _ => {}
        }
        Outcome::Nothing
    }

    /// A pasted text goes into the reason being typed (as one line).
    pub fn paste(&mut self, text: &str) {
        if let Some(r) = self.reason.as_mut() {
            r.push_str(&text.replace(['\r', '\n'], " "));
        }
    }

    fn answered(&mut self, id: u64, decision: Decision) -> Outcome {
        self.queue.pop_front();
        self.fresh();
        Outcome::Answer(id, decision)
    }
}

/// A tool call waiting for approval: what it would do, and the keys to answer.
impl ApprovalPrompt {
    /// The waiting call over the bottom of `area`, if one waits; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect) -> Option<Rect> {
        let r = self.current()?;
        let width = area.width as usize;
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let dim = fg(|t| t.dim);
        let waiting = self.queue.len().saturating_sub(1);
        let mut head = match r.tool.as_str() {
            "bash" => " Run this command?".to_string(),
            "edit" => format!(" Apply this edit to {}?", sanitize(&r.subject)),
            "write" => format!(" Write {}?", sanitize(&r.subject)),
            other => format!(" Call {}?", sanitize(other)),
        };
        if waiting > 0 {
            head.push_str(&format!(" ({waiting} more waiting)"));
        }
        let mut body: Vec<Line<'static>> = Vec::new();
        if r.tool == "bash" {
            body = crate::tui::shown_command::rows(&r.subject, width, bold, fg(|t| t.warning), dim);
        }
        // The diff's file header repeats the title: left out.
        let detail = r
            .detail
            .as_deref()
            .unwrap_or("")
            .lines()
            .skip_while(|l| l.starts_with("--- ") || l.starts_with("+++ "));
        for l in detail {
            let style = if l.starts_with("@@") {
                dim
            } else if l.starts_with('+') {
                fg(|t| t.diff_added)
            } else if l.starts_with('-') {
                fg(|t| t.diff_removed)
            } else {
                Style::default()
            };
            body.extend(wrap_line(
                &Line::styled(format!(" {}", sanitize(l)), style),
                width,
                1,
            ));
        }
        let key = |k: &'static str| Span::styled(k, fg(|t| t.accent).add_modifier(Modifier::BOLD));
        let keys = match &self.reason {
            None => Line::from(vec![
                key(" y"),
                Span::raw(" allow once   "),
                key("a"),
                Span::raw(format!(
                    " allow {} for the session   ",
                    sanitize(&r.session_scope)
                )),
                key("n"),
                Span::raw(" refuse   "),
                Span::styled("esc", dim),
                Span::styled(" stop the run", dim),
            ]),
            Some(reason) => Line::from(vec![
                Span::styled(" Why not (optional, for the model): ", bold),
                Span::raw(sanitize(reason)),
                Span::styled("▏", fg(|t| t.accent)),
                Span::styled("  Enter refuse", dim),
            ]),
        };
        // The keys wrap in full: what `a` allows is read before it is pressed.
        let keys = wrap_line(&keys, width, 1);
        // The title, the body (scrolled when it is taller than the room), and the keys, over the
        // bottom of the conversation. Until the body's last line has been on screen, y and a wait.
        let room = (area.height as usize).saturating_sub(2 + keys.len()).max(2);
        let max_body = room.min((area.height as usize * 2 / 3).max(3));
        let mut hidden = false;
        if body.len() > max_body {
            let shown = max_body - 1;
            let last_top = body.len() - shown;
            let top = self.scroll.get().min(last_top);
            self.scroll.set(top);
            self.max_scroll.set(last_top);
            hidden = top < last_top;
            let mut window: Vec<Line<'static>> = body.drain(top..top + shown).collect();
            window.push(Line::styled(
                format!(
                    " lines {}–{} of {}{}",
                    top + 1,
                    top + shown,
                    body.len() + shown,
                    if hidden {
                        ": ↓/PgDn to read the rest before y or a"
                    } else {
                        ": ↑/PgUp to scroll back"
                    }
                ),
                fg(|t| t.warning),
            ));
            body = window;
        } else {
            self.max_scroll.set(0);
        }
        if !hidden {
            self.bottom_seen.set(true);
        }
        self.unread.set(hidden && !self.bottom_seen.get());
        let mut lines = vec![Line::styled(truncate(&head, width), bold)];
        lines.extend(body);
        lines.extend(keys);
        let h = (lines.len() as u16 + 1).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.warning))
            .title(format!(" approval: {} ", sanitize(&r.tool)));
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        Some(popup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64) -> ApprovalRequest {
        ApprovalRequest {
            id,
            tool: "bash".into(),
            subject: "make".into(),
            detail: None,
            session_scope: "commands starting with `make`".into(),
        }
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn keys_answer_in_order() {
        let mut p = ApprovalPrompt::default();
        assert_eq!(p.key(key(KeyCode::Char('y'))), Outcome::Nothing);
        p.push(request(1));
        p.push(request(2));
        assert_eq!(p.key(key(KeyCode::Char('x'))), Outcome::Nothing);
        assert_eq!(
            p.key(key(KeyCode::Char('y'))),
            Outcome::Answer(1, Decision::Once)
        );
        assert_eq!(
            p.key(key(KeyCode::Char('a'))),
            Outcome::Answer(2, Decision::Session)
        );
        assert!(!p.is_open());
    }

    #[test]
    fn n_takes_an_optional_reason() {
        let mut p = ApprovalPrompt::default();
        p.push(request(1));
        p.push(request(2));
        assert_eq!(p.key(key(KeyCode::Char('n'))), Outcome::Nothing);
        for c in "use make -jx".chars() {
            p.key(key(KeyCode::Char(c)));
        }
        p.key(key(KeyCode::Backspace));
        p.paste("4\nplease");
        assert_eq!(
            p.key(key(KeyCode::Enter)),
            Outcome::Answer(1, Decision::Refuse(Some("use make -j4 please".into())))
        );
        p.key(key(KeyCode::Char('n')));
        assert_eq!(
            p.key(key(KeyCode::Enter)),
            Outcome::Answer(2, Decision::Refuse(None))
        );
        p.push(request(3));
        assert_eq!(p.key(key(KeyCode::Esc)), Outcome::Abort);
    }
}

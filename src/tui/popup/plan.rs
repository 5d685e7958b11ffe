//! The plan question: in plan mode, when the model has answered with its plan, the person
//! accepts it (pi leaves plan mode and asks the model to carry it out, the plan kept in the
//! conversation), edits it first (it comes into the editor, to send as the instruction), or
//! rejects it (plan mode stays on, to say what to change).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::theme::fg;

#[derive(Clone, Debug)]
pub struct PlanChoice {
    /// The plan: the model's last answer.
    pub text: String,
}

/// What a key decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    Accept,
    Edit,
    Reject,
    /// Esc: decide later (plan mode stays on).
    Close,
}

impl PlanChoice {
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Enter | KeyCode::Char('a' | 'y') => Outcome::Accept,
            KeyCode::Char('e') => Outcome::Edit,
            KeyCode::Char('r' | 'n') => Outcome::Reject,
            KeyCode::Esc => Outcome::Close,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Outcome::Close,
            _ => Outcome::Nothing,
        }
    }

    /// The question at the bottom of `area`; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect) -> Rect {
        let lines = vec![
            Line::from(Span::styled(
                " The plan is ready (above).",
                fg(|t| t.accent).add_modifier(Modifier::BOLD),
            )),
            Line::from(vec![
                Span::styled(" Enter", fg(|t| t.accent)),
                Span::raw(" accept, act on it · "),
                Span::styled("e", fg(|t| t.accent)),
                Span::raw(" edit first · "),
                Span::styled("r", fg(|t| t.accent)),
                Span::raw(" reject, plan on · "),
                Span::styled("Esc", fg(|t| t.accent)),
                Span::raw(" later"),
            ]),
        ];
        let h = (lines.len() as u16 + 1).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(" Plan mode ");
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        popup
    }
}

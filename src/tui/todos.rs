//! The task list the model keeps with the `todo` tool, shown above the editor while any item
//! is still open: every item (at most [`SHOWN`]), or one line when collapsed (`/todos`).

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use super::sanitize::sanitize;
use super::theme::fg;
use crate::host::view::{TodoItem, TodoStatus};

/// The most items listed at once.
const SHOWN: usize = 8;

#[derive(Clone, Debug, Default)]
pub struct Todos {
    pub items: Vec<TodoItem>,
    pub collapsed: bool,
}

impl Todos {
    fn open(&self) -> bool {
        self.items.iter().any(|i| i.status != TodoStatus::Done)
    }

    /// The rows it takes above the editor (none once every item is done).
    pub fn lines(&self, width: usize) -> Vec<Line<'static>> {
        if !self.open() {
            return Vec::new();
        }
        let done = self
            .items
            .iter()
            .filter(|i| i.status == TodoStatus::Done)
            .count();
        let head = format!(" Todo {done}/{}", self.items.len());
        let cut = |s: &str, room: usize| -> String {
            let s = sanitize(s);
            if s.chars().count() > room {
                s.chars().take(room.saturating_sub(1)).collect::<String>() + "…"
            } else {
                s
            }
        };
        if self.collapsed {
            let current = self
                .items
                .iter()
                .find(|i| i.status == TodoStatus::InProgress)
                .or_else(|| self.items.iter().find(|i| i.status == TodoStatus::Pending))
                .map(|i| i.content.as_str())
                .unwrap_or("");
            let room = width.saturating_sub(head.chars().count() + 6);
            return vec![Line::from(vec![
                Span::styled(head, fg(|t| t.dim)),
                Span::styled(" · ▸ ", fg(|t| t.accent)),
                Span::raw(cut(current, room)),
            ])];
        }
        let mut out = vec![Line::styled(head, fg(|t| t.dim))];
        let room = width.saturating_sub(5);
        for item in self.items.iter().take(SHOWN) {
            let (mark, style) = match item.status {
                TodoStatus::Done => ("✓", fg(|t| t.dim)),
                TodoStatus::InProgress => ("▸", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
                TodoStatus::Pending => ("○", ratatui::style::Style::default()),
            };
            out.push(Line::from(vec![
                Span::styled(format!("  {mark} "), style),
                Span::styled(cut(&item.content, room), style),
            ]));
        }
        if self.items.len() > SHOWN {
            out.push(Line::styled(
                format!("    (+{} more)", self.items.len() - SHOWN),
                fg(|t| t.dim),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            content: content.into(),
            status,
        }
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect())
            .collect()
    }

    #[test]
    fn open_lists_show_every_item_or_one_line_and_vanish_when_done() {
        let mut t = Todos {
            items: vec![
                item("Read the parser", TodoStatus::Done),
                item("Fix the bug", TodoStatus::InProgress),
                item("Run the tests", TodoStatus::Pending),
            ],
            collapsed: false,
        };
        assert_eq!(
            text(&t.lines(80)),
            [
                " Todo 1/3",
                "  ✓ Read the parser",
                "  ▸ Fix the bug",
                "  ○ Run the tests"
            ]
        );
        t.collapsed = true;
        assert_eq!(text(&t.lines(80)), [" Todo 1/3 · ▸ Fix the bug"]);
        for i in &mut t.items {
            i.status = TodoStatus::Done;
        }
        assert!(t.lines(80).is_empty());
    }
}

//! The prompt editor: tui-textarea's editing plus soft-wrapped drawing, prompt history and
//! paste markers.
//!
//! Owns the text being typed. tui-textarea keeps the lines, the cursor, undo and the kill
//! buffer; drawing is `editor_view`'s, which wraps the lines to the width and scrolls to keep
//! the cursor in view. Up/Down move by screen rows of that wrapped view. Large pastes (more
//! than 10 lines or 1000 characters) are shown as a marker `[paste #1 +42 lines]` (the Node
//! pi's) and expanded when the text is taken for sending; history keeps them, so a recalled
//! prompt sends its pastes again. Up/Down walk the history of sent prompts when the editor is
//! empty or already browsing history. The word before the cursor can be read and replaced
//! (path completion, the `@` picker). Key routing (which key is which [`Edit`], what Enter or
//! Esc mean) belongs to the app and its keymap, not here.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use tui_textarea::{CursorMove, TextArea};

use super::editor_view::{self, Look, View};

/// What [`Editor::edit`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    Up,
    Down,
    Left,
    Right,
    WordLeft,
    WordRight,
    LineStart,
    LineEnd,
    DeleteCharBackward,
    DeleteCharForward,
    DeleteWordBackward,
    DeleteWordForward,
    DeleteToLineStart,
    DeleteToLineEnd,
    /// Paste the text deleted last.
    Yank,
    Undo,
}

/// A large paste: the marker the editor shows and the text it stands for.
type Paste = (String, String);

pub struct Editor {
    area: TextArea<'static>,
    pastes: Vec<Paste>,
    /// Sent prompts as typed, with the pastes their markers stand for.
    history: Vec<(String, Vec<Paste>)>,
    /// Position while walking history (an index into `history`), and the draft it replaced.
    browsing: Option<(usize, (String, Vec<Paste>))>,
    view: View,
}

/// What an empty editor shows.
const PLACEHOLDER: &str = "Type a message · / for commands";

/// A new text area (its own drawing is not used: see `editor_view`).
fn fresh() -> TextArea<'static> {
    TextArea::default()
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            area: fresh(),
            pastes: Vec::new(),
            history: Vec::new(),
            browsing: None,
            view: View::default(),
        }
    }
}

impl Editor {
    /// Rows the editor takes at `width` columns: one per wrapped row, at most `max`.
    pub fn height(&self, width: u16, max: u16) -> u16 {
        let rows = View::height(self.area.lines(), usize::from(width), usize::from(max));
        u16::try_from(rows).unwrap_or(max)
    }

    /// Draw the text, wrapped, into `area`, scrolled to show the cursor. Returns how many rows
    /// are hidden above and below.
    pub fn draw(&mut self, area: Rect, buf: &mut Buffer) -> (usize, usize) {
        let dim = Style::new().fg(super::theme::current().dim);
        let look = Look {
            cursor: editor_view::cursor_style(),
            selection: Style::new().add_modifier(Modifier::REVERSED),
            placeholder: PLACEHOLDER,
            placeholder_style: dim,
            selected: self.area.selection_range(),
        };
        self.view
            .draw(self.area.lines(), self.area.cursor(), &look, area, buf)
    }

    /// The wrapped rows at the width last drawn, and the one the cursor is on.
    fn rows(&self) -> Option<(Vec<editor_view::Row>, usize, usize)> {
        if self.view.width == 0 {
            return None;
        }
        let lines = self.area.lines();
        let rows = editor_view::wrap(lines, self.view.width);
        let (row, x) = editor_view::locate(&rows, lines, self.area.cursor());
        Some((rows, row, x))
    }

    /// Move the cursor one wrapped row up or down, keeping its column; false at the edge.
    fn move_row(&mut self, down: bool) -> bool {
        let Some((rows, row, x)) = self.rows() else {
            let (line, _) = self.area.cursor();
            let edge = if down {
                line + 1 >= self.line_count()
            } else {
                line == 0
            };
            self.area.move_cursor(if down {
                CursorMove::Down
            } else {
                CursorMove::Up
            });
            return !edge;
        };
        let target = if down {
            row + 1
        } else {
            match row.checked_sub(1) {
                Some(r) => r,
                None => return false,
            }
        };
        if target >= rows.len() {
            return false;
        }
        let (line, col) = editor_view::column_in(&rows, self.area.lines(), target, x);
        let clamp = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        self.area
            .move_cursor(CursorMove::Jump(clamp(line), clamp(col)));
        true
    }

    /// The cursor is on the first wrapped row.
    fn on_first_row(&self) -> bool {
        match self.rows() {
            Some((_, row, _)) => row == 0,
            None => self.area.cursor().0 == 0,
        }
    }

    /// The cursor is on the last wrapped row.
    fn on_last_row(&self) -> bool {
        match self.rows() {
            Some((rows, row, _)) => row + 1 >= rows.len(),
            None => self.area.cursor().0 + 1 >= self.line_count(),
        }
    }

    /// The text as typed (markers unexpanded).
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.area.lines().iter().all(String::is_empty)
    }

    pub fn line_count(&self) -> usize {
        self.area.lines().len()
    }

    pub fn set_text(&mut self, text: &str) {
        self.area = fresh();
        self.area.insert_str(text);
        self.browsing = None;
    }

    pub fn clear(&mut self) {
        self.area = fresh();
        self.pastes.clear();
        self.browsing = None;
    }

    pub fn newline(&mut self) {
        self.area.insert_newline();
    }

    /// The cursor: row, and column in characters.
    pub fn cursor(&self) -> (usize, usize) {
        self.area.cursor()
    }

    /// The text of one row (empty past the end).
    pub fn line(&self, row: usize) -> &str {
        self.area.lines().get(row).map_or("", String::as_str)
    }

    /// The word before the cursor (back to white space or the line start), and its length in
    /// characters.
    pub fn word_before_cursor(&self) -> (String, usize) {
        let (row, col) = self.cursor();
        let before: Vec<char> = self.line(row).chars().take(col).collect();
        let start = before
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        (before[start..].iter().collect(), before.len() - start)
    }

    /// Replace the `n` characters before the cursor (on its row) with `text`.
    pub fn replace_before_cursor(&mut self, n: usize, text: &str) {
        self.browsing = None;
        let n = n.min(self.cursor().1);
        for _ in 0..n {
            self.area.delete_char();
        }
        self.area.insert_str(text);
    }

    /// A key with no action of its own (typed text, and tui-textarea's other bindings such as
    /// Shift+arrows to select or Ctrl+R to redo); what the keymap names goes through
    /// [`Editor::edit`].
    pub fn input(&mut self, key: crossterm::event::KeyEvent) {
        self.browsing = None;
        self.area.input(key);
    }

    /// An editing action, with a shell line editor's meaning where tui-textarea's differs
    /// (Alt+F, by default, stops after the word).
    pub fn edit(&mut self, edit: Edit) {
        self.browsing = None;
        let a = &mut self.area;
        match edit {
            Edit::Up => {
                self.move_row(false);
            }
            Edit::Down => {
                self.move_row(true);
            }
            Edit::Left => a.move_cursor(CursorMove::Back),
            Edit::Right => a.move_cursor(CursorMove::Forward),
            Edit::WordLeft => a.move_cursor(CursorMove::WordBack),
            Edit::WordRight => {
                // To the end of the word, as a shell does (tui-textarea stops on its last
                // character).
                let before = a.cursor();
                a.move_cursor(CursorMove::WordEnd);
                if a.cursor() != before {
                    a.move_cursor(CursorMove::Forward);
                }
            }
            Edit::LineStart => a.move_cursor(CursorMove::Head),
            Edit::LineEnd => a.move_cursor(CursorMove::End),
            Edit::DeleteCharBackward => {
                a.delete_char();
            }
            Edit::DeleteCharForward => {
                a.delete_next_char();
            }
            Edit::DeleteWordBackward => {
                a.delete_word();
            }
            Edit::DeleteWordForward => {
                a.delete_next_word();
            }
            Edit::DeleteToLineStart => {
                a.delete_line_by_head();
            }
            Edit::DeleteToLineEnd => {
                a.delete_line_by_end();
            }
            Edit::Yank => {
                a.paste();
            }
            Edit::Undo => {
                a.undo();
            }
        }
    }

    /// Enter right after a `\`: the backslash becomes a line break (for terminals where
    /// Shift+Enter cannot be told from Enter). Returns whether it did.
    pub fn backslash_newline(&mut self) -> bool {
        let (row, col) = self.area.cursor();
        let line = self.area.lines().get(row).cloned().unwrap_or_default();
        let before: Vec<char> = line.chars().take(col).collect();
        if before.last() != Some(&'\\') {
            return false;
        }
        self.area.delete_char();
        self.area.insert_newline();
        true
    }

    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > 10 || text.chars().count() > 1000 {
            let n = self.pastes.len() + 1;
            let marker = if lines > 1 {
                format!("[paste #{n} +{lines} lines]")
            } else {
                format!("[paste #{n} {} chars]", text.chars().count())
            };
            self.area.insert_str(&marker);
            self.pastes.push((marker, text));
        } else {
            self.area.insert_str(&text);
        }
    }

    /// The text with paste markers expanded (what would be sent).
    pub fn expanded(&self) -> String {
        let mut text = self.text();
        for (marker, content) in &self.pastes {
            text = text.replacen(marker, content, 1);
        }
        text
    }

    /// Replace everything with `text`, taken literally (no paste markers).
    pub fn replace_all(&mut self, text: &str) {
        self.clear();
        self.area.insert_str(text);
    }

    /// The text to send (paste markers expanded); the editor is cleared and the text, if not
    /// empty, goes into the history.
    pub fn take(&mut self) -> String {
        let typed = self.text();
        let text = self.expanded();
        if !typed.trim().is_empty() && self.history.last().map(|(t, _)| t) != Some(&typed) {
            self.history.push((typed, std::mem::take(&mut self.pastes)));
            if self.history.len() > 100 {
                self.history.remove(0);
            }
        }
        self.clear();
        text
    }

    /// Show history entry `idx`: its text, with its pastes behind their markers again.
    fn recall(&mut self, idx: usize) {
        self.area = fresh();
        self.pastes.clear();
        if let Some((text, pastes)) = self.history.get(idx) {
            self.area.insert_str(text);
            self.pastes = pastes.clone();
        }
    }

    /// Up: the previous prompt, if the editor is empty or already showing history.
    /// Returns false when the key should move the cursor instead.
    pub fn history_prev(&mut self) -> bool {
        if self.history.is_empty() || (!self.is_empty() && self.browsing.is_none()) {
            return false;
        }
        if self.browsing.is_some() && !self.on_first_row() {
            return false;
        }
        let (idx, draft) = match self.browsing.take() {
            Some((0, d)) => (0, d),
            Some((i, d)) => (i - 1, d),
            None => (self.history.len() - 1, (self.text(), self.pastes.clone())),
        };
        self.recall(idx);
        self.area.move_cursor(CursorMove::Top);
        self.browsing = Some((idx, draft));
        true
    }

    /// Down: the next prompt, or back to the draft after the newest.
    pub fn history_next(&mut self) -> bool {
        let Some((idx, draft)) = self.browsing.take() else {
            return false;
        };
        if !self.on_last_row() {
            self.browsing = Some((idx, draft));
            return false;
        }
        if idx + 1 < self.history.len() {
            self.recall(idx + 1);
            self.browsing = Some((idx + 1, draft));
        } else {
            let (text, pastes) = draft;
            self.area = fresh();
            self.area.insert_str(&text);
            self.pastes = pastes;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_paste_collapses_and_expands_on_take() {
        let mut e = Editor::default();
        let big: String = (0..20).map(|i| format!("line {i}\n")).collect();
        e.paste("see: ");
        e.paste(&big);
        assert_eq!(e.text(), "see: [paste #1 +20 lines]");
        assert_eq!(e.take(), format!("see: {big}"));
        assert!(e.is_empty());
    }

    #[test]
    fn history_walks_back_and_forth() {
        let mut e = Editor::default();
        e.set_text("first");
        e.take();
        e.set_text("second");
        e.take();
        assert!(e.history_prev());
        assert_eq!(e.text(), "second");
        assert!(e.history_prev());
        assert_eq!(e.text(), "first");
        assert!(e.history_next());
        assert_eq!(e.text(), "second");
        assert!(e.history_next());
        assert_eq!(e.text(), "");
        e.set_text("draft");
        assert!(!e.history_prev());
    }
}

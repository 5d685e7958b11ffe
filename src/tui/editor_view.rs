//! How the prompt editor looks: its lines soft-wrapped to the width, which of those rows are
//! on screen, and where the cursor is drawn.
//!
//! The editor's text is logical lines (what the person typed, split at the newlines they put
//! in). [`wrap`] cuts each into rows no wider than the width, after the last space that fits
//! and mid-word only when a word is wider than a row. Widths are display columns
//! (`unicode-width`: CJK and emoji take two, combining marks none); a tab takes four, other
//! control characters one (drawn as their control pictures). One column is kept free at the
//! end of every row so the cursor after the last character always fits; a space at a break
//! may use it.
//!
//! A cursor position on the boundary between two rows of one line belongs to the lower row,
//! except at the end of the line. [`View`] keeps the first row shown between frames, so an
//! editor taller than its room scrolls only as far as it takes to keep the cursor in view.
//! Drawing goes into whatever `Rect` it is given (full screen or an inline viewport).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use unicode_width::UnicodeWidthChar;

/// Columns a tab takes.
const TAB: usize = 4;

/// Display width of one character in the editor.
pub fn char_width(c: char) -> usize {
    match c {
        '\t' => TAB,
        c if c.is_control() => 1,
        c => c.width().unwrap_or(0),
    }
}

/// What is drawn for a character: itself, spaces for a tab, a control picture for a control.
fn glyph(c: char, out: &mut String) {
    out.clear();
    match c {
        '\t' => out.push_str(&" ".repeat(TAB)),
        '\u{7f}' => out.push('␡'),
        c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
        c if c.is_control() => out.push('�'),
        c => out.push(c),
    }
}

/// One screen row: characters `start..end` of logical line `line`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub line: usize,
    pub start: usize,
    pub end: usize,
}

/// The rows of `lines` at `width` columns (at least one row, even for no text).
pub fn wrap(lines: &[String], width: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut widths = Vec::new();
    let mut chars = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        chars.clear();
        chars.extend(line.chars());
        widths.clear();
        widths.extend(chars.iter().map(|&c| char_width(c)));
        for (start, end) in wrap_line(&chars, &widths, width) {
            rows.push(Row {
                line: n,
                start,
                end,
            });
        }
    }
    if rows.is_empty() {
        rows.push(Row {
            line: 0,
            start: 0,
            end: 0,
        });
    }
    rows
}

/// The rows of one line as character ranges.
fn wrap_line(chars: &[char], widths: &[usize], width: usize) -> Vec<(usize, usize)> {
    let limit = width.saturating_sub(1).max(1);
    let n = chars.len();
    let mut rows = Vec::new();
    let mut start = 0;
    loop {
        let mut end = start;
        let mut used = 0;
        while end < n && used + widths[end] <= limit {
            used += widths[end];
            end += 1;
        }
        if end == n {
            rows.push((start, n));
            return rows;
        }
        if end == start {
            // A character wider than a row: it gets a row of its own.
            end = start + 1;
        } else if chars[end] == ' ' && used + widths[end] <= width && end + 1 < n {
            // The space at the break takes the column kept free.
            end += 1;
        } else if let Some(space) = chars[start..end].iter().rposition(|&c| c == ' ')
            && space > 0
        {
            end = start + space + 1;
        }
        rows.push((start, end));
        if end == n {
            return rows;
        }
        start = end;
    }
}

/// The row (index into `rows`) and column where the cursor `(line, char)` is drawn.
pub fn locate(rows: &[Row], lines: &[String], cursor: (usize, usize)) -> (usize, usize) {
    let (line, col) = cursor;
    let mut found = None;
    for (i, r) in rows.iter().enumerate() {
        if r.line != line {
            if found.is_some() {
                break;
            }
            continue;
        }
        found = Some(i);
        if col < r.end {
            break;
        }
    }
    let Some(i) = found else {
        return (rows.len().saturating_sub(1), 0);
    };
    let r = rows[i];
    let text = lines.get(line).map_or("", String::as_str);
    let x = text
        .chars()
        .skip(r.start)
        .take(col.saturating_sub(r.start))
        .map(char_width)
        .sum();
    (i, x)
}

/// The character of row `row` drawn at or just before column `x` (to move the cursor up or
/// down a row and keep its column). At the end of a row that breaks a line, the last
/// character of the row; at the end of a line, the line's end.
pub fn column_in(rows: &[Row], lines: &[String], row: usize, x: usize) -> (usize, usize) {
    let Some(r) = rows.get(row) else {
        return (0, 0);
    };
    let last_of_line = rows.get(row + 1).is_none_or(|next| next.line != r.line);
    let text = lines.get(r.line).map_or("", String::as_str);
    let mut at = r.start;
    let mut used = 0;
    for c in text.chars().skip(r.start).take(r.end - r.start) {
        let w = char_width(c);
        if used + w > x {
            break;
        }
        used += w;
        at += 1;
    }
    if at == r.end && !last_of_line && r.end > r.start {
        at = r.end - 1;
    }
    (r.line, at)
}

/// What the editor draws besides its text.
pub struct Look<'a> {
    pub cursor: Style,
    pub selection: Style,
    /// Shown, dim, when there is no text.
    pub placeholder: &'a str,
    pub placeholder_style: Style,
    /// Characters `(line, start..end)` drawn in the selection style.
    pub selected: Option<((usize, usize), (usize, usize))>,
}

/// The part of the editor on screen: the first row shown, kept between frames.
#[derive(Clone, Debug, Default)]
pub struct View {
    top: usize,
    /// The width the editor was last drawn at (Up and Down move by its rows).
    pub width: usize,
}

impl View {
    /// How many rows the editor takes at `width`, at most `max`.
    pub fn height(lines: &[String], width: usize, max: usize) -> usize {
        wrap(lines, width).len().clamp(1, max.max(1))
    }

    /// Draw `lines` with the cursor into `area`, scrolled so the cursor row is in it.
    /// Returns how many rows are hidden above and below.
    pub fn draw(
        &mut self,
        lines: &[String],
        cursor: (usize, usize),
        look: &Look<'_>,
        area: Rect,
        buf: &mut Buffer,
    ) -> (usize, usize) {
        let area = area.intersection(buf.area);
        let width = area.width as usize;
        let height = area.height as usize;
        if width == 0 || height == 0 {
            return (0, 0);
        }
        self.width = width;
        let empty = lines.iter().all(String::is_empty);
        if empty {
            // The cursor, then the placeholder after it.
            self.top = 0;
            buf.set_stringn(area.x, area.y, " ", 1, look.cursor);
            buf.set_stringn(
                area.x + 1,
                area.y,
                look.placeholder,
                width - 1,
                look.placeholder_style,
            );
            return (0, 0);
        }
        let rows = wrap(lines, width);
        let (cursor_row, cursor_x) = locate(&rows, lines, cursor);
        if cursor_row < self.top {
            self.top = cursor_row;
        } else if cursor_row >= self.top + height {
            self.top = cursor_row + 1 - height;
        }
        self.top = self.top.min(rows.len().saturating_sub(height));
        let in_selection = |line: usize, col: usize| {
            look.selected
                .is_some_and(|(from, to)| (line, col) >= from && (line, col) < to)
        };
        let mut s = String::new();
        for (y, r) in rows.iter().skip(self.top).take(height).enumerate() {
            let y = area.y + y as u16;
            let text = lines.get(r.line).map_or("", String::as_str);
            let mut x = 0usize;
            for (i, c) in text.chars().enumerate().skip(r.start).take(r.end - r.start) {
                let w = char_width(c);
                if x + w > width {
                    break;
                }
                glyph(c, &mut s);
                let style = if in_selection(r.line, i) {
                    look.selection
                } else {
                    Style::default()
                };
                buf.set_stringn(area.x + x as u16, y, &s, width - x, style);
                x += w;
            }
        }
        let cursor_y = cursor_row.checked_sub(self.top).filter(|&y| y < height);
        if let Some(y) = cursor_y {
            let (line, col) = cursor;
            let under = lines.get(line).and_then(|l| l.chars().nth(col));
            let (w, text) = match under {
                Some(c) if c != '\t' => {
                    glyph(c, &mut s);
                    (char_width(c).max(1), s.as_str())
                }
                _ => (1, " "),
            };
            if cursor_x + w <= width {
                let (cx, cy) = (area.x + cursor_x as u16, area.y + y as u16);
                let under_style = buf
                    .cell((cx, cy))
                    .map(ratatui::buffer::Cell::style)
                    .unwrap_or_default();
                buf.set_stringn(cx, cy, text, w, under_style.patch(look.cursor));
            }
        }
        let below = rows.len().saturating_sub(self.top + height);
        (self.top, below)
    }
}

/// The cursor style tui-textarea uses, for the same look.
pub fn cursor_style() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.split('\n').map(str::to_string).collect()
    }

    fn texts(text: &str, width: usize) -> Vec<String> {
        let ls = lines(text);
        wrap(&ls, width)
            .iter()
            .map(|r| {
                ls[r.line]
                    .chars()
                    .skip(r.start)
                    .take(r.end - r.start)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn words_wrap_after_spaces_and_long_words_break() {
        assert_eq!(
            texts("the quick brown fox", 11),
            ["the quick ", "brown fox"]
        );
        assert_eq!(texts("abcdefghij", 5), ["abcd", "efgh", "ij"]);
        assert_eq!(texts("one\n\ntwo", 10), ["one", "", "two"]);
        assert_eq!(texts("", 10), [""]);
        // A space at the break may take the column kept for the cursor.
        assert_eq!(texts("hello world", 6), ["hello ", "world"]);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(texts("日本語テキスト", 7), ["日本語", "テキス", "ト"]);
        assert_eq!(texts("a😀b😀c", 4), ["a😀", "b😀", "c"]);
        // Narrower than one wide character: one per row, never lost.
        assert_eq!(texts("日本", 1), ["日", "本"]);
    }

    #[test]
    fn the_cursor_is_on_the_row_that_shows_it() {
        let ls = lines("hello world");
        let rows = wrap(&ls, 6);
        assert_eq!(locate(&rows, &ls, (0, 0)), (0, 0));
        assert_eq!(locate(&rows, &ls, (0, 5)), (0, 5));
        // The boundary belongs to the lower row...
        assert_eq!(locate(&rows, &ls, (0, 6)), (1, 0));
        // ...except at the end of the line.
        assert_eq!(locate(&rows, &ls, (0, 11)), (1, 5));
        let ls = lines("日本語テキスト");
        let rows = wrap(&ls, 7);
        assert_eq!(locate(&rows, &ls, (0, 2)), (0, 4));
        assert_eq!(locate(&rows, &ls, (0, 7)), (2, 2));
    }

    #[test]
    fn every_cursor_position_fits_in_the_width() {
        let text =
            "a long line of words, some 日本語 and 😀 emoji, that wraps\tthree or four times";
        let ls = lines(text);
        for width in 2..30 {
            let rows = wrap(&ls, width);
            for col in 0..=ls[0].chars().count() {
                let (_, x) = locate(&rows, &ls, (0, col));
                let w = ls[0].chars().nth(col).map_or(1, |c| char_width(c).max(1));
                assert!(
                    x + w <= width.max(w),
                    "width {width}, col {col}: x {x} + {w}"
                );
            }
        }
    }

    #[test]
    fn moving_between_rows_keeps_the_column() {
        let ls = lines("hello world again");
        let rows = wrap(&ls, 7);
        assert_eq!(rows.len(), 3);
        assert_eq!(column_in(&rows, &ls, 1, 2), (0, 8));
        // Past the end of a row that breaks the line: its last character.
        assert_eq!(column_in(&rows, &ls, 0, 6), (0, 5));
        // Past the end of the line: the line's end.
        assert_eq!(column_in(&rows, &ls, 2, 6), (0, 17));
    }
}

//! Word wrapping of styled lines to a width, by display columns.
//!
//! Cells produce logical lines (one per paragraph line, list item, code line); [`wrap_line`]
//! breaks each into rows no wider than the width, at the last space when there is one and
//! mid-word otherwise, and indents continuation rows by a hanging indent (list items, quotes).
//! Widths come from `unicode-width`, so wide characters (CJK, emoji) take two columns. The
//! result is what a cell caches: wrapping is done once per width, not once per frame.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display width of a string in terminal columns.
pub fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Wrap `line` to `width` columns; continuation rows start with `indent` spaces.
pub fn wrap_line(line: &Line<'static>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent * 2 > width { 0 } else { indent };
    let total: usize = line.spans.iter().map(|s| self::width(&s.content)).sum();
    if total <= width {
        return vec![line.clone()];
    }
    let cells: Vec<(char, Style, usize)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content
                .chars()
                .map(move |c| (c, style, c.width().unwrap_or(0)))
        })
        .collect();
    let mut rows: Vec<Vec<(char, Style, usize)>> = Vec::new();
    let mut row: Vec<(char, Style, usize)> = Vec::new();
    let mut row_width = 0;
    let mut limit = width;
    let mut i = 0;
    while i < cells.len() {
        let cell = cells[i];
        if row_width + cell.2 > limit && !row.is_empty() {
            // Break at the last space in the row, if it is not the row's start.
            let split = row
                .iter()
                .rposition(|c| c.0 == ' ')
                .filter(|&p| p > 0 && (!rows.is_empty() || p >= indent));
            let carry = match split {
                Some(p) => row.split_off(p + 1),
                None => Vec::new(),
            };
            while row.last().is_some_and(|c| c.0 == ' ') {
                row.pop();
            }
            rows.push(std::mem::take(&mut row));
            limit = width - indent;
            row = carry;
            row_width = row.iter().map(|c| c.2).sum();
            if row_width + cell.2 > limit && !row.is_empty() {
                continue;
            }
        }
        if !(row.is_empty() && cell.0 == ' ' && !rows.is_empty()) {
            row.push(cell);
            row_width += cell.2;
        }
        i += 1;
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows.into_iter()
        .enumerate()
        .map(|(n, cells)| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            if n > 0 && indent > 0 {
                spans.push(Span::raw(" ".repeat(indent)));
            }
            let mut current = String::new();
            let mut style = None;
            for (c, s, _) in cells {
                if style != Some(s) {
                    if let Some(prev) = style
                        && !current.is_empty()
                    {
                        spans.push(Span::styled(std::mem::take(&mut current), prev));
                    }
                    style = Some(s);
                }
                current.push(c);
            }
            if let Some(s) = style
                && !current.is_empty()
            {
                spans.push(Span::styled(current, s));
            }
            Line::from(spans)
        })
        .collect()
}

/// Wrap every line of `lines` (no hanging indent).
pub fn wrap_all(lines: &[Line<'static>], width: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width, 0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Stylize;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_spaces() {
        let l = Line::from("the quick brown fox jumps");
        assert_eq!(
            text(&wrap_line(&l, 10, 0)),
            ["the quick", "brown fox", "jumps"]
        );
    }

    #[test]
    fn breaks_long_words_and_indents_continuations() {
        let l = Line::from("- abcdefghijkl");
        assert_eq!(text(&wrap_line(&l, 8, 2)), ["- abcdef", "  ghijkl"]);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        let l = Line::from("日本語テキスト");
        let rows = wrap_line(&l, 6, 0);
        assert_eq!(text(&rows), ["日本語", "テキス", "ト"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let l = Line::from(vec![
            Span::raw("plain "),
            Span::styled("bold words", Style::new().bold()),
        ]);
        let rows = wrap_line(&l, 11, 0);
        assert_eq!(text(&rows), ["plain bold", "words"]);
        assert_eq!(rows[1].spans[0].style, Style::new().bold());
    }
}

//! Markdown tables laid out to their columns' widths, for the markdown renderer.
//!
//! A table is drawn as a grid: cells padded to their column's width and aligned as the
//! delimiter row says (`:---` left, `:---:` centre, `---:` right), columns parted by ` │ `, the
//! header bold over a `─┼─` rule. Widths are measured in terminal columns, so CJK and emoji
//! count double. When the natural widths do not fit, the widest columns give way first (each
//! keeps at least what the others are cut to), and their cells wrap at word breaks; once any
//! row wraps, body rows are parted by a dim rule so a wrapped row still reads as one.
//!
//! When the width is too small for that (a column would be cut below [`MIN_COLUMN`] columns),
//! each row becomes a card instead: one `Header: value` line per cell, values wrapping under
//! themselves, cards parted by a rule. A grid of two-letter columns is unreadable, while a card
//! keeps every value next to its header's name at any width.

use pulldown_cmark::Alignment;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::super::theme;
use super::super::wrap::{width as text_width, wrap_line};

/// The fewest columns of text a grid column is cut to before the table becomes cards.
pub const MIN_COLUMN: usize = 6;
/// Between two columns.
const SEPARATOR: &str = " │ ";

/// A table as parsed: its alignments, its rows of plain cell text, and whether the first row
/// is the header.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub aligns: Vec<Alignment>,
    pub rows: Vec<Vec<String>>,
    pub has_head: bool,
}

/// The table's rows for `width` columns, each with the hanging indent its continuation rows
/// take (rows that already fit have 0).
pub fn layout(table: &Table, width: usize) -> Vec<(Line<'static>, usize)> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    match column_widths(table, columns, width) {
        Some(widths) => grid(table, &widths),
        None => cards(table, columns),
    }
}

/// The widths that fit `width`, or `None` when a column would be cut below [`MIN_COLUMN`].
fn column_widths(table: &Table, columns: usize, width: usize) -> Option<Vec<usize>> {
    let natural: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| text_width(s))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    let room = width.checked_sub(text_width(SEPARATOR) * (columns - 1))?;
    if natural.iter().sum::<usize>() <= room {
        return Some(natural);
    }
    // The largest cap that every column can be cut to: columns narrower keep their width.
    let fits = |cap: usize| natural.iter().map(|&w| w.min(cap)).sum::<usize>() <= room;
    let (mut low, mut high) = (0, natural.iter().copied().max().unwrap_or(0));
    while low < high {
        let mid = (low + high).div_ceil(2);
        if fits(mid) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let cap = low;
    if cap < MIN_COLUMN {
        return None;
    }
    let mut widths: Vec<usize> = natural.iter().map(|&w| w.min(cap)).collect();
    // What is left goes one column each to the cut columns, from the left.
    let mut left = room - widths.iter().sum::<usize>();
    for (w, &n) in widths.iter_mut().zip(&natural) {
        if left == 0 {
            break;
        }
        if n > *w {
            *w += 1;
            left -= 1;
        }
    }
    Some(widths)
}

/// A cell's text in rows no wider than `width`.
fn wrap_cell(text: &str, width: usize) -> Vec<String> {
    wrap_line(&Line::raw(text.to_string()), width, 0)
        .into_iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

/// `text` padded to `width` columns as `align` says.
fn pad(text: &str, width: usize, align: Alignment) -> String {
    let gap = width.saturating_sub(text_width(text));
    let (before, after) = match align {
        Alignment::Right => (gap, 0),
        Alignment::Center => (gap / 2, gap - gap / 2),
        Alignment::Left | Alignment::None => (0, gap),
    };
    format!("{}{text}{}", " ".repeat(before), " ".repeat(after))
}

fn rule(widths: &[usize]) -> Line<'static> {
    let text = widths
        .iter()
        .map(|&w| "─".repeat(w))
        .collect::<Vec<_>>()
        .join("─┼─");
    Line::styled(text, theme::fg(|t| t.dim))
}

fn grid(table: &Table, widths: &[usize]) -> Vec<(Line<'static>, usize)> {
    let dim = theme::fg(|t| t.dim);
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let empty = String::new();
    let wrapped: Vec<Vec<Vec<String>>> = table
        .rows
        .iter()
        .map(|row| {
            widths
                .iter()
                .enumerate()
                .map(|(c, &w)| wrap_cell(row.get(c).unwrap_or(&empty), w))
                .collect()
        })
        .collect();
    let body_start = usize::from(table.has_head);
    let any_wraps = wrapped[body_start..]
        .iter()
        .any(|cells| cells.iter().any(|c| c.len() > 1));
    let mut out = Vec::new();
    for (r, cells) in wrapped.iter().enumerate() {
        let head = table.has_head && r == 0;
        if r > body_start && any_wraps {
            out.push((rule(widths), 0));
        }
        let height = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
        for line in 0..height {
            let mut spans = Vec::new();
            for (c, &w) in widths.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(SEPARATOR, dim));
                }
                let text = cells[c].get(line).map_or("", String::as_str);
                let align = table.aligns.get(c).copied().unwrap_or(Alignment::None);
                let style = if head { bold } else { Style::default() };
                let mut padded = pad(text, w, align);
                if c + 1 == widths.len() {
                    // Nothing follows the last column: no trailing blanks to select and copy.
                    padded.truncate(padded.trim_end().len());
                }
                spans.push(Span::styled(padded, style));
            }
            out.push((Line::from(spans), 0));
        }
        if head {
            out.push((rule(widths), 0));
        }
    }
    out
}

fn cards(table: &Table, columns: usize) -> Vec<(Line<'static>, usize)> {
    let dim = theme::fg(|t| t.dim);
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let names: Vec<String> = (0..columns)
        .map(|c| match table.rows.first().filter(|_| table.has_head) {
            Some(head) => head.get(c).cloned().unwrap_or_default(),
            None => format!("{}", c + 1),
        })
        .collect();
    let mut out = Vec::new();
    for (n, row) in table
        .rows
        .iter()
        .skip(usize::from(table.has_head))
        .enumerate()
    {
        if n > 0 {
            out.push((Line::styled("───", dim), 0));
        }
        for (c, name) in names.iter().enumerate() {
            let key = format!("{name}: ");
            let indent = text_width(&key);
            let value = row.get(c).cloned().unwrap_or_default();
            out.push((
                Line::from(vec![Span::styled(key, bold), Span::raw(value)]),
                indent,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(rows: &[(Line<'static>, usize)], width: usize) -> Vec<String> {
        rows.iter()
            .flat_map(|(l, indent)| wrap_line(l, width, *indent))
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn table(rows: &[&[&str]], aligns: &[Alignment]) -> Table {
        Table {
            aligns: aligns.to_vec(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(ToString::to_string).collect())
                .collect(),
            has_head: true,
        }
    }

    #[test]
    fn natural_widths_when_they_fit() {
        let t = table(&[&["a", "bb"], &["ccc", "d"]], &[]);
        assert_eq!(column_widths(&t, 2, 80), Some(vec![3, 2]));
    }

    #[test]
    fn the_widest_column_gives_way_first() {
        let long = "word ".repeat(20);
        let t = table(&[&["id", "text"], &["1", long.trim()]], &[]);
        // 30 columns: 3 for the separator, 2 for the id, the rest for the text.
        assert_eq!(column_widths(&t, 2, 30), Some(vec![2, 25]));
        for line in plain(&layout(&t, 30), 30) {
            assert!(text_width(&line) <= 30, "{line:?}");
        }
    }

    #[test]
    fn too_narrow_becomes_cards() {
        let t = table(&[&["name", "size", "kind"], &["alpha", "12", "file"]], &[]);
        assert_eq!(column_widths(&t, 3, 19), Some(vec![5, 4, 4]));
        assert_eq!(column_widths(&t, 3, 14), None);
        assert_eq!(
            plain(&layout(&t, 14), 14),
            ["name: alpha", "size: 12", "kind: file"]
        );
    }

    #[test]
    fn wide_characters_take_two_columns() {
        let t = table(&[&["名前", "x"], &["表", "yy"]], &[]);
        assert_eq!(column_widths(&t, 2, 80), Some(vec![4, 2]));
        let lines = plain(&layout(&t, 80), 80);
        assert_eq!(lines[0], "名前 │ x");
        assert_eq!(lines[2], "表   │ yy");
    }

    #[test]
    fn padding_follows_the_alignment() {
        assert_eq!(pad("ab", 6, Alignment::Right), "    ab");
        assert_eq!(pad("ab", 7, Alignment::Center), "  ab   ");
        assert_eq!(pad("ab", 4, Alignment::None), "ab  ");
    }
}

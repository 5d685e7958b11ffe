//! Drawing one transcript row into the frame buffer, fast.
//!
//! ratatui's `Line::render` copies every span's text and splits it into grapheme clusters on
//! every frame. Transcript rows are mostly plain ASCII (the text was sanitised and wrapped
//! before it was cached), so [`paint_line`] writes plain ASCII spans byte by byte, with the
//! same result, and hands anything else (other scripts, wide characters, centred or
//! right-aligned rows) to ratatui span by span.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// Draw `line` in the first row of `area`, exactly as `line.render(area, buf)` would: plain
/// ASCII spans byte by byte, any other span through ratatui.
pub fn paint_line(line: &Line<'_>, area: Rect, buf: &mut Buffer) {
    if !matches!(line.alignment, None | Some(Alignment::Left)) {
        line.render(area, buf);
        return;
    }
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let plain = |s: &Span<'_>| s.content.bytes().all(|b| (0x20..0x7f).contains(&b));
    let width = |s: &Span<'_>| {
        if plain(s) { s.content.len() } else { s.width() }
    };
    if line.spans.iter().all(|s| width(s) == 0) {
        return;
    }
    if line.style != Style::default() {
        buf.set_style(Rect { height: 1, ..area }, line.style);
    }
    let (mut x, y, end) = (area.x, area.y, area.x + area.width);
    for span in &line.spans {
        if x >= end {
            return;
        }
        if plain(span) {
            for b in span.content.bytes() {
                if x >= end {
                    return;
                }
                buf[(x, y)].set_char(char::from(b)).set_style(span.style);
                x += 1;
            }
        } else {
            span.render(Rect::new(x, y, end - x, 1), buf);
            x = x.saturating_add(u16::try_from(span.width()).unwrap_or(u16::MAX));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    fn both(line: &Line<'_>, area: Rect) {
        let full = Rect::new(0, 0, 24, 3);
        let mut ours = Buffer::empty(full);
        let mut theirs = Buffer::empty(full);
        paint_line(line, area, &mut ours);
        line.render(area, &mut theirs);
        assert_eq!(ours, theirs, "{line:?} in {area:?}");
    }

    #[test]
    fn rows_are_drawn_exactly_as_ratatui_draws_them() {
        let red = Style::new().fg(Color::Red);
        let bold_bg = Style::new().bg(Color::Blue).add_modifier(Modifier::BOLD);
        let lines = [
            Line::from("plain text"),
            Line::from(vec![Span::styled("red ", red), Span::raw("then plain")]),
            Line::from(vec![Span::raw("styled line")]).style(bold_bg),
            Line::from(vec![Span::styled("over", red), Span::raw("")]).style(bold_bg),
            Line::from("a line far too long for the area it is drawn in, cut"),
            Line::from(""),
            Line::from(vec![Span::raw(""), Span::raw("")]).style(bold_bg),
            Line::from("wide 表 and ünïcode"),
            Line::from("centred").alignment(Alignment::Center),
            Line::from("right").alignment(Alignment::Right),
            Line::from("tab\there"),
            Line::from(vec![
                Span::styled("• ", red),
                Span::raw("a list item with "),
                Span::styled("表", bold_bg),
                Span::raw(" and more text to cut"),
            ]),
            Line::from(vec![Span::raw("\u{301}"), Span::raw("")]).style(bold_bg),
            Line::from(vec![Span::raw("表表表表表表表表表表表表"), Span::raw("x")]),
        ];
        for line in &lines {
            for area in [
                Rect::new(0, 0, 24, 1),
                Rect::new(3, 1, 10, 1),
                Rect::new(20, 2, 10, 1),
                Rect::new(0, 5, 10, 1),
            ] {
                both(line, area);
            }
        }
    }
}

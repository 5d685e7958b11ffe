//! Small ways of putting numbers and text into a given room: token counts (`45k`), durations
//! (`3m 04s`), text cut to a width with an ellipsis.

use ratatui::text::{Line, Span};

use super::wrap::width as text_width;

/// 999, 1.2k, 45k, 1.3M.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=9_999 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// `s` cut to `max` columns, ending with `…` when it was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if text_width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if text_width(&out) + 2 > max {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// `12s`, `3m 04s`, `1h 02m`.
pub fn short_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Cut a line to `width` columns (the tree's rows stay one row each).
pub fn truncate_line(line: Line<'static>, width: usize) -> Line<'static> {
    let mut left = width;
    let mut spans = Vec::new();
    for span in line.spans {
        if left == 0 {
            break;
        }
        let w = unicode_width::UnicodeWidthStr::width(span.content.as_ref());
        if w <= left {
            left -= w;
            spans.push(span);
        } else {
            let mut cut = String::new();
            let mut used = 0;
            for c in span.content.chars() {
                let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                if used + cw + 1 > left {
                    break;
                }
                used += cw;
                cut.push(c);
            }
            cut.push('…');
            spans.push(Span::styled(cut, span.style));
            left = 0;
        }
    }
    Line::from(spans)
}

//! A command as the approval question shows it: every character accounted for, nothing cut.
//!
//! What a terminal would draw as blank or as nothing becomes a visible marker, in its own
//! colour so it cannot pass for the command's own text: a run of spaces is `␣×N` (a single
//! space between words stays a space; one at either end of a line is `␣`), a tab `⇥`, any
//! other space character, control or invisible character its `\u{…}` code (or control
//! picture). Emoji joiners are shown too: a command has no use for them. Lines are broken at
//! the width, never cut; a row that continues the line above starts blank, a real line break
//! starts with `>`.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// One piece of a shown line: the command's own text, or a marker standing for some of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Marker(String),
}

/// `line` (one line of a command, without its `\n`) as pieces.
pub fn marked(line: &str) -> Vec<Piece> {
    let chars: Vec<char> = line.chars().collect();
    let mut out: Vec<Piece> = Vec::new();
    let mut push = |p: Piece| match (out.last_mut(), p) {
        (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
        (_, p) => out.push(p),
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        match c {
            ' ' | '\t' => {
                let sign = if c == ' ' { "␣" } else { "⇥" };
                let at_edge = i == 0 || i + run == chars.len();
                if c == ' ' && run == 1 && !at_edge {
                    push(Piece::Text(" ".into()));
                } else if run == 1 {
                    push(Piece::Marker(sign.into()));
                } else {
                    push(Piece::Marker(format!("{sign}×{run}")));
                }
                i += run;
                continue;
            }
            c if c.is_whitespace() && !c.is_control() => {
                push(Piece::Marker(format!("\\u{{{:x}}}", c as u32)))
            }
            c => {
                let mut buf = [0u8; 4];
                let one: &str = c.encode_utf8(&mut buf);
                let shown = crate::visible::visible(one);
                if shown == one && !crate::visible::is_invisible(c) {
                    push(Piece::Text(one.to_string()));
                } else if shown == one {
                    push(Piece::Marker(format!("\\u{{{:x}}}", c as u32)));
                } else {
                    push(Piece::Marker(shown.into_owned()));
                }
            }
        }
        i += 1;
    }
    out
}

/// `command` in one line of plain text, markers included, its line breaks shown as `⏎`
/// (for a notice that says what was decided).
pub fn one_line(command: &str) -> String {
    let lines: Vec<String> = command
        .split('\n')
        .map(|l| {
            marked(l)
                .into_iter()
                .map(|p| match p {
                    Piece::Text(t) | Piece::Marker(t) => t,
                })
                .collect()
        })
        .collect();
    lines.join("⏎")
}

/// The rows `command` takes at `width` columns: the first starts with `$`, each further line
/// of the command with `>`, rows that continue a line with a blank.
pub fn rows(
    command: &str,
    width: usize,
    text: Style,
    mark: Style,
    gutter: Style,
) -> Vec<Line<'static>> {
    let cols = width.saturating_sub(3).max(1);
    let mut out = Vec::new();
    for (n, line) in command.split('\n').enumerate() {
        let lead = if n == 0 { " $ " } else { " > " };
        let mut row: Vec<Span<'static>> = vec![Span::styled(lead, gutter)];
        let mut used = 0;
        let mut flush = |row: &mut Vec<Span<'static>>, used: &mut usize| {
            out.push(Line::from(std::mem::replace(
                row,
                vec![Span::styled("   ", gutter)],
            )));
            *used = 0;
        };
        for piece in marked(line) {
            match piece {
                // A marker is never split across rows (unless no row could hold it).
                Piece::Marker(m) => {
                    let w = m.width();
                    if used > 0 && used + w > cols {
                        flush(&mut row, &mut used);
                    }
                    used += w;
                    row.push(Span::styled(m, mark));
                }
                Piece::Text(t) => {
                    let mut chunk = String::new();
                    for c in t.chars() {
                        let w = UnicodeWidthStr::width(c.encode_utf8(&mut [0u8; 4]) as &str);
                        if used > 0 && used + w > cols {
                            if !chunk.is_empty() {
                                row.push(Span::styled(std::mem::take(&mut chunk), text));
                            }
                            flush(&mut row, &mut used);
                        }
                        used += w;
                        chunk.push(c);
                    }
                    if !chunk.is_empty() {
                        row.push(Span::styled(chunk, text));
                    }
                }
            }
        }
        out.push(Line::from(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Piece {
        Piece::Text(s.into())
    }
    fn m(s: &str) -> Piece {
        Piece::Marker(s.into())
    }

    #[test]
    fn blanks_and_invisibles_become_markers() {
        assert_eq!(marked("git status -s"), [t("git status -s")]);
        let spaces = format!("ls{}; touch X", " ".repeat(400));
        assert_eq!(marked(&spaces), [t("ls"), m("␣×400"), t("; touch X")]);
        assert_eq!(marked(" a "), [m("␣"), t("a"), m("␣")]);
        assert_eq!(
            marked("a\t\tb\tc"),
            [t("a"), m("⇥×2"), t("b"), m("⇥"), t("c")]
        );
        assert_eq!(marked("rm\u{a0}-rf"), [t("rm"), m("\\u{a0}"), t("-rf")]);
        assert_eq!(
            marked("ls\u{200b}\u{e0041}x\u{1b}[2K\r"),
            [
                t("ls"),
                m("\\u{200b}"),
                m("\\u{e0041}"),
                t("x"),
                m("␛"),
                t("[2K"),
                m("␍")
            ]
        );
        assert_eq!(marked("👩\u{200d}💻"), [t("👩"), m("\\u{200d}"), t("💻")]);
        assert_eq!(one_line("a  b\nc\u{200b}"), "a␣×2b⏎c\\u{200b}");
    }

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn long_lines_wrap_in_full() {
        let s = Style::default();
        let cmd = format!("echo {}; rm -rf x\necho b", "a".repeat(20));
        let shown = texts(&rows(&cmd, 13, s, s, s));
        assert_eq!(
            shown,
            [
                " $ echo aaaaa",
                "   aaaaaaaaaa",
                "   aaaaa; rm ",
                "   -rf x",
                " > echo b"
            ]
        );
        let joined: String = shown.iter().map(|r| &r[3..]).collect();
        assert_eq!(joined, cmd.replace('\n', ""));
    }
}

//! Markdown to styled terminal lines, for assistant text (finished or streaming).
//!
//! [`render`] parses with pulldown-cmark and emits logical lines with a hanging indent, then
//! wraps them to the width: headings (bold, coloured), emphasis, strong, strikethrough, inline
//! code, fenced and indented code blocks (a gutter, no wrapping of meaning), block quotes (`│`
//! gutter), ordered and bullet lists with nesting, links (text underlined, then the URL dim),
//! rules and tables (cells joined by `│`). Syntax highlighting of code blocks is not done yet;
//! code is one colour.
//!
//! Streaming: [`committed`] returns the part of a growing text that is safe to show, i.e. up to
//! the last completed line. A partial last line is held back, so a frame never shows `**bo`
//! turning into **bold** a moment later. The caller re-renders only when that prefix grows.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::sanitize::sanitize;
use super::theme;
use super::wrap::wrap_line;

/// The prefix of a streaming `text` that can be rendered now: up to its last newline.
pub fn committed(text: &str) -> &str {
    match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    }
}

struct Builder {
    out: Vec<(Line<'static>, usize)>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Gutter prefixes for quotes and list continuation, joined at each line start.
    prefixes: Vec<String>,
    lists: Vec<Option<u64>>,
    pending_item: Option<String>,
    in_code: bool,
    link: Option<String>,
    table_row: Vec<String>,
    in_table: bool,
    cell: String,
}

impl Builder {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn prefix(&self) -> String {
        self.prefixes.concat()
    }

    fn text(&mut self, t: &str) {
        if self.in_table {
            self.cell.push_str(t);
            return;
        }
        if self.current.is_empty() {
            let p = match self.pending_item.take() {
                Some(bullet) => {
                    let outer = self.prefixes.len().saturating_sub(1);
                    format!("{}{bullet}", self.prefixes[..outer].concat())
                }
                None => self.prefix(),
            };
            if !p.is_empty() {
                self.current.push(Span::styled(p, theme::fg(|t| t.dim)));
            }
        }
        self.current.push(Span::styled(t.to_string(), self.style()));
    }

    fn flush(&mut self) {
        if self.current.is_empty() && self.pending_item.is_none() {
            return;
        }
        if self.current.is_empty() {
            self.text("");
        }
        let indent = self.prefix().chars().count();
        let spans = std::mem::take(&mut self.current);
        self.out.push((Line::from(spans), indent));
    }

    fn blank(&mut self) {
        self.flush();
        if self.out.last().is_some_and(|(l, _)| l.width() > 0) {
            self.out.push((Line::default(), 0));
        }
    }
}

/// Render markdown `source` to lines no wider than `width`.
pub fn render(source: &str, width: usize) -> Vec<Line<'static>> {
    let source = sanitize(source);
    let palette = theme::current();
    let mut b = Builder {
        out: Vec::new(),
        current: Vec::new(),
        styles: vec![Style::default()],
        prefixes: Vec::new(),
        lists: Vec::new(),
        pending_item: None,
        in_code: false,
        link: None,
        table_row: Vec::new(),
        in_table: false,
        cell: String::new(),
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(&source, options) {
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph => {}
                Tag::Heading { level, .. } => {
                    b.blank();
                    let color = match level {
                        HeadingLevel::H1 => palette.heading_1,
                        HeadingLevel::H2 => palette.heading_2,
                        _ => palette.heading_3,
                    };
                    b.push_style(|s| s.fg(color).add_modifier(Modifier::BOLD));
                }
                Tag::BlockQuote(_) => {
                    b.flush();
                    b.prefixes.push("│ ".into());
                    b.push_style(|s| s.add_modifier(Modifier::ITALIC));
                }
                Tag::CodeBlock(kind) => {
                    b.blank();
                    b.in_code = true;
                    if let CodeBlockKind::Fenced(lang) = kind
                        && !lang.is_empty()
                    {
                        b.out.push((
                            Line::styled(format!("```{lang}"), Style::new().fg(palette.dim)),
                            0,
                        ));
                    }
                    b.prefixes.push("  ".into());
                    b.push_style(|_| Style::new().fg(palette.code));
                }
                Tag::List(start) => {
                    if b.lists.is_empty() {
                        b.blank();
                    } else {
                        b.flush();
                    }
                    b.lists.push(start);
                }
                Tag::Item => {
                    b.flush();
                    let depth = b.lists.len().saturating_sub(1);
                    let bullet = match b.lists.last_mut() {
                        Some(Some(n)) => {
                            let s = format!("{n}. ");
                            *n += 1;
                            s
                        }
                        _ => ["• ", "◦ ", "▪ "][depth % 3].to_string(),
                    };
                    let width = bullet.chars().count();
                    b.pending_item = Some(bullet);
                    b.prefixes.push(" ".repeat(width));
                }
                Tag::Emphasis => b.push_style(|s| s.add_modifier(Modifier::ITALIC)),
                Tag::Strong => b.push_style(|s| s.add_modifier(Modifier::BOLD)),
                Tag::Strikethrough => b.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
                Tag::Link { dest_url, .. } => {
                    b.link = Some(dest_url.to_string());
                    b.push_style(|s| s.fg(palette.link).add_modifier(Modifier::UNDERLINED));
                }
                Tag::Image { dest_url, .. } => {
                    b.text(&format!("[image: {dest_url}]"));
                    b.push_style(|s| s);
                }
                Tag::Table(_) => {
                    b.blank();
                    b.in_table = true;
                }
                Tag::TableHead | Tag::TableRow => b.table_row.clear(),
                Tag::TableCell => b.cell.clear(),
                _ => b.push_style(|s| s),
            },
            Event::End(tag) => match tag {
                TagEnd::Paragraph => {
                    b.flush();
                    if b.lists.is_empty() {
                        b.blank();
                    }
                }
                TagEnd::Heading(_) => {
                    b.styles.pop();
                    b.blank();
                }
                TagEnd::BlockQuote(_) => {
                    b.flush();
                    b.prefixes.pop();
                    b.styles.pop();
                    b.blank();
                }
                TagEnd::CodeBlock => {
                    b.flush();
                    b.in_code = false;
                    b.prefixes.pop();
                    b.styles.pop();
                    b.blank();
                }
                TagEnd::List(_) => {
                    b.flush();
                    b.lists.pop();
                    if b.lists.is_empty() {
                        b.blank();
                    }
                }
                TagEnd::Item => {
                    b.flush();
                    b.prefixes.pop();
                }
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                    b.styles.pop();
                }
                TagEnd::Link => {
                    b.styles.pop();
                    if let Some(url) = b.link.take() {
                        let style = Style::new().fg(palette.dim);
                        b.current.push(Span::styled(format!(" ({url})"), style));
                    }
                }
                TagEnd::Table => {
                    b.in_table = false;
                    b.blank();
                }
                TagEnd::TableHead | TagEnd::TableRow => {
                    let head = matches!(tag, TagEnd::TableHead);
                    let row = b.table_row.join(" │ ");
                    let style = if head {
                        Style::new().add_modifier(Modifier::BOLD)
                    } else {
                        Style::default()
                    };
                    b.out.push((Line::styled(row.clone(), style), 0));
                    if head {
                        let rule: String = row
                            .chars()
                            .map(|c| if c == '│' { '┼' } else { '─' })
                            .collect();
                        b.out
                            .push((Line::styled(rule, Style::new().fg(palette.dim)), 0));
                    }
                }
                TagEnd::TableCell => {
                    let cell = std::mem::take(&mut b.cell);
                    b.table_row.push(cell.trim().to_string());
                }
                _ => {
                    b.styles.pop();
                }
            },
            Event::Text(t) => {
                if b.in_code {
                    let mut first = true;
                    for line in t.split('\n') {
                        if !first {
                            b.flush();
                        }
                        first = false;
                        if !line.is_empty() {
                            b.text(line);
                        }
                    }
                    // A code block's text ends with a newline; drop the empty tail line.
                    if t.ends_with('\n') {
                        b.current.clear();
                    }
                } else {
                    b.text(&t);
                }
            }
            Event::Code(t) => {
                if b.in_table {
                    b.cell.push_str(&t);
                } else {
                    let style = b.style().fg(palette.code);
                    b.push_style(|_| style);
                    b.text(&t);
                    b.styles.pop();
                }
            }
            Event::SoftBreak => b.text(" "),
            Event::HardBreak => b.flush(),
            Event::Rule => {
                b.blank();
                b.out.push((
                    Line::styled("─".repeat(width.min(40)), Style::new().fg(palette.dim)),
                    0,
                ));
                b.blank();
            }
            Event::TaskListMarker(done) => b.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(t) | Event::InlineHtml(t) => b.text(t.trim_end_matches('\n')),
            Event::FootnoteReference(t) => b.text(&format!("[{t}]")),
            _ => {}
        }
    }
    b.flush();
    while b.out.last().is_some_and(|(l, _)| l.width() == 0) {
        b.out.pop();
    }
    b.out
        .iter()
        .flat_map(|(l, indent)| wrap_line(l, width, *indent))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn committed_holds_back_the_partial_line() {
        assert_eq!(committed("one\ntwo\nthr"), "one\ntwo");
        assert_eq!(committed("partial"), "");
    }

    #[test]
    fn renders_paragraphs_lists_and_code() {
        let md = "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\n";
        let out = plain(&render(md, 40));
        assert_eq!(
            out,
            [
                "Title",
                "",
                "Some text and code.",
                "",
                "• one",
                "• two",
                "  1. nested",
                "",
                "```rust",
                "  fn main() {}",
            ]
        );
    }

    #[test]
    fn list_items_wrap_under_their_text() {
        let out = plain(&render("- alpha beta gamma delta", 14));
        assert_eq!(out, ["• alpha beta", "  gamma delta"]);
    }

    #[test]
    fn escapes_in_markdown_are_removed() {
        let out = plain(&render("hi \u{1b}[2Jthere", 40));
        assert_eq!(out, ["hi there"]);
    }
}

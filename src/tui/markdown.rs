//! Markdown to styled terminal lines, for assistant text (finished or streaming).
//!
//! [`render`] parses with pulldown-cmark and emits logical lines with a hanging indent, then
//! wraps them to the width: headings (bold, coloured), emphasis, strong, strikethrough, inline
//! code, fenced and indented code blocks (a gutter, no wrapping of meaning), block quotes (`│`
//! gutter), ordered and bullet lists with nesting, links (text underlined, then the URL dim),
//! rules and tables (aligned to column widths, see [`table`]). Fenced blocks that name a language are coloured by
//! `highlight` (syntect, loaded on the first such block); others keep the one code colour.
//!
//! Streaming: [`StreamCache`] renders a growing text without re-parsing it all each frame: the
//! complete top-level blocks before the last one are rendered once and kept (per width); only
//! the last, unfinished block is parsed again, the line still being written included (what of
//! that line is drawn, and how its open markup is closed, is `open_line`'s business). A frame
//! with no new text costs a comparison.

mod table;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::{self, Memo};
use super::open_line;
use super::rows::Rows;
use super::sanitize::sanitize;
use super::theme;
use super::wrap::{self, wrap_line};

struct Builder<'m> {
    out: Vec<(Line<'static>, usize)>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Gutter prefixes for quotes and list continuation, joined at each line start.
    prefixes: Vec<String>,
    lists: Vec<Option<u64>>,
    pending_item: Option<String>,
    /// The fenced or indented code block being collected: its language word (if fenced with
    /// one) and its text so far. Code is emitted whole at the block's end, so it can be
    /// coloured with the highlighter's state carried from line to line.
    code: Option<(Option<String>, String)>,
    memo: &'m mut Memo,
    link: Option<String>,
    /// The table being collected (laid out whole at its end, when every width is known).
    table: Option<table::Table>,
    cell: String,
}

impl Builder<'_> {
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
        if self.table.is_some() {
            self.cell.push_str(t);
            return;
        }
        self.line_start();
        self.current.push(Span::styled(t.to_string(), self.style()));
    }

    /// Put the gutter (quote bars, list indent or a pending bullet) at the start of a line.
    fn line_start(&mut self) {
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

    /// End the line and leave one spacer row, never two, never at the top.
    fn blank(&mut self) {
        self.flush();
        if self.out.last().is_some_and(|(l, _)| !is_spacer(l)) {
            self.out.push((Line::default(), 0));
        }
    }

    /// Emit a finished code block, coloured when its language is known and highlights.
    fn code_block(&mut self, lang: Option<String>, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut lines: Vec<&str> = text.split('\n').collect();
        if text.ends_with('\n') {
            lines.pop();
        }
        let coloured = lang
            .as_deref()
            .and_then(highlight::syntax_for)
            .and_then(|syntax| highlight::highlight(&lines, syntax, self.memo));
        match coloured {
            Some(rows) => {
                for spans in rows {
                    self.line_start();
                    self.current.extend(spans);
                    if self.current.is_empty() {
                        self.current.push(Span::raw(""));
                    }
                    self.flush();
                }
            }
            None => {
                for line in lines {
                    self.text(line);
                    self.flush();
                }
            }
        }
    }
}

/// The empty row [`Builder::blank`] puts between blocks (every other row has a span).
fn is_spacer(line: &Line<'_>) -> bool {
    line.spans.is_empty()
}

/// What [`render_source`] learnt besides the lines.
struct Rendered {
    lines: Vec<Line<'static>>,
    /// Newlines before the line where the last top-level block starts (0: one block only).
    last_block_line: usize,
    /// Newlines in the (sanitised) source.
    newlines: usize,
    /// The text defines link references, which may resolve links anywhere in it.
    has_refdefs: bool,
}

/// Render markdown `source` to lines no wider than `width`.
pub fn render(source: &str, width: usize) -> Vec<Line<'static>> {
    render_source(source, width, &mut Memo::default()).lines
}

#[allow(
    clippy::too_many_lines,
    reason = "one pulldown-cmark event match: each arm is one Markdown construct"
)]
fn render_source(source: &str, width: usize, memo: &mut Memo) -> Rendered {
    let source = sanitize(source);
    let palette = theme::current();
    let mut b = Builder {
        out: Vec::new(),
        current: Vec::new(),
        styles: vec![Style::default()],
        prefixes: Vec::new(),
        lists: Vec::new(),
        pending_item: None,
        code: None,
        memo,
        link: None,
        table: None,
        cell: String::new(),
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let parser = Parser::new_ext(&source, options).into_offset_iter();
    let has_refdefs = parser.reference_definitions().iter().next().is_some();
    let mut depth = 0usize;
    let mut last_block = 0;
    for (event, range) in parser {
        match &event {
            Event::Start(_) => {
                if depth == 0 {
                    last_block = range.start;
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Rule if depth == 0 => last_block = range.start,
            _ => {}
        }
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
                    let mut language = None;
                    if let CodeBlockKind::Fenced(lang) = kind
                        && !lang.is_empty()
                    {
                        b.out.push((
                            Line::styled(format!("```{lang}"), Style::new().fg(palette.dim)),
                            0,
                        ));
                        language = Some(lang.to_string());
                    }
                    b.code = Some((language, String::new()));
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
                Tag::Table(aligns) => {
                    b.blank();
                    b.table = Some(table::Table {
                        aligns,
                        ..Default::default()
                    });
                }
                Tag::TableHead | Tag::TableRow => {
                    if let Some(t) = &mut b.table {
                        t.has_head |= matches!(tag, Tag::TableHead);
                        t.rows.push(Vec::new());
                    }
                }
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
                    if let Some((lang, text)) = b.code.take() {
                        b.code_block(lang, &text);
                    }
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
                    if let Some(t) = b.table.take() {
                        let prefix = b.prefix();
                        let indent = wrap::width(&prefix);
                        for (line, hang) in table::layout(&t, width.saturating_sub(indent)) {
                            let mut spans = Vec::new();
                            if !prefix.is_empty() {
                                spans.push(Span::styled(
                                    prefix.clone(),
                                    Style::new().fg(palette.dim),
                                ));
                            }
                            spans.extend(line.spans);
                            b.out.push((Line::from(spans), indent + hang));
                        }
                    }
                    b.blank();
                }
                TagEnd::TableHead | TagEnd::TableRow => {}
                TagEnd::HtmlBlock => {
                    b.styles.pop();
                    b.blank();
                }
                TagEnd::TableCell => {
                    let cell = std::mem::take(&mut b.cell);
                    if let Some(row) = b.table.as_mut().and_then(|t| t.rows.last_mut()) {
                        row.push(cell.trim().to_string());
                    }
                }
                _ => {
                    b.styles.pop();
                }
            },
            Event::Text(t) => match &mut b.code {
                Some((_, code)) => code.push_str(&t),
                None => b.text(&t),
            },
            Event::Code(t) => {
                if b.table.is_some() {
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
            Event::Html(t) => {
                b.text(t.trim_end_matches('\n'));
                if t.ends_with('\n') {
                    b.flush();
                }
            }
            Event::InlineHtml(t) => b.text(&t),
            Event::FootnoteReference(t) => b.text(&format!("[{t}]")),
            _ => {}
        }
    }
    b.flush();
    while b.out.last().is_some_and(|(l, _)| is_spacer(l)) {
        b.out.pop();
    }
    Rendered {
        lines: b
            .out
            .iter()
            .flat_map(|(l, indent)| wrap_line(l, width, *indent))
            .collect(),
        last_block_line: source[..last_block.min(source.len())]
            .bytes()
            .filter(|&c| c == b'\n')
            .count(),
        newlines: source.bytes().filter(|&c| c == b'\n').count(),
        has_refdefs,
    }
}

/// Append separately rendered `rows` to `head` the way one render would have joined them:
/// a spacer between the two when both have rows.
fn append(head: &mut Rows, rows: Vec<Line<'static>>) {
    if rows.is_empty() {
        return;
    }
    let mut part = Vec::with_capacity(rows.len() + 1);
    if !head.is_empty() {
        part.push(Line::default());
    }
    part.extend(rows);
    head.extend(part);
}

/// Characters that open an escape sequence in [`sanitize`], which may swallow newlines.
fn opens_escape(c: char) -> bool {
    matches!(
        c,
        '\u{1b}' | '\u{9b}' | '\u{9d}' | '\u{90}' | '\u{9e}' | '\u{9f}'
    )
}

/// Where the first `lines` lines of `text` end (the byte after the `lines`-th newline), if
/// there are that many and no escape sequence starts before it. Past that point sanitising
/// and parsing a piece alone gives what it gives inside the whole text.
fn stable_cut(text: &str, lines: usize) -> Option<usize> {
    if lines == 0 {
        return None;
    }
    let cut = text.match_indices('\n').nth(lines - 1)?.0 + 1;
    (!text[..cut].contains(opens_escape)).then_some(cut)
}

/// Renders a growing markdown text (a streaming answer) at a cost proportional to what is new.
///
/// Markdown is parsed line by line into blocks; once a later top-level block has started on a
/// complete line, the blocks before it can no longer change. The cache keeps the rendered rows
/// of that stable prefix, keyed by the prefix text and the width, and each call parses only the
/// rest (the last block, usually), the open line drawn as [`open_line::shown`] says. The rows
/// are exactly [`render`]'s for the prefix followed by that: a text that is not an extension of
/// the cached prefix, or a new width, starts over; a text with link reference definitions
/// (which resolve links anywhere, earlier ones included) is rendered whole every time. Code
/// blocks still streaming are coloured incrementally by the highlighter's [`Memo`].
#[derive(Default)]
pub struct StreamCache {
    width: usize,
    /// The raw text of the stable prefix.
    prefix: String,
    /// `render(prefix, width)`, in shared chunks (one per advance).
    lines: Rows,
    memo: Memo,
    whole: bool,
    /// The rest of the text as last drawn (after a prefix of this many bytes), and the rows of
    /// the whole text then.
    last: Option<(usize, String, Rows)>,
}

impl StreamCache {
    /// The rows of a streaming `text`, reusing the rows of the part seen before.
    pub fn render(&mut self, text: &str, width: usize) -> Vec<Line<'static>> {
        self.rows(text, width).to_vec()
    }

    /// [`StreamCache::render`] as shared chunks: the cached rows are not copied.
    pub fn rows(&mut self, text: &str, width: usize) -> Rows {
        if self.width != width || !text.starts_with(self.prefix.as_str()) {
            self.width = width;
            self.prefix.clear();
            self.lines = Rows::default();
            self.whole = false;
            self.last = None;
        }
        let at = self.prefix.len();
        let tail = &text[at..];
        let shown = open_line::shown(tail);
        if let Some((len, drawn, rows)) = &self.last
            && *len == at
            && *drawn == *shown
        {
            return rows.clone();
        }
        let out = self.render_tail(text, tail, &shown, width);
        self.last = Some((at, shown.into_owned(), out.clone()));
        out
    }

    fn render_tail(&mut self, text: &str, tail: &str, shown: &str, width: usize) -> Rows {
        if self.whole {
            return render_source(shown, width, &mut self.memo).lines.into();
        }
        let rendered = render_source(shown, width, &mut self.memo);
        if rendered.has_refdefs {
            self.whole = true;
            self.prefix.clear();
            self.lines = Rows::default();
            self.last = None;
            return render_source(&open_line::shown(text), width, &mut self.memo)
                .lines
                .into();
        }
        let mut out = self.lines.clone();
        append(&mut out, rendered.lines);
        // Only a block that starts on a complete line makes the ones before it final: the open
        // line may still turn out to belong to the block above.
        if rendered.last_block_line < rendered.newlines
            && let Some(cut) = stable_cut(tail, rendered.last_block_line)
        {
            let done = &tail[..cut];
            let rows = render_source(done, width, &mut self.memo).lines;
            append(&mut self.lines, rows);
            self.prefix.push_str(done);
        }
        out
    }

    /// Bytes of the text whose rows are cached (for tests).
    pub fn cached_len(&self) -> usize {
        self.prefix.len()
    }
}

#[cfg(test)]
mod tests;

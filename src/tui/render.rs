//! Drawing one frame: layout, status line, queued messages, editor, footer and popups.
//!
//! Top to bottom: the transcript (only its visible rows are produced, see `transcript.rs`; in
//! inline mode, only the rows not yet printed, see [`draw_live`]), queued steering/follow-up
//! messages, the status line (spinner, elapsed, "esc to interrupt"
//! while working), the editor between two rules coloured by thinking level, and a two-line
//! footer (folder, git branch, session name; tokens ↑ ↓, cache R/W, cost, context %, model and
//! thinking level). The editor grows with its wrapped text up to a third of the screen, then
//! scrolls (the rules say how many rows are hidden). Files and images waiting to be sent show
//! as chips on a row above the editor. The `/` completion list, the `@` file picker and the
//! model picker draw over the transcript.

use std::time::Instant;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::app::App;
use super::cells::SPINNER;
use super::paint::paint_line;
use super::sanitize::sanitize;
use super::theme::{self, fg};
use super::wrap::{width as text_width, wrap_line};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::approval::ApprovalMode;

/// 999, 1.2k, 45k, 1.3M.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=9_999 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn thinking_color(level: ThinkingLevel) -> Color {
    let t = theme::current().thinking;
    match level {
        ThinkingLevel::Off | ThinkingLevel::Inherit => t[0],
        ThinkingLevel::Minimal => t[1],
        ThinkingLevel::Low => t[2],
        ThinkingLevel::Medium => t[3],
        ThinkingLevel::High => t[4],
        ThinkingLevel::Xhigh | ThinkingLevel::Max => t[5],
    }
}

fn truncate(s: &str, max: usize) -> String {
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

fn queued_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let style = fg(|t| t.dim);
    for (label, list) in [("Steering", &app.steering), ("Follow-up", &app.follow_up)] {
        for m in list {
            let first = sanitize(m).lines().next().unwrap_or_default().to_string();
            out.push(Line::from(vec![
                Span::styled(format!(" {label}: "), style.add_modifier(Modifier::BOLD)),
                Span::styled(
                    truncate(&first, width.saturating_sub(label.len() + 4)),
                    style,
                ),
            ]));
        }
    }
    if !out.is_empty() {
        let esc = super::help::key_or(&app.keys, super::keymap::Action::Interrupt, "Interrupting");
        out.push(Line::styled(
            format!(" ↳ {esc} interrupts and brings queued messages back to the editor"),
            style,
        ));
    }
    out
}

fn status_line(app: &App, now: Instant) -> Line<'static> {
    if let Some(h) = &app.hint {
        return Line::styled(format!(" {h}"), fg(|t| t.warning));
    }
    let Some(start) = app.working else {
        return Line::default();
    };
    if app.stopping {
        return Line::styled(" ■ Stopping...", fg(|t| t.dim));
    }
    if let Some(since) = app.paused_since {
        return Line::from(vec![
            Span::styled(" ⏸ Paused ", fg(|t| t.warning).add_modifier(Modifier::BOLD)),
            Span::raw(super::app::short_duration(
                now.saturating_duration_since(since),
            )),
            Span::styled(
                " (waits before its next step · ctrl+s goes on · esc aborts)",
                fg(|t| t.dim),
            ),
        ]);
    }
    let elapsed = now.saturating_duration_since(start);
    let frame = SPINNER[(elapsed.as_millis() / 80) as usize % SPINNER.len()];
    let label = app.retry.clone().unwrap_or_else(|| "Working...".into());
    Line::from(vec![
        Span::styled(format!(" {frame} "), fg(|t| t.accent)),
        Span::raw(label),
        Span::styled(
            format!(" ({}s · esc to interrupt)", elapsed.as_secs()),
            fg(|t| t.dim),
        ),
    ])
}

fn footer_lines(app: &App, width: usize, now: Instant) -> [Line<'static>; 2] {
    let dim = fg(|t| t.dim);
    let mut place = app.place.cwd.clone();
    if let Some(b) = &app.place.branch {
        place.push_str(&format!(" ({b})"));
    }
    if let Some(n) = &app.place.session_name {
        place.push_str(&format!(" • {n}"));
    }
    let t = &app.totals;
    let mut stats = format!("↑{} ↓{}", tokens(t.input), tokens(t.output));
    if t.cache_read > 0 {
        stats.push_str(&format!(" R{}", tokens(t.cache_read)));
    }
    if t.cache_write > 0 {
        stats.push_str(&format!(" W{}", tokens(t.cache_write)));
    }
    stats.push_str(&format!(" ${:.3}", t.cost));
    let window = app.model.context_window;
    let pct_style = if window > 0 {
        let pct = app.context_tokens() as f64 * 100.0 / window as f64;
        stats.push_str(&format!(" {pct:.1}%/{}", tokens(window)));
        if pct > 90.0 {
            fg(|t| t.error)
        } else if pct > 70.0 {
            fg(|t| t.warning)
        } else {
            dim
        }
    } else {
        dim
    };
    let mut right = if app.model_ready() {
        sanitize(&app.model.id)
    } else {
        "no model".to_string()
    };
    if app.model_ready() && app.model.reasoning {
        right.push_str(&match app.thinking {
            ThinkingLevel::Off => " • thinking off".to_string(),
            l => format!(" • {}", l.as_str()),
        });
    }
    let gap = width.saturating_sub(text_width(&stats) + text_width(&right) + 1);
    let line2 = if gap == 0 {
        Line::styled(truncate(&format!("{stats} {right}"), width), dim)
    } else {
        Line::from(vec![
            Span::styled(stats, pct_style),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, dim),
        ])
    };
    // The approval mode, right-aligned on the first line (stronger when it holds calls back).
    let (mode, mode_style) = match app.approval_mode {
        ApprovalMode::Auto => ("approval: auto", dim),
        ApprovalMode::Ask => ("approval: ask", fg(|t| t.warning)),
        ApprovalMode::ReadOnly => ("approval: read-only", fg(|t| t.accent)),
    };
    let paused = app.paused_since.map(|since| {
        format!(
            "paused {} · ",
            super::app::short_duration(now.saturating_duration_since(since))
        )
    });
    let (mode, mode_style) = match paused {
        Some(p) => (format!("{p}{mode}"), fg(|t| t.warning)),
        None => (mode.to_string(), mode_style),
    };
    let room = width.saturating_sub(text_width(&mode) + 1);
    let place = truncate(&place, room);
    let gap = width.saturating_sub(text_width(&place) + text_width(&mode));
    let line1 = if room == 0 {
        Line::styled(truncate(&place, width), dim)
    } else {
        Line::from(vec![
            Span::styled(place, dim),
            Span::raw(" ".repeat(gap)),
            Span::styled(mode, mode_style),
        ])
    };
    [line1, line2]
}

/// The files and images waiting for the next prompt, as one row of chips.
fn chips_line(app: &App, width: usize) -> Option<Line<'static>> {
    if app.attachments.is_empty() {
        return None;
    }
    let chips: Vec<String> = app
        .attachments
        .iter()
        .map(|a| sanitize(&a.chip()))
        .collect();
    let chips = chips.join(" ");
    let hint = "  (Backspace on an empty editor removes the last)";
    let room = width.saturating_sub(1);
    let mut spans = vec![Span::styled(
        format!(" {}", truncate(&chips, room)),
        fg(|t| t.accent),
    )];
    if text_width(&chips) + text_width(hint) < room {
        spans.push(Span::styled(hint, fg(|t| t.dim)));
    }
    Some(Line::from(spans))
}

/// The rows below the conversation (queued messages, status, chips, editor, footer), sized
/// for one frame.
struct Bottom {
    queued: Vec<Line<'static>>,
    chips: Option<Line<'static>>,
    editor_rows: u16,
}

impl Bottom {
    /// `height`: the terminal's rows; the editor grows with its wrapped text up to a third
    /// of them (3 to 12 rows), then scrolls.
    fn new(app: &App, width: usize, height: u16) -> Bottom {
        Bottom {
            queued: queued_lines(app, width),
            chips: chips_line(app, width),
            editor_rows: app.editor.height(width as u16, (height / 3).clamp(3, 12)),
        }
    }

    /// Top to bottom: queue, status, chips, editor, footer.
    fn constraints(&self) -> [Constraint; 5] {
        [
            Constraint::Length(self.queued.len() as u16),
            Constraint::Length(1),
            Constraint::Length(u16::from(self.chips.is_some())),
            Constraint::Length(self.editor_rows + 2),
            Constraint::Length(2),
        ]
    }

    fn height(&self) -> u16 {
        self.queued.len() as u16 + 1 + u16::from(self.chips.is_some()) + self.editor_rows + 4
    }

    fn draw(self, app: &mut App, areas: [Rect; 5], buf: &mut Buffer, now: Instant) {
        let [
            queue_area,
            status_area,
            chips_area,
            editor_area,
            footer_area,
        ] = areas;
        let width = footer_area.width as usize;
        if let Some(chips) = self.chips {
            Paragraph::new(chips).render(chips_area, buf);
        }
        Paragraph::new(self.queued).render(queue_area, buf);
        Paragraph::new(status_line(app, now)).render(status_area, buf);

        let rule = Style::new().fg(thinking_color(app.thinking));
        let block = Block::default()
            .borders(Borders::TOP | Borders::BOTTOM)
            .border_style(rule);
        let inner = block.inner(editor_area);
        block.render(editor_area, buf);
        let hidden = app.editor.draw(inner, buf);
        draw_hidden_rows(buf, editor_area, hidden, rule);

        Paragraph::new(footer_lines(app, width, now).to_vec()).render(footer_area, buf);
    }
}

/// The height of the rows below the conversation at `width` (inline mode's room for the
/// conversation is what is left of the screen).
pub fn bottom_height(app: &App, width: u16, height: u16) -> u16 {
    Bottom::new(app, width as usize, height).height()
}

/// Whether an open popup takes the whole screen: the lists one browses (model picker, login,
/// session picker, tree). Inline mode shows them on the alternate screen, which gives the
/// normal screen back untouched when they close; the completion list, the `@` file picker and
/// an approval question belong to the prompt and are drawn in the live region above it.
pub fn wants_full_screen(app: &App) -> bool {
    app.picker.is_some() || app.login.is_some() || app.sessions.is_some() || app.tree.is_some()
}

/// Draw the whole screen (full-screen mode, and inline mode's full-screen popups).
pub fn draw(frame: &mut Frame, app: &mut App, now: Instant) {
    let area = frame.area();
    draw_full(app, area, frame.buffer_mut(), now);
}

fn draw_full(app: &mut App, area: Rect, buf: &mut Buffer, now: Instant) {
    app.refresh_file_picker();
    let bottom = Bottom::new(app, area.width as usize, area.height);
    let [c0, c1, c2, c3, c4] = bottom.constraints();
    let [
        main,
        queue_area,
        status_area,
        chips_area,
        editor_area,
        footer_area,
    ] = Layout::vertical([Constraint::Min(1), c0, c1, c2, c3, c4]).areas(area);

    app.viewport = (main.width, main.height);
    let view = app.view(now);
    app.transcript.render(main, buf, &view);
    bottom.draw(
        app,
        [
            queue_area,
            status_area,
            chips_area,
            editor_area,
            footer_area,
        ],
        buf,
        now,
    );
    draw_popups(app, main, buf);
}

/// Inline mode's live region for a terminal `width` columns wide and `height` rows high:
/// `rows` (the end of the conversation not printed yet; the last of them that fit), the
/// prompt's popups, then the rows below the conversation. It is as tall as that needs; when
/// even the rows below the conversation do not fit, it is taller than `height` and the
/// screen keeps its bottom.
pub fn draw_live(
    app: &mut App,
    rows: &[Line<'static>],
    width: u16,
    height: u16,
    now: Instant,
) -> Buffer {
    app.refresh_file_picker();
    let bottom = Bottom::new(app, width as usize, height);
    let room = height.saturating_sub(bottom.height());
    app.viewport = (width, room);
    // The popups are drawn over a scratch area of the whole room, to learn their height.
    let open = app.file_picker.is_some() || app.approval.is_open() || !app.completions().is_empty();
    let mut scratch = Buffer::empty(Rect::new(0, 0, width, if open { room } else { 0 }));
    let popup = if open {
        draw_popups(app, scratch.area, &mut scratch).map_or(0, |r| room - r.y.min(room))
    } else {
        0
    };
    let shown = (rows.len() as u16).min(room - popup);
    let top = popup + shown;
    let mut buf = Buffer::empty(Rect::new(0, 0, width, top + bottom.height()));
    let first = rows.len() - shown as usize;
    for (y, line) in rows[first..].iter().enumerate() {
        paint_line(line, Rect::new(0, y as u16, width, 1), &mut buf);
    }
    for y in 0..popup {
        for x in 0..width {
            buf[(x, shown + y)] = scratch[(x, room - popup + y)].clone();
        }
    }
    let below = Rect::new(0, top, width, bottom.height());
    let areas: [Rect; 5] = Layout::vertical(bottom.constraints()).areas(below);
    bottom.draw(app, areas, &mut buf, now);
    buf
}

/// The popups over `main`; the area they cover, if any.
fn draw_popups(app: &App, main: Rect, buf: &mut Buffer) -> Option<Rect> {
    let drawn = [
        draw_completions(buf, app, main),
        draw_file_picker(buf, app, main),
        draw_picker(buf, app, main),
        draw_login(buf, app, main),
        draw_session_picker(buf, app, main),
        draw_tree(buf, app, main),
        draw_approval(buf, app, main),
    ];
    drawn.into_iter().flatten().reduce(|a, b| a.union(b))
}

/// The `/` completion list, at the bottom of `main`.
fn draw_completions(buf: &mut Buffer, app: &App, main: Rect) -> Option<Rect> {
    let completions = app.completions();
    if completions.is_empty() {
        return None;
    }
    let n = completions.len().min(main.height as usize) as u16;
    let popup = Rect::new(main.x, main.y + main.height - n, main.width, n);
    let sel = app.completion_selected.min(completions.len() - 1);
    let lines: Vec<Line<'static>> = completions
        .iter()
        .enumerate()
        .take(n as usize)
        .map(|(i, c)| {
            let style = if i == sel {
                fg(|t| t.accent).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            Line::from(vec![
                Span::styled(format!(" /{:<10}", c.name), style),
                Span::styled(format!(" {}", c.help), fg(|t| t.dim)),
            ])
        })
        .collect();
    Clear.render(popup, buf);
    Paragraph::new(lines).render(popup, buf);
    Some(popup)
}

/// "↑ 3 more" / "↓ 2 more" at the right of the editor's rules when its text is taller than
/// its room.
fn draw_hidden_rows(buf: &mut Buffer, area: Rect, (above, below): (usize, usize), rule: Style) {
    for (n, arrow, y) in [
        (above, '↑', area.y),
        (below, '↓', area.bottom().saturating_sub(1)),
    ] {
        if n == 0 || area.height < 2 {
            continue;
        }
        let label = format!(" {arrow} {n} more ");
        let w = text_width(&label) as u16;
        if w + 2 <= area.width {
            buf.set_string(area.right() - w - 1, y, label, rule);
        }
    }
}

/// The short tag before a tree row's text.
fn tree_tag(kind: crate::host::view::TreeKind) -> (&'static str, Style) {
    use crate::host::view::TreeKind as K;
    match kind {
        K::User => ("you", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
        K::Assistant => ("pi", Style::default().add_modifier(Modifier::BOLD)),
        K::ToolResult => ("tool", fg(|t| t.dim)),
        K::Compaction => ("compacted", fg(|t| t.warning)),
        K::BranchSummary => ("branch summary", fg(|t| t.warning)),
        K::ModelChange => ("model", fg(|t| t.dim)),
        K::ThinkingChange => ("thinking", fg(|t| t.dim)),
        K::Label => ("label", fg(|t| t.dim)),
        K::SessionInfo => ("name", fg(|t| t.dim)),
        K::Custom | K::CustomMessage | K::Other => ("other", fg(|t| t.dim)),
    }
}

/// The `/tree` view (or the `/fork` chooser) over the transcript.
fn draw_tree(buf: &mut Buffer, app: &App, area: Rect) -> Option<Rect> {
    use super::tree::TreePurpose;
    let v = app.tree.as_ref()?;
    let width = area.width as usize;
    let (title, hints) = match v.purpose {
        TreePurpose::Navigate => (
            " Tree: ",
            " ↑↓ move · Enter continue from here · Shift+L label · Ctrl+O filter · Esc close ",
        ),
        TreePurpose::Fork => (
            " Fork before: ",
            " ↑↓ choose a prompt · Enter fork into a new session · Esc cancel ",
        ),
    };
    let mut header = vec![
        Span::styled(title, Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(sanitize(&v.query)),
        Span::styled("▏", fg(|t| t.accent)),
    ];
    if v.purpose == TreePurpose::Navigate {
        header.push(Span::styled(
            format!("  (filter: {}; {} entries)", v.filter_name(), v.rows.len()),
            fg(|t| t.dim),
        ));
    }
    let mut lines = vec![Line::from(header)];
    if let Some(edit) = &v.label_edit {
        lines.push(Line::from(vec![
            Span::styled(" Label: ", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
            Span::raw(sanitize(edit)),
            Span::styled("▏", fg(|t| t.accent)),
            Span::styled("  (Enter set · empty clears · Esc cancel)", fg(|t| t.dim)),
        ]));
    }
    if let Some(leaving) = &v.leaving {
        lines.push(match &leaving.focus {
            None => Line::from(vec![
                Span::styled(
                    " Leave the current branch: ",
                    fg(|t| t.accent).add_modifier(Modifier::BOLD),
                ),
                Span::raw("Enter/n no summary · s summarize it · f summarize with a focus"),
                Span::styled(" · Esc back", fg(|t| t.dim)),
            ]),
            Some(focus) => Line::from(vec![
                Span::styled(" Focus: ", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
                Span::raw(sanitize(focus)),
                Span::styled("▏", fg(|t| t.accent)),
                Span::styled("  (Enter summarize · Esc back)", fg(|t| t.dim)),
            ]),
        });
    }
    let room = (area.height as usize)
        .saturating_sub(lines.len() + 1)
        .max(1);
    let sel = v.selected.min(v.visible.len().saturating_sub(1));
    let here = v.here();
    // Keep the selection in view, a little above the bottom when possible.
    let start = sel
        .saturating_sub(room.saturating_sub(3).max(1))
        .min(v.visible.len().saturating_sub(room));
    for (n, &i) in v.visible.iter().enumerate().skip(start).take(room) {
        let row = &v.rows[i];
        let chosen = n == sel;
        let (tag, tag_style) = tree_tag(row.kind);
        let base = if chosen {
            fg(|t| t.accent).add_modifier(Modifier::BOLD)
        } else if row.on_path {
            Style::default()
        } else {
            fg(|t| t.dim)
        };
        let mut spans = vec![
            Span::styled(if chosen { " › " } else { "   " }, base),
            Span::styled(
                v.prefixes.get(n).cloned().unwrap_or_default(),
                fg(|t| t.dim),
            ),
            Span::styled(format!("{tag}: "), if chosen { base } else { tag_style }),
        ];
        if let Some(label) = &row.label {
            spans.push(Span::styled(
                format!("[{}] ", sanitize(label)),
                fg(|t| t.warning).add_modifier(Modifier::BOLD),
            ));
        }
        spans.push(Span::styled(sanitize(&row.text), base));
        if here == Some(n) {
            spans.push(Span::styled("  ← here", fg(|t| t.accent)));
        }
        lines.push(truncate_line(Line::from(spans), width));
    }
    if v.visible.is_empty() {
        lines.push(Line::styled(
            if v.rows.is_empty() {
                "   nothing in this session yet"
            } else {
                "   no entry matches"
            },
            fg(|t| t.dim),
        ));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.accent))
        .title(hints);
    Clear.render(area, buf);
    Paragraph::new(lines).block(block).render(area, buf);
    Some(area)
}

/// Cut a line to `width` columns (the tree's rows stay one row each).
fn truncate_line(line: Line<'static>, width: usize) -> Line<'static> {
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

fn draw_session_picker(buf: &mut Buffer, app: &App, area: Rect) -> Option<Rect> {
    use super::sessions::{PickerMode, age};
    use crate::host::view::ListScope;
    let p = app.sessions.as_ref()?;
    let matches = p.matches();
    let h = (matches.len().min(10) as u16 + 3).min(area.height);
    let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
    let scope = match p.scope {
        ListScope::CurrentFolder => "this folder",
        ListScope::AllFolders => "all folders",
    };
    let sel = p.selected.min(matches.len().saturating_sub(1));
    let header = match &p.mode {
        PickerMode::Browse => Line::from(vec![
            Span::styled(" Resume: ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(sanitize(&p.query)),
            Span::styled("▏", fg(|t| t.accent)),
            Span::styled(format!("  ({scope})"), fg(|t| t.dim)),
        ]),
        PickerMode::Rename(name) => Line::from(vec![
            Span::styled(" New name: ", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
            Span::raw(sanitize(name)),
            Span::styled("▏", fg(|t| t.accent)),
            Span::styled("  (Enter save · Esc cancel)", fg(|t| t.dim)),
        ]),
        PickerMode::ConfirmDelete => Line::from(vec![
            Span::styled(" Delete ", fg(|t| t.error).add_modifier(Modifier::BOLD)),
            Span::raw(
                matches
                    .get(sel)
                    .map(|s| truncate(&sanitize(s.title()), 40))
                    .unwrap_or_default(),
            ),
            Span::styled(
                "? y deletes the file; any other key keeps it",
                fg(|t| t.error),
            ),
        ]),
    };
    let mut lines = vec![header];
    let now = std::time::SystemTime::now();
    let start = sel.saturating_sub(9);
    let width = area.width as usize;
    // Right-hand columns: folder (up to 24), message count, age.
    let folder_w = (width / 4).clamp(8, 24);
    let room = width.saturating_sub(folder_w + 18).max(8);
    for (i, s) in matches.iter().enumerate().skip(start).take(10) {
        let style = if i == sel {
            fg(|t| t.accent).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let mut title = vec![];
        let first = s.first_message.as_deref().map(sanitize).unwrap_or_default();
        match s.name.as_deref().map(sanitize) {
            Some(name) => {
                let name = truncate(&name, room);
                let rest = room.saturating_sub(text_width(&name));
                title.push(Span::styled(name, style));
                if rest > 4 && !first.is_empty() {
                    title.push(Span::styled(
                        truncate(&format!(" · {first}"), rest),
                        fg(|t| t.dim),
                    ));
                }
            }
            None => title.push(Span::styled(truncate(&sanitize(s.title()), room), style)),
        }
        let used: usize = title.iter().map(|s| text_width(&s.content)).sum();
        let count = match p.counts.get(&s.path) {
            Some(n) => format!("{n} msg"),
            None => "…".into(),
        };
        let mut spans = vec![Span::styled(if i == sel { " › " } else { "   " }, style)];
        spans.extend(title);
        spans.push(Span::styled(
            format!(
                "{:pad$} {:>folder_w$} {:>7} {:>4}",
                "",
                truncate(&short_folder(&s.cwd), folder_w),
                count,
                age(s.modified, now),
                pad = room.saturating_sub(used),
            ),
            fg(|t| t.dim),
        ));
        lines.push(Line::from(spans));
    }
    if matches.is_empty() {
        lines.push(Line::styled("   no session matches", fg(|t| t.dim)));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.accent))
        .title(" Enter open · Tab scope · Ctrl+R rename · Ctrl+D delete · Esc close ");
    Clear.render(popup, buf);
    Paragraph::new(lines).block(block).render(popup, buf);
    Some(popup)
}

/// A session's folder as shown in the picker: `~` for the home folder, else its last two
/// parts.
fn short_folder(cwd: &str) -> String {
    let cwd = sanitize(cwd);
    if let Some(home) = dirs::home_dir().map(|h| h.display().to_string())
        && let Some(rest) = cwd.strip_prefix(&home)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return format!("~{rest}");
    }
    let parts: Vec<&str> = cwd.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [last, parent, _] => format!("…/{parent}/{last}"),
        _ => cwd,
    }
}

/// The `@` file picker, at the bottom of the transcript, just above the editor.
fn draw_file_picker(buf: &mut Buffer, app: &App, area: Rect) -> Option<Rect> {
    use super::file_picker::ROWS;
    let p = app.file_picker.as_ref()?;
    let hits = &p.found.hits;
    let h = (hits.len().clamp(1, ROWS) as u16 + 2).min(area.height);
    let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
    let count = match (p.found.total, p.query.is_empty()) {
        (n, true) => format!("{n} files"),
        (1, false) => "1 match".to_string(),
        (n, false) => format!("{n} matches"),
    };
    let mut header = vec![
        Span::styled(" @", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(sanitize(&p.query)),
        Span::styled("▏", fg(|t| t.accent)),
        Span::styled(format!("  {count}"), fg(|t| t.dim)),
    ];
    if p.listing {
        header.push(Span::styled(" · listing…", fg(|t| t.dim)));
    }
    let mut lines = vec![Line::from(header)];
    let sel = p.selected.min(hits.len().saturating_sub(1));
    let start = sel.saturating_sub(ROWS - 1);
    let width = area.width as usize;
    for (i, hit) in hits.iter().enumerate().skip(start).take(ROWS) {
        let chosen = i == sel;
        let base = if chosen {
            fg(|t| t.accent).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let strong = base
            .add_modifier(Modifier::BOLD)
            .fg(theme::current().accent);
        let mut spans = vec![Span::styled(if chosen { " › " } else { "   " }, base)];
        // Matched letters stand out; runs of the same style make one span.
        let mut run = String::new();
        let mut run_matched = false;
        for (n, c) in sanitize(&hit.path).chars().enumerate() {
            let matched = hit.matched.binary_search(&(n as u32)).is_ok();
            if matched != run_matched && !run.is_empty() {
                let style = if run_matched { strong } else { base };
                spans.push(Span::styled(std::mem::take(&mut run), style));
            }
            run_matched = matched;
            run.push(c);
        }
        if !run.is_empty() {
            spans.push(Span::styled(run, if run_matched { strong } else { base }));
        }
        lines.push(truncate_line(Line::from(spans), width));
    }
    if hits.is_empty() {
        let empty = if p.listing {
            "   listing the folder's files…"
        } else {
            "   no file matches"
        };
        lines.push(Line::styled(empty, fg(|t| t.dim)));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.accent))
        .title(" ↑↓ choose · Enter/Tab insert · Esc close ");
    Clear.render(popup, buf);
    Paragraph::new(lines).block(block).render(popup, buf);
    Some(popup)
}

fn draw_picker(buf: &mut Buffer, app: &App, area: Rect) -> Option<Rect> {
    let p = app.picker.as_ref()?;
    let matches = app.picker_matches();
    let h = (matches.len().min(10) as u16 + 3).min(area.height);
    let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
    let mut lines = vec![Line::from(vec![
        Span::styled(" Model: ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(sanitize(&p.query)),
        Span::styled("▏", fg(|t| t.accent)),
    ])];
    let sel = p.selected.min(matches.len().saturating_sub(1));
    let start = sel.saturating_sub(9);
    for (i, m) in matches.iter().enumerate().skip(start).take(10) {
        let current = m.id == app.model.id && m.provider == app.model.provider;
        let style = if i == sel {
            fg(|t| t.accent).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        lines.push(Line::from(vec![
            Span::styled(if i == sel { " › " } else { "   " }, style),
            Span::styled(format!("{}/{}", m.provider, m.id), style),
            Span::styled(
                format!(
                    "  {}{}{}",
                    tokens(m.context_window),
                    if current { "  (current)" } else { "" },
                    if app.providers_without_key.contains(&m.provider) {
                        "  no key"
                    } else {
                        ""
                    }
                ),
                fg(|t| t.dim),
            ),
        ]));
    }
    if matches.is_empty() {
        lines.push(Line::styled("   no model matches", fg(|t| t.dim)));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.accent))
        .title(" ↑↓ choose · Enter select · Ctrl+U clear · Esc cancel ");
    Clear.render(popup, buf);
    Paragraph::new(lines).block(block).render(popup, buf);
    Some(popup)
}

/// The `/login` overlay: the providers and local models, or the key being typed (as dots).
fn draw_login(buf: &mut Buffer, app: &App, area: Rect) -> Option<Rect> {
    use super::login::{Choice, Stage};
    let view = app.login.as_ref()?;
    let dim = fg(|t| t.dim);
    let (title, lines) = match &view.stage {
        Stage::Choose { selected, filter } => {
            let shown = view.shown();
            let mut lines = vec![Line::from(vec![
                Span::styled(
                    if view.searching {
                        " Sign in to a provider (looking for local servers…): "
                    } else {
                        " Sign in to a provider, or use a local server: "
                    },
                    Style::new().add_modifier(Modifier::BOLD),
                ),
                Span::raw(sanitize(filter)),
                Span::styled("▏", fg(|t| t.accent)),
            ])];
            let sel = (*selected).min(shown.len().saturating_sub(1));
            let start = sel.saturating_sub(9);
            for (i, c) in shown.iter().enumerate().skip(start).take(10) {
                let style = if i == sel {
                    fg(|t| t.accent).add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                };
                let (name, note) = match *c {
                    Choice::Provider { id, env, has_key } => (
                        sanitize(id),
                        format!(
                            "{}{}",
                            env.as_deref().map(|e| format!("  {e}")).unwrap_or_default(),
                            if *has_key { "  key set" } else { "" }
                        ),
                    ),
                    Choice::Local(m) => (
                        format!("{}/{}", sanitize(&m.provider), sanitize(&m.id)),
                        "  local server, no key needed".to_string(),
                    ),
                };
                lines.push(Line::from(vec![
                    Span::styled(if i == sel { " › " } else { "   " }, style),
                    Span::styled(name, style),
                    Span::styled(note, dim),
                ]));
            }
            (
                " type to filter · ↑↓ choose · Enter select · Esc close ",
                lines,
            )
        }
        Stage::Key { provider, key } => (
            " Enter save · Ctrl+U clear · Esc back ",
            vec![
                Line::styled(
                    format!(
                        " API key for {} (paste it; it is saved in auth.json)",
                        sanitize(provider)
                    ),
                    Style::new().add_modifier(Modifier::BOLD),
                ),
                Line::from(vec![
                    Span::raw(" "),
                    Span::raw("•".repeat(key.chars().count().min(40))),
                    Span::styled("▏", fg(|t| t.accent)),
                    Span::styled(
                        if key.is_empty() {
                            String::new()
                        } else {
                            format!("  {} characters", key.chars().count())
                        },
                        dim,
                    ),
                ]),
            ],
        ),
    };
    let h = (lines.len() as u16 + 1).min(area.height);
    let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.accent))
        .title(title);
    Clear.render(popup, buf);
    Paragraph::new(lines).block(block).render(popup, buf);
    Some(popup)
}

/// A tool call waiting for approval: what it would do, and the keys to answer.
fn draw_approval(buf: &mut Buffer, app: &App, area: Rect) -> Option<Rect> {
    let r = app.approval.current()?;
    let width = area.width as usize;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let dim = fg(|t| t.dim);
    let waiting = app.approval.queue.len().saturating_sub(1);
    let mut head = match r.tool.as_str() {
        "bash" => " Run this command?".to_string(),
        "edit" => format!(" Apply this edit to {}?", sanitize(&r.subject)),
        "write" => format!(" Write {}?", sanitize(&r.subject)),
        other => format!(" Call {}?", sanitize(other)),
    };
    if waiting > 0 {
        head.push_str(&format!(" ({waiting} more waiting)"));
    }
    let mut body: Vec<Line<'static>> = Vec::new();
    if r.tool == "bash" {
        body = super::shown_command::rows(&r.subject, width, bold, fg(|t| t.warning), dim);
    }
    // The diff's file header repeats the title: left out.
    let detail = r
        .detail
        .as_deref()
        .unwrap_or("")
        .lines()
        .skip_while(|l| l.starts_with("--- ") || l.starts_with("+++ "));
    for l in detail {
        let style = if l.starts_with("@@") {
            dim
        } else if l.starts_with('+') {
            fg(|t| t.diff_added)
        } else if l.starts_with('-') {
            fg(|t| t.diff_removed)
        } else {
            Style::default()
        };
        body.extend(wrap_line(
            &Line::styled(format!(" {}", sanitize(l)), style),
            width,
            1,
        ));
    }
    let key = |k: &'static str| Span::styled(k, fg(|t| t.accent).add_modifier(Modifier::BOLD));
    let keys = match &app.approval.reason {
        None => Line::from(vec![
            key(" y"),
            Span::raw(" allow once   "),
            key("a"),
            Span::raw(format!(
                " allow {} for the session   ",
                sanitize(&r.session_scope)
            )),
            key("n"),
            Span::raw(" refuse   "),
            Span::styled("esc", dim),
            Span::styled(" stop the run", dim),
        ]),
        Some(reason) => Line::from(vec![
            Span::styled(" Why not (optional, for the model): ", bold),
            Span::raw(sanitize(reason)),
            Span::styled("▏", fg(|t| t.accent)),
            Span::styled("  Enter refuse", dim),
        ]),
    };
    // The keys wrap in full: what `a` allows is read before it is pressed.
    let keys = wrap_line(&keys, width, 1);
    // The title, the body (scrolled when it is taller than the room), and the keys, over the
    // bottom of the conversation. Until the body's last line has been on screen, y and a wait.
    let room = (area.height as usize).saturating_sub(2 + keys.len()).max(2);
    let max_body = room.min((area.height as usize * 2 / 3).max(3));
    let mut hidden = false;
    if body.len() > max_body {
        let shown = max_body - 1;
        let last_top = body.len() - shown;
        let top = app.approval.scroll.get().min(last_top);
        app.approval.scroll.set(top);
        app.approval.max_scroll.set(last_top);
        hidden = top < last_top;
        let mut window: Vec<Line<'static>> = body.drain(top..top + shown).collect();
        window.push(Line::styled(
            format!(
                " lines {}–{} of {}{}",
                top + 1,
                top + shown,
                body.len() + shown,
                if hidden {
                    ": ↓/PgDn to read the rest before y or a"
                } else {
                    ": ↑/PgUp to scroll back"
                }
            ),
            fg(|t| t.warning),
        ));
        body = window;
    } else {
        app.approval.max_scroll.set(0);
    }
    if !hidden {
        app.approval.bottom_seen.set(true);
    }
    app.approval
        .unread
        .set(hidden && !app.approval.bottom_seen.get());
    let mut lines = vec![Line::styled(truncate(&head, width), bold)];
    lines.extend(body);
    lines.extend(keys);
    let h = (lines.len() as u16 + 1).min(area.height);
    let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.warning))
        .title(format!(" approval: {} ", sanitize(&r.tool)));
    Clear.render(popup, buf);
    Paragraph::new(lines).block(block).render(popup, buf);
    Some(popup)
}

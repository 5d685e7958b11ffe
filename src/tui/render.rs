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
use super::popup::Popup;
use super::sanitize::sanitize;
use super::theme::{self, fg};
use super::units::{tokens, truncate};
use super::wrap::width as text_width;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::approval::ApprovalMode;

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
            Span::raw(super::units::short_duration(
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
            super::units::short_duration(now.saturating_duration_since(since))
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
    !app.popups.is_empty()
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
        app.file_picker.as_ref().map(|p| p.draw(buf, main)),
    ];
    let catalogue = app.catalogue();
    let stacked = app.popups.iter().map(|p| match p {
        Popup::Model(m) => m.draw(buf, main, &catalogue),
        Popup::Sessions(s) => s.draw(buf, main),
        Popup::Tree(t) => t.draw(buf, main),
        Popup::Login(l) => l.draw(buf, main),
    });
    let stacked: Vec<Rect> = stacked.collect();
    let approval = app.approval.draw(buf, main);
    drawn
        .into_iter()
        .flatten()
        .chain(stacked)
        .chain(approval)
        .reduce(|a, b| a.union(b))
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

//! Laying out one frame from the components: the transcript, the composer, the footer and the
//! popups. Each component draws itself; this module only decides where.
//!
//! Top to bottom: the transcript (only its visible rows are produced, see `transcript.rs`; in
//! inline mode, only the rows not yet printed, see [`draw_live`]), then the composer (queued
//! steering/follow-up messages, the status line, attachment chips, the editor, see
//! `composer.rs`; the editor grows with its wrapped text up to a third of the screen, then
//! scrolls) and the two-line footer (`footer.rs`). The `/` completion list, the `@` file picker,
//! the popup stack (bottom to top) and a waiting approval draw over the transcript.

use std::time::Instant;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::app::App;
use super::composer::draw_editor;
use super::paint::paint_line;
use super::popup::Popup;
use super::theme::fg;

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
            queued: {
                let mut rows = app.todos.lines(width);
                rows.extend(app.composer.queued_lines(&app.keys, width));
                rows
            },
            chips: app.composer.chips_line(width),
            editor_rows: app
                .composer
                .editor
                .height(width as u16, (height / 3).clamp(3, 12)),
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
        if let Some(chips) = self.chips {
            Paragraph::new(chips).render(chips_area, buf);
        }
        Paragraph::new(self.queued).render(queue_area, buf);
        app.composer
            .draw_status(&app.status(), status_area, buf, now);
        let thinking = app.thinking;
        draw_editor(&mut app.composer.editor, thinking, editor_area, buf);
        app.footer().draw(footer_area, buf, now);
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
    let open = app.composer.file_picker.is_some()
        || app.approval.is_open()
        || !app.completions().is_empty();
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
        app.composer.file_picker.as_ref().map(|p| p.draw(buf, main)),
    ];
    let catalogue = app.catalogue();
    let stacked = app.popups.iter().map(|p| match p {
        Popup::Model(m) => m.draw(buf, main, &catalogue),
        Popup::Sessions(s) => s.draw(buf, main),
        Popup::Tree(t) => t.draw(buf, main),
        Popup::Login(l) => l.draw(buf, main),
        Popup::Theme(t) => t.draw(buf, main, &app.themes),
        Popup::Rewind(r) => r.draw(buf, main, &app.cwd),
        Popup::Plan(p) => p.draw(buf, main),
    });
    let stacked: Vec<Rect> = stacked.collect();
    let approval = app.approval.draw(buf, main);
    drawn
        .into_iter()
        .flatten()
        .chain(stacked)
        .chain(approval)
        .reduce(ratatui::layout::Rect::union)
}

/// The `/` completion list, at the bottom of `main`.
fn draw_completions(buf: &mut Buffer, app: &App, main: Rect) -> Option<Rect> {
    let completions = app.completions();
    if completions.is_empty() {
        return None;
    }
    let n = completions.len().min(main.height as usize) as u16;
    let popup = Rect::new(main.x, main.y + main.height - n, main.width, n);
    let sel = app.composer.completion_selected.min(completions.len() - 1);
    // Columns: the name, the arguments it takes (a template's hint), what it does.
    let shown = &completions[..n as usize];
    let name_w = shown
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    let args_w = shown
        .iter()
        .map(|c| c.args.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line<'static>> = shown
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let style = if i == sel {
                fg(|t| t.accent).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let mut spans = vec![Span::styled(format!(" /{:<name_w$}", c.name), style)];
            if args_w > 0 {
                spans.push(Span::raw(format!(" {:<args_w$}", c.args)));
            }
            spans.push(Span::styled(format!(" {}", c.help), fg(|t| t.dim)));
            Line::from(spans)
        })
        .collect();
    Clear.render(popup, buf);
    Paragraph::new(lines).render(popup, buf);
    Some(popup)
}

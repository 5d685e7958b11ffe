//! Drawing one frame: layout, status line, queued messages, editor, footer and popups.
//!
//! Top to bottom: the transcript (only its visible rows are produced, see `transcript.rs`),
//! queued steering/follow-up messages, the status line (spinner, elapsed, "esc to interrupt"
//! while working), the editor between two rules coloured by thinking level, and a two-line
//! footer (folder, git branch, session name; tokens ↑ ↓, cache R/W, cost, context %, model and
//! thinking level). The `/` completion list and the model picker draw over the transcript.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::App;
use super::cells::SPINNER;
use super::sanitize::sanitize;
use super::theme::{self, fg};
use super::wrap::width as text_width;
use crate::agent::protocol::thinking::ThinkingLevel;

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
        out.push(Line::styled(
            " ↳ Esc interrupts and brings queued messages back to the editor",
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

fn footer_lines(app: &App, width: usize) -> [Line<'static>; 2] {
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
        let pct = t.context as f64 * 100.0 / window as f64;
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
    let mut right = sanitize(&app.model.id);
    if app.model.reasoning {
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
    [Line::styled(truncate(&place, width), dim), line2]
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App, now: Instant) {
    let area = frame.area();
    let width = area.width as usize;
    let queued = queued_lines(app, width);
    let editor_rows = app.editor.line_count().clamp(1, 8) as u16;
    let [main, queue_area, status_area, editor_area, footer_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(queued.len() as u16),
        Constraint::Length(1),
        Constraint::Length(editor_rows + 2),
        Constraint::Length(2),
    ])
    .areas(area);

    app.viewport = (main.width, main.height);
    let view = app.view(now);
    app.transcript.render(main, frame.buffer_mut(), &view);
    frame.render_widget(Paragraph::new(queued), queue_area);
    frame.render_widget(Paragraph::new(status_line(app, now)), status_area);

    let rule = Style::new().fg(thinking_color(app.thinking));
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(rule);
    let inner = block.inner(editor_area);
    frame.render_widget(block, editor_area);
    frame.render_widget(app.editor.textarea(), inner);

    frame.render_widget(
        Paragraph::new(footer_lines(app, width).to_vec()),
        footer_area,
    );

    let completions = app.completions();
    if !completions.is_empty() {
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
        frame.render_widget(Clear, popup);
        frame.render_widget(Paragraph::new(lines), popup);
    }

    if app.picker.is_some() {
        draw_picker(frame, app, main);
    }
    if app.sessions.is_some() {
        draw_session_picker(frame, app, main);
    }
}

fn draw_session_picker(frame: &mut Frame, app: &App, area: Rect) {
    use super::sessions::{age, size};
    use crate::session::ListScope;
    let Some(p) = &app.sessions else {
        return;
    };
    let matches = p.matches();
    let h = (matches.len().min(10) as u16 + 3).min(area.height);
    let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
    let scope = match p.scope {
        ListScope::CurrentFolder => "this folder",
        ListScope::AllFolders => "all folders",
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(" Resume: ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(sanitize(&p.query)),
        Span::styled("▏", fg(|t| t.accent)),
        Span::styled(format!("  ({scope})"), fg(|t| t.dim)),
    ])];
    let now = std::time::SystemTime::now();
    let sel = p.selected.min(matches.len().saturating_sub(1));
    let start = sel.saturating_sub(9);
    let room = (area.width as usize).saturating_sub(18).max(8);
    for (i, s) in matches.iter().enumerate().skip(start).take(10) {
        let style = if i == sel {
            fg(|t| t.accent).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let title: String = sanitize(s.title()).chars().take(room).collect();
        let pad = room.saturating_sub(unicode_width::UnicodeWidthStr::width(title.as_str()));
        lines.push(Line::from(vec![
            Span::styled(if i == sel { " › " } else { "   " }, style),
            Span::styled(title, style),
            Span::styled(
                format!(
                    "{:pad$} {:>4} {:>6}",
                    "",
                    age(s.modified, now),
                    size(s.size)
                ),
                fg(|t| t.dim),
            ),
        ]));
    }
    if matches.is_empty() {
        lines.push(Line::styled("   no session matches", fg(|t| t.dim)));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(fg(|t| t.accent))
        .title(" ↑↓ choose · Tab all folders · Enter resume · Esc cancel ");
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

fn draw_picker(frame: &mut Frame, app: &App, area: Rect) {
    let matches = app.picker_matches();
    let Some(p) = &app.picker else {
        return;
    };
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
                    "  {}{}",
                    tokens(m.context_window),
                    if current { "  (current)" } else { "" }
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
        .title(" ↑↓ choose · Enter select · Esc cancel ");
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

//! The footer: where pi works (folder, git branch, session name) with the approval mode and a
//! pause on the right; then tokens, cost (or the subscription paying) and context use, with the
//! model and thinking level (or "no model" until one is ready). The app lends it what it shows for one frame.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::sanitize::sanitize;
use super::theme::fg;
use super::units::{short_duration, tokens, truncate};
use super::wrap::width as text_width;
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::UsageTotals;
use crate::approval::ApprovalMode;
use crate::provider::catalog::ModelInfo;

/// What the footer shows about where we are.
#[derive(Clone, Debug, Default)]
pub struct Place {
    pub cwd: String,
    pub branch: Option<String>,
    pub session_name: Option<String>,
}

/// The footer for one frame.
pub struct Footer<'a> {
    pub place: &'a Place,
    pub totals: &'a UsageTotals,
    /// Tokens the context holds now (reported, plus estimated since).
    pub context_tokens: u64,
    /// The model prompts go to; `None` until one is ready.
    pub model: Option<&'a ModelInfo>,
    pub thinking: ThinkingLevel,
    pub approval: ApprovalMode,
    /// Plan mode is on.
    pub planning: bool,
    pub paused_since: Option<Instant>,
    /// The subscription the model is used through, if any: shown in place of the cost where
    /// the plan has no per-token price, beside it where it has (Claude's extra usage).
    pub subscription: Option<crate::provider::subscription::Kind>,
}

impl Footer<'_> {
    /// The footer's two rows for `width` columns.
    pub fn lines(&self, width: usize, now: Instant) -> [Line<'static>; 2] {
        let app = self;
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
        match app.subscription {
            Some(k) if !k.priced_per_token() => stats.push_str(&format!(" · {}", k.label())),
            Some(k) => stats.push_str(&format!(" ${:.3} · {}", t.cost, k.label())),
            None => stats.push_str(&format!(" ${:.3}", t.cost)),
        }
        let window = app.model.map_or(0, |m| m.context_window);
        let pct_style = if window > 0 {
            let pct = app.context_tokens as f64 * 100.0 / window as f64;
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
        let mut right = match app.model {
            Some(m) => sanitize(&m.id),
            None => "no model".to_string(),
        };
        if app.model.is_some_and(|m| m.reasoning) {
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
        let (mode, mode_style) = match app.approval {
            ApprovalMode::Auto => ("approval: auto", dim),
            ApprovalMode::Ask => ("approval: ask", fg(|t| t.warning)),
            ApprovalMode::ReadOnly => ("approval: read-only", fg(|t| t.accent)),
        };
        let paused = app.paused_since.map(|since| {
            format!(
                "paused {} · ",
                short_duration(now.saturating_duration_since(since))
            )
        });
        let (mode, mode_style) = match paused {
            Some(p) => (format!("{p}{mode}"), fg(|t| t.warning)),
            None if app.planning => (format!("plan mode · {mode}"), fg(|t| t.accent)),
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
}

impl Footer<'_> {
    pub fn draw(&self, area: Rect, buf: &mut Buffer, now: Instant) {
        Paragraph::new(self.lines(area.width as usize, now).to_vec()).render(area, buf);
    }
}

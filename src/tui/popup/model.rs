//! The model picker (`/model`, Ctrl+L): a filter over the catalogue's models, the current one
//! first selected; a `provider/id` the catalogue does not list is offered as `--model` would
//! take it. It owns its query and selection, its keys and its drawing; what it picks goes back
//! to the app as an [`Outcome`].

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::provider::catalog::{Catalog, ModelInfo};
use crate::tui::sanitize::sanitize;
use crate::tui::theme::fg;
use crate::tui::units::tokens;

/// What the picker chooses from (the app's, lent for a key or a frame).
pub struct Catalogue<'a> {
    pub models: &'a [ModelInfo],
    pub current: &'a ModelInfo,
    pub catalog: Option<&'a Catalog>,
    pub without_key: &'a HashSet<String>,
}

#[derive(Clone, Debug, Default)]
pub struct ModelPicker {
    pub query: String,
    pub selected: usize,
    /// The model a `provider/id` query names that the catalogue does not list (used as given,
    /// as `--model` would use it).
    pub named: Option<ModelInfo>,
}

/// What a key did.
#[derive(Debug)]
pub enum Outcome {
    Nothing,
    Close,
    /// A model was chosen, with the warning `--model` gives for an uncatalogued id.
    Chosen(ModelInfo, Option<String>),
}

impl ModelPicker {
    /// Open on `query`, the current model selected when it matches (Enter keeps it).
    pub fn open(query: &str, cat: &Catalogue<'_>) -> ModelPicker {
        let mut p = ModelPicker {
            query: query.to_string(),
            ..Default::default()
        };
        p.name_model(cat);
        let current = p
            .matches(cat)
            .iter()
            .position(|m| m.provider == cat.current.provider && m.id == cat.current.id);
        if let Some(i) = current {
            p.selected = i;
        }
        p
    }

    /// The model the query names as `provider/id` when the catalogue does not list it, by the
    /// rule `--model` and RPC `set_model` follow ([`model_by_id`]).
    ///
    /// [`model_by_id`]: crate::setup::select::model_by_id
    fn name_model(&mut self, cat: &Catalogue<'_>) {
        self.named = None;
        let query = self.query.trim();
        let Some((provider, id)) = query.split_once('/') else {
            return;
        };
        if provider.is_empty() || id.is_empty() || query.contains(char::is_whitespace) {
            return;
        }
        let listed = |m: &ModelInfo| m.provider == provider && m.id == id;
        if listed(cat.current) || cat.models.iter().any(listed) {
            return;
        }
        if let Some(catalog) = cat.catalog
            && let Ok((m, _)) =
                crate::setup::select::model_by_id(catalog, provider, id, Some(cat.current))
        {
            self.named = Some(m);
        }
    }

    /// Models matching the query (every word must appear in `provider/id name`).
    pub fn matches<'a>(&'a self, cat: &Catalogue<'a>) -> Vec<&'a ModelInfo> {
        let q = self.query.to_lowercase();
        // The current model is listed even when the catalogue lacks it (a local model, a new
        // id given with --model), and so is a new id the query names.
        let listed = cat
            .models
            .iter()
            .any(|m| m.provider == cat.current.provider && m.id == cat.current.id);
        let extra = (!listed).then_some(cat.current);
        extra
            .into_iter()
            .chain(self.named.as_ref())
            .chain(cat.models.iter())
            .filter(|m| {
                let hay = format!("{}/{} {}", m.provider, m.id, m.name).to_lowercase();
                q.split_whitespace().all(|w| hay.contains(w))
            })
            .collect()
    }

    pub fn key(&mut self, key: KeyEvent, cat: &Catalogue<'_>) -> Outcome {
        let count = self.matches(cat).len();
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Outcome::Close;
            }
            // The filter edits as a shell line does.
            _ if crate::tui::filter::edit(&mut self.query, &key) => self.selected = 0,
            KeyCode::Char(_) if key.modifiers.contains(KeyModifiers::CONTROL) => {}
            KeyCode::Char(c) => {
                self.query.push(c);
                self.selected = 0;
            }
            KeyCode::Enter => {
                let Some(m) = self.matches(cat).get(self.selected).map(|m| (*m).clone()) else {
                    return Outcome::Close;
                };
                // The warning `--model` and RPC `set_model` give for an uncatalogued id.
                let warning = cat.catalog.and_then(|c| {
                    crate::setup::select::model_by_id(c, &m.provider, &m.id, Some(cat.current))
                        .ok()
                        .and_then(|(_, w)| w)
                });
                return Outcome::Chosen(m, warning);
            }
            _ => {}
        }
        self.name_model(cat);
        Outcome::Nothing
    }

    /// The picker at the bottom of `area`; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect, cat: &Catalogue<'_>) -> Rect {
        let matches = self.matches(cat);
        let h = (matches.len().min(10) as u16 + 3).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let mut lines = vec![Line::from(vec![
            Span::styled(" Model: ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(sanitize(&self.query)),
            Span::styled("▏", fg(|t| t.accent)),
        ])];
        let sel = self.selected.min(matches.len().saturating_sub(1));
        let start = sel.saturating_sub(9);
        for (i, m) in matches.iter().enumerate().skip(start).take(10) {
            let current = m.id == cat.current.id && m.provider == cat.current.provider;
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
                        if cat.without_key.contains(&m.provider) {
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
        popup
    }
}

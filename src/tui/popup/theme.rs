//! The theme picker (`/theme`): the built-in palettes and the theme files found, the current
//! one selected. Moving the selection shows that theme at once; Enter keeps it, Esc goes back
//! to the one in use before. What it picks goes back to the app as an [`Outcome`].

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::config::theme::ColorValue;
use crate::config::theme_files::ThemeFile;
use crate::tui::sanitize::sanitize;
use crate::tui::theme::{self, fg};

/// The themes there are to choose from, and the one in use.
#[derive(Clone, Debug, Default)]
pub struct Themes {
    pub files: Vec<ThemeFile>,
    /// The name of the theme in use.
    pub current: String,
    /// config's `[colors]`, laid over whichever theme is chosen.
    pub overrides: BTreeMap<String, ColorValue>,
}

impl Themes {
    /// `dark`, `light`, then the files' names.
    pub fn names(&self) -> Vec<String> {
        ["dark", "light"]
            .into_iter()
            .map(str::to_string)
            .chain(self.files.iter().map(|f| f.name.clone()))
            .collect()
    }

    /// Draw with the theme called `name` from now on; false when there is none.
    pub fn apply(&mut self, name: &str) -> bool {
        match theme::named(name, &self.files, &self.overrides) {
            Some(t) => {
                theme::set(t);
                self.current = name.to_string();
                true
            }
            None => false,
        }
    }

    /// Where the theme called `name` comes from, for the picker.
    fn origin(&self, name: &str) -> String {
        self.files
            .iter()
            .find(|f| f.name == name)
            .map_or_else(|| "built in".to_string(), |f| f.path.display().to_string())
    }
}

#[derive(Clone, Debug, Default)]
pub struct ThemePicker {
    pub selected: usize,
    /// The theme in use when the picker opened (Esc goes back to it).
    pub before: String,
}

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    /// The selection moved: show this theme.
    Preview(String),
    /// Esc: back to this one.
    Cancel(String),
    /// Enter: keep this one.
    Chosen(String),
}

impl ThemePicker {
    pub fn open(themes: &Themes) -> ThemePicker {
        let names = themes.names();
        ThemePicker {
            selected: names.iter().position(|n| *n == themes.current).unwrap_or(0),
            before: themes.current.clone(),
        }
    }

    pub fn key(&mut self, key: KeyEvent, themes: &Themes) -> Outcome {
        let names = themes.names();
        let last = names.len().saturating_sub(1);
        let moved = match key.code {
            KeyCode::Esc => return Outcome::Cancel(self.before.clone()),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Outcome::Cancel(self.before.clone());
            }
            KeyCode::Enter => {
                return names
                    .get(self.selected)
                    .cloned()
                    .map_or(Outcome::Cancel(self.before.clone()), Outcome::Chosen);
            }
            KeyCode::Up => self.selected.checked_sub(1),
            KeyCode::Down => (self.selected < last).then_some(self.selected + 1),
            KeyCode::Home => Some(0),
            KeyCode::End => Some(last),
            _ => None,
        };
        match moved {
            Some(i) if i != self.selected => {
                self.selected = i;
                names
                    .get(i)
                    .cloned()
                    .map_or(Outcome::Nothing, Outcome::Preview)
            }
            _ => Outcome::Nothing,
        }
    }

    /// The picker at the bottom of `area`; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect, themes: &Themes) -> Rect {
        let names = themes.names();
        let h = (names.len().min(10) as u16 + 2).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let mut lines = vec![Line::from(Span::styled(
            " Theme",
            Style::new().add_modifier(Modifier::BOLD),
        ))];
        let sel = self.selected.min(names.len().saturating_sub(1));
        let start = sel.saturating_sub(9);
        for (i, name) in names.iter().enumerate().skip(start).take(10) {
            let style = if i == sel {
                fg(|t| t.accent).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            lines.push(Line::from(vec![
                Span::styled(if i == sel { " › " } else { "   " }, style),
                Span::styled(sanitize(name), style),
                Span::styled(
                    format!(
                        "  {}{}",
                        sanitize(&themes.origin(name)),
                        if *name == self.before {
                            "  (was in use)"
                        } else {
                            ""
                        }
                    ),
                    fg(|t| t.dim),
                ),
            ]));
        }
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(" ↑↓ try · Enter keep · Esc back ");
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        popup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn moving_previews_enter_keeps_and_esc_goes_back() {
        let themes = Themes {
            files: vec![ThemeFile {
                name: "nord".into(),
                path: "/t/nord.json".into(),
                colors: BTreeMap::new(),
            }],
            current: "light".into(),
            overrides: BTreeMap::new(),
        };
        let mut p = ThemePicker::open(&themes);
        assert_eq!(p.selected, 1);
        assert_eq!(
            p.key(key(KeyCode::Down), &themes),
            Outcome::Preview("nord".into())
        );
        assert_eq!(p.key(key(KeyCode::Down), &themes), Outcome::Nothing);
        assert_eq!(
            p.key(key(KeyCode::Esc), &themes),
            Outcome::Cancel("light".into())
        );
        assert_eq!(
            p.key(key(KeyCode::Home), &themes),
            Outcome::Preview("dark".into())
        );
        assert_eq!(
            p.key(key(KeyCode::Enter), &themes),
            Outcome::Chosen("dark".into())
        );
    }
}

//! The popup stack's keys and what their outcomes do; the model picker's catalogue.

use super::*;

impl App {
    // ----- popups -----------------------------------------------------------------------

    /// A key for the top popup; what it answers is carried out here.
    pub(super) fn popup_key(&mut self, key: KeyEvent) {
        let page = (self.viewport.1 as usize).saturating_sub(4).max(1);
        let catalogue = Catalogue {
            models: &self.models,
            current: &self.model,
            catalog: self.catalog.as_deref(),
            without_key: &self.providers_without_key,
        };
        match self.popups.top_mut() {
            None => {}
            Some(Popup::Model(p)) => match p.key(key, &catalogue) {
                model::Outcome::Nothing => {}
                model::Outcome::Close => self.popups.close_model(),
                model::Outcome::Chosen(m, warning) => {
                    self.popups.close_model();
                    self.notice(format!("Model: {}/{}", m.provider, m.id));
                    if let Some(w) = warning {
                        self.notice(format!("warning: {w}"));
                    }
                    self.set_model(m);
                }
            },
            Some(Popup::Sessions(p)) => {
                let outcome = p.key(key);
                self.sessions_done(outcome);
            }
            Some(Popup::Tree(v)) => {
                let action = v.key(key, page);
                self.tree_done(action);
            }
            Some(Popup::Login(v)) => {
                let outcome = v.key(key);
                self.login_done(outcome);
            }
            Some(Popup::Theme(p)) => {
                let outcome = p.key(key, &self.themes);
                self.theme_done(outcome);
            }
            Some(Popup::Plan(p)) => {
                let outcome = p.key(key);
                let text = p.text.clone();
                self.plan_done(outcome, text);
            }
            Some(Popup::Rewind(v)) => {
                let outcome = v.key(key);
                let (target, leave) = (v.target.clone(), v.leave.clone());
                self.rewind_done(outcome, target, leave);
            }
        }
    }

    /// `/theme`: a name switches to it; no name opens the picker.
    pub(super) fn theme_command(&mut self, args: &str) {
        let name = args.trim();
        if name.is_empty() {
            let picker = crate::tui::popup::theme::ThemePicker::open(&self.themes);
            self.popups.push(Popup::Theme(picker));
            return;
        }
        self.theme_done(crate::tui::popup::theme::Outcome::Chosen(name.to_string()));
    }

    /// What the theme picker (or `/theme name`) decided.
    fn theme_done(&mut self, outcome: crate::tui::popup::theme::Outcome) {
        use crate::tui::popup::theme::Outcome;
        match outcome {
            Outcome::Nothing => {}
            Outcome::Preview(name) => {
                self.themes.apply(&name);
            }
            Outcome::Cancel(name) => {
                self.popups.close_theme();
                self.themes.apply(&name);
            }
            Outcome::Chosen(name) => {
                self.popups.close_theme();
                if self.themes.apply(&name) {
                    self.port.remember_theme(&name);
                    self.notice(format!("Theme: {name}"));
                } else {
                    self.transcript.push(Cell::Error(format!(
                        "No theme is called `{name}`; there are: {}",
                        self.themes.names().join(", ")
                    )));
                }
            }
        }
        self.dirty = true;
    }

    /// What the model picker chooses from.
    pub fn catalogue(&self) -> Catalogue<'_> {
        Catalogue {
            models: &self.models,
            current: &self.model,
            catalog: self.catalog.as_deref(),
            without_key: &self.providers_without_key,
        }
    }

    pub(super) fn open_picker(&mut self, query: &str) {
        let picker = ModelPicker::open(query, &self.catalogue());
        self.popups.push(Popup::Model(picker));
    }

    /// Models the open model picker lists (none when it is closed).
    pub fn picker_matches(&self) -> Vec<&ModelInfo> {
        match self.popups.model() {
            Some(p) => p.matches(&self.catalogue()),
            None => Vec::new(),
        }
    }
}

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
        }
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

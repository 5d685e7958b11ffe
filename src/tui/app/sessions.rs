//! The `/resume` picker's requests and what its answers do; a session the host opened.

use super::*;

impl App {
    // ----- session picker -----------------------------------------------------------------

    /// Open the `/resume` picker on this folder's sessions (once the host has listed them).
    pub fn open_sessions(&mut self) {
        self.dirty = true;
        if !self.saving {
            self.notice("Sessions are not saved in this run (--no-session)");
            return;
        }
        self.awaiting_sessions = true;
        self.port.list_sessions(ListScope::CurrentFolder);
    }

    pub(super) fn sessions_done(&mut self, outcome: crate::tui::popup::sessions::Outcome) {
        use crate::tui::popup::sessions::Outcome;
        match outcome {
            Outcome::Nothing => {}
            Outcome::Close => self.popups.close_sessions(),
            Outcome::Rename { path, name, scope } => self.port.rename_session(path, name, scope),
            Outcome::Delete { path, scope } => self.port.delete_session(path, scope),
            Outcome::List(scope) => self.port.list_sessions(scope),
            Outcome::Open(path) => {
                self.popups.close_sessions();
                if !self.refuse_when_busy("resume") {
                    self.port.open_session(path);
                }
            }
        }
    }

    /// Show a session the host opened: its conversation replaces the screen's.
    pub fn resume(&mut self, opened: Opened) {
        self.clear_conversation();
        self.model = opened.model;
        self.thinking = opened.thinking;
        self.place.session_name = opened.name.as_deref().map(sanitize);
        self.show_messages(&opened.messages);
        for w in opened.warnings {
            self.notice(sanitize(&w));
        }
        let what = match opened.from {
            crate::host::OpenedFrom::Resumed => "Resumed session",
            crate::host::OpenedFrom::Forked => "Forked into the new session",
            crate::host::OpenedFrom::Cloned => "Cloned into the new session",
        };
        self.notice(format!(
            "{what} {} with {}/{}",
            sanitize(&opened.session_id),
            sanitize(&self.model.provider),
            sanitize(&self.model.id)
        ));
        if let Some(draft) = opened.draft {
            self.composer.editor.set_text(&draft);
        }
    }
}

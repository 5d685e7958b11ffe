//! The `/resume` session picker: its state, filtering and row text. Listing and opening the
//! files is the host's work; the picker only shows what it listed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::host::view::{ListScope, SessionInfo};

/// The picker's state: the listing of one scope, the filter and the selected row.
#[derive(Clone, Debug)]
pub struct SessionPicker {
    pub scope: ListScope,
    pub sessions: Vec<SessionInfo>,
    pub query: String,
    pub selected: usize,
    /// Messages per session file, as the host counts them (after the listing).
    pub counts: HashMap<PathBuf, usize>,
    /// What the picker is asking: nothing, a new name, or whether to delete.
    pub mode: PickerMode,
}

/// A question the picker asks about the selected session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PickerMode {
    Browse,
    /// Ctrl+R: the new name being typed.
    Rename(String),
    /// Ctrl+D: waiting for `y` to delete.
    ConfirmDelete,
}

impl SessionPicker {
    pub fn new(scope: ListScope, sessions: Vec<SessionInfo>) -> Self {
        SessionPicker {
            scope,
            sessions,
            query: String::new(),
            selected: 0,
            counts: HashMap::new(),
            mode: PickerMode::Browse,
        }
    }

    pub fn selected_session(&self) -> Option<&SessionInfo> {
        self.matches().get(self.selected).copied()
    }

    /// Sessions whose name, first message or id contain every word of the query.
    pub fn matches(&self) -> Vec<&SessionInfo> {
        let q = self.query.to_lowercase();
        self.sessions
            .iter()
            .filter(|s| {
                let hay = format!(
                    "{} {} {} {}",
                    s.name.as_deref().unwrap_or(""),
                    s.first_message.as_deref().unwrap_or(""),
                    s.id,
                    s.cwd
                )
                .to_lowercase();
                q.split_whitespace().all(|w| hay.contains(w))
            })
            .collect()
    }

    pub fn selected_path(&self) -> Option<PathBuf> {
        self.matches().get(self.selected).map(|s| s.path.clone())
    }

    pub fn push(&mut self, c: char) {
        self.query.push(c);
        self.selected = 0;
    }

    pub fn pop(&mut self) {
        self.query.pop();
        self.selected = 0;
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        let n = self.matches().len();
        self.selected = (self.selected + 1).min(n.saturating_sub(1));
    }

    /// Replace the listing after Tab switched the scope.
    /// A listing arrived (Tab, or after a rename or delete): the selection stays on the same
    /// file when it is still there.
    pub fn set_scope(&mut self, scope: ListScope, sessions: Vec<SessionInfo>) {
        let keep = self.selected_path();
        let same_scope = self.scope == scope;
        self.scope = scope;
        self.sessions = sessions;
        self.mode = PickerMode::Browse;
        self.selected = keep
            .filter(|_| same_scope)
            .and_then(|k| self.matches().iter().position(|s| s.path == k))
            .unwrap_or(0);
    }

    pub fn other_scope(&self) -> ListScope {
        match self.scope {
            ListScope::CurrentFolder => ListScope::AllFolders,
            ListScope::AllFolders => ListScope::CurrentFolder,
        }
    }
}

/// "now", "5m", "3h", "2d", "7w".
pub fn age(modified: SystemTime, now: SystemTime) -> String {
    let s = now
        .duration_since(modified)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match s {
        0..60 => "now".into(),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        86_400..1_209_600 => format!("{}d", s / 86_400),
        _ => format!("{}w", s / 604_800),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn info(id: &str, name: Option<&str>, first: Option<&str>) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(format!("/s/{id}.jsonl")),
            id: id.into(),
            cwd: String::new(),
            name: name.map(Into::into),
            parent_session: None,
            created: String::new(),
            modified: SystemTime::UNIX_EPOCH,
            size: 10,
            first_message: first.map(Into::into),
        }
    }

    #[test]
    fn filters_by_name_first_message_and_id() {
        let mut p = SessionPicker::new(
            ListScope::CurrentFolder,
            vec![
                info("aaa111", Some("Refactor parser"), Some("hello")),
                info("bbb222", None, Some("fix the Failing test")),
                info("ccc333", None, None),
            ],
        );
        assert_eq!(p.matches().len(), 3);
        for c in "failing".chars() {
            p.push(c);
        }
        assert_eq!(p.matches()[0].id, "bbb222");
        p.query = "parser".into();
        assert_eq!(p.matches()[0].id, "aaa111");
        p.query = "ccc3".into();
        assert_eq!(p.selected_path(), Some(PathBuf::from("/s/ccc333.jsonl")));
        p.query = "nothing".into();
        assert_eq!(p.selected_path(), None);
    }

    #[test]
    fn selection_stays_in_range_and_resets_on_typing() {
        let mut p = SessionPicker::new(
            ListScope::CurrentFolder,
            vec![info("a", None, None), info("b", None, None)],
        );
        p.down();
        p.down();
        assert_eq!(p.selected, 1);
        p.up();
        p.up();
        assert_eq!(p.selected, 0);
        p.down();
        p.push('b');
        assert_eq!(p.selected, 0);
        assert_eq!(p.other_scope(), ListScope::AllFolders);
        p.set_scope(ListScope::AllFolders, Vec::new());
        assert_eq!(p.other_scope(), ListScope::CurrentFolder);
        p.down();
        assert_eq!(p.selected, 0);
    }

    #[test]
    fn ages() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(10_000_000);
        let ago = |s: u64| age(t - Duration::from_secs(s), t);
        assert_eq!(ago(5), "now");
        assert_eq!(ago(300), "5m");
        assert_eq!(ago(3 * 3600), "3h");
        assert_eq!(ago(2 * 86_400), "2d");
        assert_eq!(ago(30 * 86_400), "4w");
        assert_eq!(age(t + Duration::from_secs(9), t), "now");
    }
}

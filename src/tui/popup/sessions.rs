//! The `/resume` session picker: its state, filtering and row text. Listing and opening the
//! files is the host's work; the picker only shows what it listed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::SystemTime;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::host::view::{ListScope, SessionInfo, unique_prefixes};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::sanitize::sanitize;
use crate::tui::theme::fg;
use crate::tui::units::truncate;
use crate::tui::wrap::width as text_width;

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

impl SessionPicker {
    /// The picker at the bottom of `area`; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect) -> Rect {
        let p = self;
        let matches = p.matches();
        let h = (matches.len().min(10) as u16 + 3).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let scope = match p.scope {
            ListScope::CurrentFolder => "this folder",
            ListScope::AllFolders => "all folders",
        };
        let sel = p.selected.min(matches.len().saturating_sub(1));
        let header = match &p.mode {
            PickerMode::Browse => Line::from(vec![
                Span::styled(" Resume: ", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(sanitize(&p.query)),
                Span::styled("▏", fg(|t| t.accent)),
                Span::styled(format!("  ({scope})"), fg(|t| t.dim)),
            ]),
            PickerMode::Rename(name) => Line::from(vec![
                Span::styled(" New name: ", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
                Span::raw(sanitize(name)),
                Span::styled("▏", fg(|t| t.accent)),
                Span::styled("  (Enter save · Esc cancel)", fg(|t| t.dim)),
            ]),
            PickerMode::ConfirmDelete => Line::from(vec![
                Span::styled(" Delete ", fg(|t| t.error).add_modifier(Modifier::BOLD)),
                Span::raw(
                    matches
                        .get(sel)
                        .map(|s| truncate(&sanitize(s.title()), 40))
                        .unwrap_or_default(),
                ),
                Span::styled(
                    "? y deletes the file; any other key keeps it",
                    fg(|t| t.error),
                ),
            ]),
        };
        let mut lines = vec![header];
        let now = std::time::SystemTime::now();
        let start = sel.saturating_sub(9);
        let width = area.width as usize;
        // Right-hand columns: id (as much as tells the listed sessions apart), folder (up to
        // 24), message count, age.
        let ids: Vec<&str> = self.sessions.iter().map(|s| s.id.as_str()).collect();
        let short: HashMap<&str, String> = ids.iter().copied().zip(unique_prefixes(&ids)).collect();
        let id_w = short.values().map(|s| text_width(s)).max().unwrap_or(0);
        let folder_w = (width / 4).clamp(8, 24);
        let room = width.saturating_sub(folder_w + id_w + 19).max(8);
        for (i, s) in matches.iter().enumerate().skip(start).take(10) {
            let style = if i == sel {
                fg(|t| t.accent).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let mut title = vec![];
            let first = s.first_message.as_deref().map(sanitize).unwrap_or_default();
            match s.name.as_deref().map(sanitize) {
                Some(name) => {
                    let name = truncate(&name, room);
                    let rest = room.saturating_sub(text_width(&name));
                    title.push(Span::styled(name, style));
                    if rest > 4 && !first.is_empty() {
                        title.push(Span::styled(
                            truncate(&format!(" · {first}"), rest),
                            fg(|t| t.dim),
                        ));
                    }
                }
                None => title.push(Span::styled(truncate(&sanitize(s.title()), room), style)),
            }
            let used: usize = title.iter().map(|s| text_width(&s.content)).sum();
            let count = match p.counts.get(&s.path) {
                Some(n) => format!("{n} msg"),
                None => "…".into(),
            };
            let mut spans = vec![Span::styled(if i == sel { " › " } else { "   " }, style)];
            spans.extend(title);
            spans.push(Span::styled(
                format!(
                    "{:pad$} {:<id_w$} {:>folder_w$} {:>7} {:>4}",
                    "",
                    sanitize(short.get(s.id.as_str()).map_or("", String::as_str)),
                    truncate(&short_folder(&s.cwd), folder_w),
                    count,
                    age(s.modified, now),
                    pad = room.saturating_sub(used),
                ),
                fg(|t| t.dim),
            ));
            lines.push(Line::from(spans));
        }
        if matches.is_empty() {
            lines.push(Line::styled("   no session matches", fg(|t| t.dim)));
        }
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(" Enter open · Tab scope · Ctrl+R rename · Ctrl+D delete · Esc close ");
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        popup
    }
}

/// A session's folder as shown in the picker: `~` for the home folder, else its last two
/// parts.
fn short_folder(cwd: &str) -> String {
    let cwd = sanitize(cwd);
    let short = crate::paths::short_home(std::path::Path::new(&cwd));
    if short != cwd {
        return short;
    }
    let parts: Vec<&str> = cwd.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [last, parent, _] => format!("…/{parent}/{last}"),
        _ => cwd,
    }
}

/// What a key in the picker asks the app to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    Close,
    Open(PathBuf),
    Rename {
        path: PathBuf,
        name: String,
        scope: ListScope,
    },
    Delete {
        path: PathBuf,
        scope: ListScope,
    },
    /// Tab: list the other scope.
    List(ListScope),
}

impl SessionPicker {
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match &mut self.mode {
            PickerMode::Rename(name) => {
                match key.code {
                    KeyCode::Esc => self.mode = PickerMode::Browse,
                    KeyCode::Backspace => {
                        name.pop();
                    }
                    KeyCode::Enter => {
                        let name = name.trim().to_string();
                        let chosen = self.selected_path();
                        self.mode = PickerMode::Browse;
                        if let Some(path) = chosen
                            && !name.is_empty()
                        {
                            return Outcome::Rename {
                                path,
                                name,
                                scope: self.scope,
                            };
                        }
                    }
                    KeyCode::Char(c) if !ctrl => name.push(c),
                    _ => {}
                }
                return Outcome::Nothing;
            }
            PickerMode::ConfirmDelete => {
                let chosen = self.selected_path();
                self.mode = PickerMode::Browse;
                if matches!(key.code, KeyCode::Char('y' | 'Y'))
                    && let Some(path) = chosen
                {
                    return Outcome::Delete {
                        path,
                        scope: self.scope,
                    };
                }
                return Outcome::Nothing;
            }
            PickerMode::Browse => {}
        }
        match key.code {
            KeyCode::Char('r') if ctrl => {
                if let Some(s) = self.selected_session() {
                    self.mode = PickerMode::Rename(s.name.clone().unwrap_or_default());
                }
            }
            KeyCode::Char('d') if ctrl && self.selected_session().is_some() => {
                self.mode = PickerMode::ConfirmDelete;
            }
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Char('c') if ctrl => return Outcome::Close,
            KeyCode::Up => self.up(),
            KeyCode::Down => self.down(),
            _ if crate::tui::filter::edit(&mut self.query, &key) => self.selected = 0,
            KeyCode::Backspace => self.pop(),
            KeyCode::Char(c) if !ctrl => self.push(c),
            KeyCode::Tab | KeyCode::BackTab => return Outcome::List(self.other_scope()),
            KeyCode::Enter => {
                return match self.selected_path() {
                    Some(path) => Outcome::Open(path),
                    None => Outcome::Close,
                };
            }
            _ => {}
        }
        Outcome::Nothing
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

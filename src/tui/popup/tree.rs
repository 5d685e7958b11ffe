//! The `/tree` view (and the `/fork` prompt chooser): the session's entries as a tree to move
//! in, filter and label. The host reads the tree from the session file; this module keeps the
//! view's state and turns keys into what the app asks of the host.

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::host::SessionTree;
use crate::host::view::{TreeFilter, TreeKind, TreeRow, filter_rows};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::sanitize::sanitize;
use crate::tui::theme::fg;
use crate::tui::units::truncate_line;

/// What choosing an entry does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreePurpose {
    /// Continue from the entry, in this session (`/tree`, Esc Esc).
    Navigate,
    /// Start a new session before one of the prompts (`/fork`).
    Fork,
    /// Go back before one of the prompts, files included (`/rewind`).
    Rewind,
}

/// What to do with the branch left behind by a move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaveWith {
    NoSummary,
    Summary,
    /// A summary focused on this text.
    FocusedSummary(String),
}

/// The question asked before a move leaves the current branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaving {
    pub target: String,
    /// The focus being typed (after `f`).
    pub focus: Option<String>,
}

/// What a key asks of the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeAction {
    None,
    Close,
    /// Fork at this entry.
    Choose(String),
    /// Move to this entry, summarising the branch left behind or not.
    Move {
        target: String,
        leave: LeaveWith,
    },
    /// Set or clear (`None`) this entry's label.
    Label {
        target: String,
        label: Option<String>,
    },
}

#[derive(Clone, Debug)]
pub struct TreeView {
    pub purpose: TreePurpose,
    pub rows: Vec<TreeRow>,
    pub leaf: Option<String>,
    pub filter: TreeFilter,
    pub query: String,
    /// Indices into `rows` that pass the filter and the query.
    pub visible: Vec<usize>,
    /// Index into `visible`.
    pub selected: usize,
    /// The guide drawn before each visible row: its own, or the branch connector of a hidden
    /// entry it continues (so hiding, say, a model change does not lose the `├─`).
    pub prefixes: Vec<String>,
    /// Row index by entry id.
    index: HashMap<String, usize>,
    /// The label being typed for the selected entry.
    pub label_edit: Option<String>,
    /// Asking what to do with the branch a move leaves.
    pub leaving: Option<Leaving>,
}

impl TreeView {
    pub fn new(purpose: TreePurpose, tree: SessionTree) -> Self {
        let filter = match purpose {
            TreePurpose::Navigate => TreeFilter::Default,
            TreePurpose::Fork | TreePurpose::Rewind => TreeFilter::UserOnly,
        };
        let mut view = TreeView {
            purpose,
            rows: tree.rows,
            leaf: tree.leaf,
            filter,
            query: String::new(),
            visible: Vec::new(),
            selected: 0,
            prefixes: Vec::new(),
            index: HashMap::new(),
            label_edit: None,
            leaving: None,
        };
        view.index_rows();
        view.refilter(None);
        view
    }

    /// A fresh tree from the host (after a label change): the selection stays on its entry.
    pub fn refresh(&mut self, tree: SessionTree) {
        let keep = self.selected_row().map(|r| r.id.clone());
        self.rows = tree.rows;
        self.leaf = tree.leaf;
        self.index_rows();
        self.refilter(keep.as_deref());
    }

    pub fn selected_row(&self) -> Option<&TreeRow> {
        self.visible.get(self.selected).map(|&i| &self.rows[i])
    }

    /// Recompute the visible rows; select `keep` if visible, else the row nearest the current
    /// position (the leaf, or the last entry of its branch that is visible).
    fn refilter(&mut self, keep: Option<&str>) {
        self.visible = filter_rows(&self.rows, self.filter, &self.query);
        if matches!(self.purpose, TreePurpose::Fork | TreePurpose::Rewind) {
            self.visible
                .retain(|&i| self.rows[i].kind == TreeKind::User);
        }
        self.prefixes = self.shown_prefixes();
        let by_id = |id: &str| self.visible.iter().position(|&i| self.rows[i].id == id);
        self.selected = keep
            .and_then(by_id)
            .or_else(|| self.leaf.as_deref().and_then(by_id))
            .or_else(|| self.visible.iter().rposition(|&i| self.rows[i].on_path))
            .unwrap_or(self.visible.len().saturating_sub(1));
    }

    fn index_rows(&mut self) {
        self.index = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
    }

    fn shown_prefixes(&self) -> Vec<String> {
        let mut shown = vec![false; self.rows.len()];
        for &i in &self.visible {
            shown[i] = true;
        }
        let is_connector = |p: &str| p.ends_with("├─ ") || p.ends_with("└─ ");
        self.visible
            .iter()
            .map(|&i| {
                let row = &self.rows[i];
                let mut cur = i;
                // Walk up the hidden entries of the same chain to the one that branched.
                while !is_connector(&self.rows[cur].prefix)
                    && let Some(&parent) = self.rows[cur]
                        .parent_id
                        .as_deref()
                        .and_then(|id| self.index.get(id))
                    && !shown[parent]
                    && self.rows[parent].depth == row.depth
                {
                    cur = parent;
                }
                if cur != i && is_connector(&self.rows[cur].prefix) {
                    self.rows[cur].prefix.clone()
                } else {
                    row.prefix.clone()
                }
            })
            .collect()
    }

    fn move_by(&mut self, delta: isize) {
        let last = self.visible.len().saturating_sub(1) as isize;
        self.selected = (self.selected as isize + delta).clamp(0, last.max(0)) as usize;
    }

    /// Handle a key; `page` is how many rows a page holds.
    #[allow(
        clippy::too_many_lines,
        reason = "one key match for the tree popup: each arm is one key"
    )]
    pub fn key(&mut self, key: KeyEvent, page: usize) -> TreeAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(leaving) = self.leaving.as_mut() {
            return match (&mut leaving.focus, key.code) {
                (Some(_), KeyCode::Esc) => {
                    leaving.focus = None;
                    TreeAction::None
                }
                (Some(f), KeyCode::Backspace) => {
                    f.pop();
                    TreeAction::None
                }
                (Some(f), KeyCode::Enter) => {
                    let leave = if f.trim().is_empty() {
                        LeaveWith::Summary
                    } else {
                        LeaveWith::FocusedSummary(f.trim().to_string())
                    };
                    let target = leaving.target.clone();
                    self.leaving = None;
                    TreeAction::Move { target, leave }
                }
                (Some(f), KeyCode::Char(c)) if !ctrl => {
                    f.push(c);
                    TreeAction::None
                }
                (Some(_), _) => TreeAction::None,
                (None, KeyCode::Esc) => {
                    self.leaving = None;
                    TreeAction::None
                }
                (None, KeyCode::Char('f')) => {
                    leaving.focus = Some(String::new());
                    TreeAction::None
                }
                (None, KeyCode::Enter | KeyCode::Char('n' | 's')) => {
                    let leave = if key.code == KeyCode::Char('s') {
                        LeaveWith::Summary
                    } else {
                        LeaveWith::NoSummary
                    };
                    let target = leaving.target.clone();
                    self.leaving = None;
                    TreeAction::Move { target, leave }
                }
                (None, _) => TreeAction::None,
            };
        }
        if let Some(edit) = self.label_edit.as_mut() {
            match key.code {
                KeyCode::Esc => self.label_edit = None,
                KeyCode::Char('c') if ctrl => self.label_edit = None,
                KeyCode::Backspace => {
                    edit.pop();
                }
                KeyCode::Enter => {
                    let label = edit.trim().to_string();
                    self.label_edit = None;
                    if let Some(row) = self.selected_row() {
                        return TreeAction::Label {
                            target: row.id.clone(),
                            label: (!label.is_empty()).then_some(label),
                        };
                    }
                }
                KeyCode::Char(c) if !ctrl => edit.push(c),
                _ => {}
            }
            return TreeAction::None;
        }
        let page = page.max(1) as isize;
        match key.code {
            KeyCode::Esc if !self.query.is_empty() => {
                self.query.clear();
                self.refilter_keeping();
            }
            KeyCode::Esc => return TreeAction::Close,
            KeyCode::Char('c') if ctrl => return TreeAction::Close,
            KeyCode::Up => self.move_by(-1),
            KeyCode::Down => self.move_by(1),
            KeyCode::PageUp | KeyCode::Left => self.move_by(-page),
            KeyCode::PageDown | KeyCode::Right => self.move_by(page),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.move_by(isize::MAX / 2),
            KeyCode::Enter => {
                if let Some(row) = self.selected_row() {
                    let target = row.id.clone();
                    match self.purpose {
                        TreePurpose::Fork => return TreeAction::Choose(target),
                        TreePurpose::Rewind => {
                            return TreeAction::Move {
                                target,
                                leave: LeaveWith::NoSummary,
                            };
                        }
                        // Staying where the conversation is leaves nothing behind.
                        TreePurpose::Navigate if row.is_leaf => {
                            return TreeAction::Move {
                                target,
                                leave: LeaveWith::NoSummary,
                            };
                        }
                        TreePurpose::Navigate => {
                            self.leaving = Some(Leaving {
                                target,
                                focus: None,
                            });
                        }
                    }
                }
            }
            KeyCode::Char('o') if ctrl && self.purpose == TreePurpose::Navigate => {
                self.filter = self.filter.next();
                self.refilter_keeping();
            }
            KeyCode::Char('L') if self.purpose == TreePurpose::Navigate => {
                if let Some(row) = self.selected_row() {
                    self.label_edit = Some(row.label.clone().unwrap_or_default());
                }
            }
            _ if crate::tui::filter::edit(&mut self.query, &key) => self.refilter_keeping(),
            KeyCode::Backspace => {
                self.query.pop();
                self.refilter_keeping();
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.refilter_keeping();
            }
            _ => {}
        }
        TreeAction::None
    }

    fn refilter_keeping(&mut self) {
        let keep = self.selected_row().map(|r| r.id.clone());
        self.refilter(keep.as_deref());
    }

    /// The visible row that stands for the current position: the leaf itself, or (when the
    /// filter hides it) the last visible entry of the current branch.
    pub fn here(&self) -> Option<usize> {
        self.visible
            .iter()
            .position(|&i| self.rows[i].is_leaf)
            .or_else(|| self.visible.iter().rposition(|&i| self.rows[i].on_path))
    }

    /// The filter's name for the header.
    pub fn filter_name(&self) -> &'static str {
        match self.filter {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no tools",
            TreeFilter::UserOnly => "prompts only",
            TreeFilter::LabeledOnly => "labelled only",
            TreeFilter::All => "everything",
        }
    }
}

impl TreeView {
    /// The `/tree` view (or the `/fork` chooser) over `area`.
    pub fn draw(&self, buf: &mut Buffer, area: Rect) -> Rect {
        let v = self;
        let width = area.width as usize;
        let (title, hints) = match v.purpose {
            TreePurpose::Navigate => (
                " Tree: ",
                " ↑↓ move · Enter continue from here · Shift+L label · Ctrl+O filter · Esc close ",
            ),
            TreePurpose::Fork => (
                " Fork before: ",
                " ↑↓ choose a prompt · Enter fork into a new session · Esc cancel ",
            ),
            TreePurpose::Rewind => (
                " Rewind to before: ",
                " ↑↓ choose a prompt · Enter see what changes · Esc cancel ",
            ),
        };
        let mut header = vec![
            Span::styled(title, Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(sanitize(&v.query)),
            Span::styled("▏", fg(|t| t.accent)),
        ];
        if v.purpose == TreePurpose::Navigate {
            header.push(Span::styled(
                format!("  (filter: {}; {} entries)", v.filter_name(), v.rows.len()),
                fg(|t| t.dim),
            ));
        }
        let mut lines = vec![Line::from(header)];
        if let Some(edit) = &v.label_edit {
            lines.push(Line::from(vec![
                Span::styled(" Label: ", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
                Span::raw(sanitize(edit)),
                Span::styled("▏", fg(|t| t.accent)),
                Span::styled("  (Enter set · empty clears · Esc cancel)", fg(|t| t.dim)),
            ]));
        }
        if let Some(leaving) = &v.leaving {
            lines.push(match &leaving.focus {
                None => Line::from(vec![
                    Span::styled(
                        " Leave the current branch: ",
                        fg(|t| t.accent).add_modifier(Modifier::BOLD),
                    ),
                    Span::raw("Enter/n no summary · s summarize it · f summarize with a focus"),
                    Span::styled(" · Esc back", fg(|t| t.dim)),
                ]),
                Some(focus) => Line::from(vec![
                    Span::styled(" Focus: ", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
                    Span::raw(sanitize(focus)),
                    Span::styled("▏", fg(|t| t.accent)),
                    Span::styled("  (Enter summarize · Esc back)", fg(|t| t.dim)),
                ]),
            });
        }
        let room = (area.height as usize)
            .saturating_sub(lines.len() + 1)
            .max(1);
        let sel = v.selected.min(v.visible.len().saturating_sub(1));
        let here = v.here();
        // Keep the selection in view, a little above the bottom when possible.
        let start = sel
            .saturating_sub(room.saturating_sub(3).max(1))
            .min(v.visible.len().saturating_sub(room));
        for (n, &i) in v.visible.iter().enumerate().skip(start).take(room) {
            let row = &v.rows[i];
            let chosen = n == sel;
            let (tag, tag_style) = tree_tag(row.kind);
            let base = if chosen {
                fg(|t| t.accent).add_modifier(Modifier::BOLD)
            } else if row.on_path {
                Style::default()
            } else {
                fg(|t| t.dim)
            };
            let mut spans = vec![
                Span::styled(if chosen { " › " } else { "   " }, base),
                Span::styled(
                    v.prefixes.get(n).cloned().unwrap_or_default(),
                    fg(|t| t.dim),
                ),
                Span::styled(format!("{tag}: "), if chosen { base } else { tag_style }),
            ];
            if let Some(label) = &row.label {
                spans.push(Span::styled(
                    format!("[{}] ", sanitize(label)),
                    fg(|t| t.warning).add_modifier(Modifier::BOLD),
                ));
            }
            spans.push(Span::styled(sanitize(&row.text), base));
            if here == Some(n) {
                spans.push(Span::styled("  ← here", fg(|t| t.accent)));
            }
            lines.push(truncate_line(Line::from(spans), width));
        }
        if v.visible.is_empty() {
            lines.push(Line::styled(
                if v.rows.is_empty() {
                    "   nothing in this session yet"
                } else {
                    "   no entry matches"
                },
                fg(|t| t.dim),
            ));
        }
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(hints);
        Clear.render(area, buf);
        Paragraph::new(lines).block(block).render(area, buf);
        area
    }
}

/// The short tag before a tree row's text.
fn tree_tag(kind: TreeKind) -> (&'static str, Style) {
    use TreeKind as K;
    match kind {
        K::User => ("you", fg(|t| t.accent).add_modifier(Modifier::BOLD)),
        K::Assistant => ("pi", Style::default().add_modifier(Modifier::BOLD)),
        K::ToolResult => ("tool", fg(|t| t.dim)),
        K::Compaction => ("compacted", fg(|t| t.warning)),
        K::BranchSummary => ("branch summary", fg(|t| t.warning)),
        K::ModelChange => ("model", fg(|t| t.dim)),
        K::ThinkingChange => ("thinking", fg(|t| t.dim)),
        K::Label => ("label", fg(|t| t.dim)),
        K::SessionInfo => ("name", fg(|t| t.dim)),
        K::Custom | K::CustomMessage | K::Other => ("other", fg(|t| t.dim)),
    }
}

//! The `@` file picker: the text typed after an `@` filters the project's files.
//!
//! Matching is nucleo-matcher's fuzzy scoring with its path bonuses (a match at the start of
//! a file or folder name counts most), smart case (a capital letter makes it case-sensitive)
//! and ties broken by the shorter, then the alphabetically first path. Only the best [`LIMIT`]
//! are kept and [`ROWS`] shown. Each keystroke that only adds to the filter scores just the
//! files the previous filter matched (and those listed since), so typing stays fast on
//! 100,000 files. With nothing typed the files nearest the top of the folder come first.
//!
//! The picker itself only holds where its `@` is, the filter, the results and the selection;
//! the app moves keys to it and edits the editor text (see `App::file_picker_key`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use crate::tui::files::FileIndex;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::sanitize::sanitize;
use crate::tui::theme;
use crate::tui::theme::fg;
use crate::tui::units::truncate_line;

/// Results kept for one filter.
pub const LIMIT: usize = 50;
/// Results shown at once.
pub const ROWS: usize = 10;

/// One file that matches, with the positions (in characters) of the matched letters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub path: String,
    pub matched: Vec<u32>,
}

/// The best matches and how many files match in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub total: usize,
}

/// What the last search matched, to narrow the next one.
struct Narrowing {
    list: usize,
    query: String,
    /// Paths before this index were scored.
    scanned: usize,
    matched: Vec<u32>,
}

/// Scores paths against a filter; keeps its buffers and the last result between searches.
pub struct FileMatcher {
    matcher: Matcher,
    buf: Vec<char>,
    last: Option<Narrowing>,
}

impl Default for FileMatcher {
    fn default() -> Self {
        FileMatcher {
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            buf: Vec::new(),
            last: None,
        }
    }
}

impl FileMatcher {
    /// The best `limit` of `paths` for `query`, best first. `list` identifies the list (a
    /// list may grow between calls, never change what it holds).
    pub fn search(&mut self, list: usize, paths: &[String], query: &str, limit: usize) -> Found {
        if query.is_empty() {
            return nearest(paths, limit);
        }
        let atom = Atom::new(
            query,
            CaseMatching::Smart,
            Normalization::Smart,
            AtomKind::Fuzzy,
            false,
        );
        // A longer filter only ever matches a subset of what a shorter one matched.
        let previous = self
            .last
            .take()
            .filter(|n| n.list == list && n.scanned <= paths.len() && query.starts_with(&n.query));
        let (earlier, from) = match previous {
            Some(n) => (n.matched, n.scanned),
            None => ((0..0).collect(), 0),
        };
        let candidates = earlier
            .into_iter()
            .chain((from..paths.len()).map(|i| i as u32));
        let mut matched = Vec::new();
        let mut best: BinaryHeap<(Reverse<u16>, usize, &str, u32)> = BinaryHeap::new();
        for i in candidates {
            let Some(path) = paths.get(i as usize) else {
                continue;
            };
            let Some(score) = atom.score(Utf32Str::new(path, &mut self.buf), &mut self.matcher)
            else {
                continue;
            };
            matched.push(i);
            let rank = (Reverse(score), path.len(), path.as_str(), i);
            if best.len() < limit {
                best.push(rank);
            } else if best.peek().is_some_and(|worst| rank < *worst) {
                best.pop();
                best.push(rank);
            }
        }
        let hits = best
            .into_sorted_vec()
            .into_iter()
            .map(|(_, _, path, _)| {
                let mut positions = Vec::new();
                atom.indices(
                    Utf32Str::new(path, &mut self.buf),
                    &mut self.matcher,
                    &mut positions,
                );
                positions.sort_unstable();
                positions.dedup();
                Hit {
                    path: path.to_string(),
                    matched: positions,
                }
            })
            .collect();
        let total = matched.len();
        self.last = Some(Narrowing {
            list,
            query: query.to_string(),
            scanned: paths.len(),
            matched,
        });
        Found { hits, total }
    }
}

/// With no filter: the files nearest the top of the folder, then the shorter, then by name.
fn nearest(paths: &[String], limit: usize) -> Found {
    let mut best: BinaryHeap<(usize, usize, &str)> = BinaryHeap::new();
    for p in paths {
        let rank = (p.matches('/').count(), p.len(), p.as_str());
        if best.len() < limit {
            best.push(rank);
        } else if best.peek().is_some_and(|worst| rank < *worst) {
            best.pop();
            best.push(rank);
        }
    }
    Found {
        hits: best
            .into_sorted_vec()
            .into_iter()
            .map(|(_, _, p)| Hit {
                path: p.to_string(),
                matched: Vec::new(),
            })
            .collect(),
        total: paths.len(),
    }
}

/// What replaces `@filter` when `path` is chosen: `@path ` (quoted when it holds white space).
pub fn insertion(path: &str) -> String {
    if path.contains(char::is_whitespace) {
        format!("@\"{path}\" ")
    } else {
        format!("@{path} ")
    }
}

/// The open picker.
pub struct FilePicker {
    /// Where its `@` is in the editor: row, and column in characters.
    pub row: usize,
    pub col: usize,
    /// The text typed after the `@`.
    pub query: String,
    pub selected: usize,
    pub found: Found,
    /// The list is still being made (shown as such).
    pub listing: bool,
    matcher: FileMatcher,
    /// What `found` was computed from: the filter and the list's version.
    seen: Option<(String, (usize, usize, bool))>,
}

impl FilePicker {
    pub fn new(row: usize, col: usize) -> Self {
        FilePicker {
            row,
            col,
            query: String::new(),
            selected: 0,
            found: Found::default(),
            listing: true,
            matcher: FileMatcher::default(),
            seen: None,
        }
    }

    /// Set the filter (the selection goes back to the best match when it changes).
    pub fn set_query(&mut self, query: String) {
        if query != self.query {
            self.query = query;
            self.selected = 0;
        }
    }

    /// Match again if the filter or the list changed since the last time.
    pub fn refresh(&mut self, index: &mut FileIndex) {
        let version = index.version();
        let key = (self.query.clone(), version);
        if self.seen.as_ref() == Some(&key) {
            return;
        }
        let (matcher, query) = (&mut self.matcher, &self.query);
        self.found = index.with(|l| matcher.search(l.id, &l.paths, query, LIMIT));
        self.listing = !version.2;
        self.selected = self.selected.min(self.found.hits.len().saturating_sub(1));
        self.seen = Some(key);
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.found.hits.len().saturating_sub(1));
    }

    /// The path selected, if anything matches.
    pub fn chosen(&self) -> Option<&str> {
        self.found.hits.get(self.selected).map(|h| h.path.as_str())
    }
}

/// The `@` file picker, at the bottom of the transcript, just above the editor.
impl FilePicker {
    /// The picker at the bottom of `area`, just above the editor; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect) -> Rect {
        let p = self;
        let hits = &p.found.hits;
        let h = (hits.len().clamp(1, ROWS) as u16 + 2).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let count = match (p.found.total, p.query.is_empty()) {
            (n, true) => format!("{n} files"),
            (1, false) => "1 match".to_string(),
            (n, false) => format!("{n} matches"),
        };
        let mut header = vec![
            Span::styled(" @", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(sanitize(&p.query)),
            Span::styled("▏", fg(|t| t.accent)),
            Span::styled(format!("  {count}"), fg(|t| t.dim)),
        ];
        if p.listing {
            header.push(Span::styled(" · listing…", fg(|t| t.dim)));
        }
        let mut lines = vec![Line::from(header)];
        let sel = p.selected.min(hits.len().saturating_sub(1));
        let start = sel.saturating_sub(ROWS - 1);
        let width = area.width as usize;
        for (i, hit) in hits.iter().enumerate().skip(start).take(ROWS) {
            let chosen = i == sel;
            let base = if chosen {
                fg(|t| t.accent).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let strong = base
                .add_modifier(Modifier::BOLD)
                .fg(theme::current().accent);
            let mut spans = vec![Span::styled(if chosen { " › " } else { "   " }, base)];
            // Matched letters stand out; runs of the same style make one span.
            let mut run = String::new();
            let mut run_matched = false;
            for (n, c) in sanitize(&hit.path).chars().enumerate() {
                let matched = hit.matched.binary_search(&(n as u32)).is_ok();
                if matched != run_matched && !run.is_empty() {
                    let style = if run_matched { strong } else { base };
                    spans.push(Span::styled(std::mem::take(&mut run), style));
                }
                run_matched = matched;
                run.push(c);
            }
            if !run.is_empty() {
                spans.push(Span::styled(run, if run_matched { strong } else { base }));
            }
            lines.push(truncate_line(Line::from(spans), width));
        }
        if hits.is_empty() {
            let empty = if p.listing {
                "   listing the folder's files…"
            } else {
                "   no file matches"
            };
            lines.push(Line::styled(empty, fg(|t| t.dim)));
        }
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(" ↑↓ choose · Enter/Tab insert · Esc close ");
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        popup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    fn shown(found: &Found) -> Vec<&str> {
        found.hits.iter().map(|h| h.path.as_str()).collect()
    }

    #[test]
    fn fuzzy_filter_ranks_name_matches_first() {
        let list = paths(&[
            "docs/maintenance.md",
            "src/main.rs",
            "src/tui/main_view.rs",
            "README.md",
            "benches/domain.rs",
        ]);
        let mut m = FileMatcher::default();
        let found = m.search(1, &list, "main", 10);
        assert_eq!(found.total, 4);
        assert_eq!(shown(&found)[0], "src/main.rs");
        assert!(!shown(&found).contains(&"README.md"));
        assert_eq!(found.hits[0].matched, [4, 5, 6, 7]);
        let found = m.search(1, &list, "smr", 10);
        assert_eq!(shown(&found)[..2], ["src/main.rs", "src/tui/main_view.rs"]);
        // Smart case: a capital letter must match as typed.
        assert_eq!(shown(&m.search(1, &list, "READ", 10)), ["README.md"]);
        assert!(m.search(1, &list, "MAIN", 10).hits.is_empty());
    }

    #[test]
    fn no_filter_lists_the_top_of_the_folder_first_and_the_limit_holds() {
        let list = paths(&["a/b/c.rs", "z.rs", "a/x.rs", "Cargo.toml"]);
        let found = FileMatcher::default().search(1, &list, "", 3);
        assert_eq!(shown(&found), ["z.rs", "Cargo.toml", "a/x.rs"]);
        assert_eq!(found.total, 4);
    }

    #[test]
    fn narrowing_gives_what_a_full_search_gives_as_the_list_grows() {
        let mut list: Vec<String> = (0..2000)
            .map(|i| format!("dir{}/file{i}.rs", i % 7))
            .collect();
        let mut narrowing = FileMatcher::default();
        narrowing.search(9, &list, "f", LIMIT);
        narrowing.search(9, &list, "fi1", LIMIT);
        list.push("dir9/fi1x.rs".into());
        let narrowed = narrowing.search(9, &list, "fi1x", LIMIT);
        let fresh = FileMatcher::default().search(9, &list, "fi1x", LIMIT);
        assert_eq!(narrowed, fresh);
        assert_eq!(narrowed.hits[0].path, "dir9/fi1x.rs");
        // A filter that is not an extension of the last one starts over.
        let other = narrowing.search(9, &list, "dir3", LIMIT);
        assert_eq!(
            other,
            FileMatcher::default().search(9, &list, "dir3", LIMIT)
        );
    }

    #[test]
    fn the_picker_follows_its_filter_and_selection() {
        let mut index = FileIndex::fixed(paths(&["src/main.rs", "src/lib.rs", "notes.txt"]));
        let mut p = FilePicker::new(0, 4);
        p.refresh(&mut index);
        assert!(!p.listing);
        assert_eq!(p.found.total, 3);
        p.set_query("src".into());
        p.refresh(&mut index);
        assert_eq!(p.found.total, 2);
        p.down();
        p.down();
        assert_eq!(p.selected, 1);
        assert_eq!(p.chosen(), Some("src/main.rs"));
        p.up();
        assert_eq!(p.chosen(), Some("src/lib.rs"));
        p.set_query("zzz".into());
        p.refresh(&mut index);
        assert_eq!(p.chosen(), None);
        assert_eq!(insertion("src/lib.rs"), "@src/lib.rs ");
        assert_eq!(insertion("my notes.txt"), "@\"my notes.txt\" ");
    }
}

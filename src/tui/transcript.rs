//! The transcript: an append-only list of cells, their wrapped-line caches, and scrolling.
//!
//! Finished cells keep their wrapped lines for the width and view they were last drawn at, so
//! a frame re-wraps nothing that did not change; live cells (see [`Cell::is_live`]) render
//! each frame (a streaming answer's finished blocks come back as shared [`Rows`] chunks, not
//! copies). Rendering a frame walks from the bottom (following output) or from an absolute
//! top row (scrolled up), touching only the cells on screen plus cached heights.
//!
//! Scrolling is [`Scroll::Follow`] (stick to the newest output) until the person scrolls up;
//! then [`Scroll::Anchored`] keeps an absolute top row, which new output appended below does
//! not move. Scrolling back to the bottom (PgDn/End) follows again.

use ratatui::text::Line;

use super::cells::{Cell, View};
use super::rows::Rows;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scroll {
    Follow,
    Anchored { top: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CacheKey {
    width: usize,
    view_gen: u64,
}

struct Entry {
    cell: Cell,
    cache: Option<(CacheKey, Rows)>,
}

pub struct Transcript {
    entries: Vec<Entry>,
    /// Bumped when the view changes (Ctrl+T, Ctrl+O): every cache becomes stale.
    view_gen: u64,
    pub scroll: Scroll,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            entries: Vec::new(),
            view_gen: 0,
            scroll: Scroll::Follow,
        }
    }
}

impl Transcript {
    pub fn push(&mut self, cell: Cell) -> usize {
        self.entries.push(Entry { cell, cache: None });
        self.entries.len() - 1
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.scroll = Scroll::Follow;
    }

    pub fn cells(&self) -> impl DoubleEndedIterator<Item = &Cell> {
        self.entries.iter().map(|e| &e.cell)
    }

    pub fn last(&self) -> Option<&Cell> {
        self.entries.last().map(|e| &e.cell)
    }

    /// Mutable access to a cell; its cache is dropped.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut Cell> {
        self.entries.get_mut(index).map(|e| {
            e.cache = None;
            &mut e.cell
        })
    }

    pub fn invalidate_view(&mut self) {
        self.view_gen += 1;
    }

    fn lines_of(&mut self, i: usize, width: usize, view: &View) -> Option<&Rows> {
        let key = CacheKey {
            width,
            view_gen: self.view_gen,
        };
        let e = &mut self.entries[i];
        let fresh = matches!(&e.cache, Some((k, _)) if *k == key) && !e.cell.is_live();
        if !fresh {
            e.cache = Some((key, e.cell.rows(width, view)));
        }
        e.cache.as_ref().map(|(_, rows)| rows)
    }

    /// Total rendered height at `width` (renders uncached cells).
    pub fn height(&mut self, width: usize, view: &View) -> usize {
        (0..self.entries.len())
            .map(|i| self.lines_of(i, width, view).map_or(0, Rows::len))
            .sum()
    }

    /// The rows visible in a viewport of `height` rows.
    pub fn visible(&mut self, width: usize, height: usize, view: &View) -> Vec<Line<'static>> {
        match self.scroll {
            Scroll::Follow => {
                let mut rows: Vec<Line<'static>> = Vec::with_capacity(height);
                for i in (0..self.entries.len()).rev() {
                    let Some(lines) = self.lines_of(i, width, view) else {
                        continue;
                    };
                    for l in lines.iter().rev() {
                        if rows.len() == height {
                            break;
                        }
                        rows.push(l.clone());
                    }
                    if rows.len() == height {
                        break;
                    }
                }
                rows.reverse();
                rows
            }
            Scroll::Anchored { top } => {
                let total = self.height(width, view);
                let top = top.min(total.saturating_sub(height));
                self.scroll = if top + height >= total {
                    Scroll::Follow
                } else {
                    Scroll::Anchored { top }
                };
                let mut rows = Vec::with_capacity(height);
                let mut row = 0;
                for i in 0..self.entries.len() {
                    let Some(lines) = self.lines_of(i, width, view) else {
                        continue;
                    };
                    if row + lines.len() <= top {
                        row += lines.len();
                        continue;
                    }
                    let skip = top.saturating_sub(row);
                    for l in lines.iter().skip(skip) {
                        if rows.len() == height {
                            break;
                        }
                        rows.push(l.clone());
                    }
                    row += lines.len();
                    if rows.len() == height {
                        break;
                    }
                }
                rows
            }
        }
    }

    /// Scroll up by `rows` (towards older output).
    pub fn scroll_up(&mut self, rows: usize, width: usize, height: usize, view: &View) {
        let total = self.height(width, view);
        let bottom_top = total.saturating_sub(height);
        let top = match self.scroll {
            Scroll::Follow => bottom_top,
            Scroll::Anchored { top } => top,
        };
        let top = top.saturating_sub(rows);
        self.scroll = if top >= bottom_top {
            Scroll::Follow
        } else {
            Scroll::Anchored { top }
        };
    }

    /// Scroll down by `rows`; reaching the bottom follows output again.
    pub fn scroll_down(&mut self, rows: usize, width: usize, height: usize, view: &View) {
        if let Scroll::Anchored { top } = self.scroll {
            let total = self.height(width, view);
            let top = top + rows;
            self.scroll = if top + height >= total {
                Scroll::Follow
            } else {
                Scroll::Anchored { top }
            };
        }
    }

    pub fn scroll_to_top(&mut self) {
        self.scroll = Scroll::Anchored { top: 0 };
    }

    pub fn follow(&mut self) {
        self.scroll = Scroll::Follow;
    }
}

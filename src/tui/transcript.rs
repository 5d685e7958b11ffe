//! The transcript: an append-only list of cells, their wrapped-line caches, and scrolling.
//!
//! Finished cells keep their wrapped lines for the width and view they were last drawn at, so
//! a frame re-wraps nothing that did not change; live cells (see [`Cell::is_live`]) render
//! each frame (a streaming answer's finished blocks come back as shared [`Rows`] chunks, not
//! copies). Rendering a frame walks from the bottom (following output) or from an absolute
//! top row (scrolled up), touching only the cells on screen plus cached heights.
//!
//! Scrolling is [`Scroll::Follow`] (stick to the newest output) until the person scrolls up;
//! then [`Scroll::Anchored`] keeps the top row as a cell and a row within it, which new output
//! appended below does not move. Scrolling back to the bottom (PgDn/End) follows again. Moving
//! the anchor renders only the cells it passes over, so paging through a long resumed session
//! never lays out the whole conversation at once.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::cells::{Cell, View};
use super::paint::paint_line;
use super::rows::Rows;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scroll {
    Follow,
    /// The view's top row is row `row` of cell `cell`.
    Anchored {
        cell: usize,
        row: usize,
    },
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
    /// Bumped by [`Transcript::clear`]: cell positions from before mean nothing after.
    epoch: u64,
    pub scroll: Scroll,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            entries: Vec::new(),
            view_gen: 0,
            epoch: 0,
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
        self.epoch += 1;
        self.scroll = Scroll::Follow;
    }

    pub fn cells(&self) -> impl DoubleEndedIterator<Item = &Cell> {
        self.entries.iter().map(|e| &e.cell)
    }

    /// Changes each time the transcript is cleared.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn get(&self, index: usize) -> Option<&Cell> {
        self.entries.get(index).map(|e| &e.cell)
    }

    /// A cell's rows at `width` (cached like the ones drawn; empty past the end).
    pub fn rows(&mut self, index: usize, width: usize, view: &View) -> Rows {
        if index >= self.entries.len() {
            return Rows::default();
        }
        self.lines_of(index, width, view)
            .cloned()
            .unwrap_or_default()
    }

    /// Drop a cell's cached rows (inline mode, once they are printed).
    pub fn release(&mut self, index: usize) {
        if let Some(e) = self.entries.get_mut(index) {
            e.cache = None;
        }
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

    fn len_of(&mut self, i: usize, width: usize, view: &View) -> usize {
        self.lines_of(i, width, view).map_or(0, Rows::len)
    }

    /// The top of a view of `height` rows that ends at the last row.
    fn bottom_anchor(&mut self, width: usize, height: usize, view: &View) -> (usize, usize) {
        let mut left = height;
        for i in (0..self.entries.len()).rev() {
            let len = self.len_of(i, width, view);
            if len >= left {
                return (i, len - left);
            }
            left -= len;
        }
        (0, 0)
    }

    /// `at` moved up by `rows` rows (stopping at the first row).
    fn anchor_up(
        &mut self,
        at: (usize, usize),
        mut rows: usize,
        width: usize,
        view: &View,
    ) -> (usize, usize) {
        let (mut cell, mut row) = at;
        loop {
            if row >= rows {
                return (cell, row - rows);
            }
            rows -= row;
            if cell == 0 {
                return (0, 0);
            }
            cell -= 1;
            row = self.len_of(cell, width, view);
        }
    }

    /// `at` moved down by `rows` rows (stopping at the last cell).
    fn anchor_down(
        &mut self,
        at: (usize, usize),
        rows: usize,
        width: usize,
        view: &View,
    ) -> (usize, usize) {
        let (mut cell, mut row) = (at.0, at.1 + rows);
        loop {
            let len = self.len_of(cell, width, view);
            if row < len || cell + 1 >= self.entries.len() {
                return (cell, row);
            }
            row -= len;
            cell += 1;
        }
    }

    /// Whether a view of `height` rows whose top is `at` reaches the last row.
    fn reaches_bottom(
        &mut self,
        at: (usize, usize),
        height: usize,
        width: usize,
        view: &View,
    ) -> bool {
        let (cell, row) = at;
        let mut below = 0;
        for i in cell..self.entries.len() {
            below += self.len_of(i, width, view);
            if i == cell {
                below = below.saturating_sub(row);
            }
            if below > height {
                return false;
            }
        }
        true
    }

    /// Which rows fill a viewport of `height` rows, top to bottom: `(cell, first row, count)`.
    /// Renders (or reuses) only the cells on screen.
    fn visible_slices(
        &mut self,
        width: usize,
        height: usize,
        view: &View,
    ) -> Vec<(usize, usize, usize)> {
        if let Scroll::Anchored { cell, row } = self.scroll
            && (cell >= self.entries.len() || self.reaches_bottom((cell, row), height, width, view))
        {
            self.scroll = Scroll::Follow;
        }
        let mut slices = Vec::new();
        match self.scroll {
            Scroll::Follow => {
                let mut left = height;
                for i in (0..self.entries.len()).rev() {
                    if left == 0 {
                        break;
                    }
                    let n = self.len_of(i, width, view);
                    let take = n.min(left);
                    if take > 0 {
                        slices.push((i, n - take, take));
                        left -= take;
                    }
                }
                slices.reverse();
            }
            Scroll::Anchored { cell, row } => {
                let mut left = height;
                let mut skip = row;
                for i in cell..self.entries.len() {
                    if left == 0 {
                        break;
                    }
                    let n = self.len_of(i, width, view);
                    let first = skip.min(n);
                    skip = 0;
                    let take = (n - first).min(left);
                    if take > 0 {
                        slices.push((i, first, take));
                        left -= take;
                    }
                }
            }
        }
        slices
    }

    /// How many cells have been laid out (tests check that paging stays lazy).
    #[cfg(test)]
    pub fn laid_out(&self) -> usize {
        self.entries.iter().filter(|e| e.cache.is_some()).count()
    }

    fn cached_rows(&self, i: usize) -> Option<&Rows> {
        self.entries
            .get(i)
            .and_then(|e| e.cache.as_ref())
            .map(|(_, rows)| rows)
    }

    /// The rows visible in a viewport of `height` rows (copies; for tests and tools).
    pub fn visible(&mut self, width: usize, height: usize, view: &View) -> Vec<Line<'static>> {
        let slices = self.visible_slices(width, height, view);
        let mut out = Vec::with_capacity(height);
        for (i, first, count) in slices {
            if let Some(rows) = self.cached_rows(i) {
                out.extend(rows.iter().skip(first).take(count).cloned());
            }
        }
        out
    }

    /// Draw the visible rows straight into `buf` (no copies of the lines).
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, view: &View) {
        let slices = self.visible_slices(area.width as usize, area.height as usize, view);
        let mut y = area.y;
        for (i, first, count) in slices {
            let Some(rows) = self.cached_rows(i) else {
                continue;
            };
            for line in rows.iter().skip(first).take(count) {
                paint_line(line, Rect::new(area.x, y, area.width, 1), buf);
                y += 1;
            }
        }
    }

    /// Scroll up by `rows` (towards older output).
    pub fn scroll_up(&mut self, rows: usize, width: usize, height: usize, view: &View) {
        if self.entries.is_empty() {
            return;
        }
        let at = match self.scroll {
            Scroll::Follow => self.bottom_anchor(width, height, view),
            Scroll::Anchored { cell, row } => (cell, row),
        };
        let (cell, row) = self.anchor_up(at, rows, width, view);
        self.scroll = if self.reaches_bottom((cell, row), height, width, view) {
            Scroll::Follow
        } else {
            Scroll::Anchored { cell, row }
        };
    }

    /// Scroll down by `rows`; reaching the bottom follows output again.
    pub fn scroll_down(&mut self, rows: usize, width: usize, height: usize, view: &View) {
        if let Scroll::Anchored { cell, row } = self.scroll {
            let (cell, row) = self.anchor_down((cell, row), rows, width, view);
            self.scroll = if self.reaches_bottom((cell, row), height, width, view) {
                Scroll::Follow
            } else {
                Scroll::Anchored { cell, row }
            };
        }
    }

    pub fn scroll_to_top(&mut self) {
        self.scroll = Scroll::Anchored { cell: 0, row: 0 };
    }

    pub fn follow(&mut self) {
        self.scroll = Scroll::Follow;
    }
}

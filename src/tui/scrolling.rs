//! A backend wrapper that turns "everything moved up" into a terminal scroll.
//!
//! ratatui redraws every cell that differs from the previous frame. When the transcript follows
//! new output, each new line moves every visible row up by one, so every row differs and the
//! whole transcript is rewritten, many times a second while an answer streams. This wrapper sits
//! between ratatui's `Terminal` and the real backend and keeps a copy of what the terminal shows.
//! When a frame changes many rows, it looks for a block of rows that merely moved up by `k`
//! lines; if one saves enough, it scrolls that block inside a scrolling region (DECSTBM + SU),
//! shifts its copy the same way, and writes only the cells that still differ (the new rows,
//! the spinner, the editor...). The result on screen is exactly the frame ratatui asked for; only
//! the bytes written change.

use std::hash::{Hash, Hasher};
use std::io::{self, Write};

use unicode_width::UnicodeWidthStr;

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Rect, Size};

/// Frames that change fewer rows than this are written as they are.
const MIN_DIRTY_ROWS: usize = 3;
/// A scroll must save at least this many row rewrites to be worth its escape sequences.
const MIN_SAVED_ROWS: i64 = 2;

/// Wraps a writing backend (crossterm) with scroll detection.
pub struct ScrollingBackend<B: Backend + Write> {
    inner: B,
    /// What the terminal shows now.
    shown: Buffer,
    /// A fingerprint of each row of `shown`.
    hashes: Vec<u64>,
    /// The fingerprint of a blank row of `shown`'s width.
    blank: u64,
}

impl<B: Backend + Write> ScrollingBackend<B> {
    pub fn new(inner: B) -> io::Result<Self> {
        let size = inner.size()?;
        let mut b = ScrollingBackend {
            inner,
            shown: Buffer::empty(Rect::ZERO),
            hashes: Vec::new(),
            blank: 0,
        };
        b.reset_to(Rect::new(0, 0, size.width, size.height));
        Ok(b)
    }

    pub fn inner_mut(&mut self) -> &mut B {
        &mut self.inner
    }

    fn reset_to(&mut self, area: Rect) {
        self.shown = Buffer::empty(area);
        self.blank = hash_row(&vec![Cell::default(); area.width as usize]);
        self.hashes = vec![self.blank; area.height as usize];
    }

    /// Write `next` (a whole frame) to the terminal: scroll rows that merely moved, then write
    /// the cells of the rows that still differ. Rows that did not change cost one comparison.
    pub fn present(&mut self, next: &Buffer) -> io::Result<()> {
        if next.area != self.shown.area {
            self.inner.clear()?;
            self.reset_to(next.area);
        }
        let width = next.area.width as usize;
        let height = next.area.height as usize;
        if width == 0 || height == 0 {
            return Ok(());
        }
        let row = |y: usize| y * width..(y + 1) * width;
        let mut dirty: Vec<bool> = (0..height)
            .map(|y| self.shown.content[row(y)] != next.content[row(y)])
            .collect();
        let next_hashes: Vec<u64> = (0..height)
            .map(|y| {
                if dirty[y] {
                    hash_row(&next.content[row(y)])
                } else {
                    self.hashes[y]
                }
            })
            .collect();
        if dirty.iter().filter(|d| **d).count() >= MIN_DIRTY_ROWS
            && let Some((top, bottom, k)) = best_scroll(&self.hashes, &next_hashes, self.blank)
        {
            self.scroll_up(top, bottom, k)?;
            for (y, d) in dirty.iter_mut().enumerate().take(bottom + 1).skip(top) {
                *d = self.shown.content[row(y)] != next.content[row(y)];
            }
        }
        let mut updates: Vec<(u16, u16, &Cell)> = Vec::new();
        for (y, _) in dirty.iter().enumerate().filter(|(_, d)| **d) {
            row_diff(
                &self.shown.content[row(y)],
                &next.content[row(y)],
                y as u16,
                &mut updates,
            );
        }
        self.inner.draw(updates.into_iter())?;
        for (y, _) in dirty.iter().enumerate().filter(|(_, d)| **d) {
            self.shown.content[row(y)].clone_from_slice(&next.content[row(y)]);
        }
        self.hashes = next_hashes;
        Ok(())
    }

    /// Scroll rows `top..=bottom` up by `k` on the terminal and in the copy.
    fn scroll_up(&mut self, top: usize, bottom: usize, k: usize) -> io::Result<()> {
        // Reset attributes first: the rows scrolled in take the current background.
        write!(
            self.inner,
            "\x1b[0m\x1b[{};{}r\x1b[{}S\x1b[r",
            top + 1,
            bottom + 1,
            k
        )?;
        let width = self.shown.area.width as usize;
        let content = &mut self.shown.content[top * width..(bottom + 1) * width];
        content.rotate_left(k * width);
        let len = content.len();
        for cell in &mut content[len - k * width..] {
            *cell = Cell::default();
        }
        let blank = self.blank;
        let hashes = &mut self.hashes[top..=bottom];
        hashes.rotate_left(k);
        let len = hashes.len();
        for h in &mut hashes[len - k..] {
            *h = blank;
        }
        Ok(())
    }
}

/// The cells of one row to write, with ratatui's rules for wide characters: a cell hidden by
/// the wide character before it is skipped; cells after a changed wide character are rewritten.
fn row_diff<'a>(shown: &[Cell], next: &'a [Cell], y: u16, out: &mut Vec<(u16, u16, &'a Cell)>) {
    let mut invalidated: usize = 0;
    let mut to_skip: usize = 0;
    for (x, (cur, prev)) in next.iter().zip(shown).enumerate() {
        if !cur.skip && (cur != prev || invalidated > 0) && to_skip == 0 {
            out.push((x as u16, y, cur));
        }
        let cur_width = cur.symbol().width();
        to_skip = cur_width.saturating_sub(1);
        let affected = cur_width.max(prev.symbol().width());
        invalidated = affected.max(invalidated).saturating_sub(1);
    }
}

/// A fast, non-cryptographic hasher (multiply-rotate) for row fingerprints. A collision can only
/// make a scroll less useful, never the screen wrong: cells are always compared for real.
#[derive(Default)]
struct RowHasher(u64);

impl Hasher for RowHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut v = [0u8; 8];
            v[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(v));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_isize(&mut self, v: isize) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn hash_row(row: &[Cell]) -> u64 {
    let mut h = RowHasher::default();
    for cell in row {
        let symbol = cell.symbol();
        if symbol == " " {
            h.write_u64(0x20);
        } else {
            h.write(symbol.as_bytes());
        }
        // The symbol and the style words only: cheaper than the derived hash of the whole cell
        // (blank cells, the most common, cost one word).
        cell.fg.hash(&mut h);
        cell.bg.hash(&mut h);
        h.write_u16(cell.modifier.bits());
    }
    h.finish()
}

/// The best upward move: `(top, bottom, k)` such that scrolling rows `top..=bottom` up by `k`
/// makes the most rows of `next` already right, or `None` if nothing is worth it.
fn best_scroll(shown: &[u64], next: &[u64], blank: u64) -> Option<(usize, usize, usize)> {
    let h = shown.len().min(next.len());
    let mut best: Option<(i64, usize, usize, usize)> = None;
    for k in 1..h {
        let mut r = 0;
        while r + k < h {
            if next[r] != shown[r + k] {
                r += 1;
                continue;
            }
            // A run of rows that moved up by k: rows start..=end come from start+k..=end+k.
            let start = r;
            let mut saved: i64 = 0;
            while r + k < h && next[r] == shown[r + k] {
                if next[r] != shown[r] {
                    saved += 1;
                }
                r += 1;
            }
            let end = r - 1;
            // The k rows below the run come in blank: any that were right already (and not
            // blank) must be written again.
            let lost = (end + 1..=end + k)
                .filter(|&i| next[i] == shown[i] && next[i] != blank)
                .count() as i64;
            let gain = saved - lost;
            if gain >= MIN_SAVED_ROWS && best.is_none_or(|b| gain > b.0) {
                best = Some((gain, start, end + k, k));
            }
        }
    }
    best.map(|(_, top, bottom, k)| (top, bottom, k))
}

impl<B: Backend + Write> Backend for ScrollingBackend<B> {
    /// The plain path (ratatui's own diff): keep the copy in step and pass the cells on.
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let updates: Vec<(u16, u16, &Cell)> = content.collect();
        let area = self.shown.area;
        let mut touched = vec![false; area.height as usize];
        for (x, y, cell) in &updates {
            if *x < area.width && *y < area.height {
                self.shown[(*x, *y)] = (*cell).clone();
                touched[*y as usize] = true;
            }
        }
        let width = area.width as usize;
        for (y, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
            self.hashes[y] = hash_row(&self.shown.content[y * width..(y + 1) * width]);
        }
        self.inner.draw(updates.into_iter())
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()?;
        let size = self.inner.size()?;
        self.reset_to(Rect::new(0, 0, size.width, size.height));
        Ok(())
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        // Only a full clear is used (on resize); after a partial one the copy would be unknown,
        // so clear everything: the next frame is then written in full.
        self.clear()?;
        let _ = clear_type;
        Ok(())
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }
}

impl<B: Backend + Write> Write for ScrollingBackend<B> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Write::flush(&mut self.inner)
    }
}

/// Draw one frame through `render`, presenting it with scroll detection: the ratatui
/// `Terminal` lends the buffer the frame is drawn in (call its `autoresize` first when the size
/// may have changed, then [`release_second_buffer`]); the diff-and-write step is ours.
///
/// Two screens' worth of cells are kept, not three: once presented, the frame becomes the
/// backend's copy of what the terminal shows, and the copy it replaces (identical by then) is
/// cleared to draw the next frame in. ratatui's own "previous" buffer is not used.
pub fn draw_frame<B, F>(
    term: &mut ratatui::Terminal<ScrollingBackend<B>>,
    render: F,
) -> io::Result<()>
where
    B: Backend + Write,
    F: FnOnce(&mut ratatui::Frame),
{
    let mut frame = term.get_frame();
    render(&mut frame);
    let mut next = std::mem::replace(term.current_buffer_mut(), Buffer::empty(Rect::ZERO));
    let backend = term.backend_mut();
    if let Err(e) = backend.present(&next) {
        // What the terminal shows is unknown: the next frame is drawn from scratch.
        backend.reset_to(Rect::ZERO);
        next.reset();
        *term.current_buffer_mut() = next;
        return Err(e);
    }
    let mut spare = std::mem::replace(&mut backend.shown, next);
    spare.reset();
    *term.current_buffer_mut() = spare;
    Backend::flush(term.backend_mut())
}

/// Shrink the ratatui `Terminal`'s second ("previous") buffer to nothing: [`draw_frame`] does
/// not use it, and ratatui gives it the full size when the terminal is made or resized.
pub fn release_second_buffer<B: Backend + Write>(
    term: &mut ratatui::Terminal<ScrollingBackend<B>>,
) {
    // `swap_buffers` clears the other buffer and makes it the current one.
    term.swap_buffers();
    *term.current_buffer_mut() = Buffer::empty(Rect::ZERO);
    term.swap_buffers();
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::CrosstermBackend;
    use ratatui::style::{Color, Style};
    use ratatui::text::Line;
    use ratatui::widgets::{Paragraph, Widget};

    /// Bytes written, shared with the test.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A crossterm backend writing into memory, with a fixed size.
    struct Sized {
        out: CrosstermBackend<Shared>,
        size: Size,
    }

    impl Write for Sized {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.out.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Write::flush(&mut self.out)
        }
    }

    impl Backend for Sized {
        fn draw<'a, I: Iterator<Item = (u16, u16, &'a Cell)>>(&mut self, c: I) -> io::Result<()> {
            self.out.draw(c)
        }
        fn hide_cursor(&mut self) -> io::Result<()> {
            self.out.hide_cursor()
        }
        fn show_cursor(&mut self) -> io::Result<()> {
            self.out.show_cursor()
        }
        fn get_cursor_position(&mut self) -> io::Result<Position> {
            Ok(Position::ORIGIN)
        }
        fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> io::Result<()> {
            self.out.set_cursor_position(p)
        }
        fn clear(&mut self) -> io::Result<()> {
            self.out.clear()
        }
        fn size(&self) -> io::Result<Size> {
            Ok(self.size)
        }
        fn window_size(&mut self) -> io::Result<WindowSize> {
            Ok(WindowSize {
                columns_rows: self.size,
                pixels: Size::default(),
            })
        }
        fn flush(&mut self) -> io::Result<()> {
            Backend::flush(&mut self.out)
        }
    }

    fn sized(w: u16, h: u16, bytes: &Shared) -> Sized {
        Sized {
            out: CrosstermBackend::new(bytes.clone()),
            size: Size::new(w, h),
        }
    }

    /// A transcript of `n` numbered lines following its end above a status row whose spinner
    /// changes every frame, like the TUI while an answer streams.
    fn frame(n: usize, height: u16) -> (Vec<Line<'static>>, Line<'static>) {
        let rows = height as usize - 1;
        let lines = (n.saturating_sub(rows)..n)
            .map(|i| {
                Line::styled(
                    format!("line {i}: {}", "word ".repeat(i % 7)),
                    Style::new().fg(if i % 3 == 0 {
                        Color::Cyan
                    } else {
                        Color::Reset
                    }),
                )
            })
            .collect();
        (
            lines,
            Line::raw(format!("{} working", ['|', '/', '-', '\\'][n % 4])),
        )
    }

    fn run(scrolling: bool, frames: usize, w: u16, h: u16) -> (usize, bool) {
        let mut parser = vt100::Parser::new(h, w, 0);
        let mut written = 0;
        let mut all_match = true;
        let bytes = Shared::default();
        let mut check = |expected: &Buffer| {
            let mut term_bytes = bytes.0.borrow_mut();
            written += term_bytes.len();
            parser.process(&term_bytes);
            term_bytes.clear();
            let screen = parser.screen();
            for y in 0..h {
                let want: String = (0..w).map(|x| expected[(x, y)].symbol()).collect();
                let got = screen.contents_between(y, 0, y, w);
                if want.trim_end() != got.trim_end() {
                    all_match = false;
                }
            }
        };
        if scrolling {
            let mut term =
                Terminal::new(ScrollingBackend::new(sized(w, h, &bytes)).unwrap()).unwrap();
            release_second_buffer(&mut term);
            for n in 1..=frames {
                let (lines, status) = frame(n, h);
                draw_frame(&mut term, |f| {
                    let a = f.area();
                    f.render_widget(
                        Paragraph::new(lines),
                        Rect {
                            height: a.height - 1,
                            ..a
                        },
                    );
                    f.render_widget(
                        Paragraph::new(status),
                        Rect {
                            y: a.height - 1,
                            height: 1,
                            ..a
                        },
                    );
                })
                .unwrap();
                // What the terminal should show: the frame just drawn.
                let mut expected = Buffer::empty(Rect::new(0, 0, w, h));
                let (lines, status) = frame(n, h);
                Paragraph::new(lines).render(Rect::new(0, 0, w, h - 1), &mut expected);
                Paragraph::new(status).render(Rect::new(0, h - 1, w, 1), &mut expected);
                check(&expected);
            }
        } else {
            let mut term = Terminal::new(sized(w, h, &bytes)).unwrap();
            for n in 1..=frames {
                let (lines, status) = frame(n, h);
                let done = term
                    .draw(|f| {
                        let a = f.area();
                        f.render_widget(
                            Paragraph::new(lines),
                            Rect {
                                height: a.height - 1,
                                ..a
                            },
                        );
                        f.render_widget(
                            Paragraph::new(status),
                            Rect {
                                y: a.height - 1,
                                height: 1,
                                ..a
                            },
                        );
                    })
                    .unwrap()
                    .buffer
                    .clone();
                check(&done);
            }
        }
        (written, all_match)
    }

    #[test]
    fn scrolling_output_is_identical_on_screen_and_much_smaller() {
        let (plain, plain_ok) = run(false, 200, 80, 24);
        let (scrolled, scrolled_ok) = run(true, 200, 80, 24);
        assert!(plain_ok, "plain rendering reproduces the frames");
        assert!(scrolled_ok, "scrolled rendering reproduces the frames");
        assert!(
            scrolled * 5 < plain,
            "scrolling should write far less: {scrolled} vs {plain} bytes"
        );
    }

    #[test]
    fn frames_are_drawn_with_two_buffers_not_three() {
        let bytes = Shared::default();
        let mut term = Terminal::new(ScrollingBackend::new(sized(20, 5, &bytes)).unwrap()).unwrap();
        release_second_buffer(&mut term);
        for text in ["one", "two", "three"] {
            draw_frame(&mut term, |f| {
                f.render_widget(Paragraph::new(text), f.area());
            })
            .unwrap();
            // The buffer lent for the next frame is full-sized and blank; the backend's copy
            // holds the frame; ratatui's other buffer stays empty.
            assert_eq!(term.current_buffer_mut().area, Rect::new(0, 0, 20, 5));
            assert_eq!(term.current_buffer_mut()[(0, 0)].symbol(), " ");
            assert_eq!(term.backend_mut().shown[(0, 0)].symbol(), &text[..1]);
            term.swap_buffers();
            assert_eq!(term.current_buffer_mut().area, Rect::ZERO);
            term.swap_buffers();
        }
    }

    #[test]
    fn finds_the_moved_block_and_ignores_noise() {
        // Rows 0..4 moved up by 2 (rows 2..6 -> 0..4), the last row changed on its own.
        let shown = [1, 2, 3, 4, 5, 6, 9, 0];
        let next = [3, 4, 5, 6, 7, 8, 9, 1];
        assert_eq!(best_scroll(&shown, &next, 0), Some((0, 5, 2)));
        // Nothing moved: no scroll.
        assert_eq!(best_scroll(&shown, &shown, 0), None);
        // A single moved row is not worth a scroll.
        assert_eq!(best_scroll(&[1, 2, 3], &[2, 7, 8], 0), None);
    }
}

//! The inline screen: the default mode's renderer, which leaves the conversation in the
//! terminal's own scrollback.
//!
//! The terminal shows, from some row down, a *live region* (the end of the conversation that
//! can still change, the prompt's popups, the status, the editor and the footer); above it is
//! whatever the terminal printed before, the conversation included. Each frame
//! ([`InlineScreen::draw`]) gets rows to print above the live region (history: finished
//! conversation) and the live region's new content, and writes them as one list of rows
//! starting at the live region's top: a row the terminal already shows at that place is skipped,
//! any other is rewritten, rows past the old end are reached with line feeds, so the terminal
//! scrolls by itself and what leaves the top of the screen enters its scrollback (no scroll
//! regions: terminals and multiplexers differ in what they keep from those). Rows left over when
//! the region shrinks are erased. When the region grows under an editor and footer that did
//! not change (an answer streaming), those are pushed down with an insert-line (IL) rather than
//! written again; a history longer than the screen is written row by row, in parts.
//!
//! Between frames the cursor (hidden) rests at column 0 of the live region's top row. Only
//! relative moves are used, so the region's place on the screen never has to be known, and a
//! resize ([`InlineScreen::resize`]) can erase the old region from the cursor down however the
//! terminal re-wrapped it: the rows above, already printed, are left as the terminal keeps them.
//! The region is never taller than the screen (its top rows are cut), so its top stays on
//! screen and reachable.

use std::io::{self, Write};

use crossterm::queue;
use crossterm::style::{SetBackgroundColor, SetForegroundColor};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::text::Line;
use unicode_width::UnicodeWidthStr;

use super::paint::paint_line;

/// Output gathered before it is handed to the terminal (a long history goes in parts).
const CHUNK: usize = 64 * 1024;

/// Writes inline frames to `out` (the terminal).
pub struct InlineScreen<W: Write> {
    out: W,
    width: u16,
    height: u16,
    /// The live region as the terminal shows it: its cells, `width` a row, top row first.
    shown: Vec<Cell>,
}

impl<W: Write> InlineScreen<W> {
    /// A screen `width`×`height`; the cursor is where the live region will start.
    pub fn new(out: W, width: u16, height: u16) -> Self {
        InlineScreen {
            out,
            width,
            height,
            shown: Vec::new(),
        }
    }

    pub fn size(&self) -> (u16, u16) {
        (self.width, self.height)
    }

    /// Whether a live region is on screen.
    pub fn is_drawn(&self) -> bool {
        !self.shown.is_empty()
    }

    /// Print `history` above the live region and show `live` as the new live region (its
    /// bottom rows, as many as the screen has).
    pub fn draw(&mut self, history: &[Line<'static>], live: Buffer) -> io::Result<()> {
        if self.width == 0 || self.height == 0 {
            return Ok(());
        }
        let w = self.width as usize;
        let live = fit(live, self.width, self.height);
        let mut buf = Vec::with_capacity(4096);
        buf.extend_from_slice(b"\x1b[?2026h");
        let mut pen = Pen::default();
        if history.len() > self.height as usize {
            self.draw_long(&mut buf, &mut pen, history, &live)?;
        } else {
            let printed: Vec<Cell> = history
                .iter()
                .flat_map(|l| line_row(l, self.width))
                .collect();
            let rows: Vec<&[Cell]> = printed.chunks(w).chain(live.chunks(w)).collect();
            let top = history.len();
            let blank = vec![Cell::default(); w];
            let mut shown: Vec<&[Cell]> = self.shown.chunks(w).collect();
            let mut at = make_room(&mut buf, &mut pen, &mut shown, &rows, &blank, self.height);
            let on_screen = shown.len();
            for (i, row) in rows.iter().enumerate() {
                if shown.get(i) == Some(row) {
                    continue;
                }
                if i < at {
                    let _ = write!(buf, "\x1b[{}A", at - i);
                } else {
                    move_down(&mut buf, &mut pen, at, i, on_screen);
                }
                at = i;
                write_row(&mut buf, row, w, &mut pen);
            }
            if rows.len() < on_screen {
                // The region shrank: erase what is left of the old one.
                move_down(&mut buf, &mut pen, at, rows.len(), on_screen);
                at = rows.len();
                pen.reset(&mut buf);
                buf.extend_from_slice(b"\r\x1b[J");
            }
            rest_at(&mut buf, &mut pen, at, top, on_screen);
        }
        pen.reset(&mut buf);
        buf.extend_from_slice(b"\r\x1b[?2026l");
        self.shown = live;
        self.out.write_all(&buf)?;
        self.out.flush()
    }

    /// A history longer than the screen (a resumed conversation, a long answer ending): every
    /// row is written, one at a time and in parts, never all held at once. What the old live
    /// region showed is all overwritten (it is at most a screen tall).
    fn draw_long(
        &mut self,
        buf: &mut Vec<u8>,
        pen: &mut Pen,
        history: &[Line<'static>],
        live: &[Cell],
    ) -> io::Result<()> {
        let w = self.width as usize;
        let on_screen = self.shown.len() / w;
        let mut row = Buffer::empty(Rect::new(0, 0, self.width, 1));
        let mut at = 0;
        for (i, line) in history.iter().enumerate() {
            row.reset();
            paint_line(line, row.area, &mut row);
            move_down(buf, pen, at, i, on_screen);
            at = i;
            write_row(buf, &row.content, w, pen);
            if buf.len() > CHUNK {
                self.out.write_all(buf)?;
                buf.clear();
            }
        }
        let top = history.len();
        for (j, cells) in live.chunks(w).enumerate() {
            move_down(buf, pen, at, top + j, on_screen);
            at = top + j;
            write_row(buf, cells, w, pen);
        }
        rest_at(buf, pen, at, top, on_screen);
        Ok(())
    }

    /// The terminal is now `width`×`height`: the live region (from the cursor down, however
    /// the terminal re-wrapped it) is erased, to be drawn anew by the next frame.
    pub fn resize(&mut self, width: u16, height: u16) -> io::Result<()> {
        self.width = width;
        self.height = height;
        self.clear()
    }

    /// Erase the live region; the cursor stays at its top, at column 0 (where the next output,
    /// a shell prompt or another program, starts).
    pub fn clear(&mut self) -> io::Result<()> {
        if self.shown.is_empty() {
            return Ok(());
        }
        self.shown.clear();
        self.out.write_all(b"\r\x1b[0m\x1b[J")?;
        self.out.flush()
    }

    /// The writer (for sequences written between frames, e.g. a notification).
    pub fn out(&mut self) -> &mut W {
        &mut self.out
    }
}

/// One history row as terminal cells.
fn line_row(line: &Line<'static>, width: u16) -> Vec<Cell> {
    let mut b = Buffer::empty(Rect::new(0, 0, width, 1));
    paint_line(line, b.area, &mut b);
    b.content
}

/// The live region's cells, `width` a row: its bottom rows, at most `height` of them (cut or
/// padded to `width` if the buffer was drawn for another width).
fn fit(live: Buffer, width: u16, height: u16) -> Vec<Cell> {
    let (w, h) = (live.area.width as usize, live.area.height as usize);
    let cut = h.saturating_sub(height as usize);
    if w == width as usize {
        let mut cells = live.content;
        cells.drain(..cut * w);
        return cells;
    }
    let mut cells = Vec::with_capacity((h - cut) * width as usize);
    for y in cut..h {
        let row = &live.content[y * w..(y + 1) * w];
        cells.extend(row.iter().take(width as usize).cloned());
        cells.extend(std::iter::repeat_n(
            Cell::default(),
            (width as usize).saturating_sub(w),
        ));
    }
    cells
}

/// A region that grows by `d` rows while its bottom rows (the editor, the footer) stay as they
/// are: instead of writing those again `d` rows lower, make `d` rows of room below the region
/// (line feeds, which scroll at the screen's bottom) and insert `d` blank rows above its bottom
/// part (IL), which pushes that part down into the room. `shown` is updated to match; returns
/// the cursor's row. Only when every row from the first that differs down stays on a screen
/// `height` rows high (the cursor then moves up to it); otherwise nothing is done.
fn make_room<'a>(
    buf: &mut Vec<u8>,
    pen: &mut Pen,
    shown: &mut Vec<&'a [Cell]>,
    rows: &[&'a [Cell]],
    blank: &'a [Cell],
    height: u16,
) -> usize {
    let (n, m) = (rows.len(), shown.len());
    if n <= m || m == 0 {
        return 0;
    }
    let same = rows
        .iter()
        .zip(shown.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let bottom = rows
        .iter()
        .rev()
        .zip(shown.iter().rev())
        .take(m - same)
        .take_while(|(a, b)| a == b)
        .count();
    if bottom == 0 || n - same > height as usize {
        return 0;
    }
    let d = n - m;
    move_down(buf, pen, 0, m - 1, m);
    pen.reset(buf);
    buf.extend(std::iter::repeat_n(b'\n', d));
    let up = d + bottom - 1;
    if up > 0 {
        let _ = write!(buf, "\x1b[{up}A");
    }
    let _ = write!(buf, "\x1b[{d}L");
    shown.splice(m - bottom..m - bottom, std::iter::repeat_n(blank, d));
    m - bottom
}

/// From row `at`, go to row `top` (the live region's new top), where the cursor rests.
fn rest_at(buf: &mut Vec<u8>, pen: &mut Pen, at: usize, top: usize, on_screen: usize) {
    if at > top {
        let _ = write!(buf, "\x1b[{}A", at - top);
    } else {
        move_down(buf, pen, at, top, on_screen);
    }
}

/// Move the cursor from row `from` down to row `to` (no move when `to <= from`). Rows below
/// `on_screen` may not exist yet: they are reached with line feeds, which scroll the terminal
/// at its bottom row.
fn move_down(buf: &mut Vec<u8>, pen: &mut Pen, from: usize, to: usize, on_screen: usize) {
    if to <= from {
        return;
    }
    let n = to - from;
    if to < on_screen && n > 2 {
        let _ = write!(buf, "\x1b[{n}B");
    } else {
        // A scrolled-in row takes the current background: reset first.
        pen.reset(buf);
        buf.extend(std::iter::repeat_n(b'\n', n));
    }
}

/// A cell that shows nothing: a space without background or line decoration.
fn is_blank(c: &Cell) -> bool {
    c.symbol() == " "
        && c.bg == Color::Reset
        && !c
            .modifier
            .intersects(Modifier::REVERSED | Modifier::UNDERLINED | Modifier::CROSSED_OUT)
}

/// Rewrite the cursor's row with `row`: its cells up to the last visible one, then an erase of
/// the rest of the line.
fn write_row(buf: &mut Vec<u8>, row: &[Cell], width: usize, pen: &mut Pen) {
    buf.push(b'\r');
    let end = row.iter().rposition(|c| !is_blank(c)).map_or(0, |i| i + 1);
    let mut col = 0;
    let mut hidden = 0;
    for cell in &row[..end] {
        // The cells covered by a wide character before them.
        if hidden > 0 {
            hidden -= 1;
            continue;
        }
        pen.set(buf, cell);
        let symbol = cell.symbol();
        let w = symbol.width();
        if w == 0 {
            // Nothing that takes no room is written alone: the columns would slip.
            buf.push(b' ');
            col += 1;
        } else {
            buf.extend_from_slice(symbol.as_bytes());
            col += w;
            hidden = w - 1;
        }
    }
    if col < width {
        pen.reset(buf);
        buf.extend_from_slice(b"\x1b[K");
    }
}

/// The style the terminal writes with, changed only when a cell needs another.
#[derive(Default)]
struct Pen {
    fg: Color,
    bg: Color,
    modifier: Modifier,
}

impl Pen {
    fn set(&mut self, buf: &mut Vec<u8>, cell: &Cell) {
        if cell.modifier != self.modifier {
            if !(self.modifier - cell.modifier).is_empty() {
                self.reset(buf);
            }
            let added = cell.modifier - self.modifier;
            for (m, code) in [
                (Modifier::BOLD, 1),
                (Modifier::DIM, 2),
                (Modifier::ITALIC, 3),
                (Modifier::UNDERLINED, 4),
                (Modifier::SLOW_BLINK, 5),
                (Modifier::RAPID_BLINK, 6),
                (Modifier::REVERSED, 7),
                (Modifier::HIDDEN, 8),
                (Modifier::CROSSED_OUT, 9),
            ] {
                if added.contains(m) {
                    let _ = write!(buf, "\x1b[{code}m");
                }
            }
            self.modifier = cell.modifier;
        }
        if cell.fg != self.fg {
            let _ = queue!(buf, SetForegroundColor(cell.fg.into()));
            self.fg = cell.fg;
        }
        if cell.bg != self.bg {
            let _ = queue!(buf, SetBackgroundColor(cell.bg.into()));
            self.bg = cell.bg;
        }
    }

    fn reset(&mut self, buf: &mut Vec<u8>) {
        if self.fg != Color::Reset || self.bg != Color::Reset || !self.modifier.is_empty() {
            buf.extend_from_slice(b"\x1b[0m");
            *self = Pen::default();
        }
    }
}

/// A terminal emulator for tests, with the scrollback a real terminal keeps.
#[cfg(test)]
pub mod emulator {
    /// A terminal emulator that keeps every row scrolled off its top. (vt100 keeps a
    /// scrollback but shows only as many of its rows as the screen has: the bytes are fed in
    /// pieces too short to scroll more than that, and the rows that left are read after each.)
    pub struct Term {
        pub parser: vt100::Parser,
        /// The rows that left the screen, in order.
        gone: Vec<String>,
    }

    impl Term {
        pub fn new(height: u16, width: u16) -> Term {
            Term {
                parser: vt100::Parser::new(height, width, 1 << 20),
                gone: Vec::new(),
            }
        }

        pub fn process(&mut self, bytes: &[u8]) {
            let (height, width) = self.parser.screen().size();
            for piece in bytes.chunks(height as usize - 1) {
                self.parser.process(piece);
                self.parser.set_scrollback(usize::MAX);
                let kept = self.parser.screen().scrollback();
                for offset in (1..=kept - self.gone.len()).rev() {
                    self.parser.set_scrollback(offset);
                    let row = self
                        .parser
                        .screen()
                        .rows(0, width)
                        .next()
                        .unwrap_or_default();
                    self.gone.push(row.trim_end().to_string());
                }
                self.parser.set_scrollback(0);
            }
        }

        pub fn screen_rows(&self) -> Vec<String> {
            let (_, width) = self.parser.screen().size();
            self.parser
                .screen()
                .rows(0, width)
                .map(|r| r.trim_end().to_string())
                .collect()
        }

        /// Every row: those scrolled away, then the screen's.
        pub fn all_rows(&self) -> Vec<String> {
            let mut all = self.gone.clone();
            all.extend(self.screen_rows());
            all
        }
    }
}

#[cfg(test)]
mod tests {
    use super::emulator::Term;
    use super::*;
    use ratatui::style::Style;
    use ratatui::text::Span;

    fn live(rows: &[&str], width: u16) -> Buffer {
        let mut b = Buffer::empty(Rect::new(0, 0, width, rows.len() as u16));
        for (y, r) in rows.iter().enumerate() {
            b.set_string(0, y as u16, r, Style::default());
        }
        b
    }

    fn lines(texts: &[&str]) -> Vec<Line<'static>> {
        texts.iter().map(|t| Line::from(t.to_string())).collect()
    }

    struct Rig {
        screen: InlineScreen<Vec<u8>>,
        term: Term,
        /// Everything written so far.
        written: Vec<u8>,
    }

    impl Rig {
        fn new(width: u16, height: u16) -> Rig {
            let mut term = Term::new(height, width);
            // A shell prompt and the command that started pi.
            term.process(b"$ earlier\r\n$ pi\r\n");
            Rig {
                screen: InlineScreen::new(Vec::new(), width, height),
                term,
                written: Vec::new(),
            }
        }

        /// Draw a frame; the bytes it wrote.
        fn draw(&mut self, history: &[&str], region: &[&str]) -> usize {
            let (w, _) = self.screen.size();
            self.screen.draw(&lines(history), live(region, w)).unwrap();
            self.flush()
        }

        fn flush(&mut self) -> usize {
            let bytes = std::mem::take(self.screen.out());
            self.term.process(&bytes);
            self.written.extend_from_slice(&bytes);
            bytes.len()
        }

        fn screen_rows(&self) -> Vec<String> {
            self.term.screen_rows()
        }
    }

    #[test]
    fn history_goes_above_the_live_region_and_into_the_scrollback() {
        let mut rig = Rig::new(30, 8);
        rig.draw(&["header"], &["", "> editor", "footer"]);
        assert_eq!(
            rig.screen_rows()[..6],
            ["$ earlier", "$ pi", "header", "", "> editor", "footer"]
        );
        // Enough history to scroll the screen several times over.
        let many: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        rig.draw(&many, &["working", "> editor", "footer"]);
        let screen = rig.screen_rows();
        assert_eq!(screen[5..], ["working", "> editor", "footer"]);
        assert_eq!(screen[4], "line 19");
        let all = rig.term.all_rows();
        let mut want = vec!["$ earlier", "$ pi", "header"];
        want.extend(&many);
        want.extend(["working", "> editor", "footer"]);
        assert_eq!(
            all, want,
            "everything printed is in the scrollback, once, in order"
        );
    }

    #[test]
    fn a_long_conversation_printed_at_once_arrives_whole() {
        let mut rig = Rig::new(50, 12);
        rig.draw(&[], &["", "> ", "footer"]);
        let many: Vec<String> = (0..3000)
            .map(|i| format!("resumed line {i:04} with some words after it"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let bytes = rig.draw(&many, &["", "> ", "footer"]);
        assert!(bytes > 2 * CHUNK, "written in several parts: {bytes} bytes");
        let all = rig.term.all_rows();
        let mut want = vec!["$ earlier", "$ pi"];
        want.extend(&many);
        want.extend(["", ">", "footer"]);
        assert_eq!(all, want);
    }

    #[test]
    fn unchanged_rows_are_not_written_again() {
        let mut rig = Rig::new(60, 12);
        let editor = "> a prompt being typed, long enough to cost something";
        rig.draw(
            &[],
            &["spinner 1", editor, "footer with totals and a model name"],
        );
        let spin = rig.draw(
            &[],
            &["spinner 2", editor, "footer with totals and a model name"],
        );
        assert!(spin < 40, "only the spinner row is written: {spin} bytes");
        let idle = rig.draw(
            &[],
            &["spinner 2", editor, "footer with totals and a model name"],
        );
        assert!(
            idle <= 20,
            "an unchanged frame writes next to nothing: {idle} bytes"
        );
        assert_eq!(
            rig.screen_rows()[2..5],
            ["spinner 2", editor, "footer with totals and a model name"]
        );
    }

    #[test]
    fn rows_flushed_from_the_top_of_the_region_stay_where_they_are() {
        let mut rig = Rig::new(40, 10);
        rig.draw(
            &[],
            &["answer 1", "answer 2", "answer 3", "", "> ", "footer"],
        );
        // The answer's first two rows become history, two new rows come in below.
        let bytes = rig.draw(
            &["answer 1", "answer 2"],
            &["answer 3", "answer 4", "answer 5", "", "> ", "footer"],
        );
        assert!(
            bytes < 120,
            "the moved rows are not rewritten: {bytes} bytes"
        );
        let all = rig.term.all_rows();
        assert_eq!(
            all[..10],
            [
                "$ earlier",
                "$ pi",
                "answer 1",
                "answer 2",
                "answer 3",
                "answer 4",
                "answer 5",
                "",
                ">",
                "footer"
            ]
        );
    }

    #[test]
    fn a_growing_answer_pushes_the_editor_down_instead_of_writing_it_again() {
        let mut rig = Rig::new(40, 10);
        let footer = "footer: a long and unique text";
        let mut history = Vec::new();
        let mut answer: Vec<String> = Vec::new();
        for k in 1..=14 {
            answer.push(format!("answer row {k}"));
            // What the transcript does: rows beyond the room (10 - 3) go to the scrollback.
            let room = 7;
            let printed: Vec<String> = if answer.len() > room {
                answer.drain(..answer.len() - room).collect()
            } else {
                Vec::new()
            };
            history.extend(printed.clone());
            let mut region: Vec<&str> = answer.iter().map(String::as_str).collect();
            region.extend(["status", "> draft", footer]);
            let printed: Vec<&str> = printed.iter().map(String::as_str).collect();
            rig.draw(&printed, &region);
            let screen = rig.screen_rows();
            let shown: Vec<&str> = screen.iter().map(String::as_str).collect();
            let end = shown.iter().rposition(|r| !r.is_empty()).unwrap();
            assert_eq!(shown[end + 1 - region.len()..=end], region[..], "frame {k}");
        }
        let mut want = vec!["$ earlier".to_string(), "$ pi".to_string()];
        want.extend(history);
        want.extend(answer);
        want.extend(["status", "> draft", footer].map(String::from));
        assert_eq!(rig.term.all_rows(), want);
        let raw = String::from_utf8_lossy(&rig.written).to_string();
        assert_eq!(raw.matches(footer).count(), 1, "the footer is written once");
    }

    #[test]
    fn a_shrinking_region_leaves_nothing_behind() {
        let mut rig = Rig::new(30, 12);
        rig.draw(&[], &["popup 1", "popup 2", "popup 3", "> ", "footer"]);
        rig.draw(&[], &["> ", "footer"]);
        let screen = rig.screen_rows();
        assert_eq!(screen[2..4], [">", "footer"]);
        assert!(screen[4..].iter().all(String::is_empty), "{screen:?}");
        // Back to the top: the next frame starts there.
        rig.draw(&["done"], &["> ", "footer"]);
        assert_eq!(rig.screen_rows()[2..5], ["done", ">", "footer"]);
    }

    #[test]
    fn a_region_taller_than_the_screen_keeps_its_bottom() {
        let mut rig = Rig::new(20, 4);
        rig.draw(&[], &["one", "two", "three", "four", "five", "six"]);
        assert_eq!(rig.screen_rows(), ["three", "four", "five", "six"]);
        rig.draw(&[], &["one", "two", "three", "four", "five", "seven"]);
        assert_eq!(rig.screen_rows(), ["three", "four", "five", "seven"]);
    }

    #[test]
    fn a_resize_redraws_the_region_and_keeps_the_history() {
        let mut rig = Rig::new(40, 10);
        rig.draw(&["first answer"], &["", "> draft", "footer: 40 columns"]);
        rig.term.parser.set_size(10, 30);
        rig.screen.resize(30, 10).unwrap();
        rig.flush();
        rig.draw(&[], &["", "> draft", "footer: 30"]);
        let screen = rig.screen_rows();
        assert_eq!(
            screen[..6],
            [
                "$ earlier",
                "$ pi",
                "first answer",
                "",
                "> draft",
                "footer: 30"
            ]
        );
        assert!(screen[6..].iter().all(String::is_empty), "{screen:?}");
    }

    #[test]
    fn clearing_leaves_the_cursor_after_the_history() {
        let mut rig = Rig::new(30, 10);
        rig.draw(&["answer"], &["> ", "footer"]);
        rig.screen.clear().unwrap();
        rig.flush();
        rig.term.process(b"$ next");
        assert_eq!(rig.screen_rows()[2..5], ["answer", "$ next", ""]);
    }

    #[test]
    fn styles_and_wide_characters_come_out_right() {
        let mut rig = Rig::new(12, 6);
        let styled = Line::from(vec![
            Span::styled("ok", Style::new().fg(Color::Green)),
            Span::raw(" 表x"),
        ]);
        let full = Line::from("123456789012");
        rig.screen
            .draw(&[styled, full], live(&["> 表表表表表"], 12))
            .unwrap();
        rig.flush();
        let screen = rig.screen_rows();
        assert_eq!(screen[2..5], ["ok 表x", "123456789012", "> 表表表表表"]);
        let cell = rig.term.parser.screen().cell(2, 0).unwrap();
        assert_eq!(cell.fgcolor(), vt100::Color::Idx(2));
        let plain = rig.term.parser.screen().cell(2, 3).unwrap();
        assert_eq!(plain.fgcolor(), vt100::Color::Default);
    }
}

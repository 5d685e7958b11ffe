//! The screen the UI draws on, in the mode chosen at start-up.
//!
//! Full-screen mode ([`Mode::Fullscreen`]) draws every frame whole on the alternate screen
//! through ratatui and the scroll-detecting backend (`scrolling.rs`), with the transcript's own
//! scrolling. Inline mode ([`Mode::Inline`], the default) prints the finished conversation into
//! the terminal's scrollback and redraws only the live region below it: [`Printed`] decides
//! which rows are finished, `render::draw_live` draws the live region and [`InlineScreen`]
//! writes both. Its full-screen popups (see `render::wants_full_screen`) are drawn like
//! full-screen mode on the alternate screen for as long as they are open; the conversation goes
//! on meanwhile and is printed when they close. Both modes draw the same components.

use std::io::{self, Stdout, Write, stdout};
use std::time::Instant;

use crossterm::execute;
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::app::App;
use super::inline::InlineScreen;
use super::printed::Printed;
use super::render;
use super::scrolling::{self, ScrollingBackend};
use super::terminal::{self, Mode};

type FullTerminal = Terminal<ScrollingBackend<CrosstermBackend<Stdout>>>;

fn full_terminal() -> io::Result<FullTerminal> {
    let mut term = Terminal::new(ScrollingBackend::new(CrosstermBackend::new(stdout()))?)?;
    scrolling::release_second_buffer(&mut term);
    Ok(term)
}

pub struct Screen {
    mode: Mode,
    /// Whole-screen drawing: full-screen mode, and inline mode's full-screen popups (made
    /// when first needed: its buffers are a few screens' worth of cells).
    full: Option<FullTerminal>,
    inline: InlineScreen<Stdout>,
    printed: Printed,
    /// Inline mode: a full-screen popup is on the alternate screen.
    popup: bool,
    /// The whole-screen drawing checks the terminal's size before its next frame.
    resized: bool,
    /// Inline mode: the size the live region is erased and drawn again at, before the next
    /// frame.
    new_size: Option<(u16, u16)>,
}

impl Screen {
    /// The terminal is already in `mode` (`terminal::enter`).
    pub fn new(mode: Mode) -> io::Result<Screen> {
        let full = match mode {
            Mode::Fullscreen => Some(full_terminal()?),
            Mode::Inline => None,
        };
        let (width, height) = crossterm::terminal::size()?;
        Ok(Screen {
            mode,
            full,
            inline: InlineScreen::new(stdout(), width, height),
            printed: Printed::default(),
            popup: false,
            resized: true,
            new_size: None,
        })
    }

    /// Draw one frame.
    pub fn draw(&mut self, app: &mut App, now: Instant) -> io::Result<()> {
        if self.mode == Mode::Fullscreen {
            return self.draw_full(app, now);
        }
        if render::wants_full_screen(app) {
            // The conversation behind the popup is its end (the terminal scrolls in this
            // mode, not the app).
            app.transcript.follow();
            if !self.popup {
                terminal::enter_alternate()?;
                self.popup = true;
                self.full_mut()?.clear()?;
                self.resized = true;
            }
            return self.draw_full(app, now);
        }
        if self.popup {
            terminal::leave_alternate()?;
            self.popup = false;
        }
        if let Some((width, height)) = self.new_size.take() {
            self.inline.resize(width, height)?;
        }
        inline_frame(app, &mut self.printed, &mut self.inline, now)?;
        terminal::set_live_region(self.inline.is_drawn());
        Ok(())
    }

    fn full_mut(&mut self) -> io::Result<&mut FullTerminal> {
        if self.full.is_none() {
            self.full = Some(full_terminal()?);
        }
        match self.full.as_mut() {
            Some(full) => Ok(full),
            None => Err(io::Error::other("no full-screen terminal")),
        }
    }

    fn draw_full(&mut self, app: &mut App, now: Instant) -> io::Result<()> {
        let resized = std::mem::take(&mut self.resized);
        let full = self.full_mut()?;
        execute!(full.backend_mut(), BeginSynchronizedUpdate)?;
        if resized {
            full.autoresize()?;
            scrolling::release_second_buffer(full);
        }
        let drawn = scrolling::draw_frame(full, |f| render::draw(f, app, now));
        execute!(full.backend_mut(), EndSynchronizedUpdate)?;
        drawn
    }

    /// The terminal is now `width`×`height`.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.resized = true;
        if self.mode == Mode::Inline {
            self.new_size = Some((width, height));
        }
    }

    /// Before another program takes the terminal (Ctrl+Z, the external editor): inline mode
    /// erases its live region (and leaves a popup's alternate screen).
    pub fn hand_over(&mut self) -> io::Result<()> {
        if self.mode == Mode::Inline {
            if self.popup {
                terminal::leave_alternate()?;
                self.popup = false;
            }
            self.inline.clear()?;
            terminal::set_live_region(false);
        }
        Ok(())
    }

    /// The terminal is the UI's again (after [`Screen::hand_over`] and `terminal::enter`):
    /// the next frame is drawn whole, at the terminal's size now.
    pub fn take_back(&mut self) -> io::Result<()> {
        self.resized = true;
        match self.mode {
            // Only the alternate screen may be cleared: inline mode's normal screen holds the
            // conversation.
            Mode::Fullscreen => self.full_mut()?.clear(),
            Mode::Inline => {
                self.new_size = Some(crossterm::terminal::size()?);
                Ok(())
            }
        }
    }

    /// Quitting: inline mode prints the rest of the conversation (cells still changing as
    /// they look now) and erases the live region, so what comes next (the shell's prompt)
    /// starts right after the conversation.
    pub fn finish(&mut self, app: &mut App, now: Instant) -> io::Result<()> {
        if self.mode != Mode::Inline {
            return Ok(());
        }
        if self.popup {
            terminal::leave_alternate()?;
            self.popup = false;
        }
        if let Some((width, height)) = self.new_size.take() {
            self.inline.resize(width, height)?;
        }
        let view = app.view(now);
        let width = self.inline.size().0 as usize;
        let rest = self.printed.rest(&mut app.transcript, width, &view);
        self.inline.draw(&rest, Buffer::empty(Rect::ZERO))?;
        terminal::set_live_region(false);
        Ok(())
    }

    /// Write bytes between frames (a notification).
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let out = self.inline.out();
        out.write_all(bytes)?;
        out.flush()
    }
}

/// One inline frame: print what is finished above the live region, then draw the live region.
pub fn inline_frame<W: Write>(
    app: &mut App,
    printed: &mut Printed,
    screen: &mut InlineScreen<W>,
    now: Instant,
) -> io::Result<()> {
    let (width, height) = screen.size();
    let view = app.view(now);
    let room = height.saturating_sub(render::bottom_height(app, width, height));
    let split = printed.split(&mut app.transcript, width as usize, &view, room as usize);
    let live = render::draw_live(app, &split.live, width, height, now);
    screen.draw(&split.history, live)
}

//! Terminal hygiene: entering and leaving the UI's terminal modes, on every exit path.
//!
//! [`enter`] turns on raw mode, bracketed paste, focus reports (for notifications) and the
//! kitty keyboard protocol (so Shift+Enter and Alt+Enter are distinguishable; terminals without
//! it ignore the request). In full-screen mode ([`Mode::Fullscreen`]) it also switches to the
//! alternate screen and captures the mouse; the default inline mode does neither, so the wheel
//! scrolls the terminal's own scrollback and the mouse selects text natively. [`restore`]
//! undoes all of it and is idempotent, so the normal quit path, an error, the panic hook
//! ([`install_panic_hook`], which restores before the message is printed),
//! SIGTERM/SIGHUP/SIGINT (handled in the loop), Ctrl+Z ([`suspend`]) and Ctrl+G (the loop,
//! around the external editor, then [`enter`] again) can all call it.
//! [`Guard`] calls it on drop as a last line of defence.
//!
//! Inline mode borrows the alternate screen for a moment ([`enter_alternate`],
//! [`leave_alternate`]) while a full-screen popup is open; [`restore`] leaves it only when it
//! is on (leaving it when it is off would move the cursor to a stale saved position). While a
//! live region is drawn below the printed conversation ([`set_live_region`]), [`restore`]
//! erases it first, so a message printed after a crash starts where the conversation ends.

use std::io::{Write, stdout};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// How the UI uses the terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The conversation is printed into the terminal's scrollback; only a live region at the
    /// bottom (the streaming answer, the editor, the footer) is redrawn.
    #[default]
    Inline,
    /// The alternate screen, with the app's own scrolling and mouse capture.
    Fullscreen,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The mode [`enter`] set up: 0 inline, 1 full screen.
static MODE: AtomicU8 = AtomicU8::new(0);
/// The alternate screen is on.
static ALTERNATE: AtomicBool = AtomicBool::new(false);
/// Inline mode: a live region is drawn from the cursor's row down.
static LIVE_REGION: AtomicBool = AtomicBool::new(false);

fn mode() -> Mode {
    if MODE.load(Ordering::SeqCst) == 1 {
        Mode::Fullscreen
    } else {
        Mode::Inline
    }
}

/// Enter the UI's terminal modes.
pub fn enter(mode: Mode) -> std::io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    MODE.store(u8::from(mode == Mode::Fullscreen), Ordering::SeqCst);
    let mut out = stdout();
    if mode == Mode::Fullscreen {
        execute!(out, EnterAlternateScreen, EnableMouseCapture)?;
        ALTERNATE.store(true, Ordering::SeqCst);
    }
    execute!(
        out,
        EnableBracketedPaste,
        EnableFocusChange,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
        crossterm::cursor::Hide,
    )?;
    // Title: π - <folder>.
    if let Ok(cwd) = std::env::current_dir()
        && let Some(name) = cwd.file_name()
    {
        let title = super::sanitize::sanitize(&name.to_string_lossy());
        let _ = execute!(out, crossterm::terminal::SetTitle(format!("π - {title}")));
    }
    Ok(())
}

/// Inline mode: show a full-screen popup on the alternate screen (the normal screen and its
/// scrollback stay as they are, the cursor's place is saved).
pub fn enter_alternate() -> std::io::Result<()> {
    if !ALTERNATE.swap(true, Ordering::SeqCst) {
        execute!(stdout(), EnterAlternateScreen)?;
    }
    Ok(())
}

/// Inline mode: back to the normal screen, exactly as it was, the cursor where it was.
pub fn leave_alternate() -> std::io::Result<()> {
    if ALTERNATE.swap(false, Ordering::SeqCst) {
        execute!(stdout(), LeaveAlternateScreen)?;
    }
    Ok(())
}

/// Inline mode: whether a live region is drawn below the cursor (erased by [`restore`]).
pub fn set_live_region(drawn: bool) {
    LIVE_REGION.store(drawn, Ordering::SeqCst);
}

/// Leave the UI's terminal modes (no-op when not in them).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = stdout();
    let _ = execute!(out, PopKeyboardEnhancementFlags, DisableFocusChange);
    if mode() == Mode::Fullscreen {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, DisableBracketedPaste);
    if ALTERNATE.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, LeaveAlternateScreen);
    }
    if LIVE_REGION.swap(false, Ordering::SeqCst) {
        // The cursor is at the live region's top: erase it and everything below.
        let _ = write!(out, "\r\x1b[0m\x1b[J");
    }
    let _ = execute!(out, crossterm::cursor::Show);
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Restores the terminal when dropped.
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Restore the terminal before a panic message is printed. A panic the agent contains (a tool,
/// a hook, a provider stream: it becomes an error the screen shows) leaves the screen alone.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if crate::agent::protocol::panic::is_contained() {
            return;
        }
        restore();
        previous(info);
    }));
}

/// Ctrl+Z: restore the terminal, stop the process, and re-enter when continued.
pub fn suspend() -> std::io::Result<()> {
    let mode = mode();
    restore();
    // SAFETY: raise() only sends a signal to this process; SIGTSTP stops it until SIGCONT.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    enter(mode)
}

/// The mode [`enter`] last set up (to enter it again after the external editor).
pub fn current_mode() -> Mode {
    mode()
}

/// Copy text to the clipboard with OSC 52 (works over SSH in most terminals).
pub fn copy_osc52(text: &str) {
    let encoded = base64(text.as_bytes());
    let mut out = stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

/// Standard base64 with padding, as OSC 52 takes it.
fn base64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(super::base64(b"pi"), "cGk=");
        assert_eq!(super::base64(b"hello!"), "aGVsbG8h");
        assert_eq!(super::base64(b"a"), "YQ==");
    }
}

//! Terminal hygiene: entering and leaving the full-screen mode, on every exit path.
//!
//! [`enter`] switches to the alternate screen, raw mode, bracketed paste, mouse capture and the
//! kitty keyboard protocol (so Shift+Enter and Alt+Enter are distinguishable; terminals without
//! it ignore the request). [`restore`] undoes all of it and is idempotent, so the normal quit
//! path, an error, the panic hook ([`install_panic_hook`], which restores before the message is
//! printed), SIGTERM/SIGHUP/SIGINT (handled in the loop), Ctrl+Z ([`suspend`]) and Ctrl+G (the
//! loop, around the external editor, then [`enter`] again) can all call it.
//! [`Guard`] calls it on drop as a last line of defence.

use std::io::{Write, stdout};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Enter full-screen mode.
pub fn enter() -> std::io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture,
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

/// Leave full-screen mode (no-op when not in it).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = stdout();
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show,
    );
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
    restore();
    // SAFETY: raise() only sends a signal to this process; SIGTSTP stops it until SIGCONT.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    enter()
}

/// Copy text to the clipboard with OSC 52 (works over SSH in most terminals).
pub fn copy_osc52(text: &str) {
    let encoded = base64(text.as_bytes());
    let mut out = stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
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

//! Notifications: telling the person that a run ended or an approval waits, when they are
//! looking elsewhere.
//!
//! The terminal reports focus changes (focus reporting is turned on in `terminal.rs`; crossterm
//! turns the reports into `FocusGained`/`FocusLost` events). While it is not focused, the app's
//! notifications are written to it as `notify` in config.toml says: the bell (the default: every
//! terminal has one and shows it as its owner set it up), a desktop notification with text
//! (OSC 9 for iTerm2, WezTerm, Ghostty and kitty; OSC 777 for foot; the bell for terminals
//! not known to show either, and inside tmux or screen, which would not pass them on), or
//! nothing. A terminal that never reports focus counts as focused, so it is never notified.

use crate::config::interactive::NotifyMode;

/// What is written to the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sequence {
    Bell,
    /// `ESC ] 9 ; text BEL`.
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL`.
    Osc777,
}

/// The sequence `mode` means in the terminal the environment describes.
pub fn sequence(mode: NotifyMode, env: &dyn Fn(&str) -> Option<String>) -> Option<Sequence> {
    match mode {
        NotifyMode::Off => None,
        NotifyMode::Bell => Some(Sequence::Bell),
        NotifyMode::Osc => Some(desktop(env).unwrap_or(Sequence::Bell)),
    }
}

/// The desktop notification the terminal is known to show, if any.
fn desktop(env: &dyn Fn(&str) -> Option<String>) -> Option<Sequence> {
    let term = env("TERM").unwrap_or_default();
    if env("TMUX").is_some() || term.starts_with("screen") || term.starts_with("tmux") {
        return None;
    }
    if matches!(
        env("TERM_PROGRAM").as_deref(),
        Some("iTerm.app" | "WezTerm" | "ghostty")
    ) {
        return Some(Sequence::Osc9);
    }
    match term.as_str() {
        "xterm-kitty" | "xterm-ghostty" => Some(Sequence::Osc9),
        "foot" | "foot-extra" => Some(Sequence::Osc777),
        _ => None,
    }
}

/// Text fit for the inside of an OSC sequence: no control characters, and no `;` where it
/// would start another field.
fn clean(text: &str, semicolons: bool) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || (!semicolons && c == ';') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The bytes of a notification saying `body`.
pub fn bytes(seq: Sequence, body: &str) -> Vec<u8> {
    match seq {
        Sequence::Bell => b"\x07".to_vec(),
        Sequence::Osc9 => format!("\x1b]9;pi: {}\x07", clean(body, true)).into_bytes(),
        Sequence::Osc777 => format!("\x1b]777;notify;pi;{}\x07", clean(body, false)).into_bytes(),
    }
}

/// Whether the terminal is focused, and what to send when it is not.
#[derive(Debug)]
pub struct Notifier {
    sequence: Option<Sequence>,
    focused: bool,
}

impl Notifier {
    pub fn new(mode: NotifyMode, env: &dyn Fn(&str) -> Option<String>) -> Self {
        Notifier {
            sequence: sequence(mode, env),
            focused: true,
        }
    }

    /// The terminal gained (true) or lost focus.
    pub fn focus(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// The bytes to write for `body`: none while focused, or with notifications off.
    pub fn notice(&self, body: &str) -> Option<Vec<u8>> {
        if self.focused {
            return None;
        }
        self.sequence.map(|s| bytes(s, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn osc_only_where_the_terminal_is_known_to_show_it() {
        let iterm = env(&[("TERM_PROGRAM", "iTerm.app"), ("TERM", "xterm-256color")]);
        assert_eq!(sequence(NotifyMode::Osc, &iterm), Some(Sequence::Osc9));
        let kitty = env(&[("TERM", "xterm-kitty")]);
        assert_eq!(sequence(NotifyMode::Osc, &kitty), Some(Sequence::Osc9));
        let foot = env(&[("TERM", "foot")]);
        assert_eq!(sequence(NotifyMode::Osc, &foot), Some(Sequence::Osc777));
        let xterm = env(&[("TERM", "xterm-256color")]);
        assert_eq!(sequence(NotifyMode::Osc, &xterm), Some(Sequence::Bell));
        let tmux = env(&[("TERM_PROGRAM", "WezTerm"), ("TMUX", "/tmp/tmux-1/default")]);
        assert_eq!(sequence(NotifyMode::Osc, &tmux), Some(Sequence::Bell));
        assert_eq!(sequence(NotifyMode::Off, &iterm), None);
        assert_eq!(sequence(NotifyMode::Bell, &iterm), Some(Sequence::Bell));
    }

    #[test]
    fn the_text_cannot_end_the_sequence() {
        assert_eq!(
            bytes(Sequence::Osc777, "a;b\x07c\x1b]"),
            b"\x1b]777;notify;pi;a b c ]\x07"
        );
        assert_eq!(
            bytes(Sequence::Osc9, "done; ok"),
            b"\x1b]9;pi: done; ok\x07"
        );
        assert_eq!(bytes(Sequence::Bell, "x"), b"\x07");
    }

    #[test]
    fn nothing_while_focused() {
        let mut n = Notifier::new(NotifyMode::Bell, &env(&[]));
        assert_eq!(n.notice("done"), None);
        n.focus(false);
        assert_eq!(n.notice("done"), Some(b"\x07".to_vec()));
        n.focus(true);
        assert_eq!(n.notice("done"), None);
        let mut off = Notifier::new(NotifyMode::Off, &env(&[]));
        off.focus(false);
        assert_eq!(off.notice("done"), None);
    }
}

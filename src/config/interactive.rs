//! The interactive UI's settings: `[tui]` (how the terminal is used) and `notify` (how the
//! person is told a run ended or an approval waits while the terminal is in the background).

use serde::Deserialize;

/// `[tui]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TuiConfig {
    /// The full-screen alternate-screen mode instead of the inline one (`--fullscreen`).
    pub fullscreen: Option<bool>,
}

/// The `[tui]` keys, for the unknown-key warnings.
pub(crate) const TUI_KEYS: &[&str] = &["fullscreen"];

/// `notify`: what is sent when a run ends or an approval waits while the terminal is not
/// focused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMode {
    /// Nothing.
    Off,
    /// The terminal bell (BEL): every terminal has one, and each shows it its own way (a
    /// badge, an urgent window, a sound) or not at all, as its owner set it up.
    #[default]
    Bell,
    /// A desktop notification with text (OSC 9 or OSC 777) where the terminal is known to
    /// show one; the bell elsewhere.
    Osc,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_read_as_documented() {
        #[derive(Deserialize)]
        struct T {
            notify: NotifyMode,
            tui: TuiConfig,
        }
        let t: T = toml::from_str("notify = \"osc\"\n[tui]\nfullscreen = true\n").unwrap();
        assert_eq!(t.notify, NotifyMode::Osc);
        assert_eq!(t.tui.fullscreen, Some(true));
        assert!(toml::from_str::<T>("notify = \"loud\"\n[tui]\n").is_err());
    }
}

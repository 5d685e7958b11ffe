//! The colours of the interactive UI: two palettes, `dark` (the default, for dark terminal
//! backgrounds) and `light`, each a [`Theme`] of named tokens, plus per-token overrides from
//! the `[colors]` table of `config.toml`.
//!
//! Rendering code asks [`current`] for the theme instead of naming colours. The TUI sets the
//! theme once at start ([`set`]); tests render with another theme on their own thread through
//! [`scoped`], which leaves other tests (running in parallel) alone. The dark palette uses
//! exactly the colours the UI had before themes existed; the light one uses darker 256-colour
//! shades that read on a white background. Text without a token (plain prose) keeps the
//! terminal's own foreground in both.
//!
//! Colours in config are names (`"red"`, `"dark gray"`, `"light blue"`, `"reset"` for the
//! terminal's default), `"#rrggbb"`, or a 256-colour index (`"236"` or `236`).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::RwLock;

use ratatui::style::{Color, Style};

use crate::config::theme::{ColorValue, Named, ThemeName};

/// A palette: one colour per thing the UI shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// Spinners, running tools, the selected row of a picker, popup borders.
    pub accent: Color,
    /// Secondary text: rules, hints, the footer, thinking, collapsed tool output.
    pub dim: Color,
    /// Errors and failed tools.
    pub error: Color,
    /// Notices (retries, model changes) and the context-usage warning.
    pub warning: Color,
    /// Tools that succeeded.
    pub success: Color,
    /// Background and text of the person's own messages.
    pub user_bg: Color,
    pub user_fg: Color,
    /// Inline code and code blocks in the model's markdown.
    pub code: Color,
    /// Link text in markdown.
    pub link: Color,
    /// Markdown headings: level 1, level 2, levels 3 to 6.
    pub heading_1: Color,
    pub heading_2: Color,
    pub heading_3: Color,
    /// Added and removed lines of an `edit` diff.
    pub diff_added: Color,
    pub diff_removed: Color,
    /// The editor's rules by thinking level: off, minimal, low, medium, high, xhigh.
    /// Part of the palette, not overridable.
    pub thinking: [Color; 6],
    /// The bundled syntect theme that colours code blocks (`src/tui/highlight.rs`).
    pub syntax: &'static str,
}

impl Theme {
    /// For dark backgrounds (the default).
    pub const DARK: Theme = Theme {
        accent: Color::Cyan,
        dim: Color::DarkGray,
        error: Color::Red,
        warning: Color::Yellow,
        success: Color::Green,
        user_bg: Color::Indexed(236),
        user_fg: Color::White,
        code: Color::Yellow,
        link: Color::Blue,
        heading_1: Color::Magenta,
        heading_2: Color::Cyan,
        heading_3: Color::Blue,
        diff_added: Color::Green,
        diff_removed: Color::Red,
        thinking: [
            Color::DarkGray,
            Color::Blue,
            Color::Cyan,
            Color::Green,
            Color::Yellow,
            Color::Magenta,
        ],
        syntax: "base16-ocean.dark",
    };

    /// For light backgrounds.
    pub const LIGHT: Theme = Theme {
        accent: Color::Indexed(25),
        dim: Color::Indexed(243),
        error: Color::Indexed(160),
        warning: Color::Indexed(130),
        success: Color::Indexed(28),
        user_bg: Color::Indexed(254),
        user_fg: Color::Indexed(232),
        code: Color::Indexed(94),
        link: Color::Indexed(26),
        heading_1: Color::Indexed(90),
        heading_2: Color::Indexed(25),
        heading_3: Color::Indexed(24),
        diff_added: Color::Indexed(28),
        diff_removed: Color::Indexed(160),
        thinking: [
            Color::Indexed(243),
            Color::Indexed(26),
            Color::Indexed(31),
            Color::Indexed(28),
            Color::Indexed(130),
            Color::Indexed(90),
        ],
        syntax: "InspiredGitHub",
    };

    /// The named palette with `overrides` (token → colour) applied; unknown tokens are skipped
    /// (config loading has already warned about them).
    pub fn build(name: ThemeName, overrides: &BTreeMap<String, ColorValue>) -> Theme {
        match name {
            ThemeName::Dark => Theme::DARK,
            ThemeName::Light => Theme::LIGHT,
        }
        .overridden(overrides)
    }

    /// This palette with `overrides` (token → colour) applied; unknown tokens are skipped.
    fn overridden(mut self, overrides: &BTreeMap<String, ColorValue>) -> Theme {
        for (token, c) in overrides {
            if let Some(slot) = self.slot(token) {
                *slot = color(*c);
            }
        }
        self
    }

    /// A Node.js pi theme file's palette: its tokens on pi's (the built-in palette its user
    /// message background suits supplies what the file lacks), then `overrides`.
    pub fn from_file(
        file: &crate::config::theme_files::ThemeFile,
        overrides: &BTreeMap<String, ColorValue>,
    ) -> Theme {
        let get = |token: &str| file.colors.get(token).copied().map(color);
        let light = matches!(
            file.colors.get("userMessageBg"),
            Some(ColorValue::Rgb(r, g, b))
                if 0.299 * f64::from(*r) + 0.587 * f64::from(*g) + 0.114 * f64::from(*b) > 140.0
        );
        let mut t = if light { Theme::LIGHT } else { Theme::DARK };
        let pairs: [(&str, &mut Color); 14] = [
            ("accent", &mut t.accent),
            ("muted", &mut t.dim),
            ("error", &mut t.error),
            ("warning", &mut t.warning),
            ("success", &mut t.success),
            ("userMessageBg", &mut t.user_bg),
            ("userMessageText", &mut t.user_fg),
            ("mdCode", &mut t.code),
            ("mdLink", &mut t.link),
            ("mdHeading", &mut t.heading_1),
            ("mdHeading", &mut t.heading_2),
            ("mdHeading", &mut t.heading_3),
            ("toolDiffAdded", &mut t.diff_added),
            ("toolDiffRemoved", &mut t.diff_removed),
        ];
        for (token, slot) in pairs {
            if let Some(c) = get(token) {
                *slot = c;
            }
        }
        let levels = [
            "thinkingOff",
            "thinkingMinimal",
            "thinkingLow",
            "thinkingMedium",
            "thinkingHigh",
            "thinkingXhigh",
        ];
        for (slot, token) in t.thinking.iter_mut().zip(levels) {
            if let Some(c) = get(token) {
                *slot = c;
            }
        }
        t.overridden(overrides)
    }

    fn slot(&mut self, token: &str) -> Option<&mut Color> {
        Some(match token {
            "accent" => &mut self.accent,
            "dim" => &mut self.dim,
            "error" => &mut self.error,
            "warning" => &mut self.warning,
            "success" => &mut self.success,
            "user_bg" => &mut self.user_bg,
            "user_fg" => &mut self.user_fg,
            "code" => &mut self.code,
            "link" => &mut self.link,
            "heading_1" => &mut self.heading_1,
            "heading_2" => &mut self.heading_2,
            "heading_3" => &mut self.heading_3,
            "diff_added" => &mut self.diff_added,
            "diff_removed" => &mut self.diff_removed,
            _ => return None,
        })
    }
}

impl Default for Theme {
    fn default() -> Self {
        Theme::DARK
    }
}

/// A config colour as the terminal library draws it.
pub fn color(value: ColorValue) -> Color {
    match value {
        ColorValue::Reset => Color::Reset,
        ColorValue::Rgb(r, g, b) => Color::Rgb(r, g, b),
        ColorValue::Indexed(i) => Color::Indexed(i),
        ColorValue::Named(n) => match n {
            Named::Black => Color::Black,
            Named::Red => Color::Red,
            Named::Green => Color::Green,
            Named::Yellow => Color::Yellow,
            Named::Blue => Color::Blue,
            Named::Magenta => Color::Magenta,
            Named::Cyan => Color::Cyan,
            Named::Gray => Color::Gray,
            Named::DarkGray => Color::DarkGray,
            Named::LightRed => Color::LightRed,
            Named::LightGreen => Color::LightGreen,
            Named::LightYellow => Color::LightYellow,
            Named::LightBlue => Color::LightBlue,
            Named::LightMagenta => Color::LightMagenta,
            Named::LightCyan => Color::LightCyan,
            Named::White => Color::White,
        },
    }
}

/// The theme the configuration asks for (a built-in one; see [`named`] for theme files):
/// its palette with the `[colors]` overrides.
pub fn from_config(config: &crate::config::Config) -> Theme {
    let name = match config.theme.as_deref() {
        Some("light") => ThemeName::Light,
        _ => ThemeName::Dark,
    };
    Theme::build(name, &config.colors)
}

/// The theme called `name`: `dark`, `light` or a theme file's, with the `[colors]`
/// overrides; `None` when no theme has that name.
pub fn named(
    name: &str,
    files: &[crate::config::theme_files::ThemeFile],
    overrides: &BTreeMap<String, ColorValue>,
) -> Option<Theme> {
    match name {
        "dark" => Some(Theme::build(ThemeName::Dark, overrides)),
        "light" => Some(Theme::build(ThemeName::Light, overrides)),
        other => files
            .iter()
            .find(|f| f.name == other)
            .map(|f| Theme::from_file(f, overrides)),
    }
}

static GLOBAL: RwLock<Theme> = RwLock::new(Theme::DARK);

thread_local! {
    static SCOPED: Cell<Option<Theme>> = const { Cell::new(None) };
}

/// The theme to draw with: this thread's [`scoped`] one if any, else the one [`set`] chose.
pub fn current() -> Theme {
    SCOPED
        .with(Cell::get)
        .unwrap_or_else(|| *crate::sync::read(&GLOBAL))
}

/// A style whose foreground is one colour of the current theme: `fg(|t| t.dim)`.
pub fn fg(pick: impl FnOnce(&Theme) -> Color) -> Style {
    Style::new().fg(pick(&current()))
}

/// Choose the theme for the whole program (done once, when the TUI starts).
pub fn set(theme: Theme) {
    *crate::sync::write(&GLOBAL) = theme;
}

/// Run `f` drawing with `theme` on this thread only.
pub fn scoped<R>(theme: Theme, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Theme>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(theme))));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_single_tokens() {
        let mut o = BTreeMap::new();
        o.insert("accent".to_string(), ColorValue::Rgb(1, 2, 3));
        o.insert("nonsense".to_string(), ColorValue::Named(Named::Red));
        let t = Theme::build(ThemeName::Light, &o);
        assert_eq!(t.accent, Color::Rgb(1, 2, 3));
        assert_eq!(t.error, Theme::LIGHT.error);
        assert_eq!(Theme::build(ThemeName::Dark, &BTreeMap::new()), Theme::DARK);
        // Every documented token has a slot.
        let mut t = Theme::DARK;
        for token in crate::config::theme::TOKENS {
            assert!(t.slot(token).is_some(), "{token}");
        }
    }

    #[test]
    fn config_colours_map_to_the_same_terminal_colours_as_their_names() {
        use crate::config::theme::parse_color;
        use std::str::FromStr;
        for name in [
            "red",
            "dark gray",
            "Light-Blue",
            "#ff8000",
            "236",
            "reset",
            "bright black",
            "light gray",
            "grey",
            "white",
            "light cyan",
        ] {
            let ours = parse_color(name).map(color);
            assert_eq!(ours.ok(), Color::from_str(name).ok(), "{name}");
        }
        assert!(parse_color("#ff80").unwrap_err().contains("#rrggbb"));
    }

    #[test]
    fn the_documented_colours_are_the_dark_palette() {
        let config: crate::config::Config =
            toml::from_str(&crate::config::uncommented_example()).unwrap();
        assert_eq!(from_config(&config), Theme::DARK);
        assert_eq!(from_config(&Default::default()), Theme::DARK);
    }

    #[test]
    fn scoped_themes_stay_on_their_thread_and_are_restored() {
        assert_eq!(current(), Theme::DARK);
        scoped(Theme::LIGHT, || {
            assert_eq!(current(), Theme::LIGHT);
            let other = std::thread::spawn(current).join().unwrap();
            assert_eq!(other, Theme::DARK);
        });
        assert_eq!(current(), Theme::DARK);
    }
}

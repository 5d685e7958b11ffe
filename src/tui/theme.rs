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
use std::str::FromStr;
use std::sync::RwLock;

use ratatui::style::{Color, Style};
use serde::Deserialize;

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

/// The names of the overridable tokens, as written in `[colors]`.
pub const TOKENS: &[&str] = &[
    "accent",
    "dim",
    "error",
    "warning",
    "success",
    "user_bg",
    "user_fg",
    "code",
    "link",
    "heading_1",
    "heading_2",
    "heading_3",
    "diff_added",
    "diff_removed",
];

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
        let mut t = match name {
            ThemeName::Dark => Theme::DARK,
            ThemeName::Light => Theme::LIGHT,
        };
        for (token, ColorValue(c)) in overrides {
            if let Some(slot) = t.slot(token) {
                *slot = *c;
            }
        }
        t
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

/// The `theme` key: which palette to start from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThemeName {
    #[default]
    Dark,
    Light,
}

/// One colour from config. Refused while the file is read, so a bad one is reported with its
/// line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColorValue(pub Color);

impl<'de> Deserialize<'de> for ColorValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ColorValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a colour: a name, \"#rrggbb\" or a 256-colour index")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ColorValue, E> {
                parse_color(s).map(ColorValue).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<ColorValue, E> {
                u8::try_from(n)
                    .map(|i| ColorValue(Color::Indexed(i)))
                    .map_err(|_| E::custom(format!("colour index {n} is not between 0 and 255")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A colour as config writes it.
pub fn parse_color(s: &str) -> Result<Color, String> {
    Color::from_str(s.trim()).map_err(|_| {
        format!(
            "unknown colour `{s}` (expected a name such as \"red\", \"dark gray\" or \
             \"light blue\", \"#rrggbb\", or a 256-colour index 0-255)"
        )
    })
}

static GLOBAL: RwLock<Theme> = RwLock::new(Theme::DARK);

thread_local! {
    static SCOPED: Cell<Option<Theme>> = const { Cell::new(None) };
}

/// The theme to draw with: this thread's [`scoped`] one if any, else the one [`set`] chose.
pub fn current() -> Theme {
    SCOPED
        .with(Cell::get)
        .unwrap_or_else(|| *GLOBAL.read().unwrap_or_else(|e| e.into_inner()))
}

/// A style whose foreground is one colour of the current theme: `fg(|t| t.dim)`.
pub fn fg(pick: impl FnOnce(&Theme) -> Color) -> Style {
    Style::new().fg(pick(&current()))
}

/// Choose the theme for the whole program (done once, when the TUI starts).
pub fn set(theme: Theme) {
    *GLOBAL.write().unwrap_or_else(|e| e.into_inner()) = theme;
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
        o.insert("accent".to_string(), ColorValue(Color::Rgb(1, 2, 3)));
        o.insert("nonsense".to_string(), ColorValue(Color::Red));
        let t = Theme::build(ThemeName::Light, &o);
        assert_eq!(t.accent, Color::Rgb(1, 2, 3));
        assert_eq!(t.error, Theme::LIGHT.error);
        assert_eq!(Theme::build(ThemeName::Dark, &BTreeMap::new()), Theme::DARK);
        // Every documented token has a slot.
        let mut t = Theme::DARK;
        for token in TOKENS {
            assert!(t.slot(token).is_some(), "{token}");
        }
    }

    #[test]
    fn colours_parse_in_every_documented_form() {
        assert_eq!(parse_color("red"), Ok(Color::Red));
        assert_eq!(parse_color("dark gray"), Ok(Color::DarkGray));
        assert_eq!(parse_color("Light-Blue"), Ok(Color::LightBlue));
        assert_eq!(parse_color("#ff8000"), Ok(Color::Rgb(255, 128, 0)));
        assert_eq!(parse_color("236"), Ok(Color::Indexed(236)));
        assert_eq!(parse_color("reset"), Ok(Color::Reset));
        assert!(parse_color("#ff80").unwrap_err().contains("#rrggbb"));
        assert!(parse_color("blurple").is_err());
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

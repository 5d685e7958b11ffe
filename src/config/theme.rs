//! The `theme` key and the `[colors]` table: which palette the interactive UI starts from, and
//! per-token colour overrides, as config writes them.
//!
//! This is data only: the UI turns it into colours of its own drawing library. A colour is a
//! name (`"red"`, `"dark gray"`, `"light blue"`, `"reset"` for the terminal's default),
//! `"#rrggbb"`, or a 256-colour index (`"236"` or `236`). A bad value is refused while the file
//! is read, so the error carries its line and column.

use serde::Deserialize;

/// The `theme` key: which palette to start from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThemeName {
    #[default]
    Dark,
    Light,
}

/// The names of the overridable tokens, as written in `[colors]`.
pub(crate) const TOKENS: &[&str] = &[
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

/// The sixteen named terminal colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    Black,
    Red,
    Green,
    Yellow,
    Blue,
    Magenta,
    Cyan,
    Gray,
    DarkGray,
    LightRed,
    LightGreen,
    LightYellow,
    LightBlue,
    LightMagenta,
    LightCyan,
    White,
}

/// One colour from config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorValue {
    /// The terminal's own default colour.
    Reset,
    Named(Named),
    Rgb(u8, u8, u8),
    Indexed(u8),
}

impl<'de> Deserialize<'de> for ColorValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ColorValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a colour: a name, \"#rrggbb\" or a 256-colour index")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ColorValue, E> {
                parse_color(s).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<ColorValue, E> {
                u8::try_from(n)
                    .map(ColorValue::Indexed)
                    .map_err(|_| E::custom(format!("colour index {n} is not between 0 and 255")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A colour as config writes it.
pub(crate) fn parse_color(s: &str) -> Result<ColorValue, String> {
    let t = s.trim();
    let unknown = || {
        format!(
            "unknown colour `{s}` (expected a name such as \"red\", \"dark gray\" or \
             \"light blue\", \"#rrggbb\", or a 256-colour index 0-255)"
        )
    };
    if let Some(hex) = t.strip_prefix('#') {
        if hex.len() != 6 || !hex.is_ascii() {
            return Err(unknown());
        }
        let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| unknown());
        return Ok(ColorValue::Rgb(byte(0)?, byte(2)?, byte(4)?));
    }
    if let Ok(i) = t.parse::<u8>() {
        return Ok(ColorValue::Indexed(i));
    }
    let key = t
        .to_lowercase()
        .replace([' ', '-', '_'], "")
        .replace("bright", "light")
        .replace("grey", "gray")
        .replace("silver", "gray")
        .replace("lightblack", "darkgray")
        .replace("lightwhite", "white")
        .replace("lightgray", "white");
    use Named::*;
    let named = match key.as_str() {
        "reset" | "default" => return Ok(ColorValue::Reset),
        "black" => Black,
        "red" => Red,
        "green" => Green,
        "yellow" => Yellow,
        "blue" => Blue,
        "magenta" => Magenta,
        "cyan" => Cyan,
        "gray" => Gray,
        "darkgray" => DarkGray,
        "lightred" => LightRed,
        "lightgreen" => LightGreen,
        "lightyellow" => LightYellow,
        "lightblue" => LightBlue,
        "lightmagenta" => LightMagenta,
        "lightcyan" => LightCyan,
        "white" => White,
        _ => return Err(unknown()),
    };
    Ok(ColorValue::Named(named))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hex_and_indexes_parse() {
        assert_eq!(
            parse_color("Dark Gray"),
            Ok(ColorValue::Named(Named::DarkGray))
        );
        assert_eq!(
            parse_color("dark-grey"),
            Ok(ColorValue::Named(Named::DarkGray))
        );
        assert_eq!(
            parse_color("light blue"),
            Ok(ColorValue::Named(Named::LightBlue))
        );
        assert_eq!(
            parse_color("bright red"),
            Ok(ColorValue::Named(Named::LightRed))
        );
        assert_eq!(
            parse_color("bright black"),
            Ok(ColorValue::Named(Named::DarkGray))
        );
        assert_eq!(parse_color("reset"), Ok(ColorValue::Reset));
        assert_eq!(
            parse_color("#102030"),
            Ok(ColorValue::Rgb(0x10, 0x20, 0x30))
        );
        assert_eq!(parse_color("236"), Ok(ColorValue::Indexed(236)));
        for bad in ["blurple", "#12345", "#gg0000", "256", "", "#ééé"] {
            assert!(parse_color(bad).is_err(), "{bad}");
        }
    }
}

//! Text made safe for a terminal by making its controls visible.
//!
//! Everything a model, a tool or a server produced passes through [`visible`] on every path to
//! a terminal: the interactive UI, print mode's answer on a terminal, messages on stderr,
//! window titles. No byte of it can move the cursor, change colours, set the title, write the
//! clipboard or reorder what is shown, and nothing is hidden either: an escape sequence is
//! shown as what it is (`␛]0;title␇`), so a command that carries one cannot pass for another.
//!
//! * ESC and the other C0 controls become their Unicode control pictures (`␛`, `␇`, `␍`, ...);
//!   DEL becomes `␡`. `\n` stays (callers split lines on it), and so does `\t`; a `\r` right
//!   before `\n` (a CRLF line end) is dropped.
//! * C1 controls (U+0080–U+009F) and the bidirectional overrides, embeddings, isolates and marks
//!   (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069) become `\u{…}` in plain text.
//! * So do the characters a terminal draws as nothing ([`is_invisible`]): tag characters
//!   (U+E0000–U+E007F, which can spell out a hidden instruction), zero-width space and
//!   non-joiner, word joiner and invisible operators, BOM, soft hyphen, Mongolian vowel
//!   separator, Hangul fillers, line and paragraph separators, and the rest of Unicode's
//!   Default_Ignorable_Code_Point set. Two are kept where emoji need them: a zero-width joiner
//!   between two emoji (👩‍💻), and one text/emoji variation selector (U+FE0E/U+FE0F) right after a
//!   visible character (❤️). Tag characters are always shown, so the few flags spelled with
//!   them (🏴 England, Scotland, Wales) show their tags.
//!
//! [`json_escaped`] is the counterpart for JSON lines: serde_json escapes C0 controls but writes
//! C1 controls, DEL and bidi controls raw.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is (the emoji joiners kept in context aside).
fn hazardous(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || is_bidi(c)
        || (is_invisible(c) && !is_emoji_joiner(c))
}

/// A character a terminal draws as nothing (or as a blank it is not): Unicode's
/// Default_Ignorable_Code_Point set, the line and paragraph separators and the interlinear
/// annotation controls.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// The invisible characters emoji sequences are made with, kept when they sit where an emoji
/// needs them ([`kept_in_context`]).
fn is_emoji_joiner(c: char) -> bool {
    matches!(c, '\u{200d}' | '\u{fe0e}' | '\u{fe0f}')
}

/// Pictographs a zero-width joiner may join.
fn is_pictograph(c: char) -> bool {
    matches!(
        c,
        '\u{a9}'
            | '\u{ae}'
            | '\u{203c}'
            | '\u{2049}'
            | '\u{2122}'
            | '\u{2139}'
            | '\u{2190}'..='\u{21ff}'
            | '\u{2300}'..='\u{23ff}'
            | '\u{2600}'..='\u{27bf}'
            | '\u{2b00}'..='\u{2bff}'
            | '\u{1f000}'..='\u{1faff}'
    )
}

/// Whether the emoji joiner `c`, after `prev` and before `next`, is part of an emoji: a
/// zero-width joiner between a pictograph (perhaps with its variation selector or skin tone)
/// and a pictograph, or one variation selector right after a visible character.
fn kept_in_context(c: char, prev: Option<char>, next: Option<char>) -> bool {
    let Some(prev) = prev else {
        return false;
    };
    if c == '\u{200d}' {
        return (is_pictograph(prev) || prev == '\u{fe0f}') && next.is_some_and(is_pictograph);
    }
    !prev.is_whitespace() && !prev.is_control() && !is_invisible(prev) && !is_bidi(prev)
}

/// The characters that reorder text on screen.
fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// `text` with every control that could act on a terminal shown instead (see the module docs).
/// Borrows when there is nothing to change.
pub fn visible(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(|c| hazardous(c) || is_emoji_joiner(c)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    let mut prev = text[..first].chars().next_back();
    let mut chars = text[first..].chars().peekable();
    while let Some(c) = chars.next() {
        let before = prev.replace(c);
        match c {
            c if is_emoji_joiner(c) => {
                if kept_in_context(c, before, chars.peek().copied()) {
                    out.push(c);
                } else {
                    out.push_str(&format!("\\u{{{:x}}}", c as u32));
                    // What follows a shown joiner starts afresh.
                    prev = None;
                }
            }
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\u{0}'..='\u{1f}' => {
                // U+2400 CONTROL PICTURES: ␀ ␁ ... ␟ in code order.
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if hazardous(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`visible`] for text going to a terminal; text going elsewhere (a pipe, a file) is kept as
/// the model wrote it.
pub fn for_output(text: &str, to_terminal: bool) -> Cow<'_, str> {
    if to_terminal {
        visible(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// A JSON text (one line, as serde_json wrote it) with C1 controls, DEL and bidi controls
/// escaped as `\uXXXX` too. Valid JSON in, the same value out.
pub fn json_escaped(json: &str) -> Cow<'_, str> {
    if !json.contains(|c: char| hazardous(c) && c > '\u{1f}') {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        // Outside strings JSON has only ASCII structure, so every such character sits inside a
        // string, where `\uXXXX` (a surrogate pair above the BMP) means the same character.
        if hazardous(c) && c > '\u{1f}' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let t = "héllo\nwörld ✓\ttab";
        assert!(matches!(visible(t), Cow::Borrowed(_)));
        assert_eq!(visible(t), t);
    }

    #[test]
    fn sequences_are_shown_not_run_or_hidden() {
        assert_eq!(
            visible("echo hello\u{1b}]0;touch HIDDEN_PROOF;\u{7}"),
            "echo hello␛]0;touch HIDDEN_PROOF;␇"
        );
        assert_eq!(visible("\u{1b}[31mred\u{1b}[0m"), "␛[31mred␛[0m");
        assert_eq!(visible("a\u{9b}2Jb"), "a\\u{9b}2Jb");
        assert_eq!(visible("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(visible("a\rb\u{8}c\u{7f}"), "a␍b␈c␡");
        assert_eq!(visible("line\r\nnext"), "line\nnext");
    }

    #[test]
    fn invisible_characters_are_shown_and_emoji_keep_their_joiners() {
        // "hi" spelled in tag characters, hidden after a harmless word.
        assert_eq!(visible("ok\u{e0068}\u{e0069}"), "ok\\u{e0068}\\u{e0069}");
        assert_eq!(
            visible("a\u{200b}b\u{200c}c\u{2060}d"),
            "a\\u{200b}b\\u{200c}c\\u{2060}d"
        );
        assert_eq!(
            visible("\u{feff}x\u{ad}y\u{180e}"),
            "\\u{feff}x\\u{ad}y\\u{180e}"
        );
        assert_eq!(visible("a\u{200d}b"), "a\\u{200d}b");
        assert_eq!(visible("\u{200d}\u{200d}"), "\\u{200d}\\u{200d}");
        assert_eq!(visible("x\u{fe0f}\u{fe0f}"), "x\u{fe0f}\\u{fe0f}");
        assert_eq!(visible("a\u{fe01}"), "a\\u{fe01}");
        for emoji in ["👩\u{200d}💻", "❤\u{fe0f}", "🏳\u{fe0f}\u{200d}🌈", "👍🏽"] {
            assert_eq!(visible(emoji), emoji);
        }
    }

    #[test]
    fn json_lines_escape_what_serde_leaves_raw() {
        let t = "a\u{9b}b\u{7f}\u{202e}\u{e0041}\u{200b}";
        let line = serde_json::to_string(&serde_json::json!({ "t": t })).unwrap();
        let escaped = json_escaped(&line);
        assert!(
            !escaped.contains(['\u{9b}', '\u{7f}', '\u{202e}', '\u{e0041}', '\u{200b}']),
            "{escaped}"
        );
        assert!(escaped.contains("\\udb40\\udc41"), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["t"], t);
    }

    /// A tiny deterministic generator (xorshift), so the fuzz test needs no dependency.
    fn bytes(seed: &mut u64, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                (*seed >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn no_control_survives_and_every_printable_character_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        for round in 0..3000 {
            let raw = bytes(&mut seed, 1 + round % 97);
            // Bias towards the interesting bytes: ESC, C1 lead bytes, bidi.
            let mut text = String::from_utf8_lossy(&raw).into_owned();
            if round % 3 == 0 {
                text.push_str("\u{1b}]52;c;aGk=\u{7}\u{9d}\u{202e}\u{2066}\r\u{e0041}\u{200d}");
            }
            let shown = visible(&text);
            for c in shown.chars() {
                assert!(
                    !hazardous(c) && c != '\r',
                    "{c:?} survived in {shown:?} (from {text:?})"
                );
            }
            // Every character that was not a control is still there, in order.
            let kept: String = text
                .chars()
                .filter(|c| !hazardous(*c) && !is_emoji_joiner(*c) && *c != '\r')
                .collect();
            let mut rest = shown.chars();
            for c in kept.chars() {
                assert!(
                    rest.any(|s| s == c),
                    "{c:?} was lost from {text:?}: {shown:?}"
                );
            }
            let json = serde_json::to_string(&text).unwrap();
            let escaped = json_escaped(&json);
            assert!(!escaped.contains(|c: char| hazardous(c)), "{escaped}");
            assert_eq!(
                serde_json::from_str::<String>(&escaped).unwrap(),
                text,
                "JSON keeps the value"
            );
        }
    }
}

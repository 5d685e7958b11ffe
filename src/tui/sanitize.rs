//! Making model and tool text safe to put on a terminal.
//!
//! Everything a model or a tool produced passes through [`sanitize`] before it becomes a
//! ratatui span: escape sequences (CSI, OSC, DCS, single-character escapes) are removed whole,
//! other C0/C1 control characters and DEL are dropped, carriage returns vanish and tabs become
//! spaces. Only `\n` survives, and callers split on it. No byte from a model can move the
//! cursor, change colours, set the title or talk to the clipboard.

/// Tabs expand to this many spaces (no tab stops: the cell grid has none we control).
const TAB: &str = "    ";

/// `text` without escape sequences or control characters other than `\n`.
pub fn sanitize(text: &str) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' || c == '\u{7f}')
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            '\u{1b}' => skip_escape(&mut chars),
            // C1 CSI / OSC / DCS introducers carry a sequence too.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        Some(']' | 'P' | '_' | '^' | 'X') => skip_string(chars),
        // Two-character sequences with an intermediate byte (e.g. `ESC ( B`).
        Some(' '..='/') => {
            chars.next();
        }
        _ => {}
    }
}

/// Parameters and intermediates up to a final byte in `@`..=`~`.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            return;
        }
    }
}

/// A string sequence ends at BEL or ST (`ESC \`).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn plain_text_passes_unchanged() {
        assert_eq!(sanitize("héllo\nwörld ✓"), "héllo\nwörld ✓");
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(sanitize("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(sanitize("a\u{1b}]52;c;ZXZpbA==\u{1b}\\b"), "ab");
        assert_eq!(sanitize("a\u{1b}[?1049lb"), "ab");
        assert_eq!(sanitize("a\u{9b}2Jb"), "ab");
        assert_eq!(sanitize("x\u{1b}(By"), "xy");
    }

    #[test]
    fn controls_are_dropped_and_tabs_expand() {
        assert_eq!(sanitize("a\rb\u{8}c\u{7}d\u{7f}e\tf"), "abcde    f");
    }

    #[test]
    fn an_unterminated_sequence_swallows_the_rest() {
        assert_eq!(sanitize("ok\u{1b}[12"), "ok");
    }
}

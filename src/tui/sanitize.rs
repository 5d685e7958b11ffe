//! Model and tool text made safe for the screen: [`crate::visible`] (controls shown, never
//! acted on), with tabs expanded (the cell grid has no tab stops the UI controls).

/// Tabs expand to this many spaces.
const TAB: &str = "    ";

/// `text` as the screen shows it: controls visible, tabs as spaces; only `\n` stays, and callers
/// split lines on it.
pub fn sanitize(text: &str) -> String {
    let shown = crate::visible::visible(text);
    if shown.contains('\t') {
        shown.replace('\t', TAB)
    } else {
        shown.into_owned()
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
    fn sequences_are_shown_and_tabs_expand() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m"), "␛[31mred␛[0m");
        assert_eq!(sanitize("a\u{1b}]0;title\u{7}b"), "a␛]0;title␇b");
        assert_eq!(sanitize("a\tb"), "a    b");
        assert_eq!(sanitize("evil\u{1b}[2K.txt"), "evil␛[2K.txt");
    }
}

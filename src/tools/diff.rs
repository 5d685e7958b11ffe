//! The diff `edit` puts in its result details for the UI.
//!
//! [`numbered_diff`] renders changed hunks with four lines of context, one line per row:
//! a sign (`-` removed, `+` added, space for context), a right-aligned line number (old numbers
//! for removed and context lines, new numbers for added lines), a space, and the text. Hunks are
//! separated by a row whose text is `...`. It also gives the first changed line in the new file,
//! where a viewer should scroll to. [`unified_patch`] gives the same change as a standard unified
//! diff (with `@@` headers) for tools that want one.
//!
//! Both diff by lines with a time budget, so a pathological pair of huge files degrades to a
//! coarser (still correct) diff instead of stalling the tool.

use std::time::Duration;

use similar::{ChangeTag, DiffTag, TextDiff};

/// Lines of unchanged context around each change.
pub(crate) const CONTEXT_LINES: usize = 4;
/// Time budget of the line diff.
const DIFF_BUDGET: Duration = Duration::from_millis(500);

/// A numbered diff and the first changed line (1-based, in the new text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NumberedDiff {
    pub text: String,
    pub first_changed_line: Option<usize>,
}

fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .timeout(DIFF_BUDGET)
        .diff_lines(old, new)
}

/// Render the changes between `old` and `new` with line numbers.
pub(crate) fn numbered_diff(old: &str, new: &str) -> NumberedDiff {
    let diff = line_diff(old, new);
    let width = (old.lines().count().max(new.lines().count()).max(1))
        .to_string()
        .len();
    let mut text = String::new();
    let mut first_changed_line = None;
    for (g, group) in diff.grouped_ops(CONTEXT_LINES).iter().enumerate() {
        if g > 0 {
            text.push_str(&format!(" {:>width$} ...\n", ""));
        }
        for op in group {
            if op.tag() != DiffTag::Equal && first_changed_line.is_none() {
                // For a pure deletion this is the line that now sits where the block was.
                first_changed_line = Some(op.new_range().start + 1);
            }
            for change in diff.iter_changes(op) {
                let (sign, number) = match change.tag() {
                    ChangeTag::Delete => ('-', change.old_index()),
                    ChangeTag::Insert => ('+', change.new_index()),
                    ChangeTag::Equal => (' ', change.old_index()),
                };
                let number = number.map_or(0, |n| n + 1);
                let line = change.value().trim_end_matches(['\n', '\r']);
                text.push_str(&format!("{sign}{number:>width$} {line}\n"));
            }
        }
    }
    if text.ends_with('\n') {
        text.pop();
    }
    NumberedDiff {
        text,
        first_changed_line,
    }
}

/// A standard unified diff of `old` → `new`, labelled with `path`.
pub(crate) fn unified_patch(old: &str, new: &str, path: &str) -> String {
    line_diff(old, new)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_signs() {
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\n";
        let d = numbered_diff(old, new);
        assert_eq!(d.text, " 1 a\n-2 b\n+2 B\n 3 c");
        assert_eq!(d.first_changed_line, Some(2));
    }

    #[test]
    fn distant_changes_form_separate_hunks() {
        let old: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 2\n", "line two\n")
            .replace("line 28\n", "line twenty-eight\n");
        let d = numbered_diff(&old, &new);
        assert!(d.text.contains("- 2 line 2"), "{}", d.text);
        assert!(d.text.contains("+28 line twenty-eight"), "{}", d.text);
        assert!(d.text.contains("    ..."), "{}", d.text);
        assert!(!d.text.contains("line 15"));
        assert_eq!(d.first_changed_line, Some(2));
    }

    #[test]
    fn deletion_points_at_the_following_line() {
        let d = numbered_diff("a\nb\nc\n", "a\nc\n");
        assert_eq!(d.text, " 1 a\n-2 b\n 3 c");
        assert_eq!(d.first_changed_line, Some(2));
    }

    #[test]
    fn unified_patch_has_headers() {
        let p = unified_patch("a\nb\n", "a\nc\n", "x.txt");
        assert!(
            p.starts_with("--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@"),
            "{p}"
        );
    }
}

//! Output limits shared by every tool: at most [`MAX_LINES`] lines or [`MAX_BYTES`] bytes,
//! whichever comes first. Those are the defaults; a session's actual numbers are a
//! [`ToolLimits`] (the `[tools]` table of `config.toml`), which the tools read from their
//! [`ToolContext`](super::ToolContext).
//!
//! Two cuts exist. [`truncate_head`] keeps the beginning (file reads, search results: the model
//! continues with an offset or a narrower query). [`truncate_tail`] keeps the end (command
//! output: errors and summaries come last). Neither cuts inside a line, with one exception: when
//! the very last line of command output is alone bigger than the byte limit, the tail keeps the
//! end of that line ([`Truncation::last_line_partial`]). A head cut whose first line is too big
//! keeps nothing and says so ([`Truncation::first_line_exceeds_limit`]); the caller explains how
//! to read such a line.
//!
//! The functions count lines the way a reader does: `"a\nb\n"` has two lines, `""` has none.
//! They work on `&str`, so every cut is on a character boundary.

use std::borrow::Cow;

/// Most lines a tool returns.
pub(crate) const MAX_LINES: usize = 2000;
/// Most bytes a tool returns (50 KB).
pub(crate) const MAX_BYTES: usize = 50 * 1024;
/// Longest line `grep` shows, in characters.
pub const GREP_MAX_LINE_CHARS: usize = 500;
/// Matches `grep` returns when the call gives no `limit`.
pub(crate) const GREP_LIMIT: usize = 100;
/// Paths `find` returns when the call gives no `limit`.
pub(crate) const FIND_LIMIT: usize = 1000;
/// Entries `ls` returns when the call gives no `limit`.
pub(crate) const LS_LIMIT: usize = 500;

/// The numbers the tools work with. [`Default`] gives the constants above and the per-tool
/// result counts (`grep` 100, `find` 1000, `ls` 500).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolLimits {
    /// Most lines `read` and `bash` return.
    pub max_lines: usize,
    /// Most bytes any tool returns.
    pub max_bytes: usize,
    /// Longest line `grep` shows, in characters.
    pub grep_max_line_chars: usize,
    /// Matches `grep` returns when the call gives no `limit`.
    pub grep_limit: usize,
    /// Paths `find` returns when the call gives no `limit`.
    pub find_limit: usize,
    /// Entries `ls` returns when the call gives no `limit`.
    pub ls_limit: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            max_lines: MAX_LINES,
            max_bytes: MAX_BYTES,
            grep_max_line_chars: GREP_MAX_LINE_CHARS,
            grep_limit: GREP_LIMIT,
            find_limit: FIND_LIMIT,
            ls_limit: LS_LIMIT,
        }
    }
}

/// A byte limit as people write it: `50 KB` for a whole number of KB (or MB), else
/// [`format_size`].
pub(crate) fn limit_size(bytes: usize) -> String {
    const KB: usize = 1024;
    if bytes >= KB * KB && bytes.is_multiple_of(KB * KB) {
        format!("{} MB", bytes / (KB * KB))
    } else if bytes >= KB && bytes.is_multiple_of(KB) {
        format!("{} KB", bytes / KB)
    } else {
        format_size(bytes as u64)
    }
}

/// Which limit a cut hit first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    Lines,
    Bytes,
}

impl Limit {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Limit::Lines => "lines",
            Limit::Bytes => "bytes",
        }
    }
}

/// The result of a cut, with what the caller needs to write a notice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Truncation {
    pub content: String,
    /// The limit that cut the text, `None` when all of it fits.
    pub truncated_by: Option<Limit>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    /// Tail only: the kept text is the end of one line longer than the byte limit.
    pub last_line_partial: bool,
    /// Head only: the first line alone is over the byte limit, so nothing was kept.
    pub first_line_exceeds_limit: bool,
}

impl Truncation {
    pub(crate) fn truncated(&self) -> bool {
        self.truncated_by.is_some()
    }

    /// A JSON summary for a result's `details`.
    pub(crate) fn to_details(&self) -> serde_json::Value {
        serde_json::json!({
            "truncated": self.truncated(),
            "truncatedBy": self.truncated_by.map(Limit::as_str),
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
        })
    }
}

/// Lines of `text`: a trailing newline does not start another line.
pub(crate) fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// The lines of `text` without their terminators (no phantom line after a final newline).
fn lines(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let empty = text.is_empty();
    body.split('\n').filter(move |_| !empty)
}

/// Keep the first lines of `text` within both limits.
pub(crate) fn truncate_head(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = count_lines(text);
    let total_bytes = text.len();
    if total_lines <= max_lines && total_bytes <= max_bytes {
        return whole(text, total_lines);
    }
    let mut bytes = 0usize;
    let mut kept = 0usize;
    let mut by = Limit::Lines;
    for line in lines(text) {
        if kept == max_lines {
            by = Limit::Lines;
            break;
        }
        let cost = line.len() + usize::from(kept > 0);
        if bytes + cost > max_bytes {
            by = Limit::Bytes;
            break;
        }
        bytes += cost;
        kept += 1;
    }
    Truncation {
        content: text.get(..bytes).unwrap_or_default().to_string(),
        truncated_by: Some(by),
        total_lines,
        total_bytes,
        output_lines: kept,
        output_bytes: bytes,
        last_line_partial: false,
        first_line_exceeds_limit: kept == 0 && by == Limit::Bytes,
    }
}

/// Keep the last lines of `text` within both limits; a single last line over the byte limit is
/// kept in part (its end).
pub(crate) fn truncate_tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = count_lines(text);
    let total_bytes = text.len();
    if total_lines <= max_lines && total_bytes <= max_bytes {
        return whole(text, total_lines);
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut start = body.len();
    let mut kept = 0usize;
    let mut by = Limit::Lines;
    for line in lines(text).rev() {
        if kept == max_lines {
            by = Limit::Lines;
            break;
        }
        let cost = line.len() + usize::from(kept > 0);
        if (body.len() - start) + cost > max_bytes {
            by = Limit::Bytes;
            break;
        }
        start -= cost;
        kept += 1;
    }
    if kept == 0 {
        // The last line alone is too big: keep its end, on a character boundary.
        let mut cut = body.len().saturating_sub(max_bytes);
        while !body.is_char_boundary(cut) {
            cut += 1;
        }
        let content = body.get(cut..).unwrap_or_default().to_string();
        return Truncation {
            output_bytes: content.len(),
            content,
            truncated_by: Some(Limit::Bytes),
            total_lines,
            total_bytes,
            output_lines: 1,
            last_line_partial: true,
            first_line_exceeds_limit: false,
        };
    }
    let content = body.get(start..).unwrap_or_default().to_string();
    Truncation {
        output_bytes: content.len(),
        content,
        truncated_by: Some(by),
        total_lines,
        total_bytes,
        output_lines: kept,
        last_line_partial: false,
        first_line_exceeds_limit: false,
    }
}

fn whole(text: &str, total_lines: usize) -> Truncation {
    Truncation {
        content: text.to_string(),
        truncated_by: None,
        total_lines,
        total_bytes: text.len(),
        output_lines: total_lines,
        output_bytes: text.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
    }
}

/// Append notices to a tool's text: a blank line, then each one in brackets on its own line.
pub(crate) fn append_notices(text: &mut String, notices: &[String]) {
    if notices.is_empty() {
        return;
    }
    text.push('\n');
    for n in notices {
        text.push_str("\n[");
        text.push_str(n);
        text.push(']');
    }
}

/// Cut one line to `max_chars` characters, marking the cut.
pub(crate) fn truncate_line(line: &str, max_chars: usize) -> Cow<'_, str> {
    // Byte length bounds character count from above: short lines skip the count.
    if line.len() <= max_chars {
        return Cow::Borrowed(line);
    }
    match line.char_indices().nth(max_chars) {
        None => Cow::Borrowed(line),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… [line cut at {max_chars} characters]",
            line.get(..cut).unwrap_or_default()
        )),
    }
}

/// A byte count for people: `512 B`, `50.0 KB`, `3.2 MB`.
pub(crate) fn format_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if b < KB * KB {
        format!("{:.1} KB", b / KB)
    } else if b < KB * KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else {
        format!("{:.1} GB", b / (KB * KB * KB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_like_a_reader() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("\n\n"), 2);
    }

    #[test]
    fn head_keeps_everything_that_fits() {
        let t = truncate_head("a\nb\n", 10, 100);
        assert!(!t.truncated());
        assert_eq!(t.content, "a\nb\n");
        assert_eq!(t.output_lines, 2);
    }

    #[test]
    fn head_cuts_on_lines() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let t = truncate_head(&text, 3, 1000);
        assert_eq!(t.truncated_by, Some(Limit::Lines));
        assert_eq!(t.content, "line 1\nline 2\nline 3");
        assert_eq!(t.output_lines, 3);
        assert_eq!(t.total_lines, 10);
    }

    #[test]
    fn head_cuts_on_bytes_between_lines() {
        let t = truncate_head("aaaa\nbbbb\ncccc\n", 100, 10);
        assert_eq!(t.truncated_by, Some(Limit::Bytes));
        assert_eq!(t.content, "aaaa\nbbbb");
        assert_eq!(t.output_bytes, 9);
        assert!(!t.first_line_exceeds_limit);
    }

    #[test]
    fn head_reports_a_first_line_over_the_limit() {
        let t = truncate_head("0123456789abc\nx", 100, 10);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
        assert_eq!(t.output_lines, 0);
    }

    #[test]
    fn tail_cuts_on_lines_and_bytes() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let t = truncate_tail(&text, 2, 1000);
        assert_eq!(t.content, "line 9\nline 10");
        assert_eq!(t.truncated_by, Some(Limit::Lines));
        let t = truncate_tail("aaaa\nbbbb\ncccc", 100, 10);
        assert_eq!(t.content, "bbbb\ncccc");
        assert_eq!(t.truncated_by, Some(Limit::Bytes));
    }

    #[test]
    fn tail_keeps_the_end_of_a_huge_last_line_on_a_char_boundary() {
        let text = format!("start\n{}", "é".repeat(20));
        let t = truncate_tail(&text, 100, 11);
        assert!(t.last_line_partial);
        assert_eq!(t.content, "é".repeat(5));
        assert!(t.output_bytes <= 11);
    }

    #[test]
    fn line_cut_marks_itself_and_respects_characters() {
        assert_eq!(truncate_line("short", 10), "short");
        let long = "ü".repeat(8);
        // 16 bytes but only 8 characters: no cut.
        assert_eq!(truncate_line(&long, 10), long);
        let cut = truncate_line(&long, 3);
        assert!(cut.starts_with("üüü…"), "{cut}");
        assert!(cut.contains("cut at 3 characters"));
    }

    #[test]
    fn limits_read_as_written() {
        assert_eq!(limit_size(MAX_BYTES), "50 KB");
        assert_eq!(limit_size(2 * 1024 * 1024), "2 MB");
        assert_eq!(limit_size(100), "100 B");
        assert_eq!(limit_size(1536), "1.5 KB");
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(format_size(10), "10 B");
        assert_eq!(format_size(50 * 1024), "50.0 KB");
        assert_eq!(format_size(3 * 1024 * 1024 + 200 * 1024), "3.2 MB");
    }
}

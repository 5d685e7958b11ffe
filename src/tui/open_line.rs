//! The open line of a streaming answer: how much of the text after the last newline to show
//! now, and what to close at its end so the frame already looks like the finished text.
//!
//! A streaming answer is drawn whole, the line still being written included, so a delta is on
//! screen at the next frame whether or not a newline has come. Two things would make that line
//! flicker, and [`shown`] deals with both, in the text that is drawn only (the message itself
//! is never touched):
//!
//! - A line that so far is nothing but block markup (`-`, `1.`, `##`, `===`, `|--`, `>`, a
//!   fence, `<di`) may still change what the lines above it are: a `-` under a paragraph makes
//!   it a heading, a fence's language is known only at its newline, `<div` may start an HTML
//!   block. Such a line is held back until it has text of its own or ends.
//! - Inline markup the last delta left open: a trailing run of `*`, `_`, `~`, `` ` ``, `\`,
//!   `[`, `!` or `<` is held back (it is markup about to be completed), and what is still open
//!   (a code span, `**`, `*`, `_`, `~~`) is closed, so `**bo` shows as a bold "bo" instead of two
//!   asterisks that vanish a moment later.
//!
//! Inside a fenced code block the open line is code and is shown as it came (only a line that
//! may be the closing fence waits). Whether a fence is open is read from the complete lines
//! given, so callers pass the unfinished part of the text (the markdown stream cache passes
//! the part after its finished blocks, which never ends inside a fence).

use std::borrow::Cow;

/// `text` as a streaming frame should draw it: its complete lines, then as much of the open
/// line as is safe, with its open inline markup closed.
pub fn shown(text: &str) -> Cow<'_, str> {
    let start = text.rfind('\n').map_or(0, |i| i + 1);
    let (done, open) = text.split_at(start);
    if open.is_empty() {
        return Cow::Borrowed(text);
    }
    if in_fence(done) {
        return if only_of(open, |c| matches!(c, '`' | '~')) {
            Cow::Borrowed(done)
        } else {
            Cow::Borrowed(text)
        };
    }
    if unsettled_block_start(open) {
        return Cow::Borrowed(done);
    }
    if open.starts_with("    ") || open.starts_with('\t') {
        // Perhaps indented code: shown as it came.
        return Cow::Borrowed(text);
    }
    let kept = open
        .trim_end_matches(['*', '_', '~', '`', '\\', '[', '!', '<'])
        .trim_end();
    let closing = closers(kept);
    if kept.len() == open.len() && closing.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(done.len() + kept.len() + closing.len());
    out.push_str(done);
    out.push_str(kept);
    out.push_str(&closing);
    Cow::Owned(out)
}

/// Whether `line` (ignoring blanks) is made only of characters `allowed` accepts.
fn only_of(line: &str, allowed: impl Fn(char) -> bool) -> bool {
    line.chars().all(|c| c == ' ' || allowed(c))
}

/// The open line is block markup whose meaning is not settled yet.
fn unsettled_block_start(open: &str) -> bool {
    let line = open.trim_start_matches(' ');
    // An underline, a rule, a table's delimiter row, a fence, a heading, quote or list marker
    // with nothing after it yet, or a number that may become one.
    let markers: [fn(char) -> bool; 7] = [
        |c| matches!(c, '-' | '='),
        |c| matches!(c, '*' | '_'),
        |c| matches!(c, '|' | '-' | ':'),
        |c| matches!(c, '`' | '~'),
        |c| c == '#',
        |c| c == '>',
        |c| c.is_ascii_digit(),
    ];
    if markers.iter().any(|m| only_of(line, m)) {
        return true;
    }
    let unnumbered = line.trim_start_matches(|c: char| c.is_ascii_digit());
    let bare_item = if unnumbered.len() < line.len() {
        unnumbered.strip_prefix(['.', ')'])
    } else {
        line.strip_prefix(['-', '*', '+'])
    };
    if bare_item.is_some_and(|rest| rest.trim().is_empty()) {
        return true;
    }
    // Past the quote and list markers, a fence still waiting for its newline.
    let inner = past_containers(line);
    if inner.starts_with("```") || inner.starts_with("~~~") {
        return true;
    }
    // `<` and a tag name still being typed: an HTML block may be starting.
    if let Some(tag) = line.strip_prefix('<') {
        let tag = tag.strip_prefix('/').unwrap_or(tag);
        return tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    }
    false
}

/// `line` past its indentation and the markers of the quotes and list items it is in.
fn past_containers(line: &str) -> &str {
    let mut rest = line;
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if let Some(r) = rest.strip_prefix('>') {
            rest = r;
            continue;
        }
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let marker = if digits > 0 {
            rest[digits..].starts_with(['.', ')']).then_some(digits + 1)
        } else {
            rest.starts_with(['-', '*', '+']).then_some(1)
        };
        match marker {
            Some(n) if rest[n..].starts_with([' ', '\t']) => rest = &rest[n..],
            _ => return rest,
        }
    }
}

/// Whether the complete `lines` leave a fenced code block open.
fn in_fence(lines: &str) -> bool {
    let mut open: Option<(char, usize)> = None;
    for line in lines.lines() {
        let inner = past_containers(line);
        let Some(fence) = inner.chars().next().filter(|c| matches!(c, '`' | '~')) else {
            continue;
        };
        let run = inner.chars().take_while(|&c| c == fence).count();
        if run < 3 {
            continue;
        }
        match open {
            None => {
                // A backtick fence's info string holds no backtick.
                let info = &inner[run..];
                if fence == '~' || !info.contains('`') {
                    open = Some((fence, run));
                }
            }
            Some((c, n)) => {
                if c == fence && run >= n && inner[run..].trim().is_empty() {
                    open = None;
                }
            }
        }
    }
    open.is_some()
}

/// What closes the inline markup `line` leaves open: a code span's backticks, then emphasis
/// delimiters innermost first. A delimiter opens only before a non-blank at the start of a
/// word, and closes only after a non-blank, as CommonMark's flanking rules mostly have it.
fn closers(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut open: Vec<&'static str> = Vec::new();
    let mut code: Option<usize> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let run = chars[i..].iter().take_while(|&&b| b == '`').count();
            code = match code {
                None => Some(run),
                Some(n) if n == run => None,
                other => other,
            };
            i += run;
            continue;
        }
        if code.is_some() {
            i += 1;
            continue;
        }
        if c == '\\' {
            i += 2;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let delim = match (c, next) {
            ('*', Some('*')) => "**",
            ('_', Some('_')) => "__",
            ('~', Some('~')) => "~~",
            ('*', _) => "*",
            ('_', _) => "_",
            _ => {
                i += 1;
                continue;
            }
        };
        let n = delim.len();
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + n).copied();
        if open.last() == Some(&delim) && before.is_some_and(|b| !b.is_whitespace()) {
            open.pop();
        } else if after.is_some_and(|a| !a.is_whitespace())
            && before.is_none_or(|b| b.is_whitespace() || b.is_ascii_punctuation())
        {
            open.push(delim);
        }
        i += n;
    }
    let mut out = String::new();
    if let Some(run) = code {
        out.push_str(&"`".repeat(run));
    }
    for d in open.iter().rev() {
        out.push_str(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_shown_as_it_came() {
        assert_eq!(shown("Hello wor"), "Hello wor");
        assert_eq!(shown("one\ntwo"), "one\ntwo");
        assert_eq!(shown("one\n"), "one\n");
        assert_eq!(shown(""), "");
    }

    #[test]
    fn open_inline_markup_is_closed() {
        assert_eq!(shown("Hello **wor"), "Hello **wor**");
        assert_eq!(shown("a `co"), "a `co`");
        assert_eq!(shown("a ``co`de"), "a ``co`de``");
        assert_eq!(shown("an *it"), "an *it*");
        assert_eq!(shown("an _it"), "an _it_");
        assert_eq!(shown("~~gone"), "~~gone~~");
        assert_eq!(shown("**bold _both"), "**bold _both_**");
        assert_eq!(shown("**done** and `code`"), "**done** and `code`");
        // Inside a code span nothing is emphasis.
        assert_eq!(shown("`a **b"), "`a **b`");
    }

    #[test]
    fn markup_that_opens_nothing_is_left_alone() {
        assert_eq!(shown("snake_case_na"), "snake_case_na");
        assert_eq!(shown("2 * 3 = 6"), "2 * 3 = 6");
        assert_eq!(shown("x\n1 + 1 = 2"), "x\n1 + 1 = 2");
        assert_eq!(shown("a ** b"), "a ** b");
        assert_eq!(shown("escaped \\*not"), "escaped \\*not");
    }

    #[test]
    fn trailing_markup_waits_for_what_follows() {
        assert_eq!(shown("Hello **"), "Hello");
        assert_eq!(shown("Hello **wor*"), "Hello **wor**");
        assert_eq!(shown("see ["), "see");
        assert_eq!(shown("a `"), "a");
        assert_eq!(shown("x\nHello "), "x\nHello");
    }

    #[test]
    fn unsettled_block_markup_is_held_back() {
        for open in [
            "-", "- ", "--", "===", "1.", "12)", "##", "> ", "|---|:-", "```", "```py", "~~~",
            "<di", "</p", "***", "  -", "+ ", "42", "> >",
        ] {
            assert_eq!(shown(&format!("Title\n{open}")), "Title\n", "{open:?}");
        }
        assert_eq!(shown("Title\n- it"), "Title\n- it");
        assert_eq!(shown("Title\n## He"), "Title\n## He");
        assert_eq!(shown("Title\n<div class"), "Title\n<div class");
    }

    #[test]
    fn code_lines_are_shown_as_they_came() {
        let text = "```rust\nlet s = \"**a";
        assert_eq!(shown(text), text);
        let text = "```\nfn main() {\n    x *";
        assert_eq!(shown(text), text);
        // The closing fence may be coming.
        assert_eq!(shown("```\ncode\n``"), "```\ncode\n");
        // After the fence closes, prose again.
        assert_eq!(shown("```\ncode\n```\n**bo"), "```\ncode\n```\n**bo**");
        // Indented code.
        assert_eq!(shown("para\n\n    let x = **y"), "para\n\n    let x = **y");
        // A fence inside a quote or a list item.
        assert_eq!(shown("> ```\n> a **b"), "> ```\n> a **b");
        assert_eq!(shown("- ```sh\n  echo *"), "- ```sh\n  echo *");
    }
}

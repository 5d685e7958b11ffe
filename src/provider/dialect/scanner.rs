//! The incremental scanner that finds calls in reply text as it arrives.
//!
//! The scanner never lets a tag reach the text: the end of each text delta that could be the
//! start of a tag is held back until the next delta settles it. Text inside a call's tags is
//! held until the closing tag, then parsed into calls; a closing or result tag inside one of
//! the call's argument values (as the dialect tells them, see [`super::values`]) is part of
//! the value. A tag that starts a tool *result* stops the scan there: the reply ends with the
//! calls made so far.
//!
//! A result tag that reads as text (`<tool_response>`, `<function_result …>`) counts only
//! where a made-up result could start: at the start of a line, or right after a call. Prose
//! that mentions one (`` `<tool_response>` `` in a sentence) is text. Control tokens
//! (`<|im_start|>user`, `<｜tool▁outputs▁begin｜>`) count wherever they appear outside code
//! (code blocks and inline `code` spans).
//!
//! A Markdown code block is text, whatever it holds: between a fence line (optional
//! indentation, then three or more backticks or tildes) and its closing fence (the same
//! character, at least as many, nothing else on the line) no tag is looked for, and a fence
//! that never closes keeps the rest of the reply text. A fence opener is recognised however
//! the stream splits it: the start of a line that could still become one is held back until
//! it is settled, like a partial tag.

use std::sync::Arc;

use super::{Block, Dialect, Parsed};
use crate::agent::protocol::stream::ToolSpec;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Marker {
    Open(usize),
    /// The closing tag of this block, looked for after a call of it that may have been cut.
    Close(usize),
    Result,
    Drop,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Text,
    Block(usize),
    /// Inside a code block opened by this many of this fence character.
    Code(char, usize),
}

/// What the lines of the text so far say about a code fence.
enum FenceLine {
    /// A fence opener whose fence characters end at this byte, with its character and count.
    Opens(usize, char, usize),
    /// The line starting at this byte could still become an opener: hold it back.
    Undecided(usize),
    None,
}

/// What the scanner found in the text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Call(Parsed),
    /// A call has begun and names this tool; its `Call` follows when its text is complete.
    Opening(String),
    /// The model began writing a tool result itself.
    Fabricated,
    /// The last `calls` calls were cut short: their closing `tag` came again after them.
    CutShort {
        calls: usize,
        tag: &'static str,
    },
}

/// Finds calls in streamed text.
pub(crate) struct Scanner {
    dialect: Arc<dyn Dialect>,
    tools: Vec<ToolSpec>,
    markers: Vec<(&'static str, Marker)>,
    buf: String,
    state: State,
    /// How far into `buf` a closing tag has already been looked for.
    searched: usize,
    /// Whether the open block's call was announced.
    announced: bool,
    /// Whether `buf` starts at the start of a line.
    line_start: bool,
    /// The last character other than a blank let out on the current line (`None`: the line
    /// is blank so far, or a call has just ended — where a result could start).
    line_last: Option<char>,
    /// Whether the text let out on the current line leaves an inline `code` span open.
    line_in_code: bool,
    /// The block of the last call and how many calls it made, while its closing tag coming
    /// again would mean one of its values held that tag and cut the call short.
    suspect: Option<(usize, usize)>,
    /// Whether text other than blanks was let out since that call (the rest of a cut value;
    /// a closing tag right after the call is only doubled).
    text_since_call: bool,
    stopped: bool,
}

impl Scanner {
    pub(crate) fn new(dialect: Arc<dyn Dialect>, tools: Vec<ToolSpec>) -> Self {
        let mut markers: Vec<(&'static str, Marker)> = Vec::new();
        for (i, b) in dialect.blocks().iter().enumerate() {
            markers.push((b.open, Marker::Open(i)));
        }
        for m in dialect.result_markers() {
            markers.push((m, Marker::Result));
        }
        for m in dialect.dropped() {
            markers.push((m, Marker::Drop));
        }
        for (i, b) in dialect.blocks().iter().enumerate() {
            markers.push((b.close, Marker::Close(i)));
        }
        Scanner {
            dialect,
            tools,
            markers,
            buf: String::new(),
            state: State::Text,
            searched: 0,
            announced: false,
            line_start: true,
            line_last: None,
            line_in_code: false,
            suspect: None,
            text_since_call: false,
            stopped: false,
        }
    }

    /// Whether a fabricated result stopped the scan.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Feed a piece of text.
    pub(crate) fn push(&mut self, text: &str) -> Vec<Piece> {
        if self.stopped {
            return Vec::new();
        }
        self.buf.push_str(text);
        self.run(false)
    }

    /// The text ended: settle whatever is held back.
    pub(crate) fn finish(&mut self) -> Vec<Piece> {
        if self.stopped {
            return Vec::new();
        }
        self.run(true)
    }

    fn longest_marker(&self) -> usize {
        self.markers.iter().map(|(m, _)| m.len()).max().unwrap_or(0)
    }

    /// Whether the marker is looked for now (a closing tag only after a call it may have cut).
    fn active(&self, kind: Marker) -> bool {
        match kind {
            Marker::Close(b) => self.suspect.is_some_and(|(s, _)| s == b),
            _ => true,
        }
    }

    /// The first marker in the buffer (at a tie, the longest).
    fn earliest(&self, from: usize, only_results: bool) -> Option<(usize, usize)> {
        let from = floor_boundary(&self.buf, from);
        let hay = &self.buf[from..];
        let mut best: Option<(usize, usize)> = None;
        for (i, (m, kind)) in self.markers.iter().enumerate() {
            if (only_results && *kind != Marker::Result) || !self.active(*kind) {
                continue;
            }
            if let Some(pos) = hay.find(m) {
                let better = match best {
                    None => true,
                    Some((bp, bi)) => pos < bp || (pos == bp && m.len() > self.markers[bi].0.len()),
                };
                if better {
                    best = Some((pos, i));
                }
            }
        }
        best.map(|(p, i)| (p + from, i))
    }

    /// Whether only blanks come before `pos` on its line (and, where the line started before
    /// the buffer, before the buffer too).
    fn at_line_start(&self, pos: usize) -> bool {
        self.last_on_line(pos).is_none()
    }

    /// The last character other than a blank before `pos` on its line.
    fn last_on_line(&self, pos: usize) -> Option<char> {
        let before = &self.buf[..pos];
        let line = before.rfind('\n').map_or(before, |nl| &before[nl + 1..]);
        match line.trim_end_matches([' ', '\t', '\r']).chars().next_back() {
            Some(c) => Some(c),
            None if line.len() < before.len() => None,
            None => self.line_last,
        }
    }

    /// Whether the marker `i` found at `pos` means what it says there: a result tag that
    /// reads as text only where a result could start, a call that must start a line only
    /// there.
    fn counts(&self, pos: usize, i: usize) -> bool {
        let (m, kind) = self.markers[i];
        if kind == Marker::Result && self.in_inline_code(pos) {
            return false;
        }
        let placed = match kind {
            Marker::Result => reads_as_text(m),
            Marker::Open(b) => self.dialect.opens_at_line_start(&self.dialect.blocks()[b]),
            // A closing tag after a cut call stands after blanks or another tag, as the
            // frame of a call does — not inside a sentence or in `code`.
            Marker::Close(_) => {
                let rest =
                    self.text_since_call || self.buf[..pos].chars().any(|c| !c.is_whitespace());
                return rest && matches!(self.last_on_line(pos), None | Some('>'));
            }
            Marker::Drop => false,
        };
        !placed || self.at_line_start(pos)
    }

    /// Whether `pos` is inside an inline `code` span of its line (an odd number of backticks
    /// before it on the line).
    fn in_inline_code(&self, pos: usize) -> bool {
        let before = &self.buf[..pos];
        let (line, carried) = match before.rfind('\n') {
            Some(nl) => (&before[nl + 1..], false),
            None => (before, self.line_in_code),
        };
        carried ^ (line.matches('`').count() % 2 == 1)
    }

    /// The first marker in the buffer that counts where it is.
    fn next_marker(&self) -> Option<(usize, usize)> {
        let mut from = 0;
        loop {
            let (pos, i) = self.earliest(from, false)?;
            if self.counts(pos, i) {
                return Some((pos, i));
            }
            from = next_char(&self.buf, pos);
        }
    }

    /// How many bytes at the end of the buffer could be the start of a marker.
    fn partial_tail(&self) -> usize {
        let mut keep = 0;
        for (m, kind) in &self.markers {
            if !self.active(*kind) {
                continue;
            }
            for k in (1..m.len()).rev() {
                if k <= keep {
                    break;
                }
                if m.is_char_boundary(k) && self.buf.ends_with(&m[..k]) {
                    keep = k;
                    break;
                }
            }
        }
        keep
    }

    fn take_front(&mut self, n: usize) -> String {
        let rest = self.buf.split_off(n);
        std::mem::replace(&mut self.buf, rest)
    }

    /// The first `n` bytes as text (noting whether what follows starts a line).
    fn text_front(&mut self, n: usize, out: &mut Vec<Piece>) {
        if n == 0 {
            return;
        }
        let text = self.take_front(n);
        self.line_start = text.ends_with('\n');
        let line = text.rfind('\n').map_or(text.as_str(), |nl| &text[nl + 1..]);
        match line.trim_end_matches([' ', '\t', '\r']).chars().next_back() {
            Some(c) => self.line_last = Some(c),
            None if line.len() < text.len() => self.line_last = None,
            None => {}
        }
        if text.chars().any(|c| !c.is_whitespace()) {
            self.text_since_call = true;
        }
        let odd = line.matches('`').count() % 2 == 1;
        self.line_in_code = if line.len() < text.len() {
            odd
        } else {
            self.line_in_code ^ odd
        };
        out.push(Piece::Text(text));
    }

    /// The first fence opener among the lines that start before `limit` (or the line that
    /// could still become one, when the text so far ends inside it and more may come).
    fn fence_opener(&self, limit: usize, end: bool) -> FenceLine {
        let bytes = self.buf.as_bytes();
        let starts = (self.line_start.then_some(0)).into_iter().chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        for l in starts {
            if l >= limit {
                break;
            }
            let mut j = l;
            while j < bytes.len() && matches!(bytes[j], b' ' | b'\t') {
                j += 1;
            }
            let ch = match bytes.get(j) {
                Some(b'`') => '`',
                Some(b'~') => '~',
                Some(_) => continue,
                None if end => continue,
                None => return FenceLine::Undecided(l),
            };
            // A line that starts with one of the dialect's own tags (a call or result written
            // as a fence, like ```tool_code) is that tag, not a code block; one that could
            // still become such a tag waits.
            let rest = &self.buf[j..];
            let tags = || {
                self.markers
                    .iter()
                    .filter(|(_, kind)| matches!(kind, Marker::Open(_) | Marker::Result))
                    .map(|(m, _)| *m)
            };
            if tags().any(|m| rest.starts_with(m)) {
                continue;
            }
            if !end && tags().any(|m| m.starts_with(rest)) {
                return FenceLine::Undecided(l);
            }
            let n = bytes[j..].iter().take_while(|b| **b == ch as u8).count();
            // The run may go on in the next piece: how long it is decides what closes it.
            if j + n == bytes.len() && !end {
                return FenceLine::Undecided(l);
            }
            if n >= 3 {
                return FenceLine::Opens(j + n, ch, n);
            }
        }
        FenceLine::None
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one state machine over the text: each arm is a state, kept together to read the transitions"
    )]
    fn run(&mut self, end: bool) -> Vec<Piece> {
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Text => {
                    let marker = self.next_marker();
                    let limit = marker.map_or(self.buf.len() + 1, |(p, _)| p);
                    let fence = self.fence_opener(limit, end);
                    if let FenceLine::Opens(at, ch, n) = fence {
                        // A code block: its opener line and everything up to its closing
                        // fence are text.
                        self.text_front(at, &mut out);
                        self.line_start = false;
                        self.state = State::Code(ch, n);
                        continue;
                    }
                    let Some((pos, i)) = marker else {
                        let mut keep = if end { 0 } else { self.partial_tail() };
                        if let FenceLine::Undecided(l) = fence {
                            keep = keep.max(self.buf.len() - l);
                        }
                        let cut = self.buf.len() - keep;
                        self.text_front(cut, &mut out);
                        return out;
                    };
                    self.text_front(pos, &mut out);
                    let (m, kind) = self.markers[i];
                    if let Marker::Close(_) = kind {
                        // The tag is text as the model wrote it; the calls before it were cut.
                        if let Some((_, calls)) = self.suspect.take() {
                            out.push(Piece::CutShort { calls, tag: m });
                        }
                        self.text_front(m.len(), &mut out);
                        continue;
                    }
                    self.take_front(m.len());
                    self.searched = 0;
                    match kind {
                        Marker::Open(b) => {
                            self.state = State::Block(b);
                            self.announced = false;
                            self.suspect = None;
                        }
                        Marker::Close(_) => {}
                        // What a dropped token leaves starts afresh.
                        Marker::Drop => {
                            self.line_start = true;
                            self.line_last = None;
                        }
                        Marker::Result => {
                            self.stop(&mut out);
                            return out;
                        }
                    }
                }
                State::Block(b) => {
                    let block: Block = self.dialect.blocks()[b];
                    let mut from = self.searched.saturating_sub(self.longest_marker());
                    // The first closing tag or result tag that is not inside an argument value
                    // (at a tie the result tag: it is the longer one).
                    let found = loop {
                        let close = find_from(&self.buf, block.close, from);
                        let result = self.earliest(from, true).map(|(p, _)| p);
                        let first = match (close, result) {
                            (Some(c), Some(r)) if r <= c => Some((r, true)),
                            (Some(c), _) => Some((c, false)),
                            (None, Some(r)) => Some((r, true)),
                            (None, None) => None,
                        };
                        match first {
                            Some((p, _)) if self.dialect.inside_value(&block, &self.buf[..p]) => {
                                from = next_char(&self.buf, p);
                            }
                            other => break other,
                        }
                    };
                    match found {
                        Some((c, false)) => {
                            let body = self.take_front(c);
                            self.take_front(block.close.len());
                            let pieces = self.parse(&block, &body);
                            let calls = pieces
                                .iter()
                                .filter(|p| matches!(p, Piece::Call(Parsed::Call { .. })))
                                .count();
                            self.text_since_call = false;
                            self.suspect = (calls > 0 && self.dialect.cuttable(&block, &body))
                                .then_some((b, calls));
                            out.extend(pieces);
                            self.state = State::Text;
                            self.line_start = false;
                            // Right after a call is where a made-up result would start.
                            self.line_last = None;
                            self.searched = 0;
                        }
                        Some((r, _)) => {
                            let body = self.take_front(r);
                            out.extend(self.parse(&block, &body));
                            self.stop(&mut out);
                            return out;
                        }
                        None => {
                            if end {
                                let body = std::mem::take(&mut self.buf);
                                out.extend(self.parse(&block, &body));
                                self.state = State::Text;
                            } else {
                                self.searched = self.buf.len();
                                if !self.announced
                                    && let Some(name) = self.dialect.peek_name(&block, &self.buf)
                                {
                                    self.announced = true;
                                    out.push(Piece::Opening(name));
                                }
                            }
                            return out;
                        }
                    }
                }
                State::Code(ch, n) => {
                    // Line by line: a closing fence ends the block; everything is text.
                    let line_end = self.buf.find('\n');
                    let line = &self.buf[..line_end.unwrap_or(self.buf.len())];
                    let fence = line.trim_start_matches([' ', '\t']);
                    let run = fence.chars().take_while(|c| *c == ch).count();
                    let closes = self.line_start
                        && run >= n
                        && fence[run..].chars().all(|c| matches!(c, ' ' | '\t' | '\r'));
                    match line_end {
                        Some(e) => {
                            self.text_front(e + 1, &mut out);
                            if closes {
                                self.state = State::Text;
                            }
                        }
                        None if end => {
                            let all = self.buf.len();
                            self.text_front(all, &mut out);
                            return out;
                        }
                        None => {
                            // A line that may still turn out to close the block is held.
                            let could_close = self.line_start
                                && fence[run..].chars().all(|c| matches!(c, ' ' | '\t' | '\r'))
                                && (run == fence.len() || run >= n);
                            if !could_close {
                                let all = self.buf.len();
                                self.text_front(all, &mut out);
                            }
                            return out;
                        }
                    }
                }
            }
        }
    }

    fn stop(&mut self, out: &mut Vec<Piece>) {
        self.stopped = true;
        self.buf.clear();
        out.push(Piece::Fabricated);
    }

    fn parse(&self, block: &Block, body: &str) -> Vec<Piece> {
        let parsed = self.dialect.parse(block, body, &self.tools);
        if parsed.is_empty() {
            // Empty tags: nothing to run, nothing worth showing.
            return Vec::new();
        }
        parsed.into_iter().map(Piece::Call).collect()
    }
}

fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The position after the character at `at`.
fn next_char(s: &str, at: usize) -> usize {
    at + s[at..].chars().next().map_or(1, char::len_utf8)
}

/// Whether a marker reads as ordinary text — a tag like `<tool_response>`, a heading, a
/// fence — rather than a control token.
fn reads_as_text(m: &str) -> bool {
    let mut c = m.chars();
    match c.next() {
        Some('<') => c.next().is_some_and(|c| c.is_ascii_alphabetic()),
        Some('#' | '`' | '~') => true,
        _ => false,
    }
}

fn find_from(s: &str, pat: &str, from: usize) -> Option<usize> {
    let from = floor_boundary(s, from);
    s[from..].find(pat).map(|p| p + from)
}

//! The streaming side of dialects: an incremental scanner that finds calls in reply text as
//! it arrives, the event rewriter built on it, and [`DialectProvider`], the [`Provider`] that
//! wraps the real one and decides per model which dialect (if any) a request uses.
//!
//! The scanner never lets a tag reach the text: the end of each text delta that could be the
//! start of a tag is held back until the next delta settles it. Text inside a call's tags is
//! held until the closing tag, then parsed into calls. A tag that starts a tool *result*
//! stops the reply there: the provider request is cancelled and the reply ends normally with
//! the calls made so far (only the request is stopped, never the run).
//!
//! A Markdown code block is text, whatever it holds: between a fence line (optional
//! indentation, then three or more backticks or tildes) and its closing fence (the same
//! character, at least as many, nothing else on the line) no tag is looked for, and a fence
//! that never closes keeps the rest of the reply text. A fence opener is recognised however
//! the stream splits it: the start of a line that could still become one is held back until
//! it is settled, like a partial tag.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Block, Dialect, Parsed, bad_arguments, by_name, encode_request, is_local_url};
use crate::agent::protocol::stream::{
    EventStream, Model, Provider, ProviderRequest, StreamEvent, ToolSpec,
};
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall, now_ms,
};
use crate::provider::catalog::Catalog;

/// The tool name given to a call that did not say which tool it meant.
pub const UNNAMED_CALL: &str = "invalid_tool_call";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Marker {
    Open(usize),
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
pub enum Piece {
    Text(String),
    Call(Parsed),
    /// A call has begun and names this tool; its `Call` follows when its text is complete.
    Opening(String),
    /// The model began writing a tool result itself.
    Fabricated,
}

/// Finds calls in streamed text.
pub struct Scanner {
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
    stopped: bool,
}

impl Scanner {
    pub fn new(dialect: Arc<dyn Dialect>, tools: Vec<ToolSpec>) -> Self {
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
        Scanner {
            dialect,
            tools,
            markers,
            buf: String::new(),
            state: State::Text,
            searched: 0,
            announced: false,
            line_start: true,
            stopped: false,
        }
    }

    /// Whether a fabricated result stopped the scan.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Feed a piece of text.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        if self.stopped {
            return Vec::new();
        }
        self.buf.push_str(text);
        self.run(false)
    }

    /// The text ended: settle whatever is held back.
    pub fn finish(&mut self) -> Vec<Piece> {
        if self.stopped {
            return Vec::new();
        }
        self.run(true)
    }

    fn longest_marker(&self) -> usize {
        self.markers.iter().map(|(m, _)| m.len()).max().unwrap_or(0)
    }

    /// The first marker in the buffer (at a tie, the longest).
    fn earliest(&self, from: usize, only_results: bool) -> Option<(usize, usize)> {
        let from = floor_boundary(&self.buf, from);
        let hay = &self.buf[from..];
        let mut best: Option<(usize, usize)> = None;
        for (i, (m, kind)) in self.markers.iter().enumerate() {
            if only_results && *kind != Marker::Result {
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

    /// How many bytes at the end of the buffer could be the start of a marker.
    fn partial_tail(&self) -> usize {
        let mut keep = 0;
        for (m, _) in &self.markers {
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

    fn run(&mut self, end: bool) -> Vec<Piece> {
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Text => {
                    let marker = self.earliest(0, false);
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
                    self.take_front(m.len());
                    self.searched = 0;
                    match kind {
                        Marker::Open(b) => {
                            self.state = State::Block(b);
                            self.announced = false;
                        }
                        // What a dropped token leaves starts afresh.
                        Marker::Drop => self.line_start = true,
                        Marker::Result => {
                            self.stop(&mut out);
                            return out;
                        }
                    }
                }
                State::Block(b) => {
                    let block: Block = self.dialect.blocks()[b];
                    let mut from = self.searched.saturating_sub(self.longest_marker());
                    // The first closing tag or result tag that is not inside a JSON string.
                    let found = loop {
                        let close = find_from(&self.buf, block.close, from);
                        let result = self.earliest(from, true).map(|(p, _)| p);
                        let first = match (close, result) {
                            (Some(c), Some(r)) if r < c => Some((r, true)),
                            (Some(c), _) => Some((c, false)),
                            (None, Some(r)) => Some((r, true)),
                            (None, None) => None,
                        };
                        match first {
                            Some((p, _)) if in_json_string(&self.buf[..p]) => {
                                from = next_char(&self.buf, p);
                            }
                            other => break other,
                        }
                    };
                    match found {
                        Some((c, false)) => {
                            let body = self.take_front(c);
                            self.take_front(block.close.len());
                            out.extend(self.parse(&block, &body));
                            self.state = State::Text;
                            self.line_start = false;
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

/// Whether `body`, a JSON object cut short, ends inside a string literal (so a tag found
/// there is part of an argument, not the end of the call).
fn in_json_string(body: &str) -> bool {
    let t = body.trim_start();
    if !t.starts_with('{') {
        return false;
    }
    let (mut inside, mut escaped) = (false, false);
    for c in t.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if inside => escaped = true,
            '"' => inside = !inside,
            _ => {}
        }
    }
    inside
}

fn find_from(s: &str, pat: &str, from: usize) -> Option<usize> {
    let from = floor_boundary(s, from);
    s[from..].find(pat).map(|p| p + from)
}

/// A call id no other call of this process has.
fn call_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("call_{:x}{n}", now_ms())
}

/// Turns a provider's events into events with the calls found in the text.
pub struct Rewriter {
    scanner: Scanner,
    partial: AssistantMessage,
    content: Vec<ContentBlock>,
    out: Vec<StreamEvent>,
    text_open: Option<usize>,
    /// Inner content index → ours, for blocks passed through (thinking, native calls).
    map: Vec<(usize, usize)>,
    /// Whitespace held until it is known whether text follows (not kept between calls).
    pending_space: String,
    after_call: bool,
    /// A call announced before its text was complete: content index, id, name.
    open_call: Option<(usize, String, String)>,
    calls: usize,
    finished: bool,
}

impl Rewriter {
    pub fn new(dialect: Arc<dyn Dialect>, tools: Vec<ToolSpec>, model: &Model) -> Self {
        Rewriter {
            scanner: Scanner::new(dialect, tools),
            partial: AssistantMessage::empty(&model.api, &model.provider, &model.id),
            content: Vec::new(),
            out: Vec::new(),
            text_open: None,
            map: Vec::new(),
            pending_space: String::new(),
            after_call: false,
            open_call: None,
            calls: 0,
            finished: false,
        }
    }

    /// Whether the model began a tool result of its own (the request should stop).
    pub fn stopped(&self) -> bool {
        self.scanner.stopped()
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn mapped(&self, inner: usize) -> Option<usize> {
        self.map
            .iter()
            .rev()
            .find(|(i, _)| *i == inner)
            .map(|(_, o)| *o)
    }

    fn pass_block(&mut self, inner: usize, block: ContentBlock) -> usize {
        self.pending_space.clear();
        self.close_text();
        let index = self.content.len();
        self.content.push(block);
        self.map.push((inner, index));
        index
    }

    /// The events one provider event becomes.
    pub fn event(&mut self, event: StreamEvent) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        match event {
            StreamEvent::Start { partial } => {
                self.partial = (*partial).clone();
                self.out.push(StreamEvent::Start { partial });
            }
            StreamEvent::TextStart { .. } | StreamEvent::TextEnd { .. } => {}
            StreamEvent::TextDelta { delta, .. } => {
                let pieces = self.scanner.push(&delta);
                self.apply(pieces);
                if self.scanner.stopped() {
                    self.finish_stopped();
                }
            }
            StreamEvent::ThinkingStart { content_index } => {
                let i = self.pass_block(
                    content_index,
                    ContentBlock::Thinking(ThinkingContent::default()),
                );
                self.out
                    .push(StreamEvent::ThinkingStart { content_index: i });
            }
            StreamEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let Some(i) = self.mapped(content_index) {
                    if let Some(ContentBlock::Thinking(t)) = self.content.get_mut(i) {
                        t.thinking.push_str(&delta);
                    }
                    self.out.push(StreamEvent::ThinkingDelta {
                        content_index: i,
                        delta,
                    });
                }
            }
            StreamEvent::ThinkingEnd {
                content_index,
                content,
                signature,
            } => {
                if let Some(i) = self.mapped(content_index) {
                    if let Some(slot) = self.content.get_mut(i) {
                        *slot = ContentBlock::Thinking(ThinkingContent {
                            thinking: content.clone(),
                            thinking_signature: signature.clone(),
                            item_id: None,
                        });
                    }
                    self.out.push(StreamEvent::ThinkingEnd {
                        content_index: i,
                        content,
                        signature,
                    });
                }
            }
            StreamEvent::RedactedThinking {
                content_index,
                data,
            } => {
                let block = ContentBlock::RedactedThinking(
                    crate::agent::protocol::types::RedactedThinkingContent { data: data.clone() },
                );
                let i = self.pass_block(content_index, block);
                self.out.push(StreamEvent::RedactedThinking {
                    content_index: i,
                    data,
                });
            }
            StreamEvent::ToolCallStart {
                content_index,
                id,
                name,
            } => {
                let block = ContentBlock::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: crate::agent::protocol::types::empty_object(),
                    intent: None,
                    thought_signature: None,
                });
                let i = self.pass_block(content_index, block);
                self.out.push(StreamEvent::ToolCallStart {
                    content_index: i,
                    id,
                    name,
                });
            }
            StreamEvent::ToolCallDelta {
                content_index,
                delta,
            } => {
                if let Some(i) = self.mapped(content_index) {
                    self.out.push(StreamEvent::ToolCallDelta {
                        content_index: i,
                        delta,
                    });
                }
            }
            StreamEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                if let Some(i) = self.mapped(content_index) {
                    self.calls += 1;
                    if let Some(slot) = self.content.get_mut(i) {
                        *slot = ContentBlock::ToolCall(tool_call.clone());
                    }
                    self.out.push(StreamEvent::ToolCallEnd {
                        content_index: i,
                        tool_call,
                    });
                }
            }
            StreamEvent::ImageEnd {
                content_index,
                content,
            } => {
                let i = self.pass_block(content_index, ContentBlock::Image(content.clone()));
                self.out.push(StreamEvent::ImageEnd {
                    content_index: i,
                    content,
                });
            }
            StreamEvent::Done { message, .. } => {
                let pieces = self.scanner.finish();
                self.apply(pieces);
                self.settle_open_call();
                self.close_text();
                let mut message = *message;
                message.content = std::mem::take(&mut self.content);
                if self.calls > 0 && message.stop_reason == StopReason::Stop {
                    message.stop_reason = StopReason::ToolUse;
                }
                self.finished = true;
                self.out.push(StreamEvent::Done {
                    reason: message.stop_reason,
                    message: Box::new(message),
                });
            }
            StreamEvent::Error { reason, error } => {
                // A failed reply keeps its text; a call still open stays unfinished, as a
                // native call cut off by the failure does (the loop drops it).
                let pieces = self.scanner.finish();
                self.apply(
                    pieces
                        .into_iter()
                        .filter(|p| matches!(p, Piece::Text(_)))
                        .collect(),
                );
                self.open_call = None;
                self.close_text();
                let mut error = *error;
                error.content = std::mem::take(&mut self.content);
                self.finished = true;
                self.out.push(StreamEvent::Error {
                    reason,
                    error: Box::new(error),
                });
            }
        }
        std::mem::take(&mut self.out)
    }

    /// End the reply where the model began to write a result itself.
    fn finish_stopped(&mut self) {
        if self.finished {
            return;
        }
        self.settle_open_call();
        self.close_text();
        let mut message = self.partial.clone();
        message.content = std::mem::take(&mut self.content);
        message.stop_reason = if self.calls > 0 {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        if message.timestamp == 0 {
            message.timestamp = now_ms();
        }
        self.finished = true;
        self.out.push(StreamEvent::Done {
            reason: message.stop_reason,
            message: Box::new(message),
        });
    }

    fn apply(&mut self, pieces: Vec<Piece>) {
        for piece in pieces {
            match piece {
                Piece::Text(text) => {
                    // Space around calls is dropped; so is space at the end of any text
                    // (held until more text follows), so the text is the same however the
                    // reply was cut into pieces.
                    let mut t = text.as_str();
                    if self.after_call {
                        t = t.trim_start();
                        if t.is_empty() {
                            continue;
                        }
                        self.after_call = false;
                    }
                    let body = t.trim_end();
                    let trail = &t[body.len()..];
                    if body.is_empty() {
                        self.pending_space.push_str(trail);
                        continue;
                    }
                    let text = std::mem::take(&mut self.pending_space) + body;
                    self.text(&text);
                    self.pending_space = trail.to_string();
                }
                Piece::Call(parsed) => {
                    self.pending_space.clear();
                    self.close_text();
                    self.call(parsed);
                    self.after_call = true;
                }
                Piece::Opening(name) => {
                    self.pending_space.clear();
                    self.close_text();
                    let index = self.content.len();
                    let id = call_id();
                    self.content.push(ContentBlock::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: crate::agent::protocol::types::empty_object(),
                        intent: None,
                        thought_signature: None,
                    }));
                    self.out.push(StreamEvent::ToolCallStart {
                        content_index: index,
                        id: id.clone(),
                        name: name.clone(),
                    });
                    self.open_call = Some((index, id, name));
                }
                Piece::Fabricated => {}
            }
        }
    }

    fn text(&mut self, delta: &str) {
        let index = match self.text_open {
            Some(i) => i,
            None => {
                let i = self.content.len();
                self.content.push(ContentBlock::text(""));
                self.out.push(StreamEvent::TextStart { content_index: i });
                self.text_open = Some(i);
                i
            }
        };
        if let Some(ContentBlock::Text(t)) = self.content.get_mut(index) {
            t.text.push_str(delta);
        }
        self.out.push(StreamEvent::TextDelta {
            content_index: index,
            delta: delta.to_string(),
        });
    }

    /// A call announced but never completed gets its end, as a call that could not be read.
    fn settle_open_call(&mut self) {
        if let Some((_, _, name)) = self.open_call.clone() {
            self.call(Parsed::Bad {
                name,
                error: "the tool call was never finished".into(),
                raw: String::new(),
            });
        }
    }

    fn close_text(&mut self) {
        if let Some(i) = self.text_open.take() {
            let content = self
                .content
                .get(i)
                .and_then(ContentBlock::as_text)
                .unwrap_or_default()
                .to_string();
            self.out.push(StreamEvent::TextEnd {
                content_index: i,
                content,
                signature: None,
            });
        }
    }

    fn call(&mut self, parsed: Parsed) {
        let (name, arguments) = match parsed {
            Parsed::Call { name, arguments } => (name, arguments),
            Parsed::Bad { name, error, raw } => (name, bad_arguments(&error, &raw)),
            Parsed::Text(t) => {
                self.text(&t);
                return;
            }
        };
        let name = if name.trim().is_empty() {
            UNNAMED_CALL.to_string()
        } else {
            name.trim().to_string()
        };
        let announced = self.open_call.take();
        let call = ToolCall {
            id: announced
                .as_ref()
                .map_or_else(call_id, |(_, id, _)| id.clone()),
            name,
            arguments,
            intent: None,
            thought_signature: None,
        };
        let index = match announced {
            Some((index, _, _)) => {
                if let Some(slot) = self.content.get_mut(index) {
                    *slot = ContentBlock::ToolCall(call.clone());
                }
                index
            }
            None => {
                let index = self.content.len();
                self.content.push(ContentBlock::ToolCall(call.clone()));
                self.out.push(StreamEvent::ToolCallStart {
                    content_index: index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                index
            }
        };
        self.calls += 1;
        self.out.push(StreamEvent::ToolCallDelta {
            content_index: index,
            delta: call.arguments.to_string(),
        });
        self.out.push(StreamEvent::ToolCallEnd {
            content_index: index,
            tool_call: call,
        });
    }
}

/// Wrap a provider stream so the calls written in its text come out as tool calls. `request`
/// cancels the provider request when the model starts writing a result itself.
pub fn rewrite_stream(
    rewriter: Rewriter,
    inner: EventStream,
    request: CancellationToken,
) -> EventStream {
    struct St {
        inner: Option<EventStream>,
        rewriter: Rewriter,
        queue: VecDeque<StreamEvent>,
        request: CancellationToken,
    }
    let st = St {
        inner: Some(inner),
        rewriter,
        queue: VecDeque::new(),
        request,
    };
    futures::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(e) = st.queue.pop_front() {
                return Some((Ok(e), st));
            }
            let inner = st.inner.as_mut()?;
            match inner.next().await {
                Some(Ok(event)) => {
                    st.queue.extend(st.rewriter.event(event));
                    if st.rewriter.is_finished() {
                        if st.rewriter.stopped() {
                            // Only this request stops; the run goes on with the calls made.
                            st.request.cancel();
                        }
                        st.inner = None;
                    }
                }
                Some(Err(e)) => {
                    st.inner = None;
                    return Some((Err(e), st));
                }
                None => st.inner = None,
            }
        }
    })
    .boxed()
}

/// `none`/`off`, or a dialect by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    Off,
    On(String),
}

/// Where dialects are asked for: the flag, `PI_DIALECT`, each model's `dialect` and the
/// global `dialect` key, in that order of precedence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DialectSettings {
    /// `--dialect`, else `PI_DIALECT`.
    pub forced: Option<Setting>,
    /// `provider/id` → the model's `dialect` key.
    pub per_model: HashMap<String, Setting>,
    pub global: Option<Setting>,
}

impl DialectSettings {
    /// Read every source; an unknown dialect name is an error naming where it was written.
    pub fn from_sources(
        flag: Option<&str>,
        env: Option<&str>,
        global: Option<&str>,
        per_model: &[(String, String, String)],
    ) -> Result<Self, String> {
        let read =
            |v: &str, place: &str| super::parse_setting(v).map_err(|e| format!("{place}: {e}"));
        let forced = match (flag, env) {
            (Some(f), _) => Some(read(f, "--dialect")?),
            (None, Some(e)) => Some(read(e, "PI_DIALECT")?),
            (None, None) => None,
        };
        let global = global.map(|g| read(g, "config dialect")).transpose()?;
        let mut models = HashMap::new();
        for (provider, id, value) in per_model {
            let place = format!("config providers.{provider}.models `{id}` dialect");
            models.insert(format!("{provider}/{id}"), read(value, &place)?);
        }
        Ok(DialectSettings {
            forced,
            per_model: models,
            global,
        })
    }

    fn setting_for(&self, model: &Model) -> Option<&Setting> {
        self.forced
            .as_ref()
            .or_else(|| self.per_model.get(&model_key(model)))
            .or(self.global.as_ref())
    }
}

fn model_key(model: &Model) -> String {
    format!("{}/{}", model.provider, model.id)
}

struct Shared {
    inner: Arc<dyn Provider>,
    catalog: Arc<Catalog>,
    settings: DialectSettings,
    /// Models that refused native tools in this process, and the dialect they use since.
    learned: Mutex<HashMap<String, Arc<dyn Dialect>>>,
    notices: Mutex<Option<mpsc::UnboundedSender<String>>>,
}

/// The loop's provider: the real one, with a dialect where one is asked for or learned.
pub struct DialectProvider {
    shared: Arc<Shared>,
}

enum Choice {
    Use(Arc<dyn Dialect>),
    Native { auto: bool },
}

impl DialectProvider {
    pub fn new(inner: Arc<dyn Provider>, catalog: Arc<Catalog>, settings: DialectSettings) -> Self {
        DialectProvider {
            shared: Arc::new(Shared {
                inner,
                catalog,
                settings,
                learned: Mutex::new(HashMap::new()),
                notices: Mutex::new(None),
            }),
        }
    }

    /// Where notices go (the switch to a dialect when a model refuses tools). Each call
    /// replaces the previous receiver.
    pub fn notices(&self) -> mpsc::UnboundedReceiver<String> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self
            .shared
            .notices
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(tx);
        rx
    }

    /// The dialect a model's requests use now (`None`: native tools).
    pub fn dialect_for(&self, model: &Model) -> Option<&'static str> {
        match self.shared.choose(model) {
            Choice::Use(d) => Some(d.name()),
            Choice::Native { .. } => None,
        }
    }
}

impl Shared {
    fn choose(&self, model: &Model) -> Choice {
        match self.settings.setting_for(model) {
            Some(Setting::On(name)) => match by_name(name) {
                Some(d) => Choice::Use(d),
                None => Choice::Native { auto: false },
            },
            Some(Setting::Off) => Choice::Native { auto: false },
            None => {
                let learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(d) = learned.get(&model_key(model)) {
                    return Choice::Use(d.clone());
                }
                Choice::Native {
                    auto: self.is_local(model),
                }
            }
        }
    }

    fn is_local(&self, model: &Model) -> bool {
        self.catalog
            .resolve(&model.provider, &model.id)
            .is_ok_and(|(m, _)| is_local_url(&m.base_url))
    }

    fn notice(&self, text: String) {
        let tx = self.notices.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = tx.as_ref() {
            let _ = tx.send(text);
        }
    }

    fn dialect_stream(
        &self,
        dialect: Arc<dyn Dialect>,
        request: ProviderRequest,
        cancel: CancellationToken,
    ) -> EventStream {
        let tools = request.context.tools.clone();
        let encoded = encode_request(&*dialect, &request);
        let child = cancel.child_token();
        let inner = self.inner.stream(encoded, child.clone());
        if tools.is_empty() {
            // Nothing to call: the text is left as it is.
            return inner;
        }
        let rewriter = Rewriter::new(dialect, tools, &request.model);
        rewrite_stream(rewriter, inner, child)
    }
}

/// Whether an error reply says the model or server does not take native tools.
pub fn refuses_tools(error: &AssistantMessage) -> bool {
    if !matches!(error.error_status, Some(400 | 404 | 422 | 500 | 501)) {
        return false;
    }
    let m = error
        .error_message
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let about_tools = m.contains("tool") || m.contains("function call");
    let refusal = [
        "support",
        "not allowed",
        "unknown",
        "unrecognized",
        "not enabled",
        "requires",
        "jinja",
    ]
    .iter()
    .any(|w| m.contains(w));
    about_tools && refusal
}

impl Provider for DialectProvider {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        let shared = self.shared.clone();
        match shared.choose(&request.model) {
            Choice::Use(d) => shared.dialect_stream(d, request, cancel),
            Choice::Native { auto: true } if !request.context.tools.is_empty() => {
                let first = shared.inner.stream(request.clone(), cancel.clone());
                let fut = async move {
                    let mut first = first;
                    let mut head = Vec::new();
                    loop {
                        match first.next().await {
                            Some(Ok(StreamEvent::Start { partial })) => {
                                head.push(Ok(StreamEvent::Start { partial }))
                            }
                            Some(Ok(StreamEvent::Error { error, .. }))
                                if !cancel.is_cancelled() && refuses_tools(&error) =>
                            {
                                let hermes: Arc<dyn Dialect> = Arc::new(super::hermes::HERMES);
                                shared
                                    .learned
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .insert(model_key(&request.model), hermes.clone());
                                shared.notice(format!(
                                    "{} refused native tools; using the hermes dialect",
                                    request.model.id
                                ));
                                drop(first);
                                return shared.dialect_stream(hermes, request, cancel);
                            }
                            Some(other) => {
                                head.push(other);
                                break;
                            }
                            None => break,
                        }
                    }
                    futures::stream::iter(head).chain(first).boxed()
                };
                futures::stream::once(fut).flatten().boxed()
            }
            Choice::Native { .. } => shared.inner.stream(request, cancel),
        }
    }
}

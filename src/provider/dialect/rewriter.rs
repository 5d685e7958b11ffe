//! The event rewriter: a provider's events in, the same reply out with the calls found in
//! its text as tool-call events (see [`super::scanner`]). [`rewrite_stream`] wraps a whole
//! provider stream with it. When the model starts writing a tool result itself, the reply
//! ends there with the calls made so far: by default the provider request is stopped at once
//! (only the request, never the run); in drain mode the request is read to its end and the
//! rest of the reply is dropped. A text block's signature (some providers give one) stays on
//! the text that came from that block.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::scanner::{Piece, Scanner};
use super::{Dialect, Parsed, bad_arguments};
use crate::agent::protocol::stream::{EventStream, Model, StreamEvent, ToolSpec};
use crate::agent::protocol::types::{
    AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall, now_ms,
};

/// The tool name given to a call that did not say which tool it meant.
pub(crate) const UNNAMED_CALL: &str = "invalid_tool_call";

/// A call id no other call of this process has.
pub(crate) fn call_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("call_{:x}{n}", now_ms())
}

/// Turns a provider's events into events with the calls found in the text.
pub(crate) struct Rewriter {
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
    /// The content index of each call read from the text, in order.
    text_calls: Vec<usize>,
    calls: usize,
    finished: bool,
    /// Keep reading the request after a made-up result (dropping the rest) instead of ending
    /// the reply there.
    drain: bool,
    /// Where our content stood when the provider's current text block started.
    text_block_from: usize,
}

impl Rewriter {
    pub(crate) fn new(dialect: Arc<dyn Dialect>, tools: Vec<ToolSpec>, model: &Model) -> Self {
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
            text_calls: Vec::new(),
            calls: 0,
            finished: false,
            drain: false,
            text_block_from: 0,
        }
    }

    /// Read the request to its end after a made-up result, dropping what follows it, rather
    /// than ending the reply there.
    pub(crate) fn draining(mut self, drain: bool) -> Self {
        self.drain = drain;
        self
    }

    /// Whether the reply ended before the provider's stream did (the request should stop).
    pub(crate) fn ended_early(&self) -> bool {
        self.finished && self.scanner.stopped() && !self.drain
    }

    pub(crate) fn is_finished(&self) -> bool {
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
    #[allow(
        clippy::too_many_lines,
        reason = "one state machine over the text: each arm is a state, kept together to read the transitions"
    )]
    pub(crate) fn event(&mut self, event: StreamEvent) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        if self.scanner.stopped() {
            // Draining: everything after the made-up result is dropped; the end of the
            // request ends the reply with what came before it.
            match event {
                StreamEvent::Done { message, .. } => self.done(*message),
                StreamEvent::Error { .. } => self.finish_stopped(),
                _ => {}
            }
            return std::mem::take(&mut self.out);
        }
        match event {
            StreamEvent::Start { partial } => {
                self.partial = (*partial).clone();
                self.out.push(StreamEvent::Start { partial });
            }
            StreamEvent::TextStart { .. } => self.text_block_from = self.content.len(),
            StreamEvent::TextEnd { signature, .. } => {
                if let Some(signature) = signature {
                    self.sign_text(signature);
                }
            }
            StreamEvent::TextDelta { delta, .. } => {
                let pieces = self.scanner.push(&delta);
                self.apply(pieces);
                if self.scanner.stopped() && !self.drain {
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
            StreamEvent::Done { message, .. } => self.done(*message),
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

    /// The provider's reply ended: settle what the scanner holds and finish with our content
    /// (the provider's usage and stop reason kept).
    fn done(&mut self, mut message: AssistantMessage) {
        let pieces = self.scanner.finish();
        self.apply(pieces);
        self.settle_open_call();
        self.close_text();
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

    /// The provider's text block ended with a signature: it belongs to the text that came from
    /// that block (the open text block, else the last one made from it).
    fn sign_text(&mut self, signature: String) {
        let from = self.text_block_from;
        let target = self.text_open.or_else(|| {
            (from..self.content.len())
                .rev()
                .find(|&i| matches!(self.content[i], ContentBlock::Text(_)))
        });
        if let Some(i) = target
            && let Some(ContentBlock::Text(t)) = self.content.get_mut(i)
        {
            t.text_signature = Some(signature);
        }
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
                Piece::CutShort { calls, tag } => self.cut_short(calls, tag),
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

    /// The last `n` calls read from the text were cut short by a value holding `tag`: each
    /// becomes a call whose result says so, and nothing of it runs. (Their tool cells were
    /// shown already; the finished message carries the change.)
    fn cut_short(&mut self, n: usize, tag: &str) {
        let error = format!(
            "the call was not run: its closing tag {tag} comes again later in the reply, so one \
             of its values probably holds the tags that end a value and a call, and was cut \
             there. Send the call again without that sequence in a value (for a file that \
             needs it, write it in parts or with another tool)."
        );
        let from = self.text_calls.len().saturating_sub(n);
        for &i in &self.text_calls[from..] {
            if let Some(ContentBlock::ToolCall(call)) = self.content.get_mut(i) {
                let raw = call.arguments.to_string();
                call.arguments = bad_arguments(&error, &raw);
            }
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
            let signature = match self.content.get(i) {
                Some(ContentBlock::Text(t)) => t.text_signature.clone(),
                _ => None,
            };
            self.out.push(StreamEvent::TextEnd {
                content_index: i,
                content,
                signature,
            });
        }
    }

    fn call(&mut self, parsed: Parsed) {
        let (name, arguments) = match parsed {
            Parsed::Call { name, arguments } => (name, arguments),
            Parsed::Bad { name, error, raw } => (name, bad_arguments(&error, &raw)),
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
        self.text_calls.push(index);
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
pub(crate) fn rewrite_stream(
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
                        if st.rewriter.ended_early() {
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

//! A provider that replays scripted responses, for tests and benchmarks.
//!
//! Each provider call takes the next [`Script`]: a list of steps (events, delays, a stall that
//! waits for cancellation, an out-of-band failure). Every request is recorded so tests can
//! check what the model was sent. Cancellation is honoured at every step, and the provider
//! notes when a stream was dropped. [`reply`] builds the usual event sequences.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::lock;
use crate::agent::protocol::stream::{
    EventStream, Provider, ProviderError, ProviderRequest, StreamEvent,
};
use crate::agent::protocol::types::{AssistantMessage, ContentBlock, StopReason, ToolCall};

/// One step of a scripted response.
#[derive(Clone, Debug)]
pub enum Step {
    Event(StreamEvent),
    Delay(Duration),
    /// Wait until cancelled (a provider that never answers).
    Stall,
    /// Fail the stream out of band.
    Fail(String),
}

/// The steps of one response.
pub type Script = Vec<Step>;

#[derive(Default)]
struct Shared {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<ProviderRequest>>,
    dropped: AtomicUsize,
    /// Woken whenever a stream is dropped early.
    dropped_notify: tokio::sync::Notify,
}

/// Replays scripts in order, one per call.
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    shared: Arc<Shared>,
}

impl ScriptedProvider {
    pub fn new(scripts: impl IntoIterator<Item = Script>) -> Self {
        let p = ScriptedProvider::default();
        lock(&p.shared.scripts).extend(scripts);
        p
    }

    pub fn push(&self, script: Script) {
        lock(&self.shared.scripts).push_back(script);
    }

    /// Every request made so far.
    pub fn requests(&self) -> Vec<ProviderRequest> {
        lock(&self.shared.requests).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// How many streams were dropped before they finished.
    pub fn dropped_early(&self) -> usize {
        self.shared.dropped.load(Ordering::SeqCst)
    }

    /// Wait until at least `n` streams were dropped before they finished (a loop hands an
    /// aborted stream to another thread to drop, so the drop may come just after the run ends).
    pub async fn wait_dropped(&self, n: usize) {
        loop {
            let notified = self.shared.dropped_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.dropped_early() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Forget recorded requests (benchmarks keep memory flat this way).
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }
}

struct DropWatch {
    shared: Arc<Shared>,
    finished: bool,
}

impl DropWatch {
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for DropWatch {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.dropped.fetch_add(1, Ordering::SeqCst);
            self.shared.dropped_notify.notify_waiters();
        }
    }
}

impl Provider for ScriptedProvider {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        lock(&self.shared.requests).push(request);
        let script = lock(&self.shared.scripts).pop_front();
        let Some(script) = script else {
            let err = ProviderError::new("scripted provider: no response left for this request");
            return futures::stream::once(async move { Err(err) }).boxed();
        };
        let watch = DropWatch {
            shared: self.shared.clone(),
            finished: false,
        };
        let state = (VecDeque::from(script), cancel, watch);
        futures::stream::unfold(state, |(mut steps, cancel, mut watch)| async move {
            loop {
                let Some(step) = steps.pop_front() else {
                    watch.finish();
                    return None;
                };
                match step {
                    Step::Event(ev) => {
                        if cancel.is_cancelled() {
                            return None;
                        }
                        if steps.is_empty() {
                            watch.finish();
                        }
                        return Some((Ok(ev), (steps, cancel, watch)));
                    }
                    Step::Delay(d) => {
                        tokio::select! {
                            _ = cancel.cancelled() => return None,
                            _ = tokio::time::sleep(d) => {}
                        }
                    }
                    Step::Stall => {
                        cancel.cancelled().await;
                        return None;
                    }
                    Step::Fail(msg) => {
                        watch.finish();
                        return Some((
                            Err(ProviderError::new(msg)),
                            (VecDeque::new(), cancel, watch),
                        ));
                    }
                }
            }
        })
        .boxed()
    }
}

/// Builders for common scripted replies.
pub mod reply {
    use super::*;

    /// Metadata every scripted message carries.
    pub fn base() -> AssistantMessage {
        AssistantMessage::empty("scripted", "scripted", "scripted-model")
    }

    pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: args,
            intent: None,
            thought_signature: None,
        }
    }

    fn stop_for(calls: &[ToolCall]) -> StopReason {
        if calls.is_empty() {
            StopReason::Stop
        } else {
            StopReason::ToolUse
        }
    }

    /// `start`, then the text (in the given pieces) and calls, without a terminal event.
    pub fn open(pieces: &[&str], calls: &[ToolCall]) -> (Script, AssistantMessage) {
        let mut steps = vec![Step::Event(StreamEvent::Start {
            partial: Box::new(base()),
        })];
        let mut message = base();
        if !pieces.is_empty() {
            let index = message.content.len();
            steps.push(Step::Event(StreamEvent::TextStart {
                content_index: index,
            }));
            for p in pieces {
                steps.push(Step::Event(StreamEvent::TextDelta {
                    content_index: index,
                    delta: p.to_string(),
                }));
            }
            let text = pieces.concat();
            steps.push(Step::Event(StreamEvent::TextEnd {
                content_index: index,
                content: text.clone(),
                signature: None,
            }));
            message.content.push(ContentBlock::text(text));
        }
        for c in calls {
            let index = message.content.len();
            steps.push(Step::Event(StreamEvent::ToolCallStart {
                content_index: index,
                id: c.id.clone(),
                name: c.name.clone(),
            }));
            steps.push(Step::Event(StreamEvent::ToolCallDelta {
                content_index: index,
                delta: c.arguments.to_string(),
            }));
            steps.push(Step::Event(StreamEvent::ToolCallEnd {
                content_index: index,
                tool_call: c.clone(),
            }));
            message.content.push(ContentBlock::ToolCall(c.clone()));
        }
        (steps, message)
    }

    /// A complete reply: text pieces, then tool calls, then `done`.
    pub fn full(pieces: &[&str], calls: &[ToolCall]) -> Script {
        let (mut steps, mut message) = open(pieces, calls);
        message.stop_reason = stop_for(calls);
        steps.push(Step::Event(StreamEvent::Done {
            reason: message.stop_reason,
            message: Box::new(message),
        }));
        steps
    }

    pub fn text(text: &str) -> Script {
        full(&[text], &[])
    }

    pub fn tools(calls: &[ToolCall]) -> Script {
        full(&[], calls)
    }

    /// A reply that ends with `done` and the given stop reason and details.
    pub fn with_stop(
        pieces: &[&str],
        calls: &[ToolCall],
        reason: StopReason,
        details: Option<crate::agent::protocol::types::StopDetails>,
    ) -> Script {
        let (mut steps, mut message) = open(pieces, calls);
        message.stop_reason = reason;
        message.stop_details = details;
        steps.push(Step::Event(StreamEvent::Done {
            reason,
            message: Box::new(message),
        }));
        steps
    }

    /// A retryable failure (rate limit, overload, dropped stream) after the given content.
    pub fn transient_error(
        pieces: &[&str],
        calls: &[ToolCall],
        error_message: &str,
        retry_after_ms: Option<u64>,
    ) -> Script {
        let (mut steps, mut message) = open(pieces, calls);
        if pieces.is_empty() && calls.is_empty() {
            steps.clear(); // failed before the response started
        }
        message.stop_reason = StopReason::Error;
        message.error_message = Some(error_message.to_string());
        message.transient = Some(crate::agent::protocol::types::TransientError { retry_after_ms });
        steps.push(Step::Event(StreamEvent::Error {
            reason: StopReason::Error,
            error: Box::new(message),
        }));
        steps
    }

    /// A reply that fails in-band with `error` after the given content.
    pub fn error(pieces: &[&str], calls: &[ToolCall], error_message: &str) -> Script {
        failed(pieces, calls, error_message, false)
    }

    /// Like [`error`], for a stream that broke while being read (the provider marks it so).
    pub fn broken(pieces: &[&str], calls: &[ToolCall], error_message: &str) -> Script {
        failed(pieces, calls, error_message, true)
    }

    fn failed(pieces: &[&str], calls: &[ToolCall], error_message: &str, broken: bool) -> Script {
        let (mut steps, mut message) = open(pieces, calls);
        message.stop_reason = StopReason::Error;
        message.error_message = Some(error_message.to_string());
        message.stream_broken = broken;
        steps.push(Step::Event(StreamEvent::Error {
            reason: StopReason::Error,
            error: Box::new(message),
        }));
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::stream::{LlmContext, Model, StreamOptions};

    fn request() -> ProviderRequest {
        ProviderRequest {
            model: Model::new("scripted", "scripted", "m"),
            context: LlmContext::default(),
            options: StreamOptions::default(),
        }
    }

    #[tokio::test]
    async fn replays_scripts_in_order_and_records_requests() {
        let p = ScriptedProvider::new([reply::text("one"), reply::text("two")]);
        for expected in ["one", "two"] {
            let events: Vec<_> = p
                .stream(request(), CancellationToken::new())
                .collect()
                .await;
            let last = events.last().cloned().unwrap().unwrap();
            assert!(
                matches!(last, StreamEvent::Done { message, .. } if message.text() == expected)
            );
        }
        assert_eq!(p.request_count(), 2);
        let none: Vec<_> = p
            .stream(request(), CancellationToken::new())
            .collect()
            .await;
        assert!(none[0].is_err());
    }

    #[tokio::test]
    async fn a_stall_ends_on_cancel_and_counts_as_dropped() {
        let p = ScriptedProvider::new([vec![Step::Stall]]);
        let cancel = CancellationToken::new();
        let mut s = p.stream(request(), cancel.clone());
        cancel.cancel();
        assert!(s.next().await.is_none());
        drop(s);
        assert_eq!(p.dropped_early(), 1);
    }
}

//! Reply streaming: one provider call streamed into the reply being built, with provider
//! panics contained and an abort ending the stream at once.

use super::*;

pub(super) fn provider_panic_text(panic: &str) -> String {
    format!("The provider crashed while streaming: {panic}")
}

/// Drop an abandoned provider stream on the blocking pool, fire and forget: its cleanup
/// (closing a connection, a provider's own teardown) may take its time or even block, and the
/// loop does not wait for it. A panic in that cleanup stays on its thread.
pub(super) fn drop_elsewhere(stream: EventStream) {
    drop(tokio::task::spawn_blocking(move || {
        let _ = contain_sync(move || drop(stream));
    }));
}

/// The provider's stream with its panics turned into out-of-band failures.
pub(super) fn contain_stream(stream: EventStream) -> EventStream {
    let mut stream = Some(stream);
    futures::stream::poll_fn(move |cx| {
        let Some(s) = stream.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        match contain_sync(|| s.poll_next_unpin(cx)) {
            Ok(poll) => poll,
            Err(panic) => {
                stream = None;
                std::task::Poll::Ready(Some(Err(ProviderError::new(provider_panic_text(&panic)))))
            }
        }
    })
    .boxed()
}

impl Run {
    /// One provider call, streamed to the end (or to an abort).
    pub(super) async fn stream_attempt(
        &mut self,
        context: LlmContext,
    ) -> Result<Attempt, LoopError> {
        if self.aborted() {
            return Ok(Attempt::Aborted(self.finish_aborted()));
        }
        let request = ProviderRequest {
            model: self.call.model.clone(),
            context,
            options: self.request_options(),
        };
        let started = Instant::now();
        let provider = self.cfg.provider.clone();
        let token = self.signal.token().child_token();
        let mut stream = match contain_sync(move || provider.stream(request, token)) {
            Ok(s) => contain_stream(s),
            Err(panic) => {
                self.fail_chat(started);
                return Err(LoopError::new(provider_panic_text(&panic)));
            }
        };
        self.reply.streaming = None;
        self.reply.completed_calls.clear();
        let signal = self.signal.clone();
        let cancelled = signal.cancelled();
        tokio::pin!(cancelled);
        loop {
            let next = tokio::select! {
                biased;
                _ = &mut cancelled => None,
                ev = stream.next() => Some(ev),
            };
            let Some(next) = next else {
                // Closes the connection now, on another thread: a provider whose cleanup
                // stalls must not hold up the aborted boundary.
                drop_elsewhere(stream);
                return Ok(Attempt::Aborted(self.finish_aborted()));
            };
            let event = match next {
                None => {
                    self.fail_chat(started);
                    return Err(LoopError::new(
                        "The model's response ended before it was complete",
                    ));
                }
                Some(Err(e)) => {
                    self.fail_chat(started);
                    return Err(LoopError::new(e.message));
                }
                Some(Ok(ev)) => ev,
            };
            match event {
                StreamEvent::Done { message, .. } | StreamEvent::Error { error: message, .. } => {
                    drop(stream);
                    return Ok(Attempt::Final {
                        message: *message,
                        started_emitted: self.reply.streaming.is_some(),
                        started,
                    });
                }
                StreamEvent::Start { ref partial } => match &mut self.reply.streaming {
                    None => {
                        self.sink.emit(AgentEvent::MessageStart {
                            message: (**partial).clone().into(),
                        });
                        self.reply.streaming = Some(MessageBuilder::new((**partial).clone()));
                    }
                    Some(b) => {
                        // The provider restarted the attempt: same message, fresh content.
                        b.apply(&event);
                        self.reply.completed_calls.clear();
                        self.sink.emit(AgentEvent::MessageUpdate {
                            assistant_message_event: event,
                        });
                    }
                },
                ev => {
                    let Some(b) = &mut self.reply.streaming else {
                        continue; // content before `start` is ignored
                    };
                    if let StreamEvent::ToolCallEnd { tool_call, .. } = &ev {
                        self.reply.completed_calls.push(tool_call.id.clone());
                    }
                    b.apply(&ev);
                    self.hooks.on_assistant_event(b.message(), &ev);
                    self.sink.emit(AgentEvent::MessageUpdate {
                        assistant_message_event: ev,
                    });
                }
            }
        }
    }

    pub(super) fn fail_chat(&self, started: Instant) {
        self.collect(|c| {
            c.fail_chat(
                &self.call.model.id,
                &self.call.model.provider,
                started.elapsed().as_millis() as u64,
                "stream_error",
            )
        });
    }
}

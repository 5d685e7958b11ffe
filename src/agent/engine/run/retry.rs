//! Settling a finished attempt: a reply that leaked protocol text is discarded, an overflow
//! is compacted and retried, a transient failure waits out its backoff and is retried.

use super::*;

/// The `auto_retry_end` error when a retry is given up on request.
pub(super) const RETRY_SKIPPED_TEXT: &str = "Retry cancelled";

impl Run {
    /// Decide what a finished attempt leads to: a retry after a transient failure (`None`,
    /// once its backoff has passed), or the committed reply.
    pub(super) async fn settle(
        &mut self,
        mut message: AssistantMessage,
        started_emitted: bool,
        started: Instant,
    ) -> Result<Option<AgentMessage>, LoopError> {
        if harmony::applies_to(&self.call.model)
            && !self.aborted()
            && let Some(leak) = harmony::detect(&message)
        {
            return self.discard_leak(message, leak, started_emitted, started);
        }
        if message.stop_reason == StopReason::Error
            && is_context_overflow(&message)
            && self.cfg.compaction.is_some_and(|c| c.enabled)
            && !self.aborted()
        {
            if self.guards.overflow_compacted {
                message.error_message = Some(format!(
                    "The conversation is still too long for {} after compacting it: {}",
                    self.call.model.id,
                    message
                        .error_message
                        .as_deref()
                        .unwrap_or("the request was refused")
                ));
            } else {
                self.guards.overflow_compacted = true;
                if started_emitted {
                    // Shown as a failed attempt, then dropped, as a retried one is.
                    let mut shown = message.clone();
                    shown.stop_details = Some(StopDetails {
                        kind: STOP_RETRIED.to_string(),
                        category: None,
                        explanation: shown.error_message.clone(),
                    });
                    self.sink.emit(AgentEvent::MessageEnd {
                        message: shown.into(),
                    });
                }
                if self.compact(CompactionReason::Overflow, None).await {
                    self.reply.streaming = None;
                    self.reply.completed_calls.clear();
                    return Ok(None);
                }
                if self.aborted() {
                    return Ok(Some(self.finish_aborted()));
                }
            }
        }
        let retryable = message.stop_reason == StopReason::Error
            && message.transient.is_some()
            && self.reply.retries < self.cfg.retry.max_retries
            && !self.aborted();
        if retryable {
            retain_completed_tool_calls(&mut message, &self.reply.completed_calls);
            salvage_interrupted_tool_turn(&mut message, &self.call.tools);
        }
        if !(retryable && message.stop_reason == StopReason::Error) {
            let success = message.stop_reason != StopReason::Error;
            self.end_retrying(success, message.error_message.clone());
            return self
                .finish(message, started_emitted, started)
                .await
                .map(Some);
        }
        self.reply.retries += 1;
        let error_text = message.error_message.clone().unwrap_or_default();
        // The failed attempt counts as a call; its partial never enters the transcript.
        self.record_discarded(&message, started);
        let retry_after = message.transient.as_ref().and_then(|t| t.retry_after_ms);
        // Kept in case the retry is given up: then this reply ends the run after all.
        let failed = message.clone();
        if started_emitted {
            // Shown as a failed attempt, then dropped: consumers keep it out of the transcript.
            message.stop_details = Some(StopDetails {
                kind: STOP_RETRIED.to_string(),
                category: None,
                explanation: message.error_message.clone(),
            });
            self.sink.emit(AgentEvent::MessageEnd {
                message: message.into(),
            });
        }
        let delay = self.cfg.retry.delay(self.reply.retries, retry_after);
        self.sink.emit(AgentEvent::AutoRetryStart {
            attempt: self.reply.retries,
            max_attempts: self.cfg.retry.max_retries,
            delay_ms: delay.as_millis() as u64,
            error_message: error_text,
        });
        let signal = self.signal.clone();
        let skip = self.cfg.skip_retry.clone();
        let skipped = skip.notified();
        tokio::pin!(skipped);
        // Registered before the wait, so a wake between the event above and the select counts.
        skipped.as_mut().enable();
        tokio::select! {
            _ = signal.cancelled() => Ok(Some(self.finish_aborted())),
            _ = &mut skipped => {
                self.end_retrying(false, Some(RETRY_SKIPPED_TEXT.to_string()));
                Ok(Some(self.commit_assistant(failed, false, None)))
            }
            _ = tokio::time::sleep(delay) => Ok(None),
        }
    }

    /// Drop a reply that leaked Harmony protocol text (spec §13.1). A shown partial ends as a
    /// discarded attempt (consumers drop it as they drop a retried one); nothing enters the
    /// context. `Ok(None)` samples the open turn again; after [`harmony::MAX_RETRIES`]
    /// re-samples the run fails.
    pub(super) fn discard_leak(
        &mut self,
        mut message: AssistantMessage,
        leak: harmony::Leak,
        started_emitted: bool,
        started: Instant,
    ) -> Result<Option<AgentMessage>, LoopError> {
        // The discarded reply still counts as a model call.
        self.record_discarded(&message, started);
        let escalated = self.reply.harmony_retries >= harmony::MAX_RETRIES;
        let signals = leak.signals.to_string();
        self.hooks.on_harmony_leak(HarmonyLeakInfo {
            escalated,
            retry: self.reply.harmony_retries,
            signals: &signals,
            surface: leak.surface.as_str(),
            model: &self.call.model,
            removed_len: leak.len,
        });
        if started_emitted {
            let text = leak.discarded_text();
            message.stop_reason = StopReason::Error;
            message.error_message = Some(text.clone());
            message.stop_details = Some(StopDetails {
                kind: STOP_RETRIED.to_string(),
                category: None,
                explanation: Some(text),
            });
            self.sink.emit(AgentEvent::MessageEnd {
                message: message.into(),
            });
        }
        if escalated {
            return Err(LoopError::new(leak.persisted_text()));
        }
        self.reply.harmony_retries += 1;
        Ok(None)
    }

    /// A reply that is thrown away (retried, or discarded for a leak) still counts as a model
    /// call; the partial being streamed is forgotten.
    pub(super) fn record_discarded(&mut self, message: &AssistantMessage, started: Instant) {
        self.collect(|c| {
            c.record_chat(
                &message.model,
                &message.provider,
                message.stop_reason,
                started.elapsed().as_millis() as u64,
                &message.usage,
            )
        });
        self.reply.streaming = None;
        self.reply.completed_calls.clear();
    }

    /// Emit `auto_retry_end` if the current call was being retried.
    pub(super) fn end_retrying(&mut self, success: bool, final_error: Option<String>) {
        if self.reply.retries > 0 {
            self.sink.emit(AgentEvent::AutoRetryEnd {
                success,
                attempt: self.reply.retries,
                final_error: (!success).then(|| final_error.unwrap_or_default()),
            });
            self.reply.retries = 0;
        }
    }
}

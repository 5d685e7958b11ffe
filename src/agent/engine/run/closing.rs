//! Closing: committing a reply (record, emit, insert), answering calls that did not run,
//! ending a turn (`turn_end` and the `on_turn_end` hook), and closing a run that failed.

use super::*;

/// Drop tool calls whose arguments never completed (their JSON may be cut short). If any were
/// dropped, mark the message as interrupted after content.
pub(super) fn retain_completed_tool_calls(message: &mut AssistantMessage, completed: &[String]) {
    let before = message.content.len();
    message.content.retain(|b| match b {
        crate::agent::protocol::types::ContentBlock::ToolCall(c) => completed.contains(&c.id),
        _ => true,
    });
    if message.content.len() == before {
        return;
    }
    if message.stop_detail_kind() == Some(STREAM_INTERRUPTED_AFTER_CONTENT) {
        return;
    }
    let previous = message.stop_details.take();
    message.stop_details = Some(StopDetails {
        kind: STREAM_INTERRUPTED_AFTER_CONTENT.to_string(),
        category: previous.as_ref().map(|d| d.kind.clone()),
        explanation: previous
            .and_then(|d| d.explanation)
            .or_else(|| message.error_message.clone()),
    });
}

/// Turn an error reply back into a runnable tool turn when the stream broke after complete tool
/// calls: the calls are whole (`toolcall_end` was seen), so running them loses nothing.
pub(super) fn salvage_interrupted_tool_turn(message: &mut AssistantMessage, tools: &ToolSet) {
    if message.stop_reason != StopReason::Error || !message.has_tool_calls() {
        return;
    }
    let refusal = |s: Option<&str>| matches!(s, Some(STOP_REFUSAL | STOP_SENSITIVE));
    if let Some(d) = &message.stop_details
        && (refusal(Some(d.kind.as_str())) || refusal(d.category.as_deref()))
    {
        return;
    }
    if !message.tool_calls().all(|c| tools.contains(&c.name)) {
        return;
    }
    if !message.stream_broken {
        return;
    }
    let previous = message.stop_details.take().unwrap_or_default();
    message.stop_details = Some(StopDetails {
        kind: STREAM_INTERRUPTED_AFTER_CONTENT.to_string(),
        category: if previous.kind == STREAM_INTERRUPTED_AFTER_CONTENT {
            previous.category
        } else if previous.kind.is_empty() {
            None
        } else {
            Some(previous.kind)
        },
        explanation: previous
            .explanation
            .or_else(|| message.error_message.clone()),
    });
    message.stop_reason = StopReason::ToolUse;
    message.error_message = None;
    message.error_status = None;
    message.stream_broken = false;
}

impl Run {
    /// Close a run that failed with `text`, wherever it stood: the reply being streamed ends
    /// as an error (keeping the calls whose arguments completed), or a fresh error reply is
    /// added; every tool call left without a result is answered; the turn is closed. Aborted
    /// runs end the same way, with the abort's reason and aborted placeholders.
    pub(super) fn close_failed(&mut self, text: &str) {
        // Results a batch emitted before it failed are answers already: keep them, so no call
        // is answered twice.
        let emitted = std::mem::take(&mut *lock(&self.reply.batch_results));
        self.transcript.context.extend(emitted);
        let aborted = self.aborted();
        let (stop, reason, status) = if aborted {
            (
                StopReason::Aborted,
                PlaceholderReason::Aborted,
                ToolStatus::Aborted,
            )
        } else {
            (
                StopReason::Error,
                PlaceholderReason::Error,
                ToolStatus::Error,
            )
        };
        let text = if aborted {
            self.signal.reason_text()
        } else {
            text.to_string()
        };
        let upstream = (!aborted).then_some(text.as_str());
        let mut results = Vec::new();
        let committed = match self.reply.streaming.take() {
            Some(builder) => {
                let mut message = builder.into_message();
                let completed = std::mem::take(&mut self.reply.completed_calls);
                retain_completed_tool_calls(&mut message, &completed);
                message.stop_reason = stop;
                message.error_message = Some(text.clone());
                let committed = self.commit_assistant(message, true, None);
                results = self.answer_open_calls(reason, &text, upstream, status);
                committed
            }
            None => {
                // A reply committed before the failure (e.g. the repeated-call guard) has its
                // calls answered first: its results must follow it.
                results.extend(self.answer_open_calls(reason, &text, upstream, status));
                if !self.transcript.turn_open {
                    self.sink.emit(AgentEvent::TurnStart);
                    self.transcript.turn_open = true;
                }
                let unemitted = std::mem::take(&mut self.transcript.unemitted);
                self.emit_inputs(&unemitted);
                let mut message = AssistantMessage::empty(
                    &self.call.model.api,
                    &self.call.model.provider,
                    &self.call.model.id,
                );
                message.content.push(ContentBlock::text(""));
                message.stop_reason = stop;
                message.error_message = Some(text.clone());
                self.commit_assistant(message, false, None)
            }
        };
        self.sink.emit(AgentEvent::TurnEnd {
            message: committed,
            tool_results: results,
        });
        self.transcript.turn_open = false;
    }

    /// Answer the calls of the last assistant message that have no result yet.
    pub(super) fn answer_open_calls(
        &mut self,
        reason: PlaceholderReason,
        label: &str,
        upstream: Option<&str>,
        status: ToolStatus,
    ) -> Vec<AgentMessage> {
        let open: Vec<ToolCall> = unanswered_calls(&self.transcript.context)
            .into_iter()
            .cloned()
            .collect();
        open.iter()
            .map(|call| {
                let r = placeholder_result(call, reason, Some(label), upstream);
                self.answer(r, status)
            })
            .collect()
    }

    /// Emit a placeholder's event quadruple and insert it.
    pub(super) fn answer(&mut self, result: ToolResultMessage, status: ToolStatus) -> AgentMessage {
        self.collect(|c| c.record_orphan_tool(&result.tool_name, status));
        let args = Arc::new(self.call_args(&result.tool_call_id));
        let message = emit_synthetic_result(self.sink.as_ref(), result, args);
        self.push(message.clone());
        message
    }

    pub(super) async fn close_turn(
        &mut self,
        committed: &AgentMessage,
        results: Vec<AgentMessage>,
        will_continue: bool,
        run_hook: bool,
    ) {
        self.sink.emit(AgentEvent::TurnEnd {
            message: committed.clone(),
            tool_results: results.clone(),
        });
        self.transcript.turn_open = false;
        if run_hook
            && !self.aborted()
            && let Some(assistant) = committed.as_assistant()
        {
            let info = TurnEndInfo {
                message: assistant,
                tool_results: &results,
                will_continue,
            };
            self.hooks.on_turn_end(&self.transcript.context, info).await;
        }
    }

    /// The aborted boundary: the partial being streamed (or a fresh message) marked aborted.
    pub(super) fn finish_aborted(&mut self) -> AgentMessage {
        let reason = self.signal.reason().unwrap_or(AbortReason::Requested);
        let builder = self.reply.streaming.take();
        let had_partial = builder.is_some();
        let mut message = match builder {
            Some(b) => b.into_message(),
            None => AssistantMessage::empty(
                &self.call.model.api,
                &self.call.model.provider,
                &self.call.model.id,
            ),
        };
        message.stop_reason = StopReason::Aborted;
        message.error_message = Some(reason.text());
        let completed = std::mem::take(&mut self.reply.completed_calls);
        retain_completed_tool_calls(&mut message, &completed);
        message.tool_call_abort_messages =
            reason.tool_labels(message.tool_calls().map(|c| c.id.as_str()));
        self.end_retrying(false, Some(reason.text()));
        self.commit_assistant(message, had_partial, Some(0))
    }

    /// Record (as a model call, when `latency_ms` is given), emit (`message_start` unless the
    /// partial already had one, then `message_end`) and insert the final assistant message.
    pub(super) fn commit_assistant(
        &mut self,
        mut message: AssistantMessage,
        started_emitted: bool,
        latency_ms: Option<u64>,
    ) -> AgentMessage {
        if message.error_id.is_none() {
            let abort = self.signal.reason();
            message.error_id = error_id::classify(&message, abort.as_ref());
        }
        if let Some(latency_ms) = latency_ms {
            self.collect(|c| {
                c.record_chat(
                    &message.model,
                    &message.provider,
                    message.stop_reason,
                    latency_ms,
                    &message.usage,
                )
            });
        }
        self.reply.streaming = None;
        self.reply.completed_calls.clear();
        self.reply.harmony_retries = 0;
        let m: AgentMessage = message.into();
        if !started_emitted {
            self.sink
                .emit(AgentEvent::MessageStart { message: m.clone() });
        }
        self.sink
            .emit(AgentEvent::MessageEnd { message: m.clone() });
        self.push(m.clone());
        m
    }

    pub(super) async fn finish(
        &mut self,
        mut message: AssistantMessage,
        started_emitted: bool,
        started: Instant,
    ) -> Result<AgentMessage, LoopError> {
        if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            retain_completed_tool_calls(&mut message, &self.reply.completed_calls);
            salvage_interrupted_tool_turn(&mut message, &self.call.tools);
        }
        self.hooks
            .transform_assistant_message(&mut message, &self.signal)
            .await
            .map_err(LoopError::new)?;
        self.reply.prepared.clear();
        if matches!(message.stop_reason, StopReason::Stop | StopReason::ToolUse)
            && message.has_tool_calls()
        {
            self.reply.prepared = prepare_calls(
                &mut message,
                &self.call.tools,
                self.hooks.as_ref(),
                self.cfg.intent_tracing,
                &self.signal,
            )
            .await;
        }
        Ok(self.commit_assistant(
            message,
            started_emitted,
            Some(started.elapsed().as_millis() as u64),
        ))
    }
}

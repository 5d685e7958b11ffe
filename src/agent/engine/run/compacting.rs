//! Compaction: when the context is due for it, condensing it with a summary the model writes,
//! and the one-shot summary request (also used for branch summaries).

use super::*;

/// Ask `model` for a summary (compaction, branch summaries): one request with no tools, the
/// whole text of the reply. `Err(None)`: `signal` stopped it; `Err(Some(why))`: it failed.
pub async fn summarize(
    provider: &Arc<dyn Provider>,
    model: &Model,
    session_id: Option<String>,
    request: compaction::SummaryRequest,
    signal: &AbortSignal,
) -> Result<String, Option<String>> {
    if signal.is_aborted() {
        return Err(None);
    }
    let message = Message::User(UserMessage {
        content: UserContent::Text(request.prompt),
        synthetic: true,
        steering: false,
        attribution: None,
        timestamp: now_ms(),
    });
    let request = ProviderRequest {
        model: model.clone(),
        context: LlmContext {
            system_prompt: vec![request.system],
            messages: Arc::new(vec![Arc::new(message)]),
            tools: Vec::new(),
        },
        options: StreamOptions {
            session_id,
            ..StreamOptions::default()
        },
    };
    let provider = provider.clone();
    let token = signal.token().child_token();
    let mut stream = match contain_sync(move || provider.stream(request, token)) {
        Ok(s) => contain_stream(s),
        Err(panic) => return Err(Some(provider_panic_text(&panic))),
    };
    let cancelled = signal.cancelled();
    tokio::pin!(cancelled);
    loop {
        let next = tokio::select! {
            biased;
            _ = &mut cancelled => {
                drop_elsewhere(stream);
                return Err(None);
            }
            ev = stream.next() => ev,
        };
        match next {
            None => return Err(Some("the summary response ended early".into())),
            Some(Err(e)) => return Err(Some(e.to_string())),
            Some(Ok(StreamEvent::Done { message, .. })) => {
                let text = message.text();
                return if text.trim().is_empty() {
                    Err(Some("the model wrote an empty summary".into()))
                } else {
                    Ok(text)
                };
            }
            Some(Ok(StreamEvent::Error { error, .. })) => {
                return Err(Some(
                    error
                        .error_message
                        .clone()
                        .unwrap_or_else(|| "the summary request failed".into()),
                ));
            }
            Some(Ok(_)) => {}
        }
    }
}

impl Run {
    /// The context has passed the model's window minus the reserve.
    pub(super) fn compaction_due(&self) -> bool {
        let Some(settings) = self.cfg.compaction else {
            return false;
        };
        let window = self.call.model.context_window;
        if !settings.enabled || window == 0 {
            return false;
        }
        compaction::should_compact(
            compaction::context_tokens(&self.transcript.context).tokens,
            window,
            &settings,
        )
    }

    /// Condense the context: the older part is replaced by a summary the model writes (no
    /// tools offered), the newest messages stay. `true` when the context changed; a failed or
    /// stopped summary leaves it as it was (and says so in `compaction_end`).
    pub(super) async fn compact(&mut self, reason: CompactionReason, focus: Option<&str>) -> bool {
        let Some(settings) = self.cfg.compaction else {
            return false;
        };
        let settings = settings.for_window(self.call.model.context_window);
        // A summary is a model call: it waits behind a closed pause gate like any other.
        self.park().await;
        if self.aborted() {
            if reason == CompactionReason::Manual {
                self.sink.emit(AgentEvent::CompactionStart { reason });
                return self.compaction_failed(reason, None);
            }
            return false;
        }
        let planned = if reason == CompactionReason::Manual {
            compaction::plan_on_request(&self.transcript.context, settings.keep_recent_tokens)
        } else {
            compaction::plan(&self.transcript.context, settings.keep_recent_tokens)
        };
        let Some(plan) = planned else {
            // Asked for (`/compact`): say why nothing happens. Automatic: nothing to say.
            if reason == CompactionReason::Manual {
                self.sink.emit(AgentEvent::CompactionStart { reason });
                return self.compaction_failed(
                    reason,
                    Some("nothing to compact: there is nothing before the last exchange".into()),
                );
            }
            return false;
        };
        self.sink.emit(AgentEvent::CompactionStart { reason });
        let budget =
            compaction::transcript_budget(self.call.model.context_window, settings.reserve_tokens);
        let max_tool = compaction::MAX_TOOL_RESULT_CHARS;
        let mut history = plan.previous_summary.clone();
        if !plan.history.is_empty() {
            let request = compaction::history_request(
                &self.transcript.context,
                &plan,
                focus,
                max_tool,
                budget,
            );
            match self.summarize(request).await {
                Ok(text) => history = Some(text),
                Err(e) => return self.compaction_failed(reason, e),
            }
        }
        let mut prefix = None;
        if let Some(range) = plan.turn_prefix.clone() {
            let request = compaction::turn_prefix_request(
                &self.transcript.context,
                range,
                focus,
                max_tool,
                budget,
            );
            match self.summarize(request).await {
                Ok(text) => prefix = Some(text),
                Err(e) => return self.compaction_failed(reason, e),
            }
        }
        let summary = compaction::assemble(
            history.as_deref().unwrap_or_default(),
            prefix.as_deref(),
            &plan.files,
        );
        let first_kept = self.transcript.context[plan.first_kept].clone();
        if self.transcript.first_new < plan.first_kept {
            self.transcript.compacted_away.extend(
                self.transcript.context[self.transcript.first_new..plan.first_kept]
                    .iter()
                    .cloned(),
            );
        }
        self.transcript.context = compaction::compacted(
            &self.transcript.context,
            plan.first_kept,
            &summary,
            now_ms(),
        );
        self.transcript.first_new = if self.transcript.first_new >= plan.first_kept {
            self.transcript.first_new - plan.first_kept + 1
        } else {
            1
        };
        self.request.llm_cache = Arc::new(Vec::new());
        self.request.converted = 0;
        let tokens_after = self
            .transcript
            .context
            .iter()
            .map(compaction::estimate_tokens)
            .sum();
        self.sink.emit(AgentEvent::CompactionEnd {
            reason,
            result: Some(CompactionResult {
                summary,
                first_kept_entry_id: None,
                tokens_before: plan.tokens_before,
                tokens_after,
                details: plan.files.details(),
                first_kept: Some(first_kept),
            }),
            aborted: false,
            will_retry: reason == CompactionReason::Overflow,
            error_message: None,
        });
        true
    }

    pub(super) fn compaction_failed(
        &self,
        reason: CompactionReason,
        error: Option<String>,
    ) -> bool {
        self.sink.emit(AgentEvent::CompactionEnd {
            reason,
            result: None,
            aborted: error.is_none(),
            will_retry: false,
            error_message: error,
        });
        false
    }

    /// Ask the model for a summary. `Err(None)`: stopped (Esc); `Err(Some(why))`: failed.
    pub(super) async fn summarize(
        &self,
        request: compaction::SummaryRequest,
    ) -> Result<String, Option<String>> {
        summarize(
            &self.cfg.provider,
            &self.call.model,
            self.cfg.session_id.clone(),
            request,
            &self.signal,
        )
        .await
    }
}

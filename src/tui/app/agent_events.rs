//! Agent events: what the agent's stream does to the transcript, the status line and the totals.

use super::*;

impl App {
    // ----- agent events -------------------------------------------------------------------

    /// An event from the agent, with its run; events of a session left behind are dropped.
    pub fn handle_run_event(&mut self, event: RunEvent) {
        if event.run.is_some_and(|r| r <= self.stale_runs) {
            return;
        }
        self.handle_agent_event(event.event);
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one match over agent events, being reworked with the command protocol (issue 29 point 1)"
    )]
    pub fn handle_agent_event(&mut self, event: AgentEvent) {
        self.dirty = true;
        match event {
            AgentEvent::AgentStart => {
                if self.working.is_none() {
                    self.working = Some(Instant::now());
                }
            }
            AgentEvent::AgentEnd { .. } => {
                // Whatever still waited for an answer was refused by the run's end.
                self.approval.clear();
                self.working = None;
                self.stopping = false;
                self.retry = None;
                self.finish_streaming();
                // Messages queued as the run was ending are the host's to run (an error or
                // abort keeps them queued for the person to decide): no "done" for a run that
                // goes on with them.
                let ended_well = !matches!(
                    self.last_stop,
                    Some(StopReason::Error | StopReason::Aborted)
                );
                let goes_on = ended_well
                    && (!self.composer.steering.is_empty() || !self.composer.follow_up.is_empty());
                if ended_well && !goes_on {
                    self.offer_plan();
                }
                if !goes_on {
                    self.effects.push(Effect::Notify(
                        match self.last_stop {
                            Some(StopReason::Error) => "the run ended with an error",
                            Some(StopReason::Aborted) => "the run was stopped",
                            _ => "the run is done",
                        }
                        .into(),
                    ));
                }
                for (_, idx) in self.tools.drain() {
                    if let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                        && matches!(t.state, ToolState::Running { .. })
                    {
                        t.state = ToolState::Skipped;
                    }
                }
            }
            AgentEvent::TurnStart | AgentEvent::TurnEnd { .. } => {}
            AgentEvent::MessageStart { message } => match message.as_llm() {
                Some(Message::User(_)) => {
                    if !self.transcript.is_empty()
                        && !matches!(self.transcript.last(), Some(Cell::Divider))
                    {
                        self.transcript.push(Cell::Divider);
                    }
                    self.transcript.push(Cell::User(shown_text(&message)));
                }
                Some(Message::Assistant(a)) => {
                    self.finish_streaming();
                    let idx = self.transcript.push(Cell::assistant(a.clone(), true));
                    self.streaming = Some(idx);
                }
                _ => {}
            },
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => {
                if let Some(idx) = self.streaming
                    && let Some(Cell::Assistant(a)) = self.transcript.get_mut(idx)
                {
                    a.builder.apply(&assistant_message_event);
                }
            }
            AgentEvent::MessageEnd { message } => {
                self.count_after(&message);
                self.add_subagent_usage(&message);
                if let Some(Message::Assistant(a)) = message.as_llm() {
                    let idx = match self.streaming.take() {
                        Some(i) => i,
                        None => self.transcript.push(Cell::assistant(a.clone(), false)),
                    };
                    if let Some(cell) = self.transcript.get_mut(idx) {
                        *cell = Cell::assistant(a.clone(), false);
                    }
                    self.add_usage(&a.usage);
                    if !a.is_retried_attempt() {
                        self.last_stop = Some(a.stop_reason);
                        let text = a.text();
                        if !text.trim().is_empty() {
                            self.last_answer = Some(text);
                        }
                    }
                    self.push_stop_cell(a);
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                ..
            } => {
                let idx = self.transcript.push(Cell::Tool(ToolCell {
                    id: tool_call_id.clone(),
                    name: tool_name,
                    args,
                    state: ToolState::Running {
                        started: Instant::now(),
                    },
                    output: String::new(),
                    diff: None,
                    saved: None,
                }));
                self.tools.insert(tool_call_id, idx);
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                if let Some(&idx) = self.tools.get(&tool_call_id)
                    && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                {
                    t.output = sanitize(&output_text(&partial_result.content));
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => {
                if let Some(items) = crate::host::view::todo_list(&result.details) {
                    self.todos.items = items;
                }
                if let Some(idx) = self.tools.remove(&tool_call_id)
                    && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                {
                    t.state = match (&t.state, result.never_ran()) {
                        (_, true) => ToolState::Skipped,
                        (ToolState::Running { started }, _) => ToolState::Done {
                            ok: !is_error,
                            took: started.elapsed(),
                        },
                        _ => ToolState::Done {
                            ok: !is_error,
                            took: Duration::ZERO,
                        },
                    };
                    t.output = sanitize(&output_text(&result.content));
                    t.diff = result
                        .details
                        .get("diff")
                        .and_then(serde_json::Value::as_str)
                        .map(sanitize);
                }
            }
            AgentEvent::CompactionStart { reason } => {
                if self.working.is_none() {
                    self.working = Some(Instant::now());
                }
                self.retry = Some(match reason {
                    CompactionReason::Overflow => {
                        "Compacting context (the model said it was too long)...".into()
                    }
                    _ => "Compacting context...".into(),
                });
            }
            AgentEvent::CompactionEnd {
                reason,
                result,
                aborted,
                error_message,
                ..
            } => {
                self.retry = None;
                if reason == CompactionReason::Manual {
                    // `/compact` is a run of its own, with no agent_end.
                    self.working = None;
                    self.stopping = false;
                }
                match (result, aborted, error_message) {
                    (Some(r), _, _) => {
                        let expand =
                            crate::tui::help::key_or(&self.keys, Action::ToolsExpand, "expanding");
                        self.transcript.push(Cell::Notice(format!(
                            "Context compacted: {} → {} tokens ({expand} shows the whole summary)",
                            crate::tui::units::tokens(r.tokens_before),
                            crate::tui::units::tokens(r.tokens_after),
                        )));
                        self.transcript.push(Cell::Summary(cells::Summary {
                            kind: cells::SummaryKind::Compaction,
                            text: r.summary,
                        }));
                        self.totals.context = r.tokens_after;
                        self.context_after = 0;
                    }
                    (None, true, _) => {
                        self.transcript.push(Cell::Aborted(
                            "Compaction stopped; the conversation is as it was".into(),
                        ));
                    }
                    (None, false, e) => {
                        self.transcript.push(Cell::Error(format!(
                            "Compaction failed; the conversation is as it was: {}",
                            e.unwrap_or_else(|| "no reason given".into())
                        )));
                    }
                }
                self.transcript.follow();
            }
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                let wait = delay_ms as f64 / 1000.0;
                self.retry = Some(format!("Retrying ({attempt}/{max_attempts}) in {wait:.0}s"));
                self.transcript.push(Cell::Notice(format!(
                    "{} — retrying ({attempt}/{max_attempts}) in {wait:.1}s",
                    error_message
                )));
            }
            AgentEvent::AutoRetryEnd { .. } => self.retry = None,
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => {
                self.composer.steering = steering;
                self.composer.follow_up = follow_up;
            }
        }
    }

    pub(super) fn finish_streaming(&mut self) {
        if let Some(idx) = self.streaming.take()
            && let Some(Cell::Assistant(a)) = self.transcript.get_mut(idx)
        {
            a.streaming = false;
        }
    }

    /// A subagent's tokens and cost, from its `task` result, count toward the footer.
    pub(super) fn add_subagent_usage(&mut self, message: &AgentMessage) {
        if let Some(Message::ToolResult(r)) = message.as_llm()
            && let Some(u) = r
                .details
                .as_ref()
                .and_then(crate::host::view::subagent_usage)
        {
            self.totals.add_spent(&u);
        }
    }

    pub(super) fn add_usage(&mut self, u: &Usage) {
        self.totals.add(u);
        if u.context_tokens() > 0 {
            self.context_after = 0;
        }
    }

    /// A message that counts toward the context after the last reported usage (a prompt, a
    /// tool result): estimated as the compaction accounting does.
    pub(super) fn count_after(&mut self, message: &AgentMessage) {
        if message.as_assistant().is_none() {
            self.context_after += crate::agent::policy::compaction::estimate_tokens(message);
        }
    }

    /// Tokens in context, as compaction counts them: the last reply's usage plus estimates
    /// for what came after it.
    pub fn context_tokens(&self) -> u64 {
        self.totals.context + self.context_after
    }
}

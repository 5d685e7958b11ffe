//! The turn: the run's double loop and one model call with what follows it (the gate, the
//! reply, its tool calls, the guards on repeats and paused turns).

use super::*;

/// Shown when a pre-model gate stops a call without saying why.
pub(super) const GATE_STOP_TEXT: &str = "Stopped before the model call";

impl Run {
    pub(super) async fn body(&mut self, prompts: Vec<Injected>) -> Result<(), LoopError> {
        if self.deadline_passed() {
            self.end_at_deadline(prompts);
            return Ok(());
        }
        let mut to_emit = prompts;
        self.park().await;
        let mut pending = self.steering().await;
        loop {
            let mut more = true;
            while more || !pending.is_empty() {
                // A paused agent waits here, before anything of the next call happens: the
                // settings it reads, the request it builds, `turn_start`.
                self.park().await;
                let mut inputs = std::mem::take(&mut to_emit);
                inputs.append(&mut pending);
                if self.deadline_passed() {
                    self.end_at_deadline(inputs);
                    return Ok(());
                }
                match self.turn(inputs).await? {
                    Step::Next(m) => more = m,
                    Step::Retry => {
                        // Same turn, same call: nothing is injected before it.
                        more = true;
                        continue;
                    }
                    Step::End => return Ok(()),
                }
                if self.deadline_passed() {
                    return Ok(());
                }
                pending = self.steering().await;
                if more {
                    let asides = self.asides()?;
                    pending.extend(asides);
                }
            }
            if self.deadline_passed() {
                return Ok(());
            }
            self.hooks.on_before_yield().await;
            if self.deadline_passed() {
                return Ok(());
            }
            let mut late = self.steering().await;
            late.extend(self.asides()?);
            late.extend(self.follow_ups().await);
            if late.is_empty() {
                return Ok(());
            }
            pending = late;
        }
    }

    /// One model call and what follows it. Every attempt of a call (the first and each retry)
    /// goes through the same steps: settings refresh, tool directive, context sync, pre-model
    /// gate, then the request.
    #[allow(
        clippy::too_many_lines,
        reason = "one turn's phases in order, each a call already; the engine owner splits it further"
    )]
    pub(super) async fn turn(&mut self, inputs: Vec<Injected>) -> Result<Step, LoopError> {
        let mut inputs = self.insert_inputs(inputs);

        let refresh = self.hooks.sync_before_model_call(&self.signal).await;
        if let Some(p) = refresh.system_prompt {
            self.call.system_prompt = p;
        }
        if let Some(t) = refresh.tools {
            self.call.tools = t;
        }
        if let Some(m) = refresh.model {
            self.call.model = m;
        }
        if let Some(r) = refresh.reasoning {
            self.call.reasoning = r;
        }
        if let Some(d) = refresh.disable_reasoning {
            self.call.disable_reasoning = d;
        }

        if !self.directive.resolved {
            self.resolve_directive(&mut inputs);
        }

        if !self.transcript.turn_open {
            self.guards.overflow_compacted = false;
        }
        if self.compaction_due() {
            self.compact(CompactionReason::Threshold, None).await;
        }
        let context = self.provider_context().await;
        if self.hooks.has_model_gate() {
            let decision = if self.aborted() {
                Ok(GateDecision::Stop(None))
            } else {
                self.hooks.before_model_call(&context, &self.signal).await
            };
            match decision {
                Err(e) => {
                    self.open_turn(&inputs);
                    return Err(LoopError::new(e));
                }
                Ok(GateDecision::Stop(reason)) => {
                    if self.transcript.turn_open {
                        // Only a retry reaches the gate with its turn open: close that turn.
                        self.stop_open_turn(reason).await;
                        return Ok(Step::End);
                    }
                    if !self.aborted()
                        && let Err(e) = self.hooks.on_tool_choice_rejected()
                    {
                        self.open_turn(&inputs);
                        return Err(LoopError::new(e));
                    }
                    self.emit_inputs(&inputs);
                    self.directive.preserve_soft = !self.aborted();
                    return Ok(Step::End);
                }
                Ok(GateDecision::Proceed) => {}
            }
        }

        self.open_turn(&inputs);
        let committed = match self.stream_attempt(context).await? {
            Attempt::Aborted(m) => m,
            Attempt::Final {
                message,
                started_emitted,
                started,
            } => match self.settle(message, started_emitted, started).await? {
                Some(m) => m,
                None => return Ok(Step::Retry),
            },
        };
        let Some(assistant) = committed.as_assistant() else {
            return Err(LoopError::new(
                "Internal error: the committed reply is not an assistant message",
            ));
        };
        self.directive.resolved = false;
        self.directive.host_choice = None;
        self.directive.soft.forced = None;
        let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
        self.guards
            .repetition
            .check(&calls)
            .map_err(LoopError::new)?;
        let mut results: Vec<AgentMessage> = Vec::new();
        if matches!(
            assistant.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) {
            let reason = if assistant.stop_reason == StopReason::Error {
                PlaceholderReason::Error
            } else {
                PlaceholderReason::Aborted
            };
            let status = if reason == PlaceholderReason::Error {
                ToolStatus::Error
            } else {
                ToolStatus::Aborted
            };
            for call in &calls {
                let label = assistant
                    .tool_call_abort_messages
                    .as_ref()
                    .and_then(|m| m.get(&call.id))
                    .or(assistant.error_message.as_ref());
                let upstream = (reason == PlaceholderReason::Error)
                    .then_some(assistant.error_message.as_deref())
                    .flatten();
                let r = placeholder_result(call, reason, label.map(String::as_str), upstream);
                results.push(self.answer(r, status));
            }
            self.close_turn(&committed, results, false, false).await;
            return Ok(Step::End);
        }

        let mut more;
        let soft_violation = self.soft_violation(assistant)?;
        if let Some(tool_name) = soft_violation {
            let label = soft_skip_label(&tool_name);
            for call in &calls {
                let r = placeholder_result(call, PlaceholderReason::Skipped, Some(&label), None);
                results.push(self.answer(r, ToolStatus::Skipped));
            }
            more = true;
        } else if !calls.is_empty() && assistant.stop_reason != StopReason::Length {
            if self.deadline_passed() {
                for call in &calls {
                    let r = placeholder_result(
                        call,
                        PlaceholderReason::Aborted,
                        Some(DEADLINE_TEXT),
                        None,
                    );
                    results.push(self.answer(r, ToolStatus::Aborted));
                }
                more = false;
            } else {
                let prepared = std::mem::take(&mut self.reply.prepared);
                let env = BatchEnv {
                    hooks: self.hooks.as_ref(),
                    sink: &self.sink,
                    signal: &self.signal,
                    interrupt_mode: self.cfg.interrupt_mode,
                    collector: self.collector.as_ref(),
                    pause: &self.cfg.pause,
                    results: &self.reply.batch_results,
                };
                results = execute_batch(assistant, &prepared, &env).await;
                self.transcript.context.extend(results.iter().cloned());
                more = self.signal.reason() != Some(AbortReason::TerminalToolResult);
            }
        } else if !calls.is_empty() {
            for call in &calls {
                let r = placeholder_result(call, PlaceholderReason::Length, None, None);
                results.push(self.answer(r, ToolStatus::Skipped));
            }
            more = !self.deadline_passed();
        } else {
            more = false;
        }

        if !calls.is_empty() {
            self.guards.paused_continuations = 0;
        } else if !more
            && assistant.stop_reason == StopReason::Stop
            && assistant.stop_detail_kind() == Some(STOP_PAUSE_TURN)
            && self.guards.paused_continuations < MAX_PAUSED_TURN_CONTINUATIONS
        {
            self.guards.paused_continuations += 1;
            more = true;
        }

        self.guards.repetition.record(&calls, &results);
        let will_continue = more && !self.deadline_passed();
        self.close_turn(&committed, results, will_continue, true)
            .await;
        Ok(Step::Next(more))
    }

    /// A gate stopped the call of a turn that is already open (a retry): close the turn with
    /// an aborted reply that says why.
    pub(super) async fn stop_open_turn(&mut self, reason: Option<String>) {
        let mut m = AssistantMessage::empty(
            &self.call.model.api,
            &self.call.model.provider,
            &self.call.model.id,
        );
        m.content.push(ContentBlock::text(""));
        m.stop_reason = StopReason::Aborted;
        m.error_message = Some(
            reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| GATE_STOP_TEXT.to_string()),
        );
        self.end_retrying(false, m.error_message.clone());
        let committed = self.commit_assistant(m, false, None);
        let run_hook = !self.aborted();
        self.close_turn(&committed, Vec::new(), false, run_hook)
            .await;
    }
}

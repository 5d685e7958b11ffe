//! Guards that end a run from outside its turns: the deadline (its timer and the stop at it).

use super::*;

/// Kills the deadline timer when the run ends.
pub(super) struct TimerGuard(Option<tokio::task::JoinHandle<()>>);

impl TimerGuard {
    /// Abort `signal` with the deadline reason when `deadline` passes.
    pub(super) fn start(deadline: Option<tokio::time::Instant>, signal: &AbortSignal) -> Self {
        TimerGuard(deadline.map(|deadline| {
            let s = signal.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                s.abort(AbortReason::Deadline);
            })
        }))
    }
}

impl Drop for TimerGuard {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

impl Run {
    pub(super) fn deadline_passed(&self) -> bool {
        self.cfg
            .deadline
            .is_some_and(|d| tokio::time::Instant::now() >= d)
    }

    /// Stop at the deadline: insert what waits (asides are discarded, not inserted). A turn
    /// left open for a re-sample (a retry, a discarded leak) is closed with an aborted reply
    /// that names the deadline.
    pub(super) fn end_at_deadline(&mut self, inputs: Vec<Injected>) {
        let (asides, keep): (Vec<_>, Vec<_>) = inputs.into_iter().partition(|m| m.aside);
        for mut a in asides {
            a.discard(DEADLINE_TEXT);
        }
        let msgs = self.insert_inputs(keep);
        self.emit_inputs(&msgs);
        if self.transcript.turn_open {
            let mut m = AssistantMessage::empty(
                &self.call.model.api,
                &self.call.model.provider,
                &self.call.model.id,
            );
            m.content.push(ContentBlock::text(""));
            m.stop_reason = StopReason::Aborted;
            m.error_message = Some(DEADLINE_TEXT.to_string());
            self.end_retrying(false, Some(DEADLINE_TEXT.to_string()));
            let committed = self.commit_assistant(m, false, None);
            self.sink.emit(AgentEvent::TurnEnd {
                message: committed,
                tool_results: Vec::new(),
            });
            self.transcript.turn_open = false;
        }
    }
}

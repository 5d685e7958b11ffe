//! Inputs: messages injected into the run (prompts, steering, follow-ups, asides), inserted
//! into the context and emitted when their turn opens.

use super::*;

impl Run {
    /// Insert messages into the context (committing asides) and return them for emission.
    pub(super) fn insert_inputs(&mut self, inputs: Vec<Injected>) -> Vec<AgentMessage> {
        let mut out = Vec::with_capacity(inputs.len());
        for mut m in inputs {
            m.commit();
            self.push(m.message.clone());
            out.push(m.message);
        }
        self.transcript.unemitted.extend(out.iter().cloned());
        out
    }

    pub(super) fn emit_inputs(&mut self, inputs: &[AgentMessage]) {
        for m in inputs {
            self.emit_message(m);
        }
        self.transcript.unemitted.clear();
    }

    pub(super) fn open_turn(&mut self, inputs: &[AgentMessage]) {
        if !self.transcript.turn_open {
            self.sink.emit(AgentEvent::TurnStart);
            self.transcript.turn_open = true;
        }
        self.emit_inputs(inputs);
    }

    pub(super) async fn steering(&self) -> Vec<Injected> {
        if self.aborted() {
            return Vec::new();
        }
        self.hooks
            .steering_messages(&self.signal)
            .await
            .into_iter()
            .map(Injected::plain)
            .collect()
    }

    pub(super) async fn follow_ups(&self) -> Vec<Injected> {
        if self.aborted() {
            return Vec::new();
        }
        self.hooks
            .follow_up_messages(&self.signal)
            .await
            .into_iter()
            .map(Injected::plain)
            .collect()
    }

    /// Resolve the host's asides. A failing thunk discards the ones already resolved.
    pub(super) fn asides(&mut self) -> Result<Vec<Injected>, LoopError> {
        if self.aborted() {
            return Ok(Vec::new());
        }
        let mut out: Vec<Injected> = Vec::new();
        for entry in self.hooks.aside_messages() {
            let resolved = match entry {
                AsideEntry::Ready(m) => Ok(Some(m)),
                AsideEntry::Deferred(f) => f(),
            };
            match resolved {
                Ok(Some(mut m)) => {
                    m.aside = true;
                    out.push(m);
                }
                Ok(None) => {}
                Err(e) => {
                    for mut m in out {
                        m.discard(&e);
                    }
                    return Err(LoopError::new(e));
                }
            }
        }
        Ok(out)
    }
}

//! The facade's event path: each event the loop emits is applied to the state and sent to the
//! subscribers (in one hold of the agent's lock), and an `agent_end` is held back until the
//! run is released.

use super::*;

/// Send `event` to each subscriber that wants it (dropping those gone); called with the
/// facade's lock held, so the stream's order is the state's. Sending never waits.
pub(super) fn broadcast(subs: &mut Vec<Subscriber>, run: Option<RunId>, event: AgentEvent) {
    subs.retain(|s| !s.tx.is_closed());
    let mut takers = subs.iter().filter(|s| (s.wanted)(&event));
    let Some(mut current) = takers.next() else {
        return;
    };
    // Every taker but the last gets a copy; the last gets the event itself.
    for next in takers {
        let _ = current.tx.send(RunEvent {
            run,
            event: event.clone(),
        });
        current = next;
    }
    let _ = current.tx.send(RunEvent { run, event });
}

/// What an event changes in the state.
pub(super) fn apply_to(st: &mut AgentState, event: &AgentEvent) {
    match event {
        AgentEvent::TurnEnd { message, .. } => {
            if let Some(a) = message.as_assistant()
                && let Some(e) = &a.error_message
            {
                st.error = Some(e.clone());
            }
        }
        AgentEvent::MessageEnd { message } if !message.is_retried_attempt() => {
            st.messages.push(message.clone());
        }
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
            st.pending_tool_calls.insert(tool_call_id.clone());
        }
        AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
            st.pending_tool_calls.remove(tool_call_id);
        }
        _ => {}
    }
}

/// A one-line preview of a queued message for the UI.
pub(super) fn preview(m: &AgentMessage) -> String {
    if let Some(u) = m.as_user() {
        return u.content.joined_text();
    }
    match m {
        AgentMessage::Custom(c) => c
            .fields
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or(&c.role)
            .to_string(),
        other => other.role().to_string(),
    }
}

/// Who queued the next steering message(s): user first, then agent, else system.
pub fn classify_steering(next: &[&AgentMessage]) -> SteeringSource {
    let mut agent = false;
    for m in next {
        match (m.role(), m.attribution()) {
            (_, Some(Attribution::User)) => return SteeringSource::User,
            ("user", Some(Attribution::Agent)) => agent = true,
            ("user", None) => return SteeringSource::User,
            (_, Some(Attribution::Agent)) => agent = true,
            _ => {}
        }
    }
    if agent {
        SteeringSource::Agent
    } else {
        SteeringSource::System
    }
}

/// Applies each event to the state, then sends it; `agent_end` is held until the run is
/// released (see [`Agent::release`]).
pub(super) struct FacadeSink {
    pub(super) agent: Agent,
    pub(super) run: RunId,
    pub(super) held_end: Mutex<Option<AgentEvent>>,
}

impl FacadeSink {
    pub(super) fn new(agent: Agent, run: RunId) -> Self {
        FacadeSink {
            agent,
            run,
            held_end: Mutex::new(None),
        }
    }
}

impl EventSink for FacadeSink {
    fn emit(&self, event: AgentEvent) {
        if matches!(event, AgentEvent::AgentEnd { .. }) {
            {
                let mut shared = self.agent.shared();
                if shared.detached != self.run {
                    apply_to(&mut shared.state, &event);
                }
            }
            if let Some(previous) = lock(&self.held_end).replace(event) {
                self.agent.broadcast(Some(self.run), previous);
            }
        } else {
            self.agent.apply_and_send(self.run, event);
        }
    }
}

/// One receiver of the event stream, and which events it wants.
pub(super) struct Subscriber {
    pub(super) tx: EventSender,
    pub(super) wanted: fn(&AgentEvent) -> bool,
}

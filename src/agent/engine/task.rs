//! Carrying out an [`AgentOp`]: the one place front ends reach the agent through. The host
//! runs [`apply`] on its own task, so its own operations and the agent's stay in one order, and
//! puts what it returns on the front end's event stream; the agent's events come back through
//! [`Agent::subscribe`].

use std::sync::Arc;

use crate::agent::engine::facade::Agent;
use crate::agent::protocol::command::{Accepted, AgentAnswer, AgentError, AgentOp, WhenBusy};
use crate::agent::protocol::types::{AgentMessage, Message};

/// Carry out one operation; `Some` with its answer for those that have one. Only `Reset` and
/// `WaitIdle` wait (for the run to end); everything else returns at once, since runs live on
/// their own tasks.
pub async fn apply(agent: &Agent, op: AgentOp) -> Option<AgentAnswer> {
    let answer = match op {
        AgentOp::Prompt {
            messages,
            when_busy,
        } => AgentAnswer::Prompt(prompt(agent, messages, when_busy)),
        AgentOp::Continue => AgentAnswer::Run(agent.continue_run()),
        AgentOp::Compact { focus } => AgentAnswer::Run(agent.compact(focus)),
        AgentOp::Abort { reason } => {
            agent.abort(reason);
            return None;
        }
        AgentOp::AbortRetry => {
            agent.abort_retry();
            return None;
        }
        AgentOp::SetPaused { paused } => {
            if paused {
                agent.pause_gate().pause();
            } else {
                agent.pause_gate().resume();
            }
            return None;
        }
        AgentOp::TakeQueued => AgentAnswer::Queued(agent.clear_all_queues()),
        AgentOp::SetSteeringMode { mode } => {
            agent.update_settings(|s| s.steering_mode = mode);
            return None;
        }
        AgentOp::SetFollowUpMode { mode } => {
            agent.update_settings(|s| s.follow_up_mode = mode);
            return None;
        }
        AgentOp::Reset => {
            agent.abort(None);
            agent.wait_idle().await;
            agent.reset();
            AgentAnswer::Done
        }
        AgentOp::ReplaceMessages { messages } => {
            AgentAnswer::Replaced(agent.replace_messages(messages))
        }
        AgentOp::Snapshot => AgentAnswer::State(Box::new(agent.state())),
        AgentOp::WaitIdle => {
            agent.wait_idle().await;
            AgentAnswer::Done
        }
    };
    Some(answer)
}

/// Start a run, or queue the messages when one is active and the caller allows it. A user
/// message is marked as steering only when it goes to the steering queue: "steer when busy"
/// sent to an idle agent is a plain prompt, and is saved as one.
fn prompt(
    agent: &Agent,
    messages: Vec<AgentMessage>,
    when_busy: WhenBusy,
) -> Result<Accepted, AgentError> {
    let messages: Vec<AgentMessage> = messages.into_iter().map(|m| marked(m, false)).collect();
    let queued = messages.clone();
    match agent.prompt(messages) {
        Ok(run) => Ok(Accepted::Started(run)),
        Err(AgentError::Busy) if when_busy != WhenBusy::Refuse => {
            for m in queued {
                match when_busy {
                    WhenBusy::Steer => agent.steer(marked(m, true)),
                    _ => agent.follow_up(m),
                }
            }
            Ok(Accepted::Queued)
        }
        Err(e) => Err(e),
    }
}

/// `message` with its steering mark set to `steering` (user messages only).
fn marked(message: AgentMessage, steering: bool) -> AgentMessage {
    match message {
        AgentMessage::Llm(mut m) => {
            if matches!(&*m, Message::User(u) if u.steering != steering)
                && let Message::User(u) = Arc::make_mut(&mut m)
            {
                u.steering = steering;
            }
            AgentMessage::Llm(m)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::agent::engine::facade::AgentSettings;
    use crate::agent::protocol::command::AgentState;
    use crate::agent::protocol::events::AgentEvent;
    use crate::agent::protocol::stream::Model;
    use crate::agent::scripted::{ScriptedProvider, Step, reply};

    fn agent(p: &ScriptedProvider) -> Agent {
        Agent::new(AgentSettings::new(
            Arc::new(p.clone()),
            Model::new("scripted", "scripted", "m"),
        ))
    }

    async fn prompted(a: &Agent, text: &str, when_busy: WhenBusy) -> Result<Accepted, AgentError> {
        let op = AgentOp::Prompt {
            messages: vec![AgentMessage::user(text)],
            when_busy,
        };
        match apply(a, op).await {
            Some(AgentAnswer::Prompt(r)) => r,
            other => panic!("a prompt answers with its acceptance: {other:?}"),
        }
    }

    async fn state(a: &Agent) -> AgentState {
        match apply(a, AgentOp::Snapshot).await {
            Some(AgentAnswer::State(s)) => *s,
            other => panic!("a snapshot answers with the state: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_prompt_while_busy_is_refused_or_queued_as_asked() {
        let mut slow = vec![Step::Stall];
        slow.extend(reply::text("never"));
        let p = ScriptedProvider::new([slow, reply::text("after the steer")]);
        let a = agent(&p);
        let mut events = a.subscribe();
        let first = prompted(&a, "one", WhenBusy::Refuse).await;
        let Ok(Accepted::Started(run)) = first else {
            panic!("the first prompt starts a run: {first:?}");
        };
        let refused = prompted(&a, "two", WhenBusy::Refuse).await;
        assert_eq!(refused, Err(AgentError::Busy));
        let queued = prompted(&a, "three", WhenBusy::FollowUp).await;
        assert_eq!(queued, Ok(Accepted::Queued));
        assert!(state(&a).await.is_streaming);
        assert_eq!(a.peek_follow_up_queue().len(), 1);
        // Every event of the run carries its id.
        assert!(apply(&a, AgentOp::Abort { reason: None }).await.is_none());
        loop {
            let e = events.recv().await.expect("events");
            if let AgentEvent::AgentEnd { .. } = e.event {
                assert_eq!(e.run, Some(run));
                break;
            }
            if !matches!(e.event, AgentEvent::QueueUpdate { .. }) {
                assert_eq!(e.run, Some(run), "{:?}", e.event);
            }
        }
    }

    fn steering_marks(messages: &[AgentMessage]) -> Vec<bool> {
        messages
            .iter()
            .filter_map(|m| m.as_user().map(|u| u.steering))
            .collect()
    }

    #[tokio::test]
    async fn only_a_prompt_that_waits_in_the_steering_queue_is_marked_as_steering() {
        let p = ScriptedProvider::new([vec![Step::Stall]]);
        let a = agent(&p);
        let mut events = a.subscribe();
        let op = AgentOp::Prompt {
            messages: vec![AgentMessage::steering("first")],
            when_busy: WhenBusy::Steer,
        };
        assert!(matches!(
            apply(&a, op).await,
            Some(AgentAnswer::Prompt(Ok(Accepted::Started(_))))
        ));
        let first = loop {
            if let AgentEvent::MessageEnd { message } = events.recv().await.expect("events").event
                && message.as_user().is_some()
            {
                break message;
            }
        };
        assert_eq!(steering_marks(&[first]), [false]);
        prompted(&a, "steer", WhenBusy::Steer)
            .await
            .expect("queued");
        assert_eq!(steering_marks(&a.peek_steering_queue()), [true]);
        let op = AgentOp::Prompt {
            messages: vec![AgentMessage::steering("later")],
            when_busy: WhenBusy::FollowUp,
        };
        apply(&a, op).await;
        assert_eq!(steering_marks(&a.peek_follow_up_queue()), [false]);
        apply(&a, AgentOp::Abort { reason: None }).await;
    }

    #[tokio::test]
    async fn reset_waits_for_the_run_then_forgets_everything() {
        let p = ScriptedProvider::new([vec![Step::Stall]]);
        let a = agent(&p);
        prompted(&a, "go", WhenBusy::Refuse).await.expect("started");
        prompted(&a, "later", WhenBusy::FollowUp)
            .await
            .expect("queued");
        assert!(matches!(
            apply(&a, AgentOp::Reset).await,
            Some(AgentAnswer::Done)
        ));
        let state = state(&a).await;
        assert!(!state.is_streaming);
        assert!(state.messages.is_empty());
        let Some(AgentAnswer::Queued(queued)) = apply(&a, AgentOp::TakeQueued).await else {
            panic!("the queues come back");
        };
        assert!(queued.is_empty());
    }

    #[test]
    fn operations_are_plain_data_that_round_trip_through_json() {
        let op = AgentOp::Prompt {
            messages: vec![AgentMessage::user("hi")],
            when_busy: WhenBusy::FollowUp,
        };
        let text = serde_json::to_string(&op).expect("serialises");
        assert!(text.contains(r#""type":"prompt""#), "{text}");
        assert!(text.contains(r#""when_busy":"follow_up""#), "{text}");
        let back: AgentOp = serde_json::from_str(&text).expect("deserialises");
        assert!(matches!(
            back,
            AgentOp::Prompt {
                when_busy: WhenBusy::FollowUp,
                ..
            }
        ));
        let mode: AgentOp =
            serde_json::from_str(r#"{"type":"set_steering_mode","mode":"one-at-a-time"}"#)
                .expect("a queue mode");
        assert!(matches!(
            mode,
            AgentOp::SetSteeringMode {
                mode: crate::agent::protocol::command::QueueMode::OneAtATime
            }
        ));
    }
}

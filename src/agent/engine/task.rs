//! Carrying out an [`AgentCommand`]: the one place front ends reach the agent through. The
//! host runs [`apply`] on its own task, so its own commands and the agent's stay in one order;
//! the event stream comes back through [`Agent::subscribe`].

use crate::agent::engine::facade::Agent;
use crate::agent::protocol::command::{Accepted, AgentCommand, AgentError, WhenBusy};
use crate::agent::protocol::types::AgentMessage;

/// Carry out one command. Only `Reset` and `WaitIdle` wait (for the run to end); everything
/// else returns at once, since runs live on their own tasks.
pub async fn apply(agent: &Agent, command: AgentCommand) {
    match command {
        AgentCommand::Prompt {
            messages,
            when_busy,
            reply,
        } => {
            let result = prompt(agent, messages, when_busy);
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
        AgentCommand::Continue { reply } => {
            let result = agent.continue_run();
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
        AgentCommand::Compact { focus, reply } => {
            let result = agent.compact(focus);
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
        AgentCommand::Steer(m) => agent.steer(m),
        AgentCommand::FollowUp(m) => agent.follow_up(m),
        AgentCommand::Abort { reason } => agent.abort(reason),
        AgentCommand::AbortRetry => agent.abort_retry(),
        AgentCommand::SetPaused(true) => {
            agent.pause_gate().pause();
        }
        AgentCommand::SetPaused(false) => {
            agent.pause_gate().resume();
        }
        AgentCommand::TakeQueued(reply) => {
            let _ = reply.send(agent.clear_all_queues());
        }
        AgentCommand::SetModel(model) => agent.update_settings(|s| s.model = model),
        AgentCommand::SetThinking(level) => agent.update_settings(|s| s.thinking = level),
        AgentCommand::SetSteeringMode(mode) => agent.update_settings(|s| s.steering_mode = mode),
        AgentCommand::SetFollowUpMode(mode) => agent.update_settings(|s| s.follow_up_mode = mode),
        AgentCommand::Reset { reply } => {
            agent.abort(None);
            agent.wait_idle().await;
            agent.reset();
            if let Some(reply) = reply {
                let _ = reply.send(());
            }
        }
        AgentCommand::ReplaceMessages { messages, reply } => {
            let _ = reply.send(agent.replace_messages(messages));
        }
        AgentCommand::Snapshot(reply) => {
            let _ = reply.send(agent.state());
        }
        AgentCommand::WaitIdle(reply) => {
            agent.wait_idle().await;
            let _ = reply.send(());
        }
    }
}

/// Start a run, or queue the messages when one is active and the caller allows it.
fn prompt(
    agent: &Agent,
    messages: Vec<AgentMessage>,
    when_busy: WhenBusy,
) -> Result<Accepted, AgentError> {
    let queued = messages.clone();
    match agent.prompt(messages) {
        Ok(run) => Ok(Accepted::Started(run)),
        Err(AgentError::Busy) if when_busy != WhenBusy::Refuse => {
            for m in queued {
                match when_busy {
                    WhenBusy::Steer => agent.steer(m),
                    _ => agent.follow_up(m),
                }
            }
            Ok(Accepted::Queued)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::oneshot;

    use super::*;
    use crate::agent::engine::facade::AgentSettings;
    use crate::agent::protocol::events::AgentEvent;
    use crate::agent::protocol::stream::Model;
    use crate::agent::scripted::{ScriptedProvider, Step, reply};

    fn agent(p: &ScriptedProvider) -> Agent {
        Agent::new(AgentSettings::new(
            Arc::new(p.clone()),
            Model::new("scripted", "scripted", "m"),
        ))
    }

    async fn ask<T>(a: &Agent, make: impl FnOnce(oneshot::Sender<T>) -> AgentCommand) -> T {
        let (tx, rx) = oneshot::channel();
        apply(a, make(tx)).await;
        rx.await.expect("the command answers")
    }

    #[tokio::test]
    async fn a_prompt_while_busy_is_refused_or_queued_as_asked() {
        let mut slow = vec![Step::Stall];
        slow.extend(reply::text("never"));
        let p = ScriptedProvider::new([slow, reply::text("after the steer")]);
        let a = agent(&p);
        let mut events = a.subscribe();
        let first = ask(&a, |tx| AgentCommand::Prompt {
            messages: vec![AgentMessage::user("one")],
            when_busy: WhenBusy::Refuse,
            reply: Some(tx),
        })
        .await;
        let Ok(Accepted::Started(run)) = first else {
            panic!("the first prompt starts a run: {first:?}");
        };
        let refused = ask(&a, |tx| AgentCommand::Prompt {
            messages: vec![AgentMessage::user("two")],
            when_busy: WhenBusy::Refuse,
            reply: Some(tx),
        })
        .await;
        assert_eq!(refused, Err(AgentError::Busy));
        let queued = ask(&a, |tx| AgentCommand::Prompt {
            messages: vec![AgentMessage::user("three")],
            when_busy: WhenBusy::FollowUp,
            reply: Some(tx),
        })
        .await;
        assert_eq!(queued, Ok(Accepted::Queued));
        let state = ask(&a, AgentCommand::Snapshot).await;
        assert!(state.is_streaming);
        assert_eq!(a.peek_follow_up_queue().len(), 1);
        // Every event of the run carries its id.
        apply(&a, AgentCommand::Abort { reason: None }).await;
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

    #[tokio::test]
    async fn reset_waits_for_the_run_then_forgets_everything() {
        let p = ScriptedProvider::new([vec![Step::Stall]]);
        let a = agent(&p);
        apply(
            &a,
            AgentCommand::Prompt {
                messages: vec![AgentMessage::user("go")],
                when_busy: WhenBusy::Refuse,
                reply: None,
            },
        )
        .await;
        apply(&a, AgentCommand::FollowUp(AgentMessage::user("later"))).await;
        ask(&a, |tx| AgentCommand::Reset { reply: Some(tx) }).await;
        let state = ask(&a, AgentCommand::Snapshot).await;
        assert!(!state.is_streaming);
        assert!(state.messages.is_empty());
        assert!(ask(&a, AgentCommand::TakeQueued).await.is_empty());
    }
}

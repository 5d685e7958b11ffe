//! A paced subscriber (`Agent::subscribe_paced`): while it takes nothing the model stream
//! waits (other subscribers see the stream stop), taking resumes it with nothing lost, and an
//! abort ends a waiting run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use pi::agent::engine::facade::{Agent, AgentSettings};
use pi::agent::protocol::events::AgentEvent;
use pi::agent::protocol::paced::PacedReceiver;
use pi::agent::protocol::stream::StreamEvent;
use pi::agent::protocol::types::StopReason;
use pi::agent::scripted::reply;
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

const PIECES: usize = 200;
const LIMIT: usize = 8;

fn pieces() -> Vec<String> {
    (0..PIECES).map(|i| format!("p{i} ")).collect()
}

fn start() -> (
    Agent,
    PacedReceiver,
    UnboundedReceiver<pi::agent::protocol::events::RunEvent>,
) {
    let texts = pieces();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let p = scripts(vec![reply::full(&refs, &[])]);
    let agent = Agent::new(AgentSettings::new(Arc::new(p), model()));
    let paced = agent.subscribe_paced(LIMIT, |_| true);
    let plain = agent.subscribe();
    agent.prompt_text("go").unwrap();
    (agent, paced, plain)
}

/// Deltas seen so far by a plain subscriber.
fn deltas_seen(plain: &mut UnboundedReceiver<pi::agent::protocol::events::RunEvent>) -> usize {
    let mut n = 0;
    while let Ok(e) = plain.try_recv() {
        if let AgentEvent::MessageUpdate {
            assistant_message_event: StreamEvent::TextDelta { .. },
        } = e.event
        {
            n += 1;
        }
    }
    n
}

/// With the clock paused, a sleep ends only once every task is idle: the run is waiting.
async fn until_idle() {
    tokio::time::sleep(Duration::from_secs(60)).await;
}

#[tokio::test(start_paused = true)]
async fn the_stream_waits_for_a_paced_subscriber_and_resumes_with_nothing_lost() {
    let (agent, mut paced, mut plain) = start();
    until_idle().await;
    let held = deltas_seen(&mut plain);
    assert!(held < PIECES, "the stream ran on: {held} deltas");
    assert!(paced.len() <= LIMIT + 4, "{} events queued", paced.len());

    let mut text = String::new();
    let end = loop {
        let e = paced.recv().await.unwrap().event;
        match e {
            AgentEvent::MessageUpdate {
                assistant_message_event: StreamEvent::TextDelta { delta, .. },
            } => text.push_str(&delta),
            AgentEvent::AgentEnd { messages, .. } => break messages,
            _ => {}
        }
    };
    assert_eq!(text, pieces().concat());
    assert_eq!(agent.messages().len(), 2);
    assert!(end.last().unwrap().as_assistant().is_some());
}

#[tokio::test(start_paused = true)]
async fn an_abort_ends_a_run_waiting_for_a_paced_subscriber() {
    let (agent, mut paced, mut plain) = start();
    until_idle().await;
    assert!(deltas_seen(&mut plain) < PIECES);
    agent.abort(None);
    let end = loop {
        if let AgentEvent::AgentEnd { messages, .. } = paced.recv().await.unwrap().event {
            break messages;
        }
    };
    let last = end.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

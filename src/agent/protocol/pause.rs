//! The pause gate: a person can hold the agent back from its next step without stopping what
//! already runs.
//!
//! While the gate is closed the loop parks at its boundaries — first thing before each model
//! call (before it reads its settings, builds the request or opens the turn), before a
//! compaction's summary request, and before each tool starts (before even a validation error
//! is reported) — and goes on when it opens again. A stream or a tool already under way is
//! never interrupted by it. An abort still ends a parked run at once (the gate stays
//! closed: the person opens it when they want the next run to go).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::agent::protocol::abort::AbortSignal;

/// Shared by an agent and every run it starts; clones are the same gate.
#[derive(Clone, Debug)]
pub struct PauseGate {
    since: Arc<watch::Sender<Option<Instant>>>,
}

impl Default for PauseGate {
    fn default() -> Self {
        PauseGate {
            since: Arc::new(watch::Sender::new(None)),
        }
    }
}

impl PauseGate {
    /// Close the gate; false when it was closed already.
    pub fn pause(&self) -> bool {
        self.since.send_if_modified(|s| {
            if s.is_some() {
                return false;
            }
            *s = Some(Instant::now());
            true
        })
    }

    /// Open the gate; how long it was closed (`None`: it was open).
    pub fn resume(&self) -> Option<Duration> {
        let mut held = None;
        self.since.send_if_modified(|s| {
            held = s.take().map(|t| t.elapsed());
            held.is_some()
        });
        held
    }

    pub fn is_paused(&self) -> bool {
        self.since.borrow().is_some()
    }

    /// When the gate was closed.
    pub fn paused_at(&self) -> Option<Instant> {
        *self.since.borrow()
    }

    /// Return once the gate is open, or at once when `signal` fires.
    pub async fn wait_until_resumed(&self, signal: &AbortSignal) {
        let mut rx = self.since.subscribe();
        loop {
            if rx.borrow_and_update().is_none() || signal.is_aborted() {
                return;
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = signal.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parks_until_resumed_or_aborted() {
        let gate = PauseGate::default();
        let signal = AbortSignal::new();
        gate.wait_until_resumed(&signal).await; // open: returns at once
        assert!(gate.pause());
        assert!(!gate.pause(), "already paused");
        assert!(gate.is_paused() && gate.paused_at().is_some());
        let (g, s) = (gate.clone(), signal.clone());
        let parked = tokio::spawn(async move { g.wait_until_resumed(&s).await });
        tokio::task::yield_now().await;
        assert!(!parked.is_finished());
        assert!(gate.resume().is_some());
        parked.await.unwrap();
        assert!(gate.resume().is_none(), "open already");

        gate.pause();
        let (g, s) = (gate.clone(), signal.clone());
        let parked = tokio::spawn(async move { g.wait_until_resumed(&s).await });
        signal.abort(crate::agent::protocol::abort::AbortReason::Requested);
        parked.await.unwrap();
        assert!(gate.is_paused(), "an abort leaves the gate closed");
    }
}

//! Backpressure from a slow subscriber to the model stream.
//!
//! A front end that writes events somewhere that can block (RPC's or JSON mode's stdout, a
//! busy terminal) subscribes with a [`Gauge`]: every event sent to it counts as queued until
//! its [`PacedReceiver`] takes it. The model stream is wrapped ([`PacedProvider`]) so that,
//! before it hands the loop its next event, it waits while any gauge is full: pi stops reading
//! the model's response (the socket fills, the server waits) instead of queueing events without
//! limit. Nothing is dropped or merged, and lifecycle events sent from elsewhere are never
//! held back (only the model stream waits, holding no lock, and an abort still ends the wait:
//! the loop selects on its signal first). A receiver that is dropped frees its gauge.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use futures::StreamExt;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::agent::protocol::events::RunEvent;
use crate::agent::protocol::stream::{EventStream, Provider, ProviderRequest};

/// How many events a paced subscriber may have waiting before the model stream waits.
pub const DEFAULT_LIMIT: usize = 1024;

/// The count of events sent to one paced subscriber and not yet taken.
#[derive(Debug)]
pub struct Gauge {
    queued: AtomicUsize,
    limit: usize,
    /// The stream waits from `limit` down to `low`, so it does not wake for every event.
    low: usize,
    room: Notify,
    closed: AtomicBool,
}

impl Gauge {
    fn new(limit: usize) -> Self {
        let limit = limit.max(2);
        Gauge {
            queued: AtomicUsize::new(0),
            limit,
            low: limit / 2,
            room: Notify::new(),
            closed: AtomicBool::new(false),
        }
    }

    fn sent(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    fn taken(&self) {
        let before = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        if before.saturating_sub(1) <= self.low {
            self.room.notify_waiters();
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.room.notify_waiters();
    }

    fn settled(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.queued.load(Ordering::Acquire) <= self.low
    }

    fn full(&self) -> bool {
        !self.closed.load(Ordering::Acquire) && self.queued.load(Ordering::Acquire) >= self.limit
    }

    /// Return at once while there is room; once full, wait until the subscriber has taken
    /// half of what waits (or is gone).
    async fn room(&self) {
        if !self.full() {
            return;
        }
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.settled() {
                return;
            }
            notified.await;
        }
    }
}

/// The agent's end of a subscription: plain, or counted on a gauge.
pub struct EventSender {
    tx: mpsc::UnboundedSender<RunEvent>,
    gauge: Option<Arc<Gauge>>,
}

impl EventSender {
    pub fn plain(tx: mpsc::UnboundedSender<RunEvent>) -> Self {
        EventSender { tx, gauge: None }
    }

    /// Send one event; `false` when the subscriber is gone.
    pub fn send(&self, event: RunEvent) -> bool {
        if let Some(g) = &self.gauge {
            g.sent();
        }
        self.tx.send(event).is_ok()
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A front end's end of a paced subscription.
#[derive(Debug)]
pub struct PacedReceiver {
    rx: mpsc::UnboundedReceiver<RunEvent>,
    gauge: Arc<Gauge>,
}

impl PacedReceiver {
    pub async fn recv(&mut self) -> Option<RunEvent> {
        let event = self.rx.recv().await;
        if event.is_some() {
            self.gauge.taken();
        }
        event
    }

    pub fn try_recv(&mut self) -> Result<RunEvent, mpsc::error::TryRecvError> {
        let event = self.rx.try_recv();
        if event.is_ok() {
            self.gauge.taken();
        }
        event
    }

    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// How many events wait to be taken.
    pub fn len(&self) -> usize {
        self.rx.len()
    }
}

impl Drop for PacedReceiver {
    fn drop(&mut self) {
        self.gauge.close();
    }
}

/// A paced subscription: the sender for the agent's subscriber list, the receiver for the
/// front end, and the gauge to register with a [`Pacer`].
pub fn paced_channel(limit: usize) -> (EventSender, PacedReceiver, Arc<Gauge>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let gauge = Arc::new(Gauge::new(limit));
    (
        EventSender {
            tx,
            gauge: Some(gauge.clone()),
        },
        PacedReceiver {
            rx,
            gauge: gauge.clone(),
        },
        gauge,
    )
}

/// The gauges of an agent's paced subscribers.
#[derive(Debug, Default)]
pub struct Pacer {
    gauges: Mutex<Vec<Weak<Gauge>>>,
}

impl Pacer {
    pub fn register(&self, gauge: &Arc<Gauge>) {
        let mut gauges = self.gauges.lock().unwrap_or_else(PoisonError::into_inner);
        gauges.retain(|g| {
            g.upgrade()
                .is_some_and(|g| !g.closed.load(Ordering::Acquire))
        });
        gauges.push(Arc::downgrade(gauge));
    }

    /// Wait until no paced subscriber is full. The list is copied first: no lock is held
    /// while waiting.
    pub async fn room(&self) {
        let full: Vec<Arc<Gauge>> = {
            let gauges = self.gauges.lock().unwrap_or_else(PoisonError::into_inner);
            gauges
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|g| g.full())
                .collect()
        };
        for gauge in full {
            gauge.room().await;
        }
    }
}

/// A provider whose stream waits for room in the paced subscribers before each event.
pub struct PacedProvider {
    inner: Arc<dyn Provider>,
    pacer: Arc<Pacer>,
}

impl PacedProvider {
    pub fn wrap(inner: Arc<dyn Provider>, pacer: Arc<Pacer>) -> Arc<dyn Provider> {
        Arc::new(PacedProvider { inner, pacer })
    }
}

impl Provider for PacedProvider {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        let inner = self.inner.stream(request, cancel);
        let pacer = self.pacer.clone();
        futures::stream::unfold((inner, pacer), |(mut inner, pacer)| async move {
            pacer.room().await;
            let next = Pin::new(&mut inner).next().await?;
            Some((next, (inner, pacer)))
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::events::AgentEvent;

    fn event() -> RunEvent {
        RunEvent {
            run: None,
            event: AgentEvent::AgentStart,
        }
    }

    #[tokio::test]
    async fn a_full_gauge_waits_until_half_is_taken() {
        let pacer = Pacer::default();
        let (tx, mut rx, gauge) = paced_channel(4);
        pacer.register(&gauge);
        for _ in 0..4 {
            assert!(tx.send(event()));
        }
        let mut room = Box::pin(pacer.room());
        assert!(futures::poll!(room.as_mut()).is_pending());
        rx.recv().await;
        assert!(futures::poll!(room.as_mut()).is_pending());
        rx.recv().await;
        assert!(futures::poll!(room.as_mut()).is_ready());
    }

    #[tokio::test]
    async fn a_dropped_receiver_frees_the_stream() {
        let pacer = Pacer::default();
        let (tx, rx, gauge) = paced_channel(2);
        pacer.register(&gauge);
        tx.send(event());
        tx.send(event());
        let mut room = Box::pin(pacer.room());
        assert!(futures::poll!(room.as_mut()).is_pending());
        drop(rx);
        assert!(futures::poll!(room.as_mut()).is_ready());
    }
}

//! Running a [`SessionRecorder`] next to an agent: [`RecorderTask`].
//!
//! The task reads an event stream (a host passes the agent's, subscribed with
//! [`SessionRecorder::wants`] as the filter) on the tokio runtime and feeds each event to the
//! recorder; the `fsync` at a turn's end runs on the blocking pool so
//! the runtime (and the UI on it) never waits for the disk. Hosts change the session through
//! [`RecorderTask::with`] (model switches, names, labels): such a change is applied after every
//! event the agent emitted before it, because the task always drains pending events first.
//! [`RecorderTask::finish`] drains what is left, writes, syncs and hands the recorder back.
//!
//! Hosts that already loop over the events themselves can skip this and call
//! [`SessionRecorder::handle`] directly.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::recorder::SessionRecorder;
use crate::agent::protocol::events::{AgentEvent, RunEvent};
use crate::sync::lock;

type Change = Box<dyn FnOnce(&mut SessionRecorder) + Send>;

enum Command {
    Apply(Change),
    /// [`SessionRecorder::ready_for_prompt`], on the blocking pool.
    Ready(oneshot::Sender<Result<(), String>>),
    Finish(oneshot::Sender<()>),
}

/// A recorder fed by an agent's events on a background task.
pub struct RecorderTask {
    shared: Arc<Mutex<SessionRecorder>>,
    commands: mpsc::UnboundedSender<Command>,
    join: JoinHandle<()>,
    path: std::path::PathBuf,
}

impl RecorderTask {
    /// Record the events arriving on `events` (e.g.
    /// `agent.subscribe_filtered(SessionRecorder::wants)`). Must be called inside a tokio
    /// runtime.
    pub fn from_events(
        mut events: mpsc::UnboundedReceiver<RunEvent>,
        recorder: SessionRecorder,
    ) -> Self {
        let path = recorder.path().to_path_buf();
        let shared = Arc::new(Mutex::new(recorder));
        let (commands, mut command_rx) = mpsc::unbounded_channel();
        let task_shared = shared.clone();
        let join = tokio::spawn(async move {
            let mut done: Option<oneshot::Sender<()>> = None;
            loop {
                tokio::select! {
                    biased;
                    ev = events.recv() => match ev {
                        Some(ev) => feed(&task_shared, ev.event).await,
                        None => break,
                    },
                    cmd = command_rx.recv() => match cmd {
                        Some(Command::Apply(f)) => f(&mut lock(&task_shared)),
                        Some(Command::Ready(tx)) => {
                            let shared = task_shared.clone();
                            let done = tokio::task::spawn_blocking(move || {
                                lock(&shared).ready_for_prompt().map_err(|e| e.to_string())
                            })
                            .await
                            .unwrap_or_else(|e| Err(e.to_string()));
                            let _ = tx.send(done);
                        }
                        Some(Command::Finish(tx)) => {
                            while let Ok(ev) = events.try_recv() {
                                feed(&task_shared, ev.event).await;
                            }
                            done = Some(tx);
                            break;
                        }
                        None => break,
                    },
                }
            }
            let shared = task_shared.clone();
            let _ = tokio::task::spawn_blocking(move || {
                lock(&shared).sync_and_report();
            })
            .await;
            if let Some(tx) = done {
                let _ = tx.send(());
            }
        });
        RecorderTask {
            shared,
            commands,
            join,
            path,
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Change the session after the events emitted so far (e.g. `|r| { r.set_model(..); }`).
    pub fn with(&self, change: impl FnOnce(&mut SessionRecorder) + Send + 'static) {
        let _ = self.commands.send(Command::Apply(Box::new(change)));
    }

    /// Resolves once every event emitted so far is recorded and written (not synced), e.g.
    /// before listing sessions from disk.
    pub(crate) fn written(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.with(move |r| {
            r.write_due();
            let _ = tx.send(());
        });
        rx
    }

    /// Resolves once what is queued so far is on disk, or with why it cannot be (see
    /// [`SessionRecorder::ready_for_prompt`]): a host waits for it before sending a prompt.
    pub(crate) fn ready_for_prompt(&self) -> oneshot::Receiver<Result<(), String>> {
        let (tx, rx) = oneshot::channel();
        if let Err(mpsc::error::SendError(Command::Ready(tx))) =
            self.commands.send(Command::Ready(tx))
        {
            let _ = tx.send(Err("the session recorder stopped".into()));
        }
        rx
    }

    /// Look at the recorder now (not ordered with queued events).
    pub(crate) fn peek<R>(&self, f: impl FnOnce(&SessionRecorder) -> R) -> R {
        f(&lock(&self.shared))
    }

    /// Record every event received so far, write and sync, and stop. Returns the recorder
    /// (`None` only if the task died). Write failures went to the recorder's reporter, or wait
    /// in [`SessionRecorder::take_errors`].
    pub async fn finish(self) -> Option<SessionRecorder> {
        let (tx, rx) = oneshot::channel();
        let _ = self.commands.send(Command::Finish(tx));
        let _ = rx.await;
        let _ = self.join.await;
        Arc::try_unwrap(self.shared)
            .ok()
            .map(crate::sync::into_inner)
    }
}

async fn feed(shared: &Arc<Mutex<SessionRecorder>>, ev: AgentEvent) {
    if SessionRecorder::syncs_on(&ev) {
        let shared = shared.clone();
        let _ = tokio::task::spawn_blocking(move || lock(&shared).handle(&ev)).await;
    } else {
        lock(shared).handle(&ev);
    }
}

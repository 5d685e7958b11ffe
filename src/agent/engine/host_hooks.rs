//! Hooks a host adds to an [`Agent`](super::facade::Agent) at run time, each removable on its
//! own: hooks awaited before the agent takes queued messages, and hooks awaited before each
//! model call. Both receive the signal of the run they serve, so a hook that waits gives up
//! when the run is aborted (or its deadline passes).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::agent::protocol::abort::AbortSignal;

/// An async hook given the run's signal.
pub type SignalHook = Arc<dyn Fn(AbortSignal) -> BoxFuture<'static, ()> + Send + Sync>;

/// Names a hook for its removal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookId(u64);

/// Hooks in the order they were added.
#[derive(Default)]
pub struct HookList {
    next: u64,
    hooks: Vec<(u64, SignalHook)>,
}

impl HookList {
    pub fn add(&mut self, hook: SignalHook) -> HookId {
        self.next += 1;
        self.hooks.push((self.next, hook));
        HookId(self.next)
    }

    /// `false` when `id` was removed already.
    pub fn remove(&mut self, id: HookId) -> bool {
        let before = self.hooks.len();
        self.hooks.retain(|(n, _)| *n != id.0);
        self.hooks.len() != before
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks now (a hook may add or remove hooks while the others run).
    pub fn snapshot(&self) -> Vec<SignalHook> {
        self.hooks.iter().map(|(_, h)| h.clone()).collect()
    }
}

/// Await `hooks` one after the other, stopping early once `signal` fires.
pub async fn run_all(hooks: Vec<SignalHook>, signal: &AbortSignal) {
    for hook in hooks {
        if signal.is_aborted() {
            return;
        }
        hook(signal.clone()).await;
    }
}

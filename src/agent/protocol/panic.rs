//! Panic containment: a panic in a tool, a hook or a provider stream becomes an error the loop
//! can report, instead of a task that dies and leaves the agent busy for ever.
//!
//! [`contain`] runs a future (and [`contain_sync`] a closure) and turns a panic into
//! `Err(message)`. While contained code runs, a thread-local marker is set, so a host's panic
//! hook can ask [`is_contained`] and stay quiet (no message over a full-screen UI, no terminal
//! restore) for a panic that is already being handled.

use std::any::Any;
use std::cell::Cell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// True while the current thread runs contained code (for panic hooks).
pub fn is_contained() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Marks the thread as containing for its lifetime.
struct Marker;

impl Marker {
    fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get().saturating_add(1)));
        Marker
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// The text of a panic payload (`&str` or `String`; anything else gets a generic text).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// Run `f`, turning a panic into `Err(message)`.
pub fn contain_sync<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let _marker = Marker::enter();
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_message(p.as_ref()))
}

/// A future whose panics are caught at every poll.
pub struct Contained<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.inner.as_mut();
        match contain_sync(move || inner.poll(cx)) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(message) => Poll::Ready(Err(message)),
        }
    }
}

/// Run `f` to completion, turning a panic into `Err(message)`. The future is not polled again
/// after it panicked.
pub fn contain<F: Future>(f: F) -> Contained<F> {
    Contained { inner: Box::pin(f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_the_marker_is_cleared() {
        assert_eq!(contain_sync(|| 7), Ok(7));
        let r: Result<(), String> = contain_sync(|| panic!("boom {}", 1));
        assert_eq!(r, Err("boom 1".to_string()));
        assert!(!is_contained());
        let inside = contain_sync(is_contained);
        assert_eq!(inside, Ok(true));
    }

    #[tokio::test]
    async fn a_panicking_future_is_contained() {
        let r = contain(async {
            tokio::task::yield_now().await;
            panic!("late");
        })
        .await;
        assert_eq!(r, Err::<(), _>("late".to_string()));
        assert_eq!(contain(async { 3 }).await, Ok(3));
    }
}

//! The agent loop and everything it owns: messages, events, tool scheduling, steering, abort.
//!
//! This module knows nothing of the terminal, HTTP or files. It talks to model backends through
//! the [`stream::Provider`] trait and to tools through [`tool::AgentTool`]; everything it does is
//! reported as [`events::AgentEvent`]s.

pub mod abort;
pub mod append_only;
pub mod batch;
pub mod coerce;
pub mod events;
pub mod facade;
pub mod hooks;
pub mod normalize;
pub mod placeholder;
pub mod run;
pub mod scripted;
pub mod soft;
pub mod stream;
pub mod summary;
pub mod thinking;
pub mod tool;
pub mod types;
pub mod validate;

/// Lock a mutex, taking the data even if a panicking holder poisoned it (the data here is
/// always left consistent, and a UI must not die of a poisoned lock).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

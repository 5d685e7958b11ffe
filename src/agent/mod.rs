//! The agent: the loop and everything it owns (messages, events, tool scheduling, steering,
//! abort), in three layers.
//!
//! * [`protocol`] — the contract: messages and content blocks, events, operations, the provider
//!   stream trait, the tool trait, the host hooks, thinking levels. It depends on nothing else
//!   in the crate; providers, tools, sessions and front ends build on it.
//! * [`engine`] — the loop itself: runs and turns ([`engine::run`]), tool batches
//!   ([`engine::batch`]), the long-lived [`engine::facade::Agent`] and the one place
//!   a command is carried out on it ([`engine::task`]).
//! * [`policy`] — the rules the loop applies to what passes through it: context conversion and
//!   normalisation, the append-only prompt-cache log, argument validation and coercion, soft
//!   tool requirements, placeholder results, the run summary.
//!
//! Nothing here knows of the terminal, HTTP or files.

pub mod engine;
pub mod policy;
pub mod protocol;
#[cfg(any(test, feature = "test-support"))]
pub mod scripted;

/// The crate's poison-tolerant lock (the loop's files name it from here).
pub(crate) use crate::sync::lock;

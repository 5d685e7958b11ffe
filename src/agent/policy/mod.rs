//! The rules the loop applies to what passes through it.
//!
//! [`normalize`] (transcript → provider messages, tool schemas with the intent field),
//! [`append_only`] (the prompt-cache-stable request log), [`validate`] and [`coerce`] (tool
//! arguments in, tool results out), [`soft`] (soft tool requirements), [`harmony`] (GPT-5
//! protocol leaks in replies), [`placeholder`] (results for calls that never ran), [`summary`]
//! (the run collector), [`repetition`] (the repeated-call guard), [`error_id`] (the flags that
//! classify failed replies) and [`compaction`] (how full the context is, where to cut it, what
//! to ask for a summary).

pub mod append_only;
pub mod coerce;
pub mod compaction;
pub mod error_id;
pub mod harmony;
pub mod normalize;
pub mod overflow;
pub mod placeholder;
pub mod repetition;
pub mod soft;
pub mod summary;
pub mod validate;

//! The agent's contract: what flows in and out of the loop, and the traits it calls through.
//!
//! Messages ([`types`]), the event stream ([`events`]), the operations the host carries out on
//! the agent and their answers ([`command`]), the provider stream ([`stream`]), tools
//! ([`tool`]), host hooks ([`hooks`]), abort signals ([`abort`]), thinking levels
//! ([`thinking`]), the run report ([`summary`]) and the compaction settings and summary message
//! ([`compaction`]). This module depends on nothing else in the crate.

pub mod abort;
pub mod command;
pub mod compaction;
pub mod events;
pub mod hooks;
pub mod paced;
pub mod panic;
pub mod pause;
pub mod stream;
pub mod summary;
pub mod thinking;
pub mod tool;
pub mod types;

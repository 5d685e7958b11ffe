//! `pi`, a terminal coding agent, as a library.
//!
//! `agent` is the loop and its contract (it imports nothing else here); `provider`, `tools`,
//! `session` and `config` are what the loop works with; `attach` reads the files and images a
//! person adds to a prompt; `setup` builds them all from flags and
//! config and starts `host`, the task that owns the agent and its session; `print` and `tui`
//! are peer front ends on the host's command channel; `cli` parses the flags and picks one.
//! The binary (`src/main.rs`) only calls `cli::main`. `tests/architecture.rs` holds these
//! boundaries.

// Messages and events mirror a JSON wire format; their variants differ in size by design, and
// boxing the large ones would add an allocation per message for no measurable gain.
#![allow(clippy::large_enum_variant)]

pub mod agent;
pub mod approval;
pub mod attach;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod end_signals;
pub mod hooks;
pub mod host;
pub mod json_text;
pub mod mcp;
pub mod paths;
pub mod print;
pub mod provider;
pub mod rpc;
pub mod secrets;
pub mod session;
pub mod setup;
pub mod subagent;
pub mod sync;
pub mod tools;
pub mod tui;
pub mod visible;

//! `pi`, a terminal coding agent, as a library: the agent loop and its data model, and the
//! coding tools the model works with.
//!
//! The binary (`src/main.rs`) is a thin front end over these modules.

// Messages and events mirror a JSON wire format; their variants differ in size by design, and
// boxing the large ones would add an allocation per message for no measurable gain.
#![allow(clippy::large_enum_variant)]

pub mod agent;
pub mod cli;
pub mod config;
pub mod host;
pub mod print;
pub mod provider;
pub mod session;
pub mod setup;
pub mod tools;
pub mod tui;

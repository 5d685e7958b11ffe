//! MCP servers as tools, through the official Rust SDK (`rmcp`, client side).
//!
//! `config.toml`'s `[mcp_servers.NAME]` tables ([`config`]) name stdio or streamable-HTTP
//! servers; the [`manager`] starts them in the background and keeps their state; [`client`]
//! holds one connection; [`tool`] adapts each server tool to the agent's tool trait, named by
//! [`naming`] (`mcp__<server>__<tool>`) with results mapped by [`content`].
//!
//! This module imports no front end and no provider; setup wires it to the agent and the host.

pub mod client;
pub mod config;
pub mod content;
pub mod manager;
pub mod naming;
pub mod tool;

pub use config::ServerConfig;
pub use manager::{McpManager, ServerState, ServerStatus};
pub use naming::is_mcp_tool;

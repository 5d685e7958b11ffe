//! MCP servers as tools, through the official Rust SDK (`rmcp`, client side).
//!
//! `config.toml`'s `[mcp_servers.NAME]` tables ([`config`]) name stdio or streamable-HTTP
//! servers; the [`manager`] starts them in the background and keeps their state; [`client`]
//! holds one connection (a stdio server's process and channel are [`stdio`]'s, its replies
//! bounded by [`reply_limit`]); [`tool`] adapts each server tool to the agent's tool trait,
//! named by [`naming`] (`mcp__<server>__<tool>`) with results mapped and cut to the tools'
//! output limits by [`content`].
//!
//! This module imports no front end and no provider; setup wires it to the agent and the host.

pub mod client;
pub mod config;
pub(crate) mod content;
pub mod manager;
pub mod naming;
pub(crate) mod reply_limit;
pub(crate) mod stdio;
pub mod tool;

pub use config::ServerConfig;
pub(crate) use manager::{McpManager, ServerStatus};

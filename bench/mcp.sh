#!/usr/bin/env bash
# MCP servers (issue 16): (a) start-up of the TUI and of print mode with three stdio MCP servers
# configured versus none, and (b) what pi's MCP tool adapter adds to a call beyond the server's
# own time (an echo tool called CALLS times directly through the rmcp client and through
# `pi::mcp::tool::McpTool`, interleaved). Target for (b): <= 2 ms.
# Usage: bench/mcp.sh [runs] [calls]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
CALLS="${2:-2000}"
cargo build --release --quiet --bin pi --example mcp_bench
BIN="${CARGO_TARGET_DIR:-target}/release"
python3 bench/mcp_start.py "$BIN/pi" "$BIN/examples/mcp_bench" "$RUNS"
"$BIN/examples/mcp_bench" overhead "$CALLS"

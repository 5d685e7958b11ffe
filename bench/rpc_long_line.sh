#!/usr/bin/env bash
# The RPC reader on a 40 MB line (issue 24): time to the response. See rpc_long_line.py.
# Usage: bench/rpc_long_line.sh [size_mb] [runs]   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin pi
python3 bench/rpc_long_line.py "$(realpath "${CARGO_TARGET_DIR:-target}")/release/pi" "${1:-40}" "${2:-3}"

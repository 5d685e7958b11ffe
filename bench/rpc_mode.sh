#!/usr/bin/env bash
# CPU cost of RPC mode on a 20,000-delta answer (issue 15: at most 60 ms). See rpc_mode.py.
# Usage: bench/rpc_mode.sh [runs]   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin pi
python3 bench/rpc_mode.py "$(realpath "${CARGO_TARGET_DIR:-target}")/release/pi" "${1:-9}"

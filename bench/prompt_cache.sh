#!/usr/bin/env bash
# Prompt-cache reads over a 30-prompt session at a local server that models OpenAI's and
# Anthropic's prompt caches (see prompt_cache.py). Builds this tree's debug binary (the figures
# are token counts, not timings); pass another binary to measure that one instead.
# Usage: bench/prompt_cache.sh [PI_BINARY] [TURNS]
set -euo pipefail
cd "$(dirname "$0")/.."
pi="${1:-}"
if [ -z "$pi" ]; then
  cargo build --quiet --bin pi
  pi="$(realpath "${CARGO_TARGET_DIR:-target}")/debug/pi"
fi
for api in openai anthropic; do
  python3 bench/prompt_cache.py "$pi" "$api" "${2:-30}"
done

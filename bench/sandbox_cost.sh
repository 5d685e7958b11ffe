#!/usr/bin/env bash
# Per-call cost of bash's launch layers (process group, PID namespace, Landlock + seccomp,
# user/mount/PID namespaces): the median of 50 `true` calls in each setup, through the bash
# tool (a debug build; the time is mostly the kernel's and bash's own start-up).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --test sandbox bash_call_cost -- --ignored --nocapture 2>&1 | grep -E "median|skipped"

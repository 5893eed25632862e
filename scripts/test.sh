#!/usr/bin/env bash
# Installs what is missing, builds libsdpa with every backend this machine
# supports, and runs every test suite. Exit status is non-zero if any fails.
#   bash scripts/test.sh [BUILD_DIR] [extra meson options...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${1:-build}
shift || true
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$@"
fi
ninja -C "$build"
# Suites run side by side, one per core (tests/meson.build says which run
# alone and which start first).
# SDPA_SAN_PRELOAD (.ci/sanitizer-env.sh, sanitizer runs only): a library
# preloaded into the test processes
meson test -C "$build" --print-errorlogs --num-processes "$(nproc 2>/dev/null || echo 2)" \
  ${SDPA_SAN_PRELOAD:+--wrapper "env LD_PRELOAD=$SDPA_SAN_PRELOAD"}

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
meson test -C "$build" --print-errorlogs --num-processes 1

#!/usr/bin/env bash
# The main job: installs what is missing, builds libsdpa, shows what it
# finds on this machine (sdpa-info), then runs attention on a standard shape
# on the default backend, checks it against the float64 reference and prints
# the in-kernel diagnostics per head (examples/quickstart.c).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=build
[ -f "$build/build.ninja" ] || meson setup "$build"
ninja -C "$build"
echo "== sdpa-info"
"$build/tools/sdpa-info"
echo
echo "== quickstart"
"$build/quickstart"

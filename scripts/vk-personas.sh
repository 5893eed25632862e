#!/usr/bin/env bash
# vk-personas.sh — runs the conformance corpus (sdpa-check --backend vulkan on
# tests/conformance) and a subset of the Vulkan suite (tests/test_vulkan.c
# cases, CK_RUN_CASE) under every test-only GPU persona of the Vulkan backend
# (SDPA_TEST_PERSONA=vk-..., src/backend/vulkan/vk_persona.c, docs/vulkan.md
# "Test personas"), so the configuration a GPU with those limits would get
# runs here on lavapipe. CI (.ci/run) calls it after the test build.
#
# Usage: bash scripts/vk-personas.sh [BUILD_DIR]   (default: build, already built)
#   VK_PERSONAS="vk-sb4 ..."        personas to run (default: all)
#   VK_PERSONA_CASES="decode ..."   test_vulkan cases per persona
# Prints one line per run with its time; exits 1 when any run failed, 0 with a
# note when the build has no Vulkan device.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
personas=${VK_PERSONAS:-"vk-sb4 vk-sb8 vk-small vk-nobar vk-bar256"}
cases=${VK_PERSONA_CASES:-"decode forward_f16_bf16"}
check="$build/tools/sdpa-check"
suite="$build/tests/test_vulkan"
for f in "$check" "$suite"; do
  [ -x "$f" ] || { echo "vk-personas: $f not built" >&2; exit 1; }
done
if ! "$build/tools/sdpa-info" 2>/dev/null | grep -qi vulkan; then
  echo "vk-personas: no Vulkan device; nothing to run"
  exit 0
fi
# The same cache folders as the meson suites (tests/meson.build).
export SDPA_CACHE_DIR="$PWD/$build/tests/cache" SDPA_PROFILE_DIR="$PWD/$build/tests/profiles"
export SDPA_LOG=error
fail=0
start=$(date +%s)
run() { # label, command...
  local label=$1 t0=$(date +%s) rc=0
  shift
  "$@" > "$build/vk-persona-$label.log" 2>&1 || rc=$?
  echo "vk-personas: $label: $([ $rc = 0 ] && echo pass || echo "FAIL (rc $rc, $build/vk-persona-$label.log)") in $(( $(date +%s) - t0 )) s"
  [ $rc = 0 ] || fail=1
}
for p in $personas; do
  run "$p-conformance" env SDPA_TEST_PERSONA="$p" "$check" --backend vulkan tests/conformance
  for c in $cases; do
    run "$p-$c" env SDPA_TEST_PERSONA="$p" CK_RUN_CASE="$c" "$suite"
  done
done
echo "vk-personas: $(echo $personas | wc -w) personas in $(( $(date +%s) - start )) s, $([ $fail = 0 ] && echo "all green" || echo "failures")"
exit $fail

#!/usr/bin/env bash
# vk-personas.sh — runs the parity suite's Vulkan rows (tests/test_parity.c,
# SDPA_PARITY_BACKENDS=vulkan), the conformance corpus (sdpa-check --backend
# vulkan on tests/conformance) and a subset of the Vulkan suite
# (tests/test_vulkan.c cases, CK_RUN_CASE) under every test-only GPU persona
# of the Vulkan backend (SDPA_TEST_PERSONA=vk-..., src/backend/vulkan/
# vk_persona.c, docs/vulkan.md "Test personas"), so the configuration a GPU
# with those limits would get runs here on lavapipe. The parity run is the
# whole table under the packed-layout persona (VK_PARITY_FULL, default
# vk-sb4: every row through the packed descriptor layout's own shader
# variants) and the suite's persona set (SDPA_PARITY_SET=persona: every
# kernel kind at lengths 1..1000) under the others, whose difference is a
# configuration (vk-small), the same packed code at another limit (vk-sb8) or
# the memory types (vk-nobar, vk-bar256). CI (.ci/run) calls it after the
# test build; coverage and timing: docs/gpu.md "Persona runs in CI".
#
# The persona vk-denorm16 (shaderDenormPreserveFloat16: f16 runs fwd_fa2h) is
# not in the default list: the Vulkan suite's fa2_f16 case runs it, without
# the validation layer (which sees lavapipe's real float controls).
#
# Usage: bash scripts/vk-personas.sh [BUILD_DIR]   (default: build, already built)
#   VK_PERSONAS="vk-sb4 ..."        personas to run (default: all but vk-denorm16)
#   VK_PERSONA_RUNS="parity conformance cases"   what to run per persona (default all)
#   VK_PERSONA_CASES="decode ..."   test_vulkan cases per persona (the `cases` run)
#   VK_PARITY_FULL="vk-sb4 ..."     personas whose parity run is the whole table
#                                   (default vk-sb4; the others: the persona set)
# Prints one line per run with its time; exits 1 when any run failed, 0 with a
# note when the build has no Vulkan device.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
personas=${VK_PERSONAS:-"vk-sb4 vk-sb8 vk-small vk-nobar vk-bar256"}
runs=${VK_PERSONA_RUNS:-"parity conformance cases"}
cases=${VK_PERSONA_CASES:-"decode fa2_forward features_short"}
full=${VK_PARITY_FULL-vk-sb4}
for f in "$build/tools/sdpa-check" "$build/tests/test_vulkan" "$build/tests/test_parity"; do
  [ -x "$f" ] || { echo "vk-personas: $f not built" >&2; exit 1; }
done
if ! "$build/tools/sdpa-info" 2>/dev/null | grep -qi vulkan; then
  echo "vk-personas: no Vulkan device; nothing to run"
  exit 0
fi
source scripts/persona-lib.sh
for p in $personas; do
  for r in $runs; do
    case $r in
      parity) pset=persona
              case " $full " in *" $p "*) pset=full ;; esac
              persona_run "$p-parity" env SDPA_TEST_PERSONA="$p" SDPA_PARITY_BACKENDS=vulkan \
                SDPA_PARITY_SET=$pset "$build/tests/test_parity" ;;
      conformance) persona_run "$p-conformance" env SDPA_TEST_PERSONA="$p" \
                     "$build/tools/sdpa-check" --backend vulkan tests/conformance ;;
      cases) for c in $cases; do
               persona_run "$p-$c" env SDPA_TEST_PERSONA="$p" CK_RUN_CASE="$c" "$build/tests/test_vulkan"
             done ;;
      *) echo "vk-personas: unknown run '$r'" >&2; exit 2 ;;
    esac
  done
done
persona_done vk "$(echo $personas | wc -w)"

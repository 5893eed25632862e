#!/usr/bin/env bash
# gpu-personas.sh — runs scripts/cl-personas.sh and scripts/vk-personas.sh
# (the parity suite and the conformance corpus under every OpenCL and Vulkan
# GPU persona) side by side: most of their cold time is compiling kernels and
# pipelines on one thread each (PoCL's LLVM, lavapipe's), so on the 2-core CI
# machine the two together take about as long as the longer one. Each one's
# lines are printed when it ends. CI (.ci/run) calls it; coverage and timing:
# docs/gpu.md "Persona runs in CI".
#
# Usage: bash scripts/gpu-personas.sh [BUILD_DIR]   (default: build, already built)
#   GPU_PERSONAS_SERIAL=1   one after the other instead
#   (CL_PERSONAS, VK_PERSONAS, ... pass through to the two scripts)
# Exits 1 when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mkdir -p "$build"
rc_cl=0 rc_vk=0
if [ "${GPU_PERSONAS_SERIAL:-0}" = 1 ]; then
  bash scripts/cl-personas.sh "$build" || rc_cl=$?
  bash scripts/vk-personas.sh "$build" || rc_vk=$?
else
  bash scripts/cl-personas.sh "$build" > "$build/cl-personas.out" 2>&1 &
  cl=$!
  bash scripts/vk-personas.sh "$build" > "$build/vk-personas.out" 2>&1 &
  vk=$!
  wait $cl || rc_cl=$?
  cat "$build/cl-personas.out"
  wait $vk || rc_vk=$?
  cat "$build/vk-personas.out"
fi
[ $rc_cl = 0 ] && [ $rc_vk = 0 ]

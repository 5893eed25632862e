#!/usr/bin/env bash
# gpu-personas.sh — runs scripts/cl-personas.sh and scripts/vk-personas.sh
# (the parity suite and the conformance corpus under every OpenCL and Vulkan
# GPU persona) side by side: most of their cold time is compiling kernels and
# pipelines on one thread each (PoCL's LLVM, lavapipe's), so on the 2-core CI
# machine the two together take about as long as the longer one
# (scripts/side-by-side.sh prints each one's lines when it ends). CI
# (.ci/run) calls it; coverage and timing: docs/gpu.md "Persona runs in CI".
#
# Usage: bash scripts/gpu-personas.sh [BUILD_DIR]   (default: build, already built)
#   GPU_PERSONAS_SERIAL=1   one after the other instead
#   (CL_PERSONAS, VK_PERSONAS, ... pass through to the two scripts)
# Exits 1 when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mkdir -p "$build"
SIDE_BY_SIDE_SERIAL=${GPU_PERSONAS_SERIAL:-0} exec bash scripts/side-by-side.sh \
  "OpenCL personas: bash scripts/cl-personas.sh '$build'" \
  "Vulkan personas: bash scripts/vk-personas.sh '$build'"

#!/usr/bin/env bash
# gpu-static.sh — the static GPU gate (docs/gpu.md): without any GPU,
# asks the library which OpenCL programs and Vulkan pipelines it would build
# for described NVIDIA, AMD, Intel, Mali-like and Adreno-like devices
# (tools/internal/sdpa-gpu-config), compiles them with the vendors' own
# offline compilers (clang-15 + libclc -> ptxas; clang-15 amdgcn; ocloc; RADV's
# null device) and prints registers, spills, scratch, occupancy and loads per
# FMA per kernel and device. Exits non-zero when a kernel is worse than
# data/gpu-static-baseline.json beyond the margins in docs/gpu.md.
#
#   scripts/gpu-static.sh [BUILD_DIR] [--json FILE] [--update-baseline]
#                         [--devices a,b] [--jobs N] [--keep DIR] [--quick]
#
# Needs `bash scripts/install-deps.sh --gpu-static` once. BUILD_DIR (default
# build) is configured and built with -Dtests=true when sdpa-gpu-config is
# missing. The whole run is bounded by SDPA_GPU_STATIC_TIMEOUT seconds
# (default 1500); the last line is
#   gpu-static: N rows, S with spills or scratch, R regressions
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$1
  shift
fi
case " $* " in *" -h "*|*" --help "*)
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 0;;
esac

tool="$build/tools/internal/sdpa-gpu-config"
if [ ! -x "$tool" ]; then
  [ -d "$build" ] || meson setup "$build" -Dtests=true >/dev/null
  ninja -C "$build" tools/internal/sdpa-gpu-config >/dev/null
fi
export SDPA_GPU_STATIC_VENV="${SDPA_GPU_STATIC_VENV:-$HOME/.cache/sdpa/gpu-static-venv}"
exec timeout "${SDPA_GPU_STATIC_TIMEOUT:-1500}" python3 tools/internal/gpu_static.py \
  --config-tool "$tool" --baseline data/gpu-static-baseline.json "$@"

#!/usr/bin/env bash
# loader_needed.sh — libsdpa opens the OpenCL ICD loader, the Vulkan loader
# and CLBlast at run time (src/core/dynlib.c), so neither libsdpa.so nor
# sdpa.pc may depend on them: fails when `readelf -d` lists libOpenCL,
# libvulkan or libclblast as NEEDED, or when sdpa.pc requires OpenCL, vulkan
# or clblast (pkg-config --print-requires --print-requires-private).
# Run by meson test (suite loader):
#   loader_needed.sh READELF LIBSDPA_SO SDPA_PC
set -euo pipefail
readelf=$1 lib=$2 pc=$3
fail() { echo "loader_needed: FAIL: $*" >&2; exit 1; }

needed=$("$readelf" -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "readelf lists no NEEDED entry in $lib (not a shared library?)"
echo "loader_needed: $lib NEEDED: $(echo $needed)"
bad=$(echo "$needed" | grep -E '^lib(OpenCL|vulkan|clblast)\.' || true)
[ -z "$bad" ] || fail "$lib links $(echo $bad) (must be opened at run time)"

if command -v pkg-config >/dev/null; then
  req=$(pkg-config --print-requires --print-requires-private "$pc")
  echo "loader_needed: $pc requires: $(echo $req)"
  bad=$(echo "$req" | grep -iE '^(OpenCL|vulkan|clblast)\b' || true)
  [ -z "$bad" ] || fail "$pc requires $(echo $bad)"
else
  echo "loader_needed: pkg-config not found: sdpa.pc not checked"
fi
echo "loader_needed: ok"

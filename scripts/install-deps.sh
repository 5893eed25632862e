#!/usr/bin/env bash
# Installs the Debian packages libsdpa needs to build and test, only those
# that are missing (so a machine that has them all needs no network).
# Sourced or run by scripts/demo.sh, scripts/test.sh and .ci/run.
set -euo pipefail

packages=(
  # build
  gcc meson ninja-build pkg-config python3
  # tests
  check valgrind
  # OpenCL on the CPU: ICD loader, headers, PoCL; CLBlast for the unfused path
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libclblast-dev
  # Vulkan on the CPU: loader, headers, lavapipe, glslc, validation layers
  libvulkan1 libvulkan-dev mesa-vulkan-drivers glslc vulkan-tools vulkan-validationlayers
  # JSON for the tools, profiles and conformance cases
  libcjson-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

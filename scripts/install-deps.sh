#!/usr/bin/env bash
# Installs the Debian packages libsdpa needs to build and test, only those
# that are missing (so a machine that has them all needs no network).
# Sourced or run by scripts/demo.sh, scripts/test.sh and .ci/run.
# `install-deps.sh --hardening` installs only the extra packages of
# scripts/hardening.sh (see hardening_packages below); `--gpu-static` those
# of scripts/gpu-static.sh (gpu_static_packages below, plus ptxas from PyPI);
# `--baselines` those of scripts/bench-baselines.sh (baselines_packages below,
# plus ONNX Runtime from PyPI and ggml built from PyPI's llama-cpp-python
# sdist); `--windows` those of
# scripts/cross-check-windows.sh (windows_packages below, then Check and
# cJSON cross-built from Debian's source packages; docs/windows.md).
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
  # rsvg-convert: the lab suite renders sdpa-lab's --plot charts
  librsvg2-bin
)

# --- hardening (scripts/hardening.sh only; not needed by the README's
# commands): clang + libFuzzer, cross compilers and qemu-user, and Check /
# cJSON for the cross targets through Debian multiarch (arm64, i386);
# libc6:arm64 is the loader and libc the aarch64 tests run on under qemu.
hardening_packages=(
  clang libclang-rt-14-dev
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  gcc-i686-linux-gnu libc6-dev-i386-cross
  libc6:arm64 check:arm64 libsubunit-dev:arm64 libcjson-dev:arm64
  check:i386 libsubunit-dev:i386 libcjson-dev:i386
)
# --- static GPU gate (scripts/gpu-static.sh, docs/gpu.md): clang-15 and
# libclc for the NVPTX and AMDGCN targets, ocloc and IGA (intel-opencl-icd,
# libigc1), RADV's null device (mesa-vulkan-drivers), and a venv for ptxas
# from PyPI's nvidia-cuda-nvcc-cu12 (SDPA_GPU_STATIC_VENV).
gpu_static_packages=(
  clang-15 libclc-15 intel-opencl-icd mesa-vulkan-drivers python3-venv python3-pip
)
gpu_static_venv="${SDPA_GPU_STATIC_VENV:-$HOME/.cache/sdpa/gpu-static-venv}"
gpu_static_ptxas() {
  compgen -G "$gpu_static_venv/lib/python*/site-packages/nvidia/cuda_nvcc/bin/ptxas" \
    >/dev/null && return 0
  echo "install-deps: installing ptxas (pip nvidia-cuda-nvcc-cu12) into $gpu_static_venv"
  python3 -m venv "$gpu_static_venv"
  "$gpu_static_venv/bin/pip" install -q nvidia-cuda-nvcc-cu12
}
# --- aarch64 check (scripts/cross-check-aarch64.sh, docs/cpu.md): the cross
# compiler and binutils (objdump), qemu-user, and through Debian multiarch
# libc6:arm64 (the guest's loader and libc), Check and cJSON for arm64.
aarch64_packages=(
  gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  libc6:arm64 check:arm64 libsubunit-dev:arm64 libcjson-dev:arm64
)
# add_arch ARCH: a dpkg foreign architecture, for multiarch :ARCH packages.
add_arch() {
  dpkg --print-foreign-architectures | grep -qx "$1" && return 0
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: adding dpkg architecture $1"
  $sudo dpkg --add-architecture "$1"
}
if [ "${1:-}" = "--aarch64" ]; then
  add_arch arm64
  packages=("${aarch64_packages[@]}")
fi
# --- Windows check (scripts/cross-check-windows.sh, docs/windows.md): the
# MinGW-w64 cross compiler (its POSIX-threads variant, with winpthreads),
# binutils and tools, Wine to run the results, and cmake for Check. Debian
# ships no MinGW build of Check or cJSON, so windows_sources (below) fetches
# their Debian source packages (`apt-get source`, from a deb-src entry for
# deb.debian.org it adds when none exists) and cross-builds them, static,
# into SDPA_MINGW_PREFIX.
windows_packages=(
  gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 mingw-w64-x86-64-dev mingw-w64-tools
  wine64 cmake dpkg-dev
)
mingw_prefix="${SDPA_MINGW_PREFIX:-$HOME/.cache/sdpa/mingw-w64}"
windows_sources() {
  [ -f "$mingw_prefix/lib/pkgconfig/check.pc" ] && [ -f "$mingw_prefix/lib/pkgconfig/libcjson.pc" ] &&
    return 0
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! grep -rqsE "^(deb-src|Types:.*deb-src)" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "install-deps: adding Debian's deb-src entry (/etc/apt/sources.list.d/sdpa-deb-src.sources)"
    local suite; suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$suite" | $sudo tee /etc/apt/sources.list.d/sdpa-deb-src.sources >/dev/null
    $sudo apt-get update -qq
  fi
  local src="$mingw_prefix/src" cc=x86_64-w64-mingw32-gcc-posix
  mkdir -p "$src" "$mingw_prefix/lib/pkgconfig" "$mingw_prefix/include/cjson"
  echo "install-deps: cross-building cJSON and Check for MinGW-w64 into $mingw_prefix"
  (cd "$src" && apt-get source -qq cjson check >apt-source.log 2>&1) ||
    { tail -5 "$src/apt-source.log"; return 1; }
  # cJSON: one file, static, its symbols kept out of libsdpa's DLL exports
  # (CJSON_HIDE_SYMBOLS, also in the .pc so every includer agrees).
  local cj; cj=$(find "$src" -maxdepth 1 -type d -name 'cjson-*' | sort | tail -1)
  $cc -O2 -DCJSON_HIDE_SYMBOLS -c "$cj/cJSON.c" -o "$src/cJSON.o"
  rm -f "$mingw_prefix/lib/libcjson.a"
  x86_64-w64-mingw32-ar rcs "$mingw_prefix/lib/libcjson.a" "$src/cJSON.o"
  cp "$cj/cJSON.h" "$mingw_prefix/include/cjson/"
  local ver; ver=$(basename "$cj"); ver=${ver#cjson-}
  printf 'prefix=%s\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n\nName: libcjson\nDescription: cJSON (Debian source, MinGW-w64 static)\nVersion: %s\nLibs: -L${libdir} -lcjson\nCflags: -I${includedir} -I${includedir}/cjson -DCJSON_HIDE_SYMBOLS\n' \
    "$mingw_prefix" "$ver" >"$mingw_prefix/lib/pkgconfig/libcjson.pc"
  # Check: its own CMake build (MinGW is a platform it supports; no fork
  # there, so the suites run with CK_FORK=no), static, no self-tests.
  local ck; ck=$(find "$src" -maxdepth 1 -type d -name 'check-*' | sort | tail -1)
  cmake -S "$ck" -B "$src/check-build" -DCMAKE_SYSTEM_NAME=Windows -DCMAKE_C_COMPILER=$cc \
    -DCMAKE_RC_COMPILER=x86_64-w64-mingw32-windres -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS=-D__USE_MINGW_ANSI_STDIO=1 \
    -DCMAKE_INSTALL_PREFIX="$mingw_prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DBUILD_SHARED_LIBS=OFF -DCHECK_ENABLE_TESTS=OFF -DCHECK_ENABLE_SUBUNIT=OFF \
    -DENABLE_MEMORY_LEAKING_TESTS=OFF >"$src/check-cmake.log" 2>&1 &&
    cmake --build "$src/check-build" -j2 >>"$src/check-cmake.log" 2>&1 &&
    cmake --install "$src/check-build" >>"$src/check-cmake.log" 2>&1 ||
    { tail -20 "$src/check-cmake.log"; return 1; }
  # Its check.pc names the libtool build's libcheck_pic; CMake builds libcheck
  # (and a DLL too, removed: the suites link the static library).
  sed -i 's/-lcheck_pic/-lcheck/' "$mingw_prefix/lib/pkgconfig/check.pc"
  rm -f "$mingw_prefix/lib/libcheck.dll.a" "$mingw_prefix/bin/libcheck.dll"
  # Built with MinGW's C99 printf, so its messages take %jd: say so to GCC,
  # whose `printf` format check means msvcrt's on MinGW.
  sed -i 's/CK_ATTRIBUTE_FORMAT(printf,/CK_ATTRIBUTE_FORMAT(gnu_printf,/' "$mingw_prefix/include/check.h"
}
if [ "${1:-}" = "--windows" ]; then
  packages=("${windows_packages[@]}")
fi
# --- outside baselines (scripts/bench-baselines.sh only; optional extras,
# not needed by the README's commands): Debian's OpenBLAS for the unfused
# baseline, a venv with ONNX Runtime, onnx and numpy from PyPI
# (SDPA_BASELINES_VENV; the script's SDPA_BASELINES_PYTHON default), and
# ggml's CPU library built from source (baselines_ggml below; cmake, g++).
baselines_packages=(libopenblas-dev python3-venv python3-pip cmake g++)
baselines_venv="${SDPA_BASELINES_VENV:-$HOME/.cache/sdpa/baselines-venv}"
baselines_ort() {
  "$baselines_venv/bin/python" -c "import onnxruntime, onnx, numpy" 2>/dev/null && return 0
  echo "install-deps: installing onnxruntime, onnx, numpy (pip) into $baselines_venv"
  python3 -m venv "$baselines_venv"
  "$baselines_venv/bin/pip" install -q onnxruntime onnx numpy
}
# ggml: Debian has no package, so its source comes from PyPI's
# llama-cpp-python sdist (which vendors llama.cpp and ggml; pinned below,
# checked by pip against ggml_sdist_sha256), and only ggml's CPU backend is
# built from it: CMake on llama.cpp's tree (its ggml folder alone lacks
# ggml.pc.in in the sdist), Release, GGML_NATIVE (-march=native), OpenMP,
# static, no llama, tests, tools or examples. Headers and the two static
# libraries (libggml-base.a, libggml-cpu.a) go to SDPA_GGML_PREFIX, default
# ~/.cache/sdpa/ggml (the script's default too), its VERSION file naming the
# sdist; bench-baselines.sh compiles scripts/baselines/ggml_flash_attn.c
# against them.
ggml_sdist_version=0.3.36
ggml_sdist_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
ggml_prefix="${SDPA_GGML_PREFIX:-$HOME/.cache/sdpa/ggml}"
baselines_ggml() {
  local tag="llama-cpp-python $ggml_sdist_version"
  [ -f "$ggml_prefix/lib/libggml-cpu.a" ] && [ "$(cat "$ggml_prefix/VERSION" 2>/dev/null)" = "$tag" ] &&
    return 0
  local src="$ggml_prefix/src" sdist="llama_cpp_python-$ggml_sdist_version.tar.gz"
  local tree="llama_cpp_python-$ggml_sdist_version" top
  top="$tree/vendor/llama.cpp"
  mkdir -p "$src" "$ggml_prefix/lib" "$ggml_prefix/include"
  if ! echo "$ggml_sdist_sha256  $src/$sdist" | sha256sum -c --status 2>/dev/null; then
    echo "install-deps: downloading llama-cpp-python $ggml_sdist_version's sdist (pip) into $src"
    echo "llama-cpp-python==$ggml_sdist_version --hash=sha256:$ggml_sdist_sha256" >"$src/requirements.txt"
    python3 -m pip download -q --no-deps --no-binary :all: --require-hashes \
      -r "$src/requirements.txt" -d "$src"
  fi
  rm -rf "${src:?}/build" "${src:?}/$tree"
  tar -xzf "$src/$sdist" -C "$src" "$top"
  echo "install-deps: building ggml's CPU backend into $ggml_prefix (minutes)"
  cmake -S "$src/$top" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=ON -DGGML_CPU=ON -DGGML_OPENMP=ON -DGGML_CCACHE=OFF \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_OPENSSL=OFF >"$src/cmake.log" 2>&1 &&
    cmake --build "$src/build" --target ggml-base ggml-cpu -j"$(nproc)" >>"$src/cmake.log" 2>&1 ||
    { tail -20 "$src/cmake.log"; return 1; }
  cp -r "$src/$top/ggml/include/." "$ggml_prefix/include/"
  cp "$src/build/ggml/src/libggml-base.a" "$src/build/ggml/src/libggml-cpu.a" "$ggml_prefix/lib/"
  rm -rf "${src:?}/build" "${src:?}/$tree"
  echo "$tag" >"$ggml_prefix/VERSION"
}
if [ "${1:-}" = "--gpu-static" ]; then
  packages=("${gpu_static_packages[@]}")
fi
if [ "${1:-}" = "--baselines" ]; then
  packages=("${baselines_packages[@]}")
fi
if [ "${1:-}" = "--hardening" ]; then
  for arch in arm64 i386; do add_arch "$arch"; done
  packages=("${hardening_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "${1:-}" = "--gpu-static" ]; then gpu_static_ptxas; fi
if [ "${1:-}" = "--baselines" ]; then baselines_ort; baselines_ggml; fi
if [ "${1:-}" = "--windows" ]; then windows_sources; fi

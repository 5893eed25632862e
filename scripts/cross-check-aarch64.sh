#!/usr/bin/env bash
# cross-check-aarch64.sh — the aarch64 check of docs/cpu.md: cross-builds
# libsdpa for 64-bit ARM Linux (cross/aarch64-linux-gnu.ini, Debian's
# gcc-aarch64-linux-gnu; OpenCL and Vulkan off: the cpu and reference
# backends are what this checks), then under qemu-aarch64 with the CPU kernel
# set chosen automatically (SDPA_CPU_KERNELS unset):
#   0. every target builds (as a user's `ninja` builds them);
#   1. sdpa-info must report `kernels neon:` (getauxval HWCAP_ASIMD found);
#   2. the reference, cpu and conformance suites (the cpu suite runs its
#      parity cases with neon, then again with the portable kernels);
#   3. sdpa-check --backend cpu on the repository's conformance corpus;
#   4. prints instructions per FMA of the NEON GEMM hot loops from
#      aarch64-linux-gnu-objdump (speed is not measurable under emulation).
# Usage: scripts/cross-check-aarch64.sh [BUILD_DIR]   (default build-aarch64)
# Env: AARCH64_SUITES (default "reference cpu conformance"), AARCH64_TIMEOUT
# (seconds per suite, default 600). Needs `scripts/install-deps.sh --aarch64`.
# Exits non-zero when a step fails. About 3-5 minutes on 2 cores (docs/cpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
DIR=${1:-build-aarch64}
SUITES=(${AARCH64_SUITES:-reference cpu conformance})
TIMEOUT=${AARCH64_TIMEOUT:-600}
# The cross file's exe_wrapper: the guest's loader and libc are libc6:arm64's
# (-L /; see cross/aarch64-linux-gnu.ini for why not /usr/aarch64-linux-gnu).
WRAP=(env -u QEMU_LD_PREFIX qemu-aarch64 -L /)
t0=$SECONDS
say() { echo "== aarch64: $*"; }

for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-objdump qemu-aarch64 python3; do
  command -v "$tool" >/dev/null || { echo "cross-check-aarch64: $tool missing (scripts/install-deps.sh --aarch64)" >&2; exit 1; }
done
[ -e /lib/ld-linux-aarch64.so.1 ] ||
  { echo "cross-check-aarch64: libc6:arm64 missing (scripts/install-deps.sh --aarch64)" >&2; exit 1; }

say "configure and build ($DIR; logs in $DIR/cross-check-*)"
mkdir -p "$DIR"
L=$DIR/cross-check
opts=(--cross-file "$SRC/cross/aarch64-linux-gnu.ini" -Dopencl=disabled -Dvulkan=disabled
      -Dbuildtype=release)
if [ -f "$DIR/build.ninja" ]; then
  meson setup --reconfigure "$DIR" "${opts[@]}" >"$L-setup.log" 2>&1
else
  meson setup "$DIR" "${opts[@]}" >"$L-setup.log" 2>&1
fi || { tail -20 "$L-setup.log"; exit 1; }
# Every target, as a user's `ninja` builds them: aarch64 GCC 12 stopped with
# an internal compiler error on tools that this check does not run (the
# workaround is in meson.build, `vectoriser_workaround`).
ninja -C "$DIR" >"$L-build.log" 2>&1 || { tail -30 "$L-build.log"; exit 1; }
say "built in $((SECONDS - t0)) s"

say "kernel set chosen at run time"
info=$(env -u SDPA_CPU_KERNELS "${WRAP[@]}" "$DIR/tools/sdpa-info")
echo "$info" | grep -E "^\s+kernels " || true
echo "$info" | grep -qE "^\s+kernels neon: " ||
  { echo "cross-check-aarch64: FAIL: the cpu backend did not select the NEON kernels" >&2; exit 1; }

# Each suite with the environment `meson test` would give it (meson
# introspect), through the wrapper. The conformance suite regenerates its
# corpora with gen_conformance and gen_wave2 (aarch64 programs started with
# system()): without binfmt_misc the guest cannot exec them, so each gets a
# wrapper script.
for g in gen_conformance gen_wave2; do
  printf '#!/bin/sh\nexec env -u QEMU_LD_PREFIX qemu-aarch64 -L / %q "$@"\n' \
    "$PWD/$DIR/tests/$g" >"$PWD/$L-$g-qemu.sh"
  chmod +x "$PWD/$L-$g-qemu.sh"
done
meson introspect --tests "$DIR" >"$L-tests.json"
failed=""
for s in "${SUITES[@]}"; do
  ts=$SECONDS
  mapfile -t envs < <(python3 - "$L-tests.json" "$s" "$PWD/$L" <<'EOF'
import json, os, sys
tests = {t['name']: t for t in json.load(open(sys.argv[1]))}
env = dict(tests[sys.argv[2]]['env'])
env['SDPA_GEN_CONFORMANCE'] = sys.argv[3] + '-gen_conformance-qemu.sh'
env['SDPA_GEN_WAVE2'] = sys.argv[3] + '-gen_wave2-qemu.sh'
for k, v in env.items():
    print(f'{k}={v}')
EOF
)
  if env -u SDPA_CPU_KERNELS "${envs[@]}" timeout "$TIMEOUT" "${WRAP[@]}" "$DIR/tests/test_$s" \
       >"$L-$s.log" 2>&1; then
    say "$s suite passed in $((SECONDS - ts)) s: $(grep -h '^[0-9]*%: Checks' "$L-$s.log")"
  else
    tail -20 "$L-$s.log"
    say "$s suite FAILED ($((SECONDS - ts)) s; log $L-$s.log)"
    failed+="$s "
  fi
done

ts=$SECONDS
if env -u SDPA_CPU_KERNELS SDPA_LOG=error "${WRAP[@]}" "$DIR/tools/sdpa-check" --backend cpu \
     "$SRC/tests/conformance" >"$L-sdpa-check.log" 2>&1; then
  say "sdpa-check --backend cpu tests/conformance: $(tail -1 "$L-sdpa-check.log") ($((SECONDS - ts)) s)"
else
  tail -20 "$L-sdpa-check.log"
  failed+="sdpa-check "
fi

say "instructions per FMA in the NEON GEMM hot loops (objdump; fmla = 4 lanes)"
obj=$(find "$DIR/src/backend/cpu" -name 'cpu_kernels_neon.c.o' | head -1)
aarch64-linux-gnu-objdump -d "$obj" >"$L-neon.dis"
python3 "$SRC/scripts/fma_per_loop.py" "$L-neon.dis" uk_cs_4 uk_rs_4 || failed+="fma-count "
python3 "$SRC/scripts/fma_per_loop.py" --most "$L-neon.dis" dots_kv_4_F32 dots_kv_4_F16 \
  dots_kv_4_Q8_0 dots_kv_4_Q4_0 pv_kv_4_F32 pv_kv_4_F16 pv_kv_4_Q8_0 pv_kv_4_Q4_0 || failed+="fma-count "

if [ -n "$failed" ]; then
  say "FAILED: $failed($((SECONDS - t0)) s)"
  exit 1
fi
say "all passed with the NEON kernels in $((SECONDS - t0)) s"

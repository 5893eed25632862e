#!/usr/bin/env bash
# cross-check-windows.sh — the Windows check of docs/windows.md: cross-builds
# libsdpa for 64-bit Windows with MinGW-w64 (cross/x86_64-w64-mingw32.ini,
# Debian's gcc-mingw-w64-x86-64; OpenCL and Vulkan off: the cpu and
# reference backends are what this checks): everything the build defines,
# libsdpa-0.dll with every tool and quickstart linked against it and every
# test program against the static library (as on Linux), so a tool or test
# that stops compiling for Windows fails here; then under Wine (Debian's
# wine64):
#   1. sdpa-info (the DLL loads; the cpu backend's kernel set and devices;
#      the shipped profiles found from the DLL's own location: build tree);
#   2. quickstart (the README's program, cpu backend picked by AUTO);
#   3. the suites (Check, unforked: Windows has no fork): by default platform
#      (the OS layer itself), status, validate, reference, merge, cpu and
#      threads;
#   4. sdpa-check --backend cpu and --backend reference on the repository's
#      conformance corpus (tests/conformance).
# Usage: scripts/cross-check-windows.sh [BUILD_DIR]   (default build-windows)
# Env: WINDOWS_SUITES (default "platform status validate reference merge cpu
# threads"), WINDOWS_TIMEOUT (seconds per step, default 900),
# SDPA_MINGW_PREFIX (where install-deps put Check and cJSON), WINEPREFIX
# (default BUILD_DIR/wine-prefix, created on first use).
# Needs `scripts/install-deps.sh --windows`. Exits non-zero when a step
# fails. Time on 2 cores: docs/windows.md.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
DIR=${1:-build-windows}
SUITES=(${WINDOWS_SUITES:-platform status validate reference merge cpu threads})
TIMEOUT=${WINDOWS_TIMEOUT:-900}
PREFIX=${SDPA_MINGW_PREFIX:-$HOME/.cache/sdpa/mingw-w64}
WINE=/usr/lib/wine/wine64
t0=$SECONDS
say() { echo "== windows: $*"; }
die() { echo "cross-check-windows: $*" >&2; exit 1; }

for tool in x86_64-w64-mingw32-gcc-posix python3 meson ninja; do
  command -v "$tool" >/dev/null || die "$tool missing (scripts/install-deps.sh --windows)"
done
[ -x "$WINE" ] || die "$WINE missing (scripts/install-deps.sh --windows)"
[ -f "$PREFIX/lib/pkgconfig/check.pc" ] && [ -f "$PREFIX/lib/pkgconfig/libcjson.pc" ] ||
  die "Check/cJSON for MinGW missing in $PREFIX (scripts/install-deps.sh --windows)"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
L=$DIR/cross-check
export WINEPREFIX=${WINEPREFIX:-$DIR/wine-prefix} WINEDEBUG=${WINEDEBUG:--all}
# No Wine dialogs or Mono/Gecko installers: nothing here needs them.
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}

say "configure and build ($DIR; logs in $DIR/cross-check-*)"
# The prefix is machine-specific: a second cross file, written here.
printf "[properties]\npkg_config_libdir = ['%s/lib/pkgconfig']\n" "$PREFIX" >"$DIR/mingw-prefix.ini"
opts=(--cross-file "$SRC/cross/x86_64-w64-mingw32.ini" --cross-file "$DIR/mingw-prefix.ini"
      -Dopencl=disabled -Dvulkan=disabled -Dbuildtype=release)
if [ -f "$DIR/build.ninja" ]; then
  meson setup --reconfigure "$DIR" "${opts[@]}" >"$L-setup.log" 2>&1
else
  meson setup "$DIR" "${opts[@]}" >"$L-setup.log" 2>&1
fi || { tail -20 "$L-setup.log"; exit 1; }
ninja -C "$DIR" >"$L-build.log" 2>&1 || { tail -30 "$L-build.log"; exit 1; }
say "built in $((SECONDS - t0)) s"
# The programs find libsdpa-0.dll beside themselves or on WINEPATH.
export WINEPATH="$(winepath_dir() { echo "Z:${1//\//\\}"; }; winepath_dir "$DIR")"

[ -d "$WINEPREFIX" ] || { say "creating the Wine prefix $WINEPREFIX"; "$WINE" wineboot -i >"$L-wineboot.log" 2>&1 || true; }

failed=""
# run NAME PROGRAM ARGS...: one step under Wine, with the variables of the
# array RUN_ENV, its log and its time; its exit status decides.
RUN_ENV=()
run() {
  local name=$1 ts=$SECONDS; shift
  if env "${RUN_ENV[@]}" timeout "$TIMEOUT" "$WINE" "$@" >"$L-$name.log" 2>&1; then
    say "$name passed ($((SECONDS - ts)) s): $(grep -hE '^[0-9]+%: Checks|passed|PASS|FAIL' "$L-$name.log" | tail -1)"
  else
    tail -20 "$L-$name.log"
    say "$name FAILED ($((SECONDS - ts)) s; log $L-$name.log)"
    failed+="$name "
  fi
}

run sdpa-info "$DIR/tools/sdpa-info.exe"
grep -E "^\s+kernels |cpu|reference" "$L-sdpa-info.log" | head -8 || true
grep -qE "^\s+kernels " "$L-sdpa-info.log" || { say "sdpa-info shows no cpu kernel set"; failed+="sdpa-info-kernels "; }
# The DLL finds the shipped profiles from its own file (GetModuleFileNameW):
# run from the build folder, the source tree's data/profiles.
grep -E "^shipped profiles: " "$L-sdpa-info.log" || true
grep -qE "^shipped profiles: .*\(build tree\)" "$L-sdpa-info.log" ||
  { say "sdpa-info does not find the shipped profiles beside the DLL"; failed+="sdpa-info-shipped "; }
RUN_ENV=(SDPA_BACKEND=cpu)
run quickstart "$DIR/quickstart.exe"

# Each suite with the environment `meson test` would give it (meson
# introspect), unforked.
meson introspect --tests "$DIR" >"$L-tests.json"
for s in "${SUITES[@]}"; do
  mapfile -t envs < <(python3 - "$L-tests.json" "$s" <<'PY'
import json, sys
tests = {t['name']: t for t in json.load(open(sys.argv[1]))}
env = dict(tests[sys.argv[2]]['env'])
env['CK_FORK'] = 'no'
for k, v in env.items():
    print(f'{k}={v}')
PY
)
  RUN_ENV=("${envs[@]}")
  run "$s" "$DIR/tests/test_$s.exe"
done

for b in cpu reference; do
  RUN_ENV=(SDPA_LOG=error)
  run "sdpa-check-$b" "$DIR/tools/sdpa-check.exe" --backend "$b" "$SRC/tests/conformance"
  tail -1 "$L-sdpa-check-$b.log"
done

if [ -n "$failed" ]; then
  say "FAILED: $failed($((SECONDS - t0)) s)"
  exit 1
fi
say "all passed under Wine in $((SECONDS - t0)) s"

#!/usr/bin/env bash
# hardening.sh — the bounded hardening runs of docs/reliability.md:
#   tsan     ThreadSanitizer build, tests/test_threads
#   faults   ASan+UBSan+LSan build with -Dfault_injection=true: the fault walk
#            (tests/test_faults) and tests/test_numerics, CK_FORK=no so a leak
#            fails the process (HARDEN_FAULTS_NUMERICS=0: the walk only, for
#            callers that run the numerics suite under ASan+UBSan+LSan
#            themselves, as .ci/run's sanitizer step does)
#   fuzz     clang libFuzzer build; each target runs FUZZ_SECONDS from its seed
#            corpus (tests/fuzz/corpus/<target>, copied to a scratch folder)
#   i686     32-bit build (size_t of 32 bits): reference, cpu, numerics suites
#            natively
#   valgrind memcheck of a bounded subset (native build, no sanitizers)
#   aarch64  cross build; reference, cpu, numerics suites under qemu-aarch64
# Usage: scripts/hardening.sh [STEP...]   (default: all steps, in that order)
# Env: HARDEN_DIR (build root, default /tmp/sdpa-hardening), FUZZ_SECONDS (30),
#      HARDEN_JOBS (2), HARDEN_DEVICES (0; 1 = OpenCL/Vulkan in the faults step),
#      HARDEN_FAULTS_NUMERICS (1; 0 = no test_numerics in the faults step),
#      SDPA_TEST_MAX_LEN (passed to the suites: test_cpu's features cases).
#      Needs the extra packages of `install-deps.sh --hardening`.
# Exits non-zero if any step fails; prints one summary line per step.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
ROOT=${HARDEN_DIR:-/tmp/sdpa-hardening}
JOBS=${HARDEN_JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
NODEV=(-Dopencl=disabled -Dvulkan=disabled)
mkdir -p "$ROOT"
export SDPA_LOG=error CK_DEFAULT_TIMEOUT=900
# Conformance cases: the repository's corpus always; ../shared/conformance
# beside the checkout only as an extra, when it exists (tests/common/corpus.h).
export SDPA_CORPUS_DIR="$SRC/tests/conformance"
if [ -d "$SRC/../shared/conformance" ]; then
  export SDPA_CONFORMANCE_DIR="$SRC/../shared/conformance${SDPA_CONFORMANCE_DIR:+:$SDPA_CONFORMANCE_DIR}"
fi
. "$SRC/.ci/sanitizer-env.sh" # LSAN_OPTIONS, UBSAN_OPTIONS, ASAN_OPTIONS
declare -a SUMMARY=()
FAILED=0

note() { echo "== hardening: $*"; }
result() { # step status seconds detail
  SUMMARY+=("$(printf '%-8s %-4s %4ss  %s' "$1" "$2" "$3" "$4")")
  [ "$2" = ok ] || FAILED=1
}

# setup DIR ARGS...: configure once (reconfigure if it exists).
setup() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$SRC" "$@" >"$dir.setup.log" 2>&1
  else
    meson setup "$dir" "$SRC" "$@" >"$dir.setup.log" 2>&1
  fi || { tail -20 "$dir.setup.log"; return 1; }
}
build() { local dir=$1; shift; ninja -C "$dir" -j"$JOBS" "$@" >"$dir.build.log" 2>&1 || { tail -30 "$dir.build.log"; return 1; }; }

step_tsan() {
  local d=$ROOT/tsan t0=$SECONDS
  note "ThreadSanitizer: test_threads"
  # OpenCL and Vulkan are compiled in (their kernel-source hashes and other
  # process-wide state are raced by threads_source_hashes_at_once), but no
  # driver is loaded at run time (the ICD variables name none): drivers are
  # not TSan-instrumented and their internals read as races
  # (scripts/tsan.supp says what was seen).
  if setup "$d" -Dopencl=auto -Dvulkan=auto -Db_sanitize=thread -Db_lundef=false \
       -Dbuildtype=debugoptimized &&
     build "$d" tests/test_threads &&
     CK_FORK=no VK_ICD_FILENAMES=/nonexistent/sdpa-no-icd.json \
       OCL_ICD_VENDORS=/nonexistent/sdpa-no-icd \
       TSAN_OPTIONS="halt_on_error=1:exitcode=66:suppressions=$SRC/scripts/tsan.supp" \
       "$d/tests/test_threads"; then
    result tsan ok $((SECONDS - t0)) "test_threads clean under TSan"
  else
    result tsan FAIL $((SECONDS - t0)) "see output above"
  fi
}

step_faults() {
  local d=$ROOT/faults t0=$SECONDS
  # HARDEN_DEVICES=1 adds OpenCL and Vulkan (PoCL / lavapipe here) to the
  # walk and the numerics: ~2.5 + ~3 min more without sanitizers, far more
  # under ASan, so CI leaves them to the regular suites by default.
  local devopts=("${NODEV[@]}")
  [ "${HARDEN_DEVICES:-0}" = 1 ] && devopts=() && d=$ROOT/faults-dev
  local exes=(tests/test_faults tests/test_numerics)
  # the sanitizer runs' preload (.ci/sanitizer-env.sh), as meson test's wrapper gives it
  local san_run=(env ${SDPA_SAN_PRELOAD:+LD_PRELOAD=$SDPA_SAN_PRELOAD})
  [ "${HARDEN_FAULTS_NUMERICS:-1}" = 1 ] || exes=(tests/test_faults)
  note "fault injection (ASan+UBSan+LSan): ${exes[*]#tests/}"
  if setup "$d" "${devopts[@]}" -Dfault_injection=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dbuildtype=debugoptimized &&
     build "$d" "${exes[@]}" &&
     CK_FORK=no "${san_run[@]}" "$d/tests/test_faults" | tee "$d.faults.log" &&
     { [ ${#exes[@]} = 1 ] || CK_FORK=no "${san_run[@]}" "$d/tests/test_numerics"; }; then
    result faults ok $((SECONDS - t0)) "$(grep -h '^fault walk' "$d.faults.log" | grep -v skipped | sed 's/ (.*//' | tr '\n' ';')"
  else
    result faults FAIL $((SECONDS - t0)) "see output above"
  fi
}

step_fuzz() {
  local d=$ROOT/fuzz t0=$SECONDS ok=1 detail=""
  note "libFuzzer: ${FUZZ_SECONDS}s per target"
  if ! command -v clang >/dev/null; then
    result fuzz FAIL 0 "clang not installed (install-deps.sh --hardening)"; return
  fi
  if ! CC=clang CFLAGS=-fsanitize=fuzzer-no-link setup "$d" "${NODEV[@]}" -Dfuzz=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized; then
    result fuzz FAIL $((SECONDS - t0)) "configure failed"; return
  fi
  local targets
  targets=$(cd "$SRC/tests/fuzz" && ls fuzz_*.c | sed 's/fuzz_\(.*\)\.c/\1/')
  local exes=()
  for t in $targets; do exes+=("tests/fuzz/fuzz_$t"); done
  build "$d" "${exes[@]}" || { result fuzz FAIL $((SECONDS - t0)) "build failed"; return; }
  for t in $targets; do
    local corp=$d/corpus-$t log=$d/fuzz-$t.log
    mkdir -p "$corp"
    (cd "$d" && TMPDIR=$d ./tests/fuzz/fuzz_$t -max_total_time="$FUZZ_SECONDS" -timeout=20 \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$d/$t-" \
       "$corp" "$SRC/tests/fuzz/corpus/$t") >"$log" 2>&1
    local rc=$? runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    detail+="$t ${runs:-0} runs rc=$rc; "
    if [ $rc -ne 0 ]; then ok=0; grep -E "ERROR|SUMMARY|runtime error" "$log" | head -5; fi
  done
  [ $ok = 1 ] && result fuzz ok $((SECONDS - t0)) "$detail" ||
    result fuzz FAIL $((SECONDS - t0)) "$detail (crash inputs in $d)"
}

# cross_suites NAME DIR RUNNER...: build and run the suites in $SUITES.
SUITES=(reference cpu numerics)
cross_suites() {
  local name=$1 dir=$2; shift 2
  local exes=() failed=""
  for s in "${SUITES[@]}"; do exes+=("tests/test_$s"); done
  build "$dir" "${exes[@]}" || return 1
  for s in "${SUITES[@]}"; do
    if ! "$@" "$dir/tests/test_$s" >"$dir.$s.log" 2>&1; then
      failed+="$s "; tail -15 "$dir.$s.log"
    fi
    grep -h "^[0-9]*%: Checks" "$dir.$s.log" | sed "s/^/$name $s: /"
  done
  [ -z "$failed" ]
}

step_i686() {
  local d=$ROOT/i686 t0=$SECONDS
  note "32-bit build (i686): ${SUITES[*]}"
  if ! command -v i686-linux-gnu-gcc >/dev/null; then
    result i686 FAIL 0 "gcc-i686-linux-gnu missing (install-deps.sh --hardening)"; return
  fi
  if setup "$d" --cross-file "$SRC/cross/i686-linux-gnu.ini" "${NODEV[@]}" \
        -Dbuildtype=debugoptimized && cross_suites i686 "$d" env; then
    result i686 ok $((SECONDS - t0)) "${SUITES[*]} pass with 32-bit size_t"
  else
    result i686 FAIL $((SECONDS - t0)) "see output above"
  fi
}

step_valgrind() {
  # valgrind memcheck of a native build without sanitizers: test_numerics
  # (reference and cpu, every bad-input path), the reference suite's masking
  # and nonfinite cases, and the cpu suite's backward cases. Bounded: the
  # full cpu suite takes too long under memcheck on 2 cores. (32-bit memcheck
  # would need libc6-dbg:i386, not installable beside this machine's libc.)
  local d=$ROOT/valgrind t0=$SECONDS
  note "valgrind memcheck: numerics, reference (masking, nonfinite), cpu (backward)"
  local vg=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
            --suppressions="$SRC/scripts/valgrind.supp" --quiet)
  if setup "$d" "${NODEV[@]}" -Dbuildtype=debugoptimized &&
     build "$d" tests/test_numerics tests/test_reference tests/test_cpu &&
     CK_FORK=no "${vg[@]}" "$d/tests/test_numerics" >"$d.vg-numerics.log" 2>&1 &&
     CK_FORK=no CK_RUN_CASE=masking "${vg[@]}" "$d/tests/test_reference" >"$d.vg-ref.log" 2>&1 &&
     CK_FORK=no CK_RUN_CASE=nonfinite "${vg[@]}" "$d/tests/test_reference" >>"$d.vg-ref.log" 2>&1 &&
     CK_FORK=no CK_RUN_CASE=backward "${vg[@]}" "$d/tests/test_cpu" >"$d.vg-cpu.log" 2>&1; then
    result valgrind ok $((SECONDS - t0)) "memcheck clean: numerics, reference masking+nonfinite, cpu backward"
  else
    tail -30 "$d.vg-numerics.log" "$d.vg-ref.log" "$d.vg-cpu.log" 2>/dev/null
    result valgrind FAIL $((SECONDS - t0)) "see output above"
  fi
}

step_aarch64() {
  local d=$ROOT/aarch64 t0=$SECONDS
  note "aarch64 cross build under qemu-aarch64: ${SUITES[*]}"
  if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null ||
     [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
    result aarch64 FAIL 0 "cross compiler, qemu-user or libc6:arm64 missing (install-deps.sh --hardening)"; return
  fi
  # The guest runs on libc6:arm64's own loader and libc (-L /, as the cross
  # file's exe_wrapper). Never -L /usr/aarch64-linux-gnu (QEMU_LD_PREFIX):
  # that prefix gives the guest the cross package's ld.so but, through the
  # host's /etc/ld.so.cache, libc6:arm64's libc.so.6: two glibc builds whose
  # private _rtld_global layouts differ, and the first pthread_create spins
  # forever walking the thread-stack cache list (that was the "qemu hangs in
  # pthread_create" of earlier versions; not a qemu bug). So the suites run
  # as natively: Check's fork mode, test_cpu's 2-thread contexts, nothing
  # shrunk. test_cpu takes about 50-65 s under qemu here; each suite is
  # capped at 600 s.
  if setup "$d" --cross-file "$SRC/cross/aarch64-linux-gnu.ini" "${NODEV[@]}" \
        -Dbuildtype=release &&
     cross_suites aarch64 "$d" env -u QEMU_LD_PREFIX timeout 600 qemu-aarch64 -L /; then
    result aarch64 ok $((SECONDS - t0)) "${SUITES[*]} pass under qemu-aarch64"
  else
    result aarch64 FAIL $((SECONDS - t0)) "see output above"
  fi
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tsan faults fuzz i686 valgrind aarch64)
T0=$SECONDS
for s in "${steps[@]}"; do
  case $s in
    tsan|faults|fuzz|i686|valgrind|aarch64) "step_$s" ;;
    *) echo "hardening.sh: unknown step '$s'" >&2; exit 2 ;;
  esac
done
echo "== hardening summary ($((SECONDS - T0)) s)"
printf '  %s\n' "${SUMMARY[@]}"
exit $FAILED

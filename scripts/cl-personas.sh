#!/usr/bin/env bash
# cl-personas.sh — runs the parity suite's OpenCL rows (tests/test_parity.c,
# SDPA_PARITY_BACKENDS=opencl) and the conformance corpus (sdpa-check
# --backend opencl on tests/conformance) under every test-only GPU persona of
# the OpenCL backend (SDPA_TEST_PERSONA=cl-..., src/backend/opencl/cl_persona.c,
# docs/opencl.md "GPU personas"), so the configuration a GPU with those
# limits would get runs here on PoCL. The parity run is the suite's persona
# set by default (SDPA_PARITY_SET=persona: every kernel kind the persona's
# defaults select — prefill at D 64 and 256, statistics, decode, backward — at
# lengths 1, 7, 63, 65, 257, 1000, one program build per kind; the full cross
# product runs under the default device in the test step). A parity row
# whose plan an earlier persona of this run already ran and passed is run
# once (SDPA_PARITY_SEEN). test_opencl's `personas` case (limits and the
# exact default plans, a fresh process per persona) is part of the opencl
# suite, so of the test step; CL_PERSONA_RUNS=personas runs it here.
# CI (.ci/run) calls this after the test build; coverage and timing:
# docs/gpu.md "Persona runs in CI".
#
# Usage: bash scripts/cl-personas.sh [BUILD_DIR]   (default: build, already built)
#   CL_PERSONAS="cl-wg32 ..."   personas to run (default: all)
#   CL_PERSONA_RUNS="parity conformance"   what to run (default both, per
#                                          persona; `personas`: the test case, once)
#   CL_PARITY_PERSONAS="cl-discrete ..."   the personas whose parity run runs
#                                          (default: all of CL_PERSONAS)
#   CL_PARITY_SET=persona|full   the parity rows each persona runs (default
#                                persona; full: the whole table, ~8 min of
#                                PoCL compiling per persona when cold)
# Prints one line per run with its time; exits 1 when any run failed, 0 with a
# note when the build has no OpenCL device.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
personas=${CL_PERSONAS:-"cl-discrete cl-mali cl-wg32 cl-wg1024 cl-lmem8 cl-lmem16 cl-lmem64 cl-spill"}
runs=${CL_PERSONA_RUNS:-"parity conformance"}
parity_personas=${CL_PARITY_PERSONAS:-$personas}
parity_set=${CL_PARITY_SET:-persona}
for f in "$build/tools/sdpa-check" "$build/tests/test_parity" "$build/tests/test_opencl"; do
  [ -x "$f" ] || { echo "cl-personas: $f not built" >&2; exit 1; }
done
# Intel's ICD (installed for the static gate's ocloc) lists a second device;
# the personas rewire PoCL's.
if [ -f /etc/OpenCL/vendors/pocl.icd ]; then export OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd; fi
if ! "$build/tools/sdpa-info" 2>/dev/null | grep -qi opencl; then
  echo "cl-personas: no OpenCL device; nothing to run"
  exit 0
fi
source scripts/persona-lib.sh
# A parity row whose plan (kernel, config, workspace) an earlier persona ran
# and passed is not run again (tests/test_parity.c, SDPA_PARITY_SEEN); each
# such row says "same plan as under <persona>" in its persona's log.
export SDPA_PARITY_SEEN="$PWD/$build/persona-cl-seen.txt"
: > "$SDPA_PARITY_SEEN"
case " $runs " in
  *" personas "*) persona_run cl-personas-case env CK_RUN_CASE=personas "$build/tests/test_opencl" ;;
esac
for p in $personas; do
  for r in $runs; do
    case $r in
      personas) ;;
      parity) case " $parity_personas " in *" $p "*) ;; *) continue ;; esac
              persona_run "$p-parity" env SDPA_TEST_PERSONA="$p" SDPA_PARITY_BACKENDS=opencl \
                SDPA_PARITY_SET="$parity_set" "$build/tests/test_parity" ;;
      conformance) persona_run "$p-conformance" env SDPA_TEST_PERSONA="$p" \
                     "$build/tools/sdpa-check" --backend opencl tests/conformance ;;
      *) echo "cl-personas: unknown run '$r'" >&2; exit 2 ;;
    esac
  done
done
if [ -s "$SDPA_PARITY_SEEN" ]; then
  echo "cl-personas: parity rows run: $(wc -l < "$SDPA_PARITY_SEEN"), not run again (same plan as an earlier persona): $(cat "$build"/persona-cl-*-parity.log | grep -c 'not run again')"
fi
persona_done cl "$(echo $personas | wc -w)"

#!/usr/bin/env bash
# Checks the layering between the front end (src/core), the profile store
# and tuner (src/tune) and the backends (docs/tuning.md, "Layers"):
#  1. no file in src/core includes a header of src/tune other than its
#     narrow interface, profile_query.h;
#  2. no file in src/tune includes a front-end header that exposes context
#     internals (context_impl.h, dispatch.h, validate.h, staging.h): the
#     tuner reaches the front end through sdpa.h and src/core/tune_query.h;
#  3. no file in src/core or src/tune calls a backend table slot except
#     src/core/dispatch.c (every backend call goes through its wrappers).
# Usage: bash scripts/check-layers.sh [SOURCE_ROOT]   (default: this tree)
#        bash scripts/check-layers.sh --self-test     (plants one violation of
#        each kind in a scratch copy and expects each to be found)
# Exit 0 when clean, 1 with one line per violation. Run by the `tune` and
# `layers` test suites (tests/meson.build).
set -u

check() {
  local root=$1 bad=0 f
  # 1. src/core -> src/tune: only the narrow interface
  while IFS= read -r f; do
    echo "layers: $f includes a src/tune header other than profile_query.h"
    bad=1
  done < <(grep -nE '#[[:space:]]*include[[:space:]]*"[^"]*tune/' "$root"/src/core/*.[ch] 2>/dev/null |
           grep -v 'tune/profile_query\.h"' | cut -d: -f1-2)
  # 2. src/tune -> context internals
  while IFS= read -r f; do
    echo "layers: $f includes a front-end header with context internals"
    bad=1
  done < <(grep -lE '#[[:space:]]*include[[:space:]]*"([^"]*/)?(context_impl|dispatch|validate|staging)\.h"' \
             "$root"/src/tune/*.[ch] 2>/dev/null)
  # 3. backend table slots called outside dispatch.c
  local slots='load|device_count|device_info|context_init|context_free|buffer_alloc|buffer_free|buffer_write|buffer_read|supports|plan_create|plan_free|plan_workspace|plan_describe|forward|backward|finish|default_tile|tile_candidates|source_hash|measure_peak'
  while IFS= read -r f; do
    echo "layers: $f calls a backend slot directly (use src/core/dispatch.c)"
    bad=1
  done < <(grep -lE -- "->($slots)[[:space:]]*\(" "$root"/src/core/*.[ch] "$root"/src/tune/*.[ch] 2>/dev/null |
           grep -v '/src/core/dispatch\.c$')
  return $bad
}

self_test() {
  local here n=0
  here=$(cd "$(dirname "$0")/.." && pwd)
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "${tmp:-}"' EXIT
  for plant in core_tune tune_ctx slot_call; do
    rm -rf "$tmp/src" && mkdir -p "$tmp/src" && cp -r "$here/src/core" "$here/src/tune" "$tmp/src/"
    case $plant in
      core_tune) echo '#include "../tune/tune.h"' >> "$tmp/src/core/plan.c" ;;
      tune_ctx) echo '#include "context_impl.h"' >> "$tmp/src/tune/tune.c" ;;
      slot_call) echo 'static void f(const sdpa__backend *be) { be->finish(0); }' >> "$tmp/src/tune/tune.c" ;;
    esac
    if check "$tmp" >/dev/null; then
      echo "layers self-test: planted violation '$plant' was not found"
      n=1
    fi
  done
  check "$here" || n=1
  [ $n = 0 ] && echo "layers self-test: each planted violation found; the tree is clean"
  return $n
}

if [ "${1:-}" = "--self-test" ]; then
  self_test
  exit $?
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
check "$root" || exit 1
echo "layers: clean ($root)"

#!/usr/bin/env bash
# side-by-side.sh — runs commands at the same time and prints each one's
# output, whole, when it ends (in the order given), with its exit status and
# wall time. CI (.ci/run) uses it where each command spends most of its time
# on one thread (kernel compiles, qemu, Wine, valgrind, the float64
# reference), so on the 2-core CI machine two of them take about as long as
# the longer one.
#
# Usage: bash scripts/side-by-side.sh "NAME: COMMAND" ["NAME: COMMAND" ...]
#   COMMAND is run by `bash -c` from the current folder.
#   SIDE_BY_SIDE_SERIAL=1 runs them one after the other instead.
# Exits 1 when any command failed (after every one has ended), 2 on bad usage.
set -uo pipefail
if [ $# -eq 0 ]; then
  echo "usage: side-by-side.sh \"NAME: COMMAND\" [\"NAME: COMMAND\" ...]" >&2
  exit 2
fi
for job in "$@"; do
  case $job in
    *:\ *) ;;
    *) echo "side-by-side.sh: '$job' is not \"NAME: COMMAND\"" >&2; exit 2 ;;
  esac
done
logs=$(mktemp -d "${TMPDIR:-/tmp}/side-by-side.XXXXXX") || exit 2
trap 'rm -rf "$logs"' EXIT
pids=() t0=$SECONDS
i=0
for job in "$@"; do
  cmd=${job#*: }
  if [ "${SIDE_BY_SIDE_SERIAL:-0}" = 1 ]; then
    s=$SECONDS
    bash -c "$cmd" >"$logs/$i.log" 2>&1
    echo "$? $((SECONDS - s))" >"$logs/$i.rc"
  else
    ( s=$SECONDS; bash -c "$cmd" >"$logs/$i.log" 2>&1; echo "$? $((SECONDS - s))" >"$logs/$i.rc" ) &
    pids+=($!)
  fi
  i=$((i + 1))
done
failed=0 i=0
for job in "$@"; do
  [ "${SIDE_BY_SIDE_SERIAL:-0}" = 1 ] || wait "${pids[$i]}"
  read -r rc secs <"$logs/$i.rc" || { rc=1 secs=?; }
  echo "== side-by-side: ${job%%: *} (exit $rc, ${secs} s)"
  cat "$logs/$i.log"
  [ "$rc" = 0 ] || failed=1
  i=$((i + 1))
done
echo "== side-by-side: all ended in $((SECONDS - t0)) s$([ $failed = 0 ] || echo ', some FAILED')"
exit $failed

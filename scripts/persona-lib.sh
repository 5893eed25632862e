# persona-lib.sh — shared by scripts/cl-personas.sh and scripts/vk-personas.sh
# (sourced, not run): the environment of a persona run (the meson suites'
# cache and profile folders, so compiled kernels, pipelines and PoCL's /
# Mesa's own caches are shared with the test step and between personas) and
# `persona_run LABEL COMMAND...`, which runs one command with its output in
# BUILD/persona-LABEL.log and prints one line with its result, wall time and
# CPU time (user + system of the command and its children: on a shared
# machine the CPU time is the figure that does not grow with the load).
# Sets persona_fail=1 when a run fails (a Check run of 0 checks, e.g. a
# CK_RUN_CASE that names no case, counts as failed); a run is ended after
# PERSONA_TIMEOUT seconds (default 1800). Needs $build (the build folder).
export SDPA_CACHE_DIR="$PWD/$build/tests/cache" SDPA_PROFILE_DIR="$PWD/$build/tests/profiles"
export SDPA_SHIPPED_PROFILE_DIR="$PWD/$build/tests/shipped-profiles"
export SDPA_LOG=error CK_DEFAULT_TIMEOUT=600
persona_fail=0
persona_start=$(date +%s)
# CPU seconds of this shell's waited-for children so far (/proc: cutime + cstime).
persona_cpu() { # pid of the shell
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' "/proc/$1/stat"
}
persona_run() { # label, command...
  local label=$1 me=$BASHPID t0 c0 rc=0
  t0=$(date +%s)
  c0=$(persona_cpu $me)
  shift
  timeout "${PERSONA_TIMEOUT:-1800}" "$@" > "$build/persona-$label.log" 2>&1 || rc=$?
  # a Check run that ran nothing (CK_RUN_CASE naming no case) is no pass
  if [ $rc = 0 ] && grep -q "Checks: 0," "$build/persona-$label.log"; then rc=3; fi
  echo "personas: $label: $([ $rc = 0 ] && echo pass || echo "FAIL (rc $rc, $build/persona-$label.log)") in $(( $(date +%s) - t0 )) s ($(( $(persona_cpu $me) - c0 )) s CPU)"
  [ $rc = 0 ] || persona_fail=1
}
# The closing line: how many personas, total time, verdict; returns the status.
persona_done() { # api, persona count
  local me=$BASHPID
  echo "$1-personas: $2 personas in $(( $(date +%s) - persona_start )) s ($(persona_cpu $me) s CPU), $([ $persona_fail = 0 ] && echo "all green" || echo "failures")"
  return $persona_fail
}

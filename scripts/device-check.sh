#!/usr/bin/env bash
# device-check.sh — one command for a machine with GPUs (docs/gpu.md):
# installs the packages (when root), builds, lists the devices (sdpa-info),
# then on every GPU of the OpenCL and Vulkan backends runs the parity suite
# (meson test opencl|vulkan with SDPA_DEVICE), the conformance corpus
# (sdpa-check on tests/conformance and ../shared/conformance when present),
# sdpa-bench on the standard presets with % of peak, and a short sdpa-tune;
# writes one report folder (report.md, report.json, logs/) and a tarball of
# it, and prints both paths at the end. What a device refuses with
# SDPA_ERR_UNSUPPORTED (corpus cases, bench rows, tuning buckets) is counted
# and listed apart in the report, not as a failure
# (tools/internal/device_report.py).
#
# On a machine without GPUs (this project's CI and developer machines) the CPU
# devices of those backends (PoCL, lavapipe) stand in, and the report says so.
#
#   scripts/device-check.sh [--budget SECONDS] [--build DIR] [--out DIR]
#                           [--no-install] [--suites|--no-suites] [--cpu-devices]
#
#   --budget S     total time to aim for (default 420: under 8 minutes with
#                  install and build); each step gets a share and is stopped
#                  (reported as timeout) when it runs past it
#   --build DIR    build folder (default build-device)
#   --out DIR      report folder (default DIR/device-report-<host>-<time>)
#   --no-install   skip scripts/install-deps.sh
#   --no-suites    skip the parity suites; --suites runs them on CPU stand-ins
#                  too (by default they run on GPUs only: on PoCL and lavapipe
#                  they are CI's own `meson test` and take longer than a short
#                  budget)
#   --cpu-devices  check CPU devices even when GPUs exist
#
# Exit status: 0 when every step that ran passed (unsupported cases
# included), 1 when one failed or timed out, 2 on a usage error. Send back
# the tarball (docs/gpu.md).
set -uo pipefail
cd "$(dirname "$0")/.."

budget=420 build=build-device out="" install=1 suites=auto cpu_devices=0
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2;;
    --build) build=$2; shift 2;;
    --out) out=$2; shift 2;;
    --no-install) install=0; shift;;
    --no-suites) suites=0; shift;;
    --suites) suites=1; shift;;
    --cpu-devices) cpu_devices=1; shift;;
    -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "device-check: unknown option $1 (see --help)" >&2; exit 2;;
  esac
done
case "$budget" in ''|*[!0-9]*) echo "device-check: --budget needs seconds" >&2; exit 2;; esac

start=$(date +%s)
[ -n "$out" ] || out="$build/device-report-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
steps="$out/steps.tsv"
: > "$steps"

# step NAME BACKEND DEVICE TIMEOUT CMD... : runs CMD with a time limit, logs
# its output to logs/NAME.log and appends one line to steps.tsv.
step() {
  local name=$1 backend=$2 device=$3 limit=$4
  shift 4
  local log="$out/logs/$name.log" t0 rc
  t0=$(date +%s)
  echo "device-check: $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" > "$log" 2> "${log%.log}.err"
  rc=$?
  printf '%s\t%s\t%s\t%s\t%s\tlogs/%s.log\n' "$name" "$backend" "$device" "$rc" \
    "$(( $(date +%s) - t0 ))" "$name" >> "$steps"
  return $rc
}

if [ "$install" = 1 ] && [ "$(id -u)" -eq 0 ]; then
  step install - - 600 bash scripts/install-deps.sh
fi
if [ ! -f "$build/build.ninja" ]; then
  step setup - - 300 meson setup "$build" -Dtests=true
fi
step build - - 600 ninja -C "$build" || {
  echo "device-check: build failed, see $out/logs/build.log" >&2
}
tools="$build/tools"
step devices - - 60 "$tools/sdpa-info"
"$tools/sdpa-info" --json > "$out/sdpa-info.json" 2> /dev/null

# The devices to check: "backend index is_gpu name" per line.
python3 - "$out/sdpa-info.json" "$cpu_devices" > "$out/targets.txt" <<'EOF'
import json, sys
try:
    info = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
devs = [(b["name"], d["index"], d.get("type") == "GPU", d["name"])
        for b in info.get("backends", []) if b["name"] in ("opencl", "vulkan")
        for d in b.get("devices", []) if d.get("status") == "SDPA_OK"]
gpus = [d for d in devs if d[2]]
for b, i, g, n in (devs if sys.argv[2] == "1" or not gpus else gpus):
    print(b, i, int(g), n.replace("\t", " "))
EOF
ntargets=$(wc -l < "$out/targets.txt")
ngpu=$(awk '$3 == 1' "$out/targets.txt" | wc -l)
echo "device-check: $ntargets device(s) to check, $ngpu GPU(s)"
if [ "$suites" = auto ]; then
  suites=0
  [ "$ngpu" -gt 0 ] && suites=1
fi
echo "$suites" > "$out/suites.txt"

# Time left after setup, shared by the devices; within a device: parity
# suite 30 %, conformance 25 %, bench 25 % (one step per preset), tune 20 %
# (its own --budget a third of that: builds come on top); without suites
# 35/35/30. CPU
# stand-ins get the two small bench presets only.
left=$(( budget - ($(date +%s) - start) ))
[ "$left" -gt 60 ] || left=60
per=$(( left / (ntargets > 0 ? ntargets : 1) ))
share() { local s=$(( per * $1 / 100 )); [ "$s" -ge 20 ] || s=20; echo "$s"; }
pc_suite=30 pc_conf=25 pc_bench=25 pc_tune=20
[ "$suites" = 1 ] || { pc_conf=35; pc_bench=35; pc_tune=30; }
presets=(llm-decode llm-prefill vit mobile)
[ "$ngpu" -gt 0 ] || presets=(mobile llm-decode)

corpora=()
for c in tests/conformance ../shared/conformance; do
  [ -d "$c" ] && corpora+=("$c")
done

while read -r backend index is_gpu name; do
  tag="$backend$index"
  if [ "$suites" = 1 ]; then
    # the parity suite is the test named after the backend (tests/meson.build)
    SDPA_DEVICE=$index step "parity-$tag" "$backend" "$index" "$(share $pc_suite)" \
      meson test -C "$build" --num-processes 1 --print-errorlogs "$backend"
  fi
  for c in "${corpora[@]}"; do
    step "conformance-$tag-$(basename "$(dirname "$c")")-$(basename "$c")" "$backend" "$index" \
      "$(( $(share $pc_conf) / ${#corpora[@]} + 1 ))" \
      "$tools/sdpa-check" --backend "$backend" --device "$index" --allow-unsupported "$c"
  done
  for p in "${presets[@]}"; do
    step "bench-$tag-$p" "$backend" "$index" "$(( $(share $pc_bench) / ${#presets[@]} + 1 ))" \
      "$tools/sdpa-bench" --backend "$backend" --device "$index" --preset "$p" \
      --repeat 3 --warmup 1 --max-seconds 1 --json
  done
  step "tune-$tag" "$backend" "$index" "$(share $pc_tune)" \
    "$tools/sdpa-tune" --backend "$backend" --device "$index" --preset llm-decode \
    --budget "$(( $(share $pc_tune) / 3 ))" --repeats 2 --profile-dir "$out/profiles" --json
done < "$out/targets.txt"

python3 tools/internal/device_report.py "$out" "$ngpu" "$(( $(date +%s) - start ))"
rc=$?
tarball="$out.tar.gz"
tar -czf "$tarball" -C "$(dirname "$out")" "$(basename "$out")"
echo "device-check: report $out/report.md"
echo "device-check: tarball $tarball"
exit $rc

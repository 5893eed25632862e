#!/usr/bin/env bash
# cpu-targets.sh — the cpu backend's speed targets (docs/cpu.md, "Measured
# figures"), each measured with the project's own tools as a fraction of
# what the same run measures, over several rounds, with a line per target:
# the median over rounds, the range, the target and whether the median
# meets it. A thin driver over sdpa-bench (and scripts/bench-baselines.sh
# for the outside baselines); not part of the tests, since its figures are
# speeds of the machine it runs on.
#
#   scripts/cpu-targets.sh [--build DIR] [--rounds N] [--no-baselines] [--out DIR]
#
# Per round:
# - forward B1 H8 S1024 D64 causal, 2 threads, once per kernel set the CPU
#   has (avx512, avx2, neon; SDPA_CPU_KERNELS forces each): % of that set's
#   FMA peak (sdpa-bench --refresh-peak: the peak measured just before);
# - decode B1 Hq32 Hkv8 Sq1 D128 at Skv 4096 and 32768, f32 and f16 K/V,
#   interleaved in one process: % of the read bandwidth measured just before
#   (`% bw`), the call over a plain read of the same bytes on the same
#   threads (`vs read`), and f16 over f32 (`vs base`, paired calls);
# - the ViT-B shape and decode at Skv 4096 back to back and with 20 ms
#   pauses (--gap-ms 20), the ratio of the two medians, and the ViT shape
#   with 20 ms pauses and its inputs read before each call (--gap-touch
#   q,k,v: as the layer that computed them leaves them).
# Each sdpa-bench run also measures the peak and the bandwidth after its rows
# (--refresh-peak), and the table ends with the largest change seen: a
# fraction is only as certain as the machine's speed held still.
# Then, unless --no-baselines, scripts/bench-baselines.sh --preset all with
# the same rounds (unfused OpenBLAS and ONNX Runtime; their packages come
# from scripts/install-deps.sh --baselines).
#
# The JSON of every run stays in --out (default: a temporary folder, named
# at the end). A round takes about 20 seconds; the baselines a few minutes.
# Exit status: 0, or 1 when an sdpa-bench run failed (named on stderr, its
# targets left out of the table), 2 on usage errors.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build" rounds=3 baselines=1 out=""
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --no-baselines) baselines=0; shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cpu-targets: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "cpu-targets: --rounds wants a positive integer" >&2; exit 2 ;; esac
bench="$build/tools/sdpa-bench"
[ -x "$bench" ] || { echo "cpu-targets: no $bench (build first: scripts/test.sh or ninja -C $build)" >&2; exit 2; }
[ -n "$out" ] || out="$(mktemp -d "${TMPDIR:-/tmp}/cpu-targets.XXXXXX")"
mkdir -p "$out"

# sdpa-bench's JSON to a file, never through a pipe: a reader starting
# beside the timed calls takes a core from them (docs/tools.md).
# A run that fails is named and left out of the table; the others go on,
# and the script exits 1 at the end.
failed=0
run() {
  local f="$1" rc=0; shift
  "$bench" "$@" --json > "$out/$f" 2> "$out/$f.err" || rc=$?
  if [ "$rc" != 0 ]; then
    echo "cpu-targets: sdpa-bench $* failed (exit $rc): $out/$f.err" >&2
    failed=$((failed + 1))
  fi
}
for r in $(seq 1 "$rounds"); do
  echo "cpu-targets: round $r/$rounds" >&2
  for k in avx512 avx2 neon; do
    SDPA_CPU_KERNELS=$k run "fwd-$k-$r.json" --shape 1,8,8,1024,1024,64 --causal \
      --repeat 20 --warmup 3 --refresh-peak
  done
  run "decode-$r.json" --shape 1,32,8,1,4096,128 --shape 1,32,8,1,32768,128 \
    --kv-dtype f32,f16 --interleave --repeat 30 --warmup 3 --refresh-peak --read-ref
  for g in 0 20; do
    run "gap$g-$r.json" --shape 1,12,12,197,197,64 --shape 1,32,8,1,4096,128 \
      --gap-ms $g --repeat 30 --warmup 3 --refresh-peak
  done
  run "touch-$r.json" --shape 1,12,12,197,197,64 --gap-ms 20 --gap-touch q,k,v \
    --repeat 30 --warmup 3 --refresh-peak
done

python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
drift = []  # (what, percent) of every run's before/after measurements
def load(name):
    path = os.path.join(out, name)
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return None
    for p in j.get("peaks") or []:
        if p.get("gflops") and p.get("gflops_after"):
            drift.append(("peak", 100 * (p["gflops_after"] / p["gflops"] - 1)))
    for b in j.get("bandwidths") or []:
        if b.get("gbps") and b.get("gbps_after"):
            drift.append(("bandwidth", 100 * (b["gbps_after"] / b["gbps"] - 1)))
    return j
def rows(j):
    return [r for r in (j or {}).get("results", []) if r.get("status") == "ok"]
def kernels(r):
    return next((w[8:] for w in r.get("config", "").split() if w.startswith("kernels=")), "?")
lines = []
def target(what, vals, goal, above=True, unit="x"):
    vals = [v for v in vals if v is not None]
    if not vals:
        lines.append((what, "-", "-", goal_str(goal, above, unit), "not measured"))
        return
    med = statistics.median(vals)
    fmt = (lambda v: "%.0f %%" % (100 * v)) if unit == "%" else (lambda v: "%.2fx" % v)
    met = "-" if goal is None else "yes" if (med >= goal if above else med <= goal) else "no"
    lines.append((what, fmt(med), "%s-%s" % (fmt(min(vals)), fmt(max(vals))),
                  goal_str(goal, above, unit), met))
def goal_str(goal, above, unit):
    if goal is None:  # measured, no target (NEON: no speed target, docs/cpu.md)
        return "-"
    g = ("%.0f %%" % (100 * goal)) if unit == "%" else ("%.2fx" % goal)
    return (">= " if above else "<= ") + g
for k, goal in (("avx512", 0.70), ("avx2", 0.60), ("neon", None)):
    vals = []
    for r in range(1, rounds + 1):
        for x in rows(load("fwd-%s-%d.json" % (k, r))):
            if kernels(x) == k:  # forced set not on this CPU: the run fell back
                vals.append(x.get("peak_frac"))
    if vals:
        target("forward B1 H8 S1024 D64 causal, %s, of its peak" % k, vals, goal, unit="%")
dec = {}
for r in range(1, rounds + 1):
    for x in rows(load("decode-%d.json" % r)):
        skv = x["shape"].split(",")[4]
        d = dec.setdefault((skv, x["dtype"]), {"bw": [], "read": [], "base": []})
        d["bw"].append(x.get("bw_frac"))
        d["read"].append(1 / x["vs_read"] if x.get("vs_read") else None)
        d["base"].append(x.get("vs_base"))
for (skv, dt), d in sorted(dec.items(), key=lambda i: (int(i[0][0]), i[0][1])):
    target("decode Skv %s %s, of the read bandwidth" % (skv, dt), d["bw"], 0.75, unit="%")
    target("decode Skv %s %s, of a plain read of its bytes" % (skv, dt), d["read"], 0.75, unit="%")
    if dt != "f32":
        target("decode Skv %s %s over f32 (paired calls)" % (skv, dt), d["base"], 1.6)
gap = {}
for r in range(1, rounds + 1):
    b2b = {x["shape"]: x["median_ms"] for x in rows(load("gap0-%d.json" % r))}
    for x in rows(load("gap20-%d.json" % r)):
        if x["shape"] in b2b:
            gap.setdefault(x["shape"], []).append(x["median_ms"] / b2b[x["shape"]])
    for x in rows(load("touch-%d.json" % r)):
        if x["shape"] in b2b:
            gap.setdefault(x["shape"] + " touch", []).append(x["median_ms"] / b2b[x["shape"]])
names = {"1,12,12,197,197,64,64": "ViT-B", "1,32,8,1,4096,128,128": "decode Skv 4096 f32"}
for s, v in gap.items():
    base, touch = s.split(" ")[0], s.endswith(" touch")
    what = "%s, 20 ms pauses%s, over back to back" % (
        names.get(base, base), " and inputs read before" if touch else "")
    target(what, v, 1.25, above=False)
w = max(len(l[0]) for l in lines) if lines else 10
print("%-*s  %8s  %-15s  %-8s  %s" % (w, "target (rounds: %d)" % rounds, "median",
                                      "range", "target", "met"))
for l in lines:
    print("%-*s  %8s  %-15s  %-8s  %s" % (w, l[0], l[1], l[2], l[3], l[4]))
for what in ("peak", "bandwidth"):
    d = [abs(p) for k, p in drift if k == what]
    if d:
        print("the %s moved by up to %.0f %% between the measurements before and after a run's "
              "rows (%d runs)" % (what, max(d), len(d)))
PY
if [ "$baselines" = 1 ]; then
  bash "$root/scripts/bench-baselines.sh" --build "$build" --preset all --rounds "$rounds" \
    --repeat 20 --no-ggml
fi
echo "cpu-targets: the runs' JSON are in $out" >&2
if [ "$failed" != 0 ]; then
  echo "cpu-targets: $failed sdpa-bench run(s) failed; their targets are left out above" >&2
  exit 1
fi

#!/usr/bin/env bash
# bench-baselines.sh — the cpu backend against outside baselines, side by
# side in one run: for every f32 preset shape of sdpa-bench (and any --shape
# given), sdpa-bench's cpu row, then an unfused OpenBLAS attention
# (scripts/baselines/openblas_attention.c: two cblas_sgemm per KV group and a
# row softmax; Debian libopenblas-dev) and, when its Python has them, ONNX
# Runtime's opset-23 Attention (scripts/baselines/ort_attention.py; PyPI
# onnxruntime + onnx + numpy), all with the same thread count, each timed as
# the median of --repeat runs after --warmup. Prints one line per shape with
# the times and the ratios baseline / cpu (above 1 = the cpu backend is
# faster). Not part of the tests; the packages come from
# `scripts/install-deps.sh --baselines`.
#
#   scripts/bench-baselines.sh [--build DIR] [--preset NAME]... [--shape B,Hq,Hkv,Sq,Skv,D[,Dv]]...
#                              [--causal] [--threads N] [--repeat N] [--warmup N] [--no-ort]
#
# --preset defaults to llm-prefill, llm-decode and vit (mobile is f16 and the
# baselines are f32); --causal applies to the --shape rows. OPENBLAS_CORETYPE
# is unset for the OpenBLAS baseline only (the machine's setting, if any,
# stays for everything else). SDPA_BASELINES_PYTHON names the Python with
# onnxruntime (default: the venv install-deps.sh makes,
# ~/.cache/sdpa/baselines-venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
presets=() shapes=() causal=0 threads=2 repeat=10 warmup=2 ort=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --preset) presets+=("$2"); shift 2 ;;
    --shape) shapes+=("$2"); shift 2 ;;
    --causal) causal=1; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --no-ort) ort=0; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-baselines: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#presets[@]} -gt 0 ] || [ ${#shapes[@]} -gt 0 ] || presets=(llm-prefill llm-decode vit)
bench="$build/tools/sdpa-bench"
[ -x "$bench" ] || { echo "bench-baselines: no $bench (build first: meson setup build && ninja -C build)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
oblas="$work/openblas_attention"
if ! pkg-config --exists openblas; then
  echo "bench-baselines: OpenBLAS not found (scripts/install-deps.sh --baselines installs libopenblas-dev)" >&2
  exit 1
fi
# shellcheck disable=SC2046
"${CC:-cc}" -O2 -o "$oblas" "$root/scripts/baselines/openblas_attention.c" \
  $(pkg-config --cflags --libs openblas) -lm
python="${SDPA_BASELINES_PYTHON:-$HOME/.cache/sdpa/baselines-venv/bin/python}"
if [ "$ort" = 1 ] && ! "$python" -c "import onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "bench-baselines: no onnxruntime in $python (scripts/install-deps.sh --baselines); ONNX Runtime column left out" >&2
  ort=0
fi

# The shape list: each preset's f32 rows as sdpa-bench lists them (one quick
# pass), then the --shape rows. Fields: B Hq Hkv Sq Skv D Dv causal.
list="$work/shapes"
: > "$list"
for p in "${presets[@]}"; do
  "$bench" --preset "$p" --repeat 1 --warmup 0 --no-peak --csv 2>/dev/null |
    python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    if r["dtype"] != "f32" or r["op"] != "fwd":
        continue
    if r["mask"] not in ("none", "causal-br"):
        print("bench-baselines: skipping %s %s (only no mask or causal)" % (r["shape"], r["mask"]), file=sys.stderr)
        continue
    print(*r["shape"].split(","), 1 if r["mask"] == "causal-br" else 0)' >> "$list"
done
for s in "${shapes[@]}"; do
  IFS=, read -r B Hq Hkv Sq Skv D Dv <<< "$s"
  echo "$B $Hq $Hkv $Sq $Skv $D ${Dv:-$D} $causal" >> "$list"
done

printf "threads %s, repeat %s, warmup %s; ratio = baseline median / cpu median (above 1: cpu faster)\n" \
  "$threads" "$repeat" "$warmup"
printf "%-28s %-6s %10s %12s %7s %10s %7s\n" "shape B,Hq,Hkv,Sq,Skv,D,Dv" "mask" "cpu ms" \
  "openblas ms" "ratio" "ort ms" "ratio"
while read -r B Hq Hkv Sq Skv D Dv c; do
  shape="$B,$Hq,$Hkv,$Sq,$Skv,$D,$Dv"
  flag=""; [ "$c" = 1 ] && flag="--causal"
  cpu=$("$bench" --backend cpu --shape "$shape" $flag --dtype f32 --threads "$threads" \
          --repeat "$repeat" --warmup "$warmup" --no-peak --csv 2>/dev/null |
        python3 -c 'import csv, sys; print(next(csv.DictReader(sys.stdin))["median_ms"])')
  ob=$(env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS="$threads" \
         "$oblas" "$B" "$Hq" "$Hkv" "$Sq" "$Skv" "$D" "$Dv" "$c" "$repeat" "$warmup" | cut -d' ' -f1)
  ox="-" oxr="-"
  if [ "$ort" = 1 ]; then
    ox=$("$python" "$root/scripts/baselines/ort_attention.py" "$B" "$Hq" "$Hkv" "$Sq" "$Skv" \
           "$D" "$Dv" "$c" "$repeat" "$warmup" --threads "$threads" | cut -d' ' -f1)
    oxr=$(python3 -c "print('%.2fx' % ($ox / $cpu))")
  fi
  printf "%-28s %-6s %10.3f %12.3f %7s %10s %7s\n" "$shape" "$([ "$c" = 1 ] && echo causal || echo none)" \
    "$cpu" "$ob" "$(python3 -c "print('%.2fx' % ($ob / $cpu))")" "$ox" "$oxr"
done < "$list"

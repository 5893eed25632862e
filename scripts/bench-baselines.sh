#!/usr/bin/env bash
# bench-baselines.sh — the cpu backend against outside baselines, side by
# side in one run: for every f32 preset shape of sdpa-bench (and any --shape
# given), sdpa-bench's cpu row, then an unfused OpenBLAS attention
# (scripts/baselines/openblas_attention.c: two cblas_sgemm per KV group and a
# row softmax; Debian libopenblas-dev) and, when its Python has them, ONNX
# Runtime's opset-23 Attention (scripts/baselines/ort_attention.py; PyPI
# onnxruntime + onnx + numpy) and, when it is built, ggml's CPU flash
# attention (scripts/baselines/ggml_flash_attn.c: one ggml_flash_attn_ext,
# f32 queries, K/V in --kv-dtype), all with the same thread count, each
# timed as the median of --repeat runs after --warmup. Prints one line per
# shape with the times and the ratios baseline / cpu (above 1 = the cpu
# backend is faster). Not part of the tests; the packages come from
# `scripts/install-deps.sh --baselines`.
#
#   scripts/bench-baselines.sh [--build DIR] [--preset NAME]... [--shape B,Hq,Hkv,Sq,Skv,D[,Dv]]...
#                              [--causal] [--kv-dtype f32|f16|q8_0|q4_0] [--threads N]
#                              [--repeat N] [--warmup N] [--rounds N] [--no-ort] [--no-ggml] [--check]
#
# --rounds N measures every program N times per shape, the cpu row first in
# odd rounds and last in even ones, and prints the median time of each and
# the median of the rounds' ratios with their range: on a machine whose
# speed drifts from minute to minute (a VM), one round's ratio can be off by
# 2x, so a claim needs several rounds and their spread.
# --kv-dtype stores K/V in that type for the cpu row (sdpa-bench --kv-dtype)
# and ggml (queries stay f32); OpenBLAS and ONNX Runtime are f32 only, so
# their columns are left out ("-") for another type. --check runs no
# benchmark: it checks that the ggml program computes what libsdpa does
# (small decode and causal prefill shapes, every K/V type: ggml's output
# written as an sdpa-case/1 case, run by `sdpa-check --backend reference`,
# and the same case with the query heads' outputs rotated, which must fail).
#
# --preset defaults to llm-prefill, llm-decode and vit (mobile is f16 and the
# baselines are f32); --causal applies to the --shape rows. OPENBLAS_CORETYPE
# is unset for the OpenBLAS baseline only (the machine's setting, if any,
# stays for everything else). SDPA_BASELINES_PYTHON names the Python with
# onnxruntime (default: the venv install-deps.sh makes,
# ~/.cache/sdpa/baselines-venv); SDPA_GGML_PREFIX the folder with ggml's
# include/ and lib/ (default: where install-deps.sh builds it,
# ~/.cache/sdpa/ggml). ggml's threads are OpenMP's: OMP_WAIT_POLICY is
# passive for it unless set (spinning OpenMP waits cost ggml 1.3-4x on a
# machine busier than its cores, and next to nothing when it is idle).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
presets=() shapes=() causal=0 threads=2 repeat=10 warmup=2 rounds=1 ort=1 ggml=1 kvdt=f32 check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --preset) presets+=("$2"); shift 2 ;;
    --shape) shapes+=("$2"); shift 2 ;;
    --causal) causal=1; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --no-ort) ort=0; shift ;;
    --kv-dtype) kvdt="$2"; shift 2 ;;
    --no-ggml) ggml=0; shift ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-baselines: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench-baselines: --rounds $rounds is not a positive integer" >&2; exit 2 ;; esac
case "$kvdt" in f32|f16|q8_0|q4_0) ;; *) echo "bench-baselines: --kv-dtype $kvdt is not f32, f16, q8_0 or q4_0" >&2; exit 2 ;; esac
[ ${#presets[@]} -gt 0 ] || [ ${#shapes[@]} -gt 0 ] || presets=(llm-prefill llm-decode vit)
bench="$build/tools/sdpa-bench"
[ -x "$bench" ] || { echo "bench-baselines: no $bench (build first: meson setup build && ninja -C build)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# ggml: scripts/baselines/ggml_flash_attn.c against install-deps.sh's static
# build (OpenMP, C++ runtime).
gprefix="${SDPA_GGML_PREFIX:-$HOME/.cache/sdpa/ggml}"
gfa="$work/ggml_flash_attn"
if [ "$ggml" = 1 ] || [ "$check" = 1 ]; then
  if [ ! -f "$gprefix/lib/libggml-cpu.a" ]; then
    echo "bench-baselines: no ggml in $gprefix (scripts/install-deps.sh --baselines); ggml column left out" >&2
    [ "$check" = 1 ] && exit 1
    ggml=0
  else
    "${CC:-cc}" -O2 -o "$gfa" "$root/scripts/baselines/ggml_flash_attn.c" -I"$gprefix/include" \
      "$gprefix/lib/libggml-cpu.a" "$gprefix/lib/libggml-base.a" -fopenmp -lstdc++ -lm -lpthread
  fi
fi
if [ "$check" = 1 ]; then
  chk="$build/tools/sdpa-check"
  [ -x "$chk" ] || { echo "bench-baselines: no $chk (build first)" >&2; exit 1; }
  fails=0
  # decode with GQA (over 512 keys: ggml splits f32/f16 K/V across threads),
  # and causal prefill (bottom-right), odd lengths
  for kt in f32 f16 q8_0 q4_0; do
    for s in "1 8 2 1 601 64 64 0" "2 4 2 37 45 64 32 1"; do
      dir="$work/ggml_${kt}_${s// /_}"
      # shellcheck disable=SC2086
      "$gfa" $s 1 0 --kv-dtype "$kt" --threads "$threads" --case "$dir" >/dev/null
      res=$("$chk" --backend reference "$dir" | head -1) || true
      echo "$res"
      case "$res" in PASS*) ;; *) fails=$((fails + 1)) ;; esac
      # negative control: ggml's output with the query heads rotated by one
      python3 - "$dir" <<'PY'
import array, json, sys
d = sys.argv[1]
c = json.load(open(d + "/case.json"))
B, H, S, Dv = c["expected"]["out"]["shape"]
o = array.array("f")
with open(d + "/out.expected.f32", "rb") as f:
    o.frombytes(f.read())
n = S * Dv
r = array.array("f")
for b in range(B):
    blk = o[b * H * n:(b + 1) * H * n]
    r.extend(blk[n:] + blk[:n])
with open(d + "/out.expected.f32", "wb") as f:
    f.write(r.tobytes())
PY
      res=$("$chk" --backend reference "$dir" | head -1) || true
      case "$res" in
        FAIL*) echo "  heads rotated, must fail: ${res#* * }" ;;
        *) echo "FAIL the same case with its heads rotated: $res"; fails=$((fails + 1)) ;;
      esac
    done
  done
  echo "bench-baselines --check: $fails failed"
  [ "$fails" = 0 ]; exit
fi
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

printf "threads %s, repeat %s, warmup %s, K/V %s, rounds %s; ratio = baseline median / cpu median (above 1: cpu faster)\n" \
  "$threads" "$repeat" "$warmup" "$kvdt" "$rounds"
[ "$rounds" -gt 1 ] && echo "times: median over rounds; ratio: median of the rounds' ratios [lowest-highest]"
printf "%-28s %-6s %10s %12s %7s %10s %7s %10s %7s\n" "shape B,Hq,Hkv,Sq,Skv,D,Dv" "mask" "cpu ms" \
  "openblas ms" "ratio" "ort ms" "ratio" "ggml ms" "ratio"
# One measurement per program, in ms ("-" for a column left out).
# Each writes to a file, read once it has exited: a reader started beside
# it in a pipe (Python's start-up, for sdpa-bench's CSV) takes a core from
# a run that lasts a few ms (ViT-B's 40 calls ran at 1.6 ms instead of 0.8).
m_cpu() {
  "$bench" --backend cpu --shape "$shape" $flag --dtype f32 --kv-dtype "$kvdt" --threads "$threads" \
    --repeat "$repeat" --warmup "$warmup" --no-peak --csv >"$work/cpu.csv" 2>/dev/null
  python3 -c 'import csv, sys; print(next(csv.DictReader(open(sys.argv[1])))["median_ms"])' "$work/cpu.csv"
}
m_ob() {
  [ "$kvdt" = f32 ] || { echo -; return; }
  env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS="$threads" \
    "$oblas" "$B" "$Hq" "$Hkv" "$Sq" "$Skv" "$D" "$Dv" "$c" "$repeat" "$warmup" >"$work/m.txt"
  cut -d' ' -f1 "$work/m.txt"
}
m_ort() {
  [ "$ort" = 1 ] && [ "$kvdt" = f32 ] || { echo -; return; }
  "$python" "$root/scripts/baselines/ort_attention.py" "$B" "$Hq" "$Hkv" "$Sq" "$Skv" \
    "$D" "$Dv" "$c" "$repeat" "$warmup" --threads "$threads" >"$work/m.txt"
  cut -d' ' -f1 "$work/m.txt"
}
m_ggml() {
  [ "$ggml" = 1 ] || { echo -; return; }
  OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" "$gfa" "$B" "$Hq" "$Hkv" "$Sq" "$Skv" \
    "$D" "$Dv" "$c" "$repeat" "$warmup" --kv-dtype "$kvdt" --threads "$threads" >"$work/m.txt"
  cut -d' ' -f1 "$work/m.txt"
}
while read -r B Hq Hkv Sq Skv D Dv c; do
  shape="$B,$Hq,$Hkv,$Sq,$Skv,$D,$Dv"
  flag=""; [ "$c" = 1 ] && flag="--causal"
  : > "$work/rounds"
  for ((r = 1; r <= rounds; r++)); do
    # the cpu row first in odd rounds, last in even ones: a machine whose
    # speed drifts favours neither side
    if [ $((r % 2)) = 1 ]; then
      cpu=$(m_cpu); ob=$(m_ob); ox=$(m_ort); gx=$(m_ggml)
    else
      ob=$(m_ob); ox=$(m_ort); gx=$(m_ggml); cpu=$(m_cpu)
    fi
    echo "$cpu $ob $ox $gx" >> "$work/rounds"
  done
  python3 - "$shape" "$([ "$c" = 1 ] && echo causal || echo none)" "$work/rounds" <<'PY'
import statistics, sys
shape, mask, path = sys.argv[1:]
rows = [line.split() for line in open(path)]
def med(v): return statistics.median(v)
cpu = [float(r[0]) for r in rows]
cols = []
for k in (1, 2, 3):
    if rows[0][k] == "-":
        cols += ["-", "-"]
        continue
    base = [float(r[k]) for r in rows]
    ratios = sorted(b / a for a, b in zip(cpu, base))
    text = "%.2fx" % med(ratios)
    if len(ratios) > 1:
        text += " [%.2f-%.2f]" % (ratios[0], ratios[-1])
    cols += ["%.3f" % med(base), text]
w = 7 if len(rows) == 1 else 19
print("%-28s %-6s %10.3f %12s %*s %10s %*s %10s %*s" % (shape, mask, med(cpu), cols[0], w, cols[1],
      cols[2], w, cols[3], cols[4], w, cols[5]))
PY
done < "$list"

#!/bin/sh
# int8 against float32 and against ONNX Runtime: ISNet "small" (dynamic int8,
# isnet_quint8.onnx) and the same network in float32 (isnet_fp16.onnx made
# float32 by tools/isnet-prep.py fp32), 1x3x1024x1024, one thread, the same
# real photo as input (tools/isnet-prep.py photo), nnpipe and ONNX Runtime
# in one run, alternating.  Not a test: prints figures (docs/performance.md,
# "int8").
#
#   benchmarks/int8.sh [BUILD_DIR]
#
# Environment: ROUNDS (processes per runner and case, alternating; default 3),
# REPEAT (timed runs per process after one warm-up; default and minimum 2), QUICK=1
# (ROUNDS=1), NNP_MODELS_DIR (default .cache/models), ORT_FP32=0 to leave out
# ONNX Runtime's float32 row.
#
# Each row runs two processes per round: REPEAT and REPEAT + 2 timed runs
# after one warm-up (nnpipe run --repeat; nnp-ort times its first run too, so
# it gets one run more, the cold one).  Figures per row: the median over
# ROUNDS of the latency median of the REPEAT + 2 process, the minimum of all
# its runs, and the CPU time per run (user + sys from /usr/bin/time: the
# difference between the two processes / 2), which the other jobs of a
# loaded machine disturb less than wall time (the load average is printed
# before and after).  Ratios: nnpipe int8 / nnpipe float32 (target <= 0.6)
# and nnpipe int8 / ONNX Runtime int8 (target <= 1.0), from the medians, the
# minima and the CPU times.  The int8 kernel in use is printed
# (NNPIPE_CPU_INT8 caps it: c, avx2, avxvnni, avx512vnni).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${1:-$top/build}
models=${NNP_MODELS_DIR:-$top/.cache/models}
rounds=${ROUNDS:-3}
[ "${QUICK:-0}" = 1 ] && rounds=1
repeat=${REPEAT:-2}
[ "$repeat" -ge 2 ] 2>/dev/null || repeat=2 # nnp-ort prints its latency from 2 runs on
ort_fp32=${ORT_FP32:-1}
nnpipe=$build/tools/nnpipe
ort=$build/tests/nnp-ort
me=int8.sh
tmp=${TMPDIR:-/tmp}/nnp-bench-int8.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

for f in "$nnpipe" "$ort"; do
  [ -x "$f" ] || { echo "$me: $f not built (meson setup/ninja in $build)" >&2; exit 1; }
done
nnp_need_models isnet_quint8.onnx isnet_fp16.onnx
/usr/bin/python3 "$top/tools/isnet-prep.py" photo "$tmp/photo.raw" 1024 || exit 1
/usr/bin/python3 "$top/tools/isnet-prep.py" fp32 "$models/isnet_fp16.onnx" "$tmp/isnet_fp32.onnx" \
  || exit 1

median_of () { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
min_of () { sort -g | head -1; }

# row KEY: runner model
rows="nnp-int8 nnpipe $models/isnet_quint8.onnx
nnp-fp32 nnpipe $tmp/isnet_fp32.onnx
ort-int8 ort $models/isnet_quint8.onnx"
[ "$ort_fp32" = 1 ] && rows="$rows
ort-fp32 ort $tmp/isnet_fp32.onnx"

echo "cpu: $(awk -F: '/^model name/ { sub(/^ /, "", $2); print $2; exit }' /proc/cpuinfo)," \
  "$(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ $r -le "$rounds" ]; do
  order=$rows
  # odd rounds in row order, even rounds reversed
  [ $((r % 2)) -eq 0 ] && order=$(echo "$rows" | awk '{ l[NR] = $0 } END { for (i = NR; i > 0; i--) print l[i] }')
  echo "$order" | while read -r key runner model; do
    # two processes: REPEAT and REPEAT + 2 timed runs; the CPU time of the
    # two extra runs (user + sys, /usr/bin/time) is what a run costs, less
    # sensitive to the other jobs than wall time
    for n in "$repeat" $((repeat + 2)); do
      if [ "$runner" = nnpipe ]; then
        # the debug category of the CPU kernels names the int8 kernel (at load)
        G_MESSAGES_DEBUG=nnp-cpu /usr/bin/time -f "cpu %U %S" -o "$tmp/time.$n" "$nnpipe" run \
          "$model" --input "input=$tmp/photo.raw" --threads 1 --repeat "$n" >"$tmp/out.$n" 2>&1
      else
        # nnp-ort times every run, the first (cold) one too: one more run
        /usr/bin/time -f "cpu %U %S" -o "$tmp/time.$n" "$ort" "$model" \
          --input "input=$tmp/photo.raw" --threads 1 --repeat $((n + 1)) >"$tmp/out.$n" 2>&1
      fi
    done
    out=$tmp/out.$((repeat + 2))
    line=$(sed -n 's/.*latency_ms median=\([0-9.]*\) min=\([0-9.]*\).*/\1 \2/p' "$out" | head -1)
    if [ -z "$line" ]; then
      echo "$me: $key failed:" >&2; sed 's/^/  /' "$out" >&2; exit 1
    fi
    cpu=$(awk '/^cpu/ { t[FILENAME] = $2 + $3 } END { printf "%.0f", (t[ARGV[2]] - t[ARGV[1]]) / 2 * 1000 }' \
      "$tmp/time.$repeat" "$tmp/time.$((repeat + 2))")
    echo "$line" | awk '{ print $1 }' >>"$tmp/$key.med"
    echo "$line" | awk '{ print $2 }' >>"$tmp/$key.min"
    echo "$cpu" >>"$tmp/$key.cpu"
    kernel=$(sed -n 's/.*int8 GEMM kernel: \([a-z0-9]*\).*/ (int8 kernel \1)/p' "$out" | head -1)
    echo "round $r $key: median $(echo "$line" | cut -d' ' -f1) ms, min $(echo "$line" | cut -d' ' -f2) ms, cpu $cpu ms/run$kernel"
  done || exit 1
  r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
printf '%-10s %12s %12s %14s\n' "row" "median ms" "min ms" "cpu ms/run"
for key in $(echo "$rows" | awk '{ print $1 }'); do
  k=$(echo "$key" | tr - _)
  eval "med_$k=$(median_of <"$tmp/$key.med")"
  eval "min_$k=$(min_of <"$tmp/$key.min")"
  eval "cpu_$k=$(median_of <"$tmp/$key.cpu")"
  printf '%-10s %12s %12s %14s\n' "$key" "$(median_of <"$tmp/$key.med")" \
    "$(min_of <"$tmp/$key.min")" "$(median_of <"$tmp/$key.cpu")"
done
ratio () { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# ratios of the median latencies (min: of the fastest runs; cpu: of the CPU times per run)
ratios () {
  echo "$1 $(ratio "$(eval echo \$med_$2)" "$(eval echo \$med_$3)") (min: $(ratio "$(eval echo \$min_$2)" "$(eval echo \$min_$3)"), cpu: $(ratio "$(eval echo \$cpu_$2)" "$(eval echo \$cpu_$3)")$4)"
}
echo
ratios "nnpipe int8 / nnpipe float32:" nnp_int8 nnp_fp32 "; target <= 0.6"
ratios "nnpipe int8 / ORT int8:      " nnp_int8 ort_int8 "; target <= 1.0"
if [ "$ort_fp32" = 1 ]; then
  ratios "nnpipe float32 / ORT float32:" nnp_fp32 ort_fp32 ""
  ratios "ORT int8 / ORT float32:      " ort_int8 ort_fp32 ""
fi

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
# Each process loads the model, runs once to warm up and REPEAT timed runs
# (nnpipe run --repeat; nnp-ort times its first run too, so it gets REPEAT + 1
# runs, the cold one among them);
# a row's figure is the median over ROUNDS processes of each process's
# median (and the minimum over all runs, useful when other jobs load the
# machine: the load average is printed before and after).  Ratios: nnpipe
# int8 / nnpipe float32 (target <= 0.6) and nnpipe int8 / ONNX Runtime int8
# (target <= 1.0), from the medians and from the minima.  The int8 kernel in
# use is printed (NNPIPE_CPU_INT8 caps it: c, avx2, avxvnni, avx512vnni).
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
    if [ "$runner" = nnpipe ]; then
      # the debug category of the CPU kernels names the int8 kernel (at load)
      G_MESSAGES_DEBUG=nnp-cpu "$nnpipe" run "$model" --input "input=$tmp/photo.raw" --threads 1 --repeat "$repeat" \
        >"$tmp/out" 2>&1
    else
      # nnp-ort times every run, the first (cold) one too: one more run
      "$ort" "$model" --input "input=$tmp/photo.raw" --threads 1 --repeat $((repeat + 1)) \
        >"$tmp/out" 2>&1
    fi
    line=$(sed -n 's/.*latency_ms median=\([0-9.]*\) min=\([0-9.]*\).*/\1 \2/p' "$tmp/out" | head -1)
    if [ -z "$line" ]; then
      echo "$me: $key failed:" >&2; sed 's/^/  /' "$tmp/out" >&2; exit 1
    fi
    echo "$line" | awk '{ print $1 }' >>"$tmp/$key.med"
    echo "$line" | awk '{ print $2 }' >>"$tmp/$key.min"
    kernel=$(sed -n 's/.*int8 GEMM kernel: \([a-z0-9]*\).*/ (int8 kernel \1)/p' "$tmp/out" | head -1)
    echo "round $r $key: median $(echo "$line" | cut -d' ' -f1) ms, min $(echo "$line" | cut -d' ' -f2) ms$kernel"
  done || exit 1
  r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
printf '%-10s %12s %12s\n' "row" "median ms" "min ms"
for key in $(echo "$rows" | awk '{ print $1 }'); do
  eval "med_$(echo "$key" | tr - _)=$(median_of <"$tmp/$key.med")"
  eval "min_$(echo "$key" | tr - _)=$(min_of <"$tmp/$key.min")"
  printf '%-10s %12s %12s\n' "$key" "$(median_of <"$tmp/$key.med")" "$(min_of <"$tmp/$key.min")"
done
ratio () { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
echo
echo "nnpipe int8 / nnpipe float32: $(ratio "$med_nnp_int8" "$med_nnp_fp32") (min: $(ratio "$min_nnp_int8" "$min_nnp_fp32"); target <= 0.6)"
echo "nnpipe int8 / ORT int8:       $(ratio "$med_nnp_int8" "$med_ort_int8") (min: $(ratio "$min_nnp_int8" "$min_ort_int8"); target <= 1.0)"
if [ "$ort_fp32" = 1 ]; then
  echo "nnpipe float32 / ORT float32: $(ratio "$med_nnp_fp32" "$med_ort_fp32") (min: $(ratio "$min_nnp_fp32" "$min_ort_fp32"))"
  echo "ORT int8 / ORT float32:       $(ratio "$med_ort_int8" "$med_ort_fp32") (min: $(ratio "$min_ort_int8" "$min_ort_fp32"))"
fi

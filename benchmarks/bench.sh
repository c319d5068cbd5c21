#!/bin/sh
# nnpipe against ONNX Runtime on the working models: same inputs (the
# deterministic pattern of nnp_tensor_fill_pattern, which both runners use),
# same machine, same run, alternating A/B.  Not a test: prints figures.
#
#   benchmarks/bench.sh [BUILD_DIR]
#
# Models: the PaddleOCR detector, recogniser and classifier, BlazeFace front
# 128 / back 256, M-LSD 320 and 512 tiny / large, ISNet float16 as shipped
# and ISNet in float32 (converted from it by benchmarks/convert-float-model.py
# into a temporary folder; needs python3-onnx), and ResNet-18, ResNet-50, MobileNetV2, a
# YOLOv8n-like backbone with SiLU and a DeiT-tiny-shaped ViT encoder in their
# shapes with random weights (benchmarks/make-cnn-model.py, the same folder).
#
# Environment: ROUNDS (processes per runner and case, alternating; default 5),
# HEAVY_ROUNDS (the same for ISNet, 320 GFLOP a run; default 3),
# THREADS_LIST (default "1 2"), NNP_MODELS_DIR (default .cache/models),
# MODELS (a substring: only the cases whose label has it, e.g. MODELS=isnet),
# QUICK=1 (ROUNDS=3, HEAVY_ROUNDS=1, fewer timed runs per process),
# BASE_BUILD=DIR (another build of nnpipe, e.g. main's before a change: (a)
# also runs its nnpipe in every round, the three runners' order rotating, and
# adds its latency and new / base: "no model slower than before" measured in
# the same minutes as the change).
#
# PIN=1 (default, with taskset): in each round every runner runs on the
# same cores (core r - 1 for one thread, rotating over the rounds), so that
# a pair is not split across cores of different speed: on a shared VM one
# core can run at half the speed of the other for minutes at a time, when
# the host's other hardware thread on it is busy (docs/performance.md).
# PIN=0: where the scheduler puts them.
#
# Each process runs W untimed runs (10; 3 for ISNet; the base build: its one
# warm-up) and K timed runs and reports their median
# and minimum; the figure is the median over ROUNDS processes (ratio-min:
# the ratio of the fastest runs, useful when other jobs load the machine).  Round r runs nnpipe first
# when r is odd, ONNX Runtime first when it is even.
#
# Prints (a) latency per model at each thread count and nnpipe / ORT;
# (b) pipeline throughput (two 1-thread stages vs ORT at 2 threads) when the
# tools for it exist; (c) peak RSS of one process per runner (/usr/bin/time);
# (d) GFLOP/s (FLOPs from `nnpipe inspect`) and % of the machine's peak
# (Zen 3: 2 FMA units x 8 floats x 2 flops per cycle per core, at the
# `cpu MHz` of /proc/cpuinfo; boost clocks make the real peak higher, so
# the figure is also given against the FMA peak measured by fma-peak.c).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${1:-$top/build}
models=${NNP_MODELS_DIR:-$top/.cache/models}
rounds=${ROUNDS:-5}
heavy_rounds=${HEAVY_ROUNDS:-3}
threads_list=${THREADS_LIST:-1 2}
quick=${QUICK:-0}
only=${MODELS:-}
[ "$quick" = 1 ] && rounds=${ROUNDS:-3} && heavy_rounds=${HEAVY_ROUNDS:-1}
nnpipe=$build/tools/nnpipe
ort=$build/tests/nnp-ort
base=${BASE_BUILD:+$BASE_BUILD/tools/nnpipe}
tmp=${TMPDIR:-/tmp}/nnp-bench.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

for f in "$nnpipe" "$ort" ${base:+"$base"}; do
  [ -x "$f" ] || { echo "bench.sh: $f not built (meson setup/ninja in $build)" >&2; exit 1; }
done

# ISNet in float32: the float16 model as shipped, converted (never in .cache)
isnet32=""
if [ -z "$only" ] || echo "isnet-fp32" | grep -q -- "$only"; then
  if [ -f "$models/isnet_fp16.onnx" ] && /usr/bin/python3 "$top/benchmarks/convert-float-model.py" --to float32 \
      "$models/isnet_fp16.onnx" "$tmp/isnet_fp32.onnx" > "$tmp/convert.log" 2>&1; then
    isnet32=$tmp/isnet_fp32.onnx
  else
    echo "ISNet float32: conversion failed (python3-onnx?): $(tail -1 "$tmp/convert.log" 2>/dev/null)"
  fi
fi

# ResNet-18, ResNet-50, MobileNetV2, YOLO-like and ViT shapes with random weights (model
# families beyond the shipped ones: benchmarks/make-cnn-model.py)
for cnn in resnet18 resnet50 mobilenetv2 yolo-silu vit-tiny; do
  if [ -z "$only" ] || echo "$cnn-shaped" | grep -q -- "$only"; then
    /usr/bin/python3 "$top/benchmarks/make-cnn-model.py" $cnn "$tmp/$cnn.onnx" > "$tmp/$cnn.log" 2>&1 \
      || echo "$cnn: make-cnn-model.py failed (python3-onnx?): $(tail -1 "$tmp/$cnn.log")"
  fi
done

# label  model  input (NAME=dims, or - for a model of static shapes)  timed runs per process
# (at least 2: nnp-ort prints a latency only for --repeat 2 and more)
# (a model path without / is in NNP_MODELS_DIR)
all_cases="det-640x640 ch_PP-OCRv4_det_infer.onnx x=1,3,640,640 8
rec-48x320 ch_PP-OCRv4_rec_infer.onnx x=1,3,48,320 30
cls-48x192 ch_ppocr_mobile_v2.0_cls_infer.onnx x=1,3,48,192 300
blazeface-front-128 face_detection_front_128x128_barracuda.onnx - 200
blazeface-back-256 face_detection_back_256x256_barracuda.onnx - 60
mlsd-tiny-320 mlsd_320x320_tiny.onnx - 20
mlsd-large-320 mlsd_320x320_large.onnx - 8
mlsd-tiny-512 mlsd_512x512_tiny.onnx - 8
mlsd-large-512 mlsd_512x512_large.onnx - 4
resnet18-shaped-224 $tmp/resnet18.onnx - 20
resnet50-shaped-224 $tmp/resnet50.onnx - 6
mobilenetv2-shaped-224 $tmp/mobilenetv2.onnx - 60
yolo-silu-shaped-320 $tmp/yolo-silu.onnx - 20
vit-tiny-shaped-197 $tmp/vit-tiny.onnx - 8
isnet-fp16-1024 isnet_fp16.onnx - 2
isnet-fp32-1024 ${isnet32:-isnet_fp32-not-converted.onnx} - 2"
cases=$(echo "$all_cases" | while read -r label model shape k; do
  if [ -z "$only" ] || echo "$label" | grep -q -- "$only"; then echo "$label $model $shape $k"; fi
done)
# the model file of a case, and the nnpipe / nnp-ort shape arguments
model_file () { case $1 in /*) echo "$1" ;; *) echo "$models/$1" ;; esac; }
shape_args () { [ "$1" = - ] || echo "--shape $1"; }

median_of () { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
lat () { sed -n 's/.*latency_ms median=\([0-9.]*\).*/\1/p' | head -1; }
# "MEDIAN MIN" of one process
latmin () { sed -n 's/.*latency_ms median=\([0-9.]*\) min=\([0-9.]*\).*/\1 \2/p' | head -1; }

mhz=$(awk -F: '/^cpu MHz/ { gsub(/ /, "", $2); print $2; exit }' /proc/cpuinfo)
cores=$(nproc)
model_name=$(awk -F: '/^model name/ { sub(/^ /, "", $2); print $2; exit }' /proc/cpuinfo)
meas=0
meas512=0
if cc -O2 "$top/benchmarks/fma-peak.c" -o "$tmp/fma-peak" 2>/dev/null; then
  meas=$("$tmp/fma-peak")
  meas512=$("$tmp/fma-peak" avx512)
fi
echo "machine: $model_name, $cores cpus, cpu MHz $mhz; nnpipe $($nnpipe --version 2>/dev/null | head -1)"
awk -v mhz="$mhz" -v m="$meas" -v w="$meas512" 'BEGIN { printf "peak per core: nominal %.1f GFLOP/s (32 flops/cycle x %.3f GHz), measured FMA loop %.1f GFLOP/s (AVX-512 loop: %.1f; %%meas is against the AVX2 loop)\n", 32 * mhz / 1000, mhz / 1000, m, w }'
echo "rounds: $rounds alternating processes per runner and case; figure = median of per-process medians"
echo

echo "(a) latency (ms) and (d) GFLOP/s"
printf '%-30s %3s %10s %10s %7s %9s %9s %7s %7s %9s' model thr nnpipe ORT ratio "nnp GF/s" "ORT GF/s" "%nom" "%meas" "ratio-min"
[ -n "$base" ] && printf ' %10s %8s' "base" "new/base"
echo
for t in $threads_list; do
  echo "$cases" | while read -r label model shape k; do
    [ -n "$label" ] || continue
    mf=$(model_file "$model")
    [ -f "$mf" ] || { printf '%-30s %s\n' "$label" "missing (tools/fetch-models.sh)"; continue; }
    # (QUICK: a third, at least 2: nnp-ort prints no latency for one run)
    [ "$quick" = 1 ] && k=$(( (k + 2) / 3 )) && [ "$k" -lt 2 ] && k=2
    # shellcheck disable=SC2046
    flops=$("$nnpipe" inspect "$mf" $(shape_args "$shape") 2>/dev/null | sed -n 's/^FLOPs: \([0-9]*\).*/\1/p')
    : > "$tmp/n" ; : > "$tmp/o" ; : > "$tmp/b"
    nr=$rounds
    # untimed runs first: enough for a CPU stage of several threads to
    # measure its nodes (10 runs; 3 when a run takes 50 ms or more:
    # docs/architecture.md), the same for ONNX Runtime
    w=10
    case $label in isnet*) nr=$heavy_rounds; w=3 ;; esac
    r=1
    while [ $r -le "$nr" ]; do
      if [ -n "$base" ]; then
        case $((r % 3)) in 1) order="n b o" ;; 2) order="o n b" ;; *) order="b o n" ;; esac
      elif [ $((r % 2)) -eq 1 ]; then order="n o"; else order="o n"; fi
      # every runner of a round on the same cores, the cores rotating
      # with the rounds (below all of them)
      pin=
      if [ "${PIN:-1}" = 1 ] && [ "$t" -lt "$cores" ] && command -v taskset >/dev/null; then
        c0=$(( (r - 1) % (cores - t + 1) ))
        pin="taskset -c $c0-$((c0 + t - 1))"
      fi
      for who in $order; do
        # shellcheck disable=SC2046
        if [ $who = n ]; then
          $pin "$nnpipe" run "$mf" $(shape_args "$shape") --threads "$t" --warmup "$w" --repeat "$k" 2>&1 | latmin >> "$tmp/n"
        elif [ $who = b ]; then
          $pin "$base" run "$mf" $(shape_args "$shape") --threads "$t" --repeat "$k" 2>&1 | latmin >> "$tmp/b"
        else
          $pin "$ort" "$mf" $(shape_args "$shape") --threads "$t" --warmup "$w" --repeat "$k" 2>&1 | latmin >> "$tmp/o"
        fi
      done
      r=$((r + 1))
    done
    n=$(cut -d' ' -f1 "$tmp/n" | median_of)
    o=$(cut -d' ' -f1 "$tmp/o" | median_of)
    nmin=$(cut -d' ' -f2 "$tmp/n" | sort -g | head -1)
    omin=$(cut -d' ' -f2 "$tmp/o" | sort -g | head -1)
    b=$(cut -d' ' -f1 "$tmp/b" | median_of)
    awk -v l="$label" -v t="$t" -v n="$n" -v o="$o" -v f="${flops:-0}" -v mhz="$mhz" -v m="$meas" \
        -v nm="${nmin:-0}" -v om="${omin:-0}" -v b="$b" 'BEGIN {
      peak = 32 * mhz / 1000 * t; mpeak = m * t;   # GFLOP/s
      gn = n > 0 ? f / (n * 1e6) : 0; go = o > 0 ? f / (o * 1e6) : 0;
      printf "%-30s %3d %10.3f %10.3f %7.3f %9.1f %9.1f %6.1f%% %6.1f%% %9.3f", l, t, n, o, (o > 0 ? n / o : 0), gn, go, (peak > 0 ? 100 * gn / peak : 0), (mpeak > 0 ? 100 * gn / mpeak : 0), (om > 0 ? nm / om : 0);
      if (b != "") printf " %10.3f %8.3f", b, (b > 0 ? n / b : 0);
      printf "\n" }'
  done
done
echo "    ratio = nnpipe / ORT (< 1: nnpipe faster); %nom = nnpipe GFLOP/s / (32 x cpu MHz x threads);"
echo "    %meas = nnpipe GFLOP/s / (measured FMA peak x threads); FLOPs of the unfused graph (nnpipe inspect);"
echo "    ratio-min = fastest nnpipe run / fastest ORT run over all processes (least disturbed by other load)"
[ -n "$base" ] && echo "    base = BASE_BUILD's nnpipe in the same rounds; new/base < 1: this build faster"
echo

echo "(b) pipeline throughput: detector 1x3x640x640, two 1-thread stages vs ORT with 2 threads"
det=$models/ch_PP-OCRv4_det_infer.onnx
plan=$tmp/det.plan
if [ -n "$only" ] && ! echo det-640x640 | grep -q -- "$only"; then
  echo "    not run (MODELS=$only)"
elif [ -f "$det" ] && "$nnpipe" split "$det" --shape x=1,3,640,640 --stages 2 --devices cpu:1,cpu:1 \
     --profile -o "$plan" > "$tmp/split.txt" 2>&1; then
  # per-stage times, measured one after the other (no contention): the ideal
  # pipeline rate is 1 / slowest stage
  "$nnpipe" run "$det" --shape x=1,3,640,640 --plan "$plan" --repeat 10 > "$tmp/plan.txt" 2>&1
  sed -n '/^stage/,/^whole/p' "$tmp/plan.txt" | sed 's/^/    /'
  slow=$(awk '/^stage/ { on = 1; next } on && /^[0-9]/ { if ($NF > m) m = $NF } END { print m + 0 }' "$tmp/plan.txt")
  plugdir=$build/plugins
  fps_gst=""
  if [ -f "$plugdir/libgstnnpipe.so" ] && command -v gst-launch-1.0 >/dev/null 2>&1; then
    # frames per second of the real pipeline (nnpipeline: one streaming
    # thread per stage, queues between them), start-up cancelled by
    # timing N2 and N1 frames
    gst_time () {
      s0=$(date +%s.%N)
      GST_PLUGIN_PATH=$plugdir gst-launch-1.0 -q videotestsrc num-buffers="$1" \
        ! video/x-raw,format=RGB,width=640,height=640 ! nnconvert \
        ! nnpipeline model="$det" plan="$plan" pin=true ! fakesink >/dev/null 2>&1 || return 1
      s1=$(date +%s.%N)
      echo "$s0 $s1" | awk '{ print $2 - $1 }'
    }
    n1=10 n2=50
    [ "$quick" = 1 ] && n2=30
    t1=$(gst_time $n1) && t2=$(gst_time $n2) && \
      fps_gst=$(awk -v a="$t1" -v b="$t2" -v n1=$n1 -v n2=$n2 'BEGIN { if (b > a) printf "%.2f", (n2 - n1) / (b - a) }')
  fi
  : > "$tmp/o2"
  r=1
  while [ $r -le "$rounds" ]; do
    "$ort" "$det" --shape x=1,3,640,640 --threads 2 --repeat 8 2>&1 | lat >> "$tmp/o2"
    r=$((r + 1))
  done
  o2=$(median_of < "$tmp/o2")
  awk -v s="$slow" -v o="$o2" -v g="$fps_gst" 'BEGIN {
    fo = o > 0 ? 1000 / o : 0; fs = s > 0 ? 1000 / s : 0;
    printf "    ORT, 2 intra-op threads:               %7.2f frames/s (%.3f ms/frame)\n", fo, o;
    printf "    nnpipe 2 x 1 thread, ideal (1/slowest): %7.2f frames/s  = %.2fx ORT\n", fs, (fo > 0 ? fs / fo : 0);
    if (g != "") printf "    nnpipeline 2 x 1 thread, measured:      %7.2f frames/s  = %.2fx ORT\n", g, (fo > 0 ? g / fo : 0);
    else print "    nnpipeline measured: TODO (needs the GStreamer plugin in BUILD_DIR/plugins and gst-launch-1.0)" }'
else
  echo "    TODO: \`nnpipe split\` failed or the detector is missing; see $tmp/split.txt"
fi
echo

echo "(c) peak RSS (one process: load, prepare, warm-up + 1 run; threads 1)"
printf '%-30s %12s %12s\n' model "nnpipe MiB" "ORT MiB"
echo "$cases" | while read -r label model shape k; do
  [ -n "$label" ] || continue
  mf=$(model_file "$model")
  [ -f "$mf" ] || continue
  if [ -x /usr/bin/time ]; then
    # shellcheck disable=SC2046
    /usr/bin/time -f %M -o "$tmp/rn" "$nnpipe" run "$mf" $(shape_args "$shape") --repeat 1 >/dev/null 2>&1
    # shellcheck disable=SC2046
    /usr/bin/time -f %M -o "$tmp/ro" "$ort" "$mf" $(shape_args "$shape") --threads 1 --repeat 1 >/dev/null 2>&1
    awk -v l="$label" -v a="$(tail -1 "$tmp/rn")" -v b="$(tail -1 "$tmp/ro")" \
      'BEGIN { printf "%-30s %12.1f %12.1f\n", l, a / 1024, b / 1024 }'
  else
    printf '%-30s %s\n' "$label" "/usr/bin/time missing"
  fi
done

#!/bin/sh
# Pipeline-parallel throughput of the text detector (issue 4's benchmark):
# 1x3x640x640 frames, two single-thread stages on two cores (nnpipeline
# stages=2 devices=cpu:1,cpu:1) vs the whole model on one thread and on two
# threads.  Prints frames/s of each and the ratios; the target is >= 1.85x
# the one-thread whole model.
#
#   benchmarks/pipeline.sh [FRAMES [SIZE]]        (default 30 frames, 640)
#
# Every configuration runs the same gst-launch line on frames converted once
# beforehand (videotestsrc ! nnconvert ! filesink):
#   filesrc ! other/tensors,... ! queue ! nnpipeline ... ! fakesink
# and reads nnpipeline's final nnpipeline-stats message: steady-fps, the
# frames between the first and the last output over that time (model loading,
# stage set-up and the first frame's trip through the stages are not
# counted).  The whole model is nnpipeline with one stage, i.e. one
# nnstage running the whole model with threads=1 (devices=cpu:1) or
# threads=2 (devices=cpu:2).  A warm-up run fills the profile cache.
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), PIN=1 to pin stage threads to cores (nnpipeline pin=true),
# ROUNDS (default 3: each configuration runs ROUNDS times in rotating order;
# the figures are medians).
set -eu

me=pipeline.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
model=$models/ch_PP-OCRv4_det_infer.onnx
frames=${1:-30}
size=${2:-640}
pin=false
[ "${PIN:-0}" = 1 ] && pin=true

nnp_need_models "$(basename "$model")"
nnp_use_plugin

rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The input: FRAMES converted frames in one raw tensor file, made once, so that
# the measured pipelines do no pre-processing (with two busy stages on two
# cores, a videotestsrc ! nnconvert upstream would steal time from them while
# the one-thread baseline has a spare core for it).
bytes=$((3 * size * size * 4))
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
  video/x-raw,format=RGB,width="$size",height="$size",framerate=30/1 ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
  filesink location="$tmp/in.raw"

# run STAGES DEVICES -> prints frames/s
run () {
  gst-launch-1.0 -m filesrc location="$tmp/in.raw" blocksize="$bytes" ! \
    "other/tensors,format=static,num_tensors=1,types=float32,dimensions=$size:$size:3:1,framerate=30/1" ! \
    queue ! nnpipeline model="$model" stages="$1" devices="$2" pin="$pin" stats-interval=0 ! \
    fakesink 2>&1 |
    sed -n 's/.*nnpipeline-stats, final=(boolean)true.*steady-fps=(double)\([0-9.e+-]*\).*/\1/p'
}

echo "detector 1x3x${size}x${size}, $frames frames, $(nproc) cores, pin=$pin, $rounds rounds (medians)"
run 1 cpu:1 > /dev/null    # warm-up (fills the profile cache)
: > "$tmp/one"; : > "$tmp/two"; : > "$tmp/pipe"
r=0
while [ "$r" -lt "$rounds" ]; do
  # rotate the order so that no configuration always runs first
  case $((r % 3)) in
    0) order="one two pipe" ;;
    1) order="two pipe one" ;;
    *) order="pipe one two" ;;
  esac
  for c in $order; do
    case $c in
      one) v=$(run 1 cpu:1) ;;
      two) v=$(run 1 cpu:2) ;;
      pipe) v=$(run 2 cpu:1,cpu:1) ;;
    esac
    if [ -z "$v" ]; then
      echo "pipeline.sh: a run failed (no final nnpipeline-stats message)" >&2
      exit 1
    fi
    echo "$v" >> "$tmp/$c"
  done
  r=$((r + 1))
done
one=$(nnp_median < "$tmp/one")
two=$(nnp_median < "$tmp/two")
pipe=$(nnp_median < "$tmp/pipe")
echo "runs (frames/s): 1 thread: $(tr '\n' ' ' < "$tmp/one")| 2 threads: $(tr '\n' ' ' < "$tmp/two")| 2 stages: $(tr '\n' ' ' < "$tmp/pipe")"
awk -v one="$one" -v two="$two" -v pipe="$pipe" 'BEGIN {
  printf "whole model, nnstage threads=1 : %7.3f frames/s  (1.00x)\n", one
  printf "whole model, nnstage threads=2 : %7.3f frames/s  (%.2fx)\n", two, two / one
  printf "nnpipeline stages=2 cpu:1,cpu:1: %7.3f frames/s  (%.2fx the 1-thread model, %.2fx the 2-thread model)\n", pipe, pipe / one, pipe / two
  printf "target >= 1.85x: %s\n", (pipe / one >= 1.85) ? "met" : "not met"
}'

#!/bin/sh
# Pipeline-parallel throughput of the text detector (issue 4's benchmark):
# 1x3x640x640 frames, two single-thread stages on two cores (nnpipeline
# stages=2 devices=cpu:1,cpu:1) vs the whole model on one thread and on two
# threads.  Prints frames/s of each and the ratios; the target is >= 1.85x
# the one-thread whole model.
#
#   benchmarks/pipeline.sh [FRAMES [SIZE]]        (default 30 frames, 640)
#
# Every configuration runs the same gst-launch line
#   videotestsrc ! nnconvert ! queue ! nnpipeline ... ! fakesink
# and reads nnpipeline's final nnpipeline-stats message (frames out / time
# from the first input buffer to EOS, so model loading and stage set-up are
# not counted).  The whole model is nnpipeline with one stage, i.e. one
# nnstage running the whole model with threads=1 (devices=cpu:1) or
# threads=2 (devices=cpu:2).  A warm-up run fills the profile cache.
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), PIN=1 to pin stage threads to cores (nnpipeline pin=true).
set -eu

me=pipeline.sh
. "$(dirname "$0")/../pipelines/common.sh"
model=$models/ch_PP-OCRv4_det_infer.onnx
frames=${1:-30}
size=${2:-640}
pin=false
[ "${PIN:-0}" = 1 ] && pin=true

nnp_need_models "$(basename "$model")"
nnp_use_plugin

# run STAGES DEVICES -> prints frames/s
run () {
  gst-launch-1.0 -m videotestsrc num-buffers="$frames" pattern=ball ! \
    video/x-raw,format=RGB,width="$size",height="$size",framerate=30/1 ! \
    nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! queue ! \
    nnpipeline model="$model" stages="$1" devices="$2" pin="$pin" stats-interval=0 ! \
    fakesink 2>&1 |
    sed -n 's/.*nnpipeline-stats, final=(boolean)true.*fps=(double)\([0-9.e+-]*\).*/\1/p'
}

echo "detector 1x3x${size}x${size}, $frames frames, $(nproc) cores, pin=$pin"
run 1 cpu:1 > /dev/null    # warm-up
one=$(run 1 cpu:1)
two=$(run 1 cpu:2)
pipe=$(run 2 cpu:1,cpu:1)
if [ -z "$one" ] || [ -z "$two" ] || [ -z "$pipe" ]; then
  echo "pipeline.sh: a run failed (no final nnpipeline-stats message)" >&2
  exit 1
fi
awk -v one="$one" -v two="$two" -v pipe="$pipe" 'BEGIN {
  printf "whole model, nnstage threads=1 : %7.3f frames/s  (1.00x)\n", one
  printf "whole model, nnstage threads=2 : %7.3f frames/s  (%.2fx)\n", two, two / one
  printf "nnpipeline stages=2 cpu:1,cpu:1: %7.3f frames/s  (%.2fx the 1-thread model, %.2fx the 2-thread model)\n", pipe, pipe / one, pipe / two
  printf "target >= 1.85x: %s\n", (pipe / one >= 1.85) ? "met" : "not met"
}'

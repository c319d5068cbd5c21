#!/bin/sh
# Run the text detector as a pipeline of stages with nnpipeline and print
# the plan and the stats messages (gst-launch-1.0 -m).
#
#   pipelines/split.sh [STAGES [DEVICES [FRAMES [SIZE]]]]
#
# Defaults: 2 stages on "cpu:1,cpu:1" (two single-thread stages), 30
# frames of 640x640.  DEVICES is nnpipeline's device list, the same as
# `nnpipe split --devices`: cpu[:THREADS] or opencl[:N|:NAME] items,
# comma-separated, e.g. "cpu,opencl" (the partitioner balances the CPU and
# the OpenCL device; see docs/pipeline.md).  Frames come from videotestsrc through nnconvert
# (ImageNet mean/std, float32 1x3xSIZExSIZE).  With NNP_INPUT=FILE.f32 the
# frames are read from a raw float32 tensor file instead
# (filesrc ! other/tensors caps ! nnpipeline).  Look for:
#   nnpipeline-plan   stage count; per stage device, threads, node count,
#                     first/last node, predicted ms, crossing bytes
#   nnpipeline-stats  every stats-interval ms: per-stage busy %, frames,
#                     throughput, queue fill; final=true at EOS
#
# Environment: NNP_BUILD_DIR (build tree holding plugins/, default build),
# NNP_MODELS_DIR (default .cache/models, filled by tools/fetch-models.sh).
set -eu

me=split.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
model=$models/ch_PP-OCRv4_det_infer.onnx
stages=${1:-2}
devices=${2:-cpu:1,cpu:1}
frames=${3:-30}
size=${4:-640}

nnp_need_models "$(basename "$model")"
nnp_use_plugin

if [ -n "${NNP_INPUT:-}" ]; then
  bytes=$((3 * size * size * 4))
  set -x
  exec gst-launch-1.0 -m filesrc location="$NNP_INPUT" blocksize=$bytes ! \
    "other/tensors,format=static,num_tensors=1,types=float32,dimensions=$size:$size:3:1,framerate=0/1" ! \
    nnpipeline model="$model" stages="$stages" devices="$devices" stats-interval=1000 ! \
    fakesink
fi

set -x
exec gst-launch-1.0 -m videotestsrc num-buffers="$frames" pattern=ball ! \
  video/x-raw,format=RGB,width="$size",height="$size",framerate=30/1 ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
  nnpipeline model="$model" stages="$stages" devices="$devices" stats-interval=1000 ! \
  fakesink

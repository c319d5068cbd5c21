#!/bin/sh
# nnstage's output must be bit-identical to `nnpipe run` on the same input:
#   1. the tiny dynamic conv model (make-models.py) at 20x10, through
#      filesrc ! other/tensors ! nnstage ! filesink;
#   2. pipelines/stage.sh (the direction classifier; its model missing is a
#      failure: run tools/fetch-models.sh).
# usage: stage-vs-cli.sh NNPIPE_CLI TEST_MODELS_DIR WORKDIR
set -eu
cli=$1
tmodels=$2
work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
models=${NNP_MODELS_DIR:-$root/.cache/models}
sh "$root/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
cd "$work"

# 1x3x10x20 float32 input from a test frame (600 floats, 2400 bytes)
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! \
  video/x-raw,format=RGB,width=20,height=10 ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! filesink location=conv-in.f32
gst-launch-1.0 -q filesrc location=conv-in.f32 blocksize=2400 ! \
  other/tensors,format=static,num_tensors=1,types=float32,dimensions=20:10:3:1,framerate=0/1 ! \
  nnstage "model=$tmodels/conv-relu-add.onnx" ! filesink location=conv-gst.f32
"$cli" run "$tmodels/conv-relu-add.onnx" --shape x=1,3,10,20 --input x=conv-in.f32 \
  --output-dir conv-cli >/dev/null
cmp conv-gst.f32 conv-cli/y.raw
echo "ok: conv-relu-add 1x3x10x20: nnstage == nnpipe run ($(wc -c <conv-gst.f32) bytes)"

if [ ! -f "$models/ch_ppocr_mobile_v2.0_cls_infer.onnx" ]; then
  echo "FAIL: no classifier model in $models: run tools/fetch-models.sh"
  exit 1
fi
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! \
  video/x-raw,format=RGB,width=192,height=48 ! \
  nnconvert mean=0.5 std=0.5 ! filesink location=cls-in.f32
NNP_BUILD_DIR=${NNP_BUILD_DIR:-$root/build} sh "$root/pipelines/stage.sh" cls-in.f32 cls-gst.f32
"$cli" run "$models/ch_ppocr_mobile_v2.0_cls_infer.onnx" --shape x=1,3,48,192 \
  --input x=cls-in.f32 --output-dir cls-cli >/dev/null
cmp cls-gst.f32 cls-cli/*.raw
echo "ok: classifier via pipelines/stage.sh: nnstage == nnpipe run"

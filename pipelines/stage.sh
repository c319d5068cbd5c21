#!/bin/sh
# Run one model on a raw tensor file with nnstage: the smallest nnpipe
# pipeline (filesrc ! caps ! nnstage ! filesink), as in nnstage's docs.
#
#   pipelines/stage.sh [INPUT.f32 [OUTPUT.f32]]
#
# The model is PaddleOCR's text direction classifier
# (ch_ppocr_mobile_v2.0_cls_infer.onnx): input x, float32 1x3x48x192
# (NNStreamer dimensions 192:48:3:1, 110592 bytes), output 1x2 float32
# scores (0 and 180 degrees).  INPUT.f32 holds raw little-endian float32
# tensors back to back, one per buffer; without it the script makes one
# from a videotestsrc frame with nnconvert.  Prints the scores of each
# tensor on stdout and writes them to OUTPUT.f32 (default stage-out.f32).
#
# Environment: NNP_BUILD_DIR (build tree holding plugins/, default build),
# NNP_MODELS_DIR (default .cache/models, filled by tools/fetch-models.sh).
#
# The same as a gst-launch line:
#   gst-launch-1.0 filesrc location=in.f32 blocksize=110592 ! \
#     other/tensors,format=static,num_tensors=1,types=float32,dimensions=192:48:3:1,framerate=0/1 ! \
#     nnstage model=ch_ppocr_mobile_v2.0_cls_infer.onnx ! filesink location=stage-out.f32
set -eu

me=stage.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
model=$models/ch_ppocr_mobile_v2.0_cls_infer.onnx
out=${2:-stage-out.f32}
size=110592    # 1 * 3 * 48 * 192 * sizeof (float)

nnp_need_models "$(basename "$model")"
nnp_use_plugin

tmp=
if [ $# -ge 1 ]; then
  in=$1
else
  # an input tensor made from a test frame: 192x48 RGB, (x/255 - 0.5) / 0.5
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  in=$tmp/in.f32
  gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! \
    video/x-raw,format=RGB,width=192,height=48 ! \
    nnconvert mean=0.5 std=0.5 ! filesink "location=$in"
fi

bytes=$(wc -c <"$in")
if [ "$bytes" -eq 0 ] || [ $((bytes % size)) -ne 0 ]; then
  echo "stage.sh: $in has $bytes bytes, not a multiple of $size (1x3x48x192 float32)" >&2
  exit 2
fi

gst-launch-1.0 -q filesrc "location=$in" blocksize=$size ! \
  other/tensors,format=static,num_tensors=1,types=float32,dimensions=192:48:3:1,framerate=0/1 ! \
  nnstage "model=$model" ! filesink "location=$out"

# two float32 scores per input tensor
od -A n -t f4 -w8 -v "$out"

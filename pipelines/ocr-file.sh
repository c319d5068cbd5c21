#!/bin/sh
# OCR on any image or video file.
#
#   pipelines/ocr-file.sh FILE [OUTPUT]
#
# Decodes FILE with decodebin (PNG, JPEG, MP4, ...), runs PaddleOCR's
# PP-OCRv4 detector and recogniser through nnpipe on every frame and prints
# one line per text box on stdout: the text, a tab, the score, a tab, the
# box corners "x0,y0 x1,y1 x2,y2 x3,y3" in frame pixels.  Writes the first
# annotated frame to OUTPUT (default ocr-file.png).
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), NNP_OCR_MAX_SIZE (frames are scaled down to fit this
# square for the detector, default 960, as PaddleOCR's limit_side_len).
set -eu

me=ocr-file.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
max=${NNP_OCR_MAX_SIZE:-960}

if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 FILE [OUTPUT.png]" >&2
  exit 2
fi
file=$1
out=${2:-ocr-file.png}
nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx \
  ppocr_keys_v1.txt
nnp_use_plugin

# imagefreeze is not needed: a still image is a one-frame stream
exec gst-launch-1.0 -q \
  filesrc "location=$file" ! decodebin ! videoconvert ! video/x-raw,format=RGB ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    width="$max" height="$max" keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
  nnstage "model=$models/ch_PP-OCRv4_det_infer.onnx" ! \
  nndbdecode ! \
  nncrop channel-order=bgr ! \
  nnstage "model=$models/ch_PP-OCRv4_rec_infer.onnx" ! \
  nnctcdecode "keys=$models/ppocr_keys_v1.txt" location=- ! \
  nnoverlay ! videoconvert ! pngenc snapshot=true ! filesink "location=$out"

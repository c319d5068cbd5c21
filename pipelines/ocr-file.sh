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
# .cache/models), NNP_OCR_MAX_SIZE (frames larger than this square are
# scaled down to fit it for the detector, default 960, as PaddleOCR's
# limit_side_len; smaller frames are scaled up by at most
# NNP_OCR_MAX_UPSCALE, default 1.5; the detector input is padded only to
# a multiple of 32).  Measured on tests/data/ocr-real (docs/ocr.md).
set -eu

me=ocr-file.sh
. "$(dirname "$0")/common.sh"
max=${NNP_OCR_MAX_SIZE:-960}
upscale=${NNP_OCR_MAX_UPSCALE:-1.5}

if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 FILE [OUTPUT.png]" >&2
  exit 2
fi
file=$1
out=${2:-ocr-file.png}
nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx \
  ppocr_keys_v1.txt
# the text direction classifier (NNP_OCR_CLS=0: left out): regions it
# labels 180 are turned before recognition
if [ "${NNP_OCR_CLS:-1}" != 0 ]; then
  nnp_need_models ch_ppocr_mobile_v2.0_cls_infer.onnx
  set -- nncrop channel-order=bgr max-width=480 margin=0.1 ! \
    nnstage "model=$models/ch_ppocr_mobile_v2.0_cls_infer.onnx" ! \
    nnclassdecode labels=0,180 !
else
  set --
fi
nnp_use_plugin

# imagefreeze is not needed: a still image is a one-frame stream
exec gst-launch-1.0 -q \
  filesrc "location=$file" ! decodebin ! videoconvert ! video/x-raw,format=RGB ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    width="$max" height="$max" keep-aspect-ratio=true multiple-of=32 \
    max-upscale="$upscale" pad-to-size=false keep-frame=true ! \
  nnstage "model=$models/ch_PP-OCRv4_det_infer.onnx" ! \
  nndbdecode threshold=0.2 ! "$@" \
  nncrop channel-order=bgr margin=0.1 ! \
  nnstage "model=$models/ch_PP-OCRv4_rec_infer.onnx" ! \
  nnctcdecode "keys=$models/ppocr_keys_v1.txt" location=- ! \
  nnoverlay ! videoconvert ! pngenc snapshot=true ! filesink "location=$out"

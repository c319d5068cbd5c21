#!/bin/sh
# Text direction classification (PaddleOCR's ch_ppocr_mobile_v2.0_cls).
#
#   pipelines/classify.sh [TEXT] [ANGLE] [OUTPUT.png]
#
# Renders TEXT (default "Hello World 123") on a 320x48 frame (a text line), turns it by
# ANGLE (0 or 180, default 0) with videoflip, finds the text with the
# detector, crops it as the OCR chain does (height 48 at its true aspect
# ratio, padded on the right) and runs the direction classifier on the
# crop through nnpipe; prints the label ("0" or "180"), a tab and its score
# per text region on stdout; writes the annotated frame to OUTPUT (default
# classify.png).  The classifier was trained on such crops: fed the whole
# frame (a short word in a wide white line, squeezed to 192x48) it answered
# 0 for "Hello" turned by 180.
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models).
#
# The same as a gst-launch line (ANGLE 180; ANGLE 0 is video-direction=identity):
#   gst-launch-1.0 videotestsrc num-buffers=1 pattern=white ! video/x-raw,width=320,height=48 ! \
#     textoverlay text="Hello World 123" font-desc="Sans 28" color=0xff000000 valignment=center \
#       draw-shadow=false draw-outline=false ! \
#     videoflip video-direction=180 ! videoconvert ! video/x-raw,format=RGB ! \
#     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
#       keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
#     nnstage model=ch_PP-OCRv4_det_infer.onnx ! nndbdecode ! \
#     nncrop channel-order=bgr max-width=480 margin=0.1 ! \
#     nnstage model=ch_ppocr_mobile_v2.0_cls_infer.onnx ! \
#     nnclassdecode labels=0,180 location=- ! nnoverlay ! videoconvert ! \
#     pngenc snapshot=true ! filesink location=classify.png
set -eu

me=classify.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
text=${1:-Hello World 123}
angle=${2:-0}
out=${3:-classify.png}

case $angle in
  0) flip=identity ;;
  180) flip=180 ;;
  *) echo "classify.sh: ANGLE must be 0 or 180" >&2; exit 2 ;;
esac
nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx
nnp_use_plugin
markup=$(nnp_markup "$text")

exec gst-launch-1.0 -q \
  videotestsrc num-buffers=1 pattern=white ! video/x-raw,width=320,height=48 ! \
  textoverlay "text=$markup" font-desc="Sans 28" color=0xff000000 valignment=center \
    draw-shadow=false draw-outline=false ! \
  videoflip video-direction=$flip ! videoconvert ! video/x-raw,format=RGB ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
  nnstage "model=$models/ch_PP-OCRv4_det_infer.onnx" ! nndbdecode ! \
  nncrop channel-order=bgr max-width=480 margin=0.1 ! \
  nnstage "model=$models/ch_ppocr_mobile_v2.0_cls_infer.onnx" ! \
  nnclassdecode labels=0,180 location=- ! \
  nnoverlay ! videoconvert ! pngenc snapshot=true ! filesink "location=$out"

#!/bin/sh
# Heterogeneous OCR: the text detector on an OpenCL device, the recogniser
# on the CPU (issue 6).  Same output as pipelines/ocr.sh: one line per text
# box -- the text, a tab, the score, a tab, the box corners -- and the
# annotated frame in OUTPUT.png.
#
#   pipelines/ocr-opencl.sh [TEXT] [OUTPUT.png]
#
# Environment: as ocr.sh (NNP_BUILD_DIR, NNP_MODELS_DIR, NNP_OCR_WIDTH /
# NNP_OCR_HEIGHT (default 640x480), NNP_OCR_FONT, NNP_OCR_FRAMES), and
# NNP_OCL_DEVICE: the OpenCL device of the detector, as nnstage's
# device-index (a number) or device-name (a substring of the device or
# platform name, e.g. "portable" for PoCL); unset = the first GPU, else
# the first device.  NNP_OCL_FALLBACK=true runs the detector on the CPU
# (with a warning) when there is no OpenCL device.
#
# The detector's output map comes back to the host once per frame (the
# DB decoder reads it there); nothing else crosses.  As a gst-launch line:
#   gst-launch-1.0 videotestsrc num-buffers=1 pattern=white ! \
#     video/x-raw,width=640,height=480 ! textoverlay text="Hello World 123" ... ! \
#     videoconvert ! video/x-raw,format=RGB ! \
#     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
#       keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
#     nnstage model=ch_PP-OCRv4_det_infer.onnx device=opencl ! \
#     nndbdecode threshold=0.2 unclip-ratio=2.0 ! \
#     nncrop channel-order=bgr ! nnstage model=ch_PP-OCRv4_rec_infer.onnx device=cpu ! \
#     nnctcdecode keys=ppocr_keys_v1.txt location=- ! nnoverlay ! videoconvert ! \
#     pngenc ! filesink location=ocr.png
set -eu

me=ocr-opencl.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
text=${1:-Hello World 123}
out=${2:-ocr.png}

nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx \
  ppocr_keys_v1.txt
nnp_use_plugin

# which OpenCL device
dev=${NNP_OCL_DEVICE:-}
case "$dev" in
  "") devprop= ;;
  *[!0-9]*) devprop="device-name=$dev" ;;
  *) devprop="device-index=$dev" ;;
esac

frames=${NNP_OCR_FRAMES:-1}
nnp_png_sink "$out" "$frames"

markup=$(nnp_markup "$text")

# $devprop is one word or empty: left unquoted on purpose
# shellcheck disable=SC2086
exec gst-launch-1.0 -q \
  videotestsrc num-buffers="$frames" pattern="${NNP_OCR_PATTERN:-white}" ! \
  video/x-raw,width="${NNP_OCR_WIDTH:-640}",height="${NNP_OCR_HEIGHT:-480}" ! \
  textoverlay "text=$markup" "font-desc=${NNP_OCR_FONT:-Sans 36}" \
    color="${NNP_OCR_COLOR:-0xff000000}" draw-shadow=false draw-outline=false \
    valignment=center halignment=center ! \
  videoconvert ! video/x-raw,format=RGB ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
  nnstage "model=$models/ch_PP-OCRv4_det_infer.onnx" device=opencl $devprop \
    fallback="${NNP_OCL_FALLBACK:-false}" ! \
  nndbdecode threshold=0.2 unclip-ratio=2.0 ! \
  nncrop channel-order=bgr ! \
  nnstage "model=$models/ch_PP-OCRv4_rec_infer.onnx" device=cpu ! \
  nnctcdecode "keys=$models/ppocr_keys_v1.txt" location=- ! \
  nnoverlay ! videoconvert ! pngenc ! $sink "location=$location"

#!/bin/sh
# OCR on a rendered test video: the README's main job.
#
#   pipelines/ocr.sh [TEXT] [OUTPUT.png]
#
# Renders TEXT (default "Hello World 123") onto a test video frame with
# videotestsrc + textoverlay, runs PaddleOCR's PP-OCRv4 detector and
# recogniser through nnpipe (detect -> crop -> recognise), prints one line
# per text box on stdout -- the text, a tab, the score, a tab, the box
# corners "x0,y0 x1,y1 x2,y2 x3,y3" in frame pixels -- and writes the
# annotated frame to OUTPUT.png (default ocr.png).
#
# Environment: NNP_BUILD_DIR (build tree holding plugins/, default build),
# NNP_MODELS_DIR (default .cache/models, filled by tools/fetch-models.sh),
# NNP_OCR_WIDTH / NNP_OCR_HEIGHT (frame size, 640x480), NNP_OCR_FONT
# (Pango font, "Sans 36"), NNP_OCR_PATTERN (videotestsrc pattern, white),
# NNP_OCR_COLOR (text colour 0xAARRGGBB, 0xff000000), NNP_OCR_FRAMES (1;
# more frames print their lines in turn and write OUTPUT-%05d.png),
# NNP_OCR_TURN (videoflip video-direction of the rendered frame, identity;
# 180 renders the text upside down), NNP_OCR_CLS (1: the text direction
# classifier turns upside-down lines before recognition; 0: left out).
#
# The same as a gst-launch line:
#   gst-launch-1.0 videotestsrc num-buffers=1 pattern=white ! \
#     video/x-raw,width=640,height=480 ! \
#     textoverlay text="Hello World 123" font-desc="Sans 36" color=0xff000000 \
#       draw-shadow=false draw-outline=false valignment=center halignment=center ! \
#     videoconvert ! video/x-raw,format=RGB ! \
#     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
#       keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
#     nnstage model=ch_PP-OCRv4_det_infer.onnx ! nndbdecode threshold=0.2 unclip-ratio=2.0 ! \
#     nncrop channel-order=bgr max-width=480 margin=0.1 ! \
#     nnstage model=ch_ppocr_mobile_v2.0_cls_infer.onnx ! nnclassdecode labels=0,180 ! \
#     nncrop channel-order=bgr ! \
#     nnstage model=ch_PP-OCRv4_rec_infer.onnx ! \
#     nnctcdecode keys=ppocr_keys_v1.txt location=- ! nnoverlay ! videoconvert ! \
#     pngenc ! filesink location=ocr.png
set -eu

me=ocr.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
text=${1:-Hello World 123}
out=${2:-ocr.png}

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

# one frame: OUTPUT.png; more: OUTPUT-00000.png, OUTPUT-00001.png, ...
frames=${NNP_OCR_FRAMES:-1}
nnp_png_sink "$out" "$frames"

# textoverlay reads Pango markup: escape it
markup=$(nnp_markup "$text")

exec gst-launch-1.0 -q \
  videotestsrc num-buffers="$frames" pattern="${NNP_OCR_PATTERN:-white}" ! \
  video/x-raw,width="${NNP_OCR_WIDTH:-640}",height="${NNP_OCR_HEIGHT:-480}" ! \
  textoverlay "text=$markup" "font-desc=${NNP_OCR_FONT:-Sans 36}" \
    color="${NNP_OCR_COLOR:-0xff000000}" draw-shadow=false draw-outline=false \
    valignment=center halignment=center ! \
  videoflip video-direction="${NNP_OCR_TURN:-identity}" ! \
  videoconvert ! video/x-raw,format=RGB ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
  nnstage "model=$models/ch_PP-OCRv4_det_infer.onnx" ! \
  nndbdecode threshold=0.2 unclip-ratio=2.0 ! "$@" \
  nncrop channel-order=bgr ! \
  nnstage "model=$models/ch_PP-OCRv4_rec_infer.onnx" ! \
  nnctcdecode "keys=$models/ppocr_keys_v1.txt" location=- ! \
  nnoverlay ! videoconvert ! pngenc ! $sink "location=$location"

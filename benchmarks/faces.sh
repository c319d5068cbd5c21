#!/bin/sh
# Face detection on real photographs: pipelines/faces.sh against BlazeFace
# with MediaPipe's own decoding on ONNX Runtime and against OpenCV's
# facedetect, on the same hand-annotated photos (tests/data/faces), in one
# run.  Not a test: prints figures (docs/faces.md).
#
#   benchmarks/faces.sh [BUILD_DIR]
#
# Prints precision, recall and F1 (a detection is right when its IoU with an
# annotated face is at least 0.4; one detection per face; detections in the
# truth's "ignore" regions count neither way) for
#   (a) nnpipe        pipelines/faces.sh --json (its default settings)
#   (b) mediapipe     BlazeFace back 256 (and front 128) on ONNX Runtime's C
#                     API (tests/ort/nnp-ort), decoded as MediaPipe does
#                     (benchmarks/faces-eval.py: letterbox, SSD anchors,
#                     sigmoid, score >= 0.5, weighted NMS 0.3)
#   (c) opencv        GStreamer's facedetect (gstreamer1.0-opencv, Haar
#                     cascade, its defaults)
# and the F1 of (a) against each peer; then the same on a composite "group
# photo" (benchmarks/faces-eval.py --group: the one-face photos cut around
# their faces and scaled to 60-pixel faces on a 2400x1600 canvas: far faces).
#
# Environment: NNP_MODELS_DIR (default .cache/models), IOU (default 0.4),
# VERBOSE=1 (each image's detections).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${1:-$top/build}
sh "$top/tools/check-deps.sh" >/dev/null || exit 1
[ -x "$build/tests/nnp-ort" ] || { echo "faces.sh: no $build/tests/nnp-ort (build first)" >&2; exit 2; }

verbose=""
[ "${VERBOSE:-0}" = 0 ] || verbose=--verbose
out=$(NNP_BUILD_DIR=$build /usr/bin/python3 "$top/benchmarks/faces-eval.py" $verbose \
  --iou "${IOU:-0.4}" --nnp-ort "$build/tests/nnp-ort" \
  nnpipe mediapipe:back mediapipe:front opencv)
ratios () {
  printf '%s\n' "$1" | awk '
    / F1 / { for (i = 1; i <= NF; i++) if ($i == "F1") f1[$1] = $(i + 1) }
    END {
      if (f1["nnpipe"] == "") exit
      for (m in f1) if (m != "nnpipe" && f1[m] > 0)
        printf "F1 nnpipe / %s: %.2f\n", m, f1["nnpipe"] / f1[m]
    }'
}
echo "== the hand-annotated photos (tests/data/faces)"
printf '%s\n' "$out"
ratios "$out"
out=$(NNP_BUILD_DIR=$build /usr/bin/python3 "$top/benchmarks/faces-eval.py" $verbose --group \
  --iou "${IOU:-0.4}" --nnp-ort "$build/tests/nnp-ort" \
  nnpipe mediapipe:back mediapipe:front opencv)
echo "== the composite group photo (9 faces of 60 pixels on 2400x1600)"
printf '%s\n' "$out"
ratios "$out"

#!/bin/sh
# Find and hide the faces of any image or video file.
#
#   pipelines/faces.sh [--json FILE.jsonl] [--mode MODE] INPUT [OUTPUT]
#
# Decodes INPUT with decodebin (PNG, JPEG, AVI, WebM, MP4 with a
# decoder...), finds the faces of every frame with MediaPipe's BlazeFace
# (nndetectdecode preset=blazeface), follows them from frame to frame on a
# video (nntrack: each face keeps its track id) and hides them (nnredact,
# MODE pixelate, the default, blur or fill).  The redacted image goes to
# OUTPUT (default faces.png); a video to OUTPUT (default faces.webm) in a
# form chosen by its extension: .webm (VP8 in WebM), .mkv (VP8 in
# Matroska), .avi (Motion JPEG in AVI), .png (one PNG per frame:
# OUTPUT-00000.png, ...).  OUTPUT "-" writes none.
#
# --json FILE.jsonl writes one JSON object per frame ("-": standard output):
#   {"frame": N, "pts": NS, "width": W, "height": H, "objects": [{"label":
#    "face", "score": S, "box": [x0, y0, x1, y1], "track": ID}]}
# with the box in INPUT's pixels and "track" on a video (docs/faces.md).
# Without --json one line per face goes to standard output: PTS (s),
# label, score, box "x0,y0,x1,y1".
#
# The detector, chosen from measurements on the hand-annotated photos of
# tests/data/faces (benchmarks/faces.sh, docs/faces.md): BlazeFace's back
# model (256x256: faces near and far) on the whole frame, letterboxed with
# black as MediaPipe does, faces scoring at least 0.7; on a still image
# larger than 600 pixels, again on overlapping 480x480 tiles of it (a face
# under about 5% of the longer side is too small for the whole frame), all
# faces merged by weighted NMS.
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), NNP_FACES_MODELS (back, the default; front: the 128x128
# model, large faces only; back+front: both, one after the other, merged by
# weighted NMS), NNP_FACES_THRESHOLD (least score of a face for the back
# model, default 0.7), NNP_FACES_FRONT_THRESHOLD (for the front model,
# default 0.5),
# NNP_FACES_TILE (tile side in pixels, 0: no tiles; default auto: 480 on
# still images, none on videos), NNP_FACES_INTERVAL (video: run the
# detector on one frame in N, the tracker predicting the faces between;
# default 1).
set -eu

me=faces.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"

usage () {
  echo "usage: $0 [--json FILE.jsonl] [--mode pixelate|blur|fill] INPUT [OUTPUT]" >&2
  exit 2
}

json=""
mode=pixelate
while [ $# -gt 0 ]; do
  case $1 in
    --json) [ $# -ge 2 ] || usage; json=$2; shift 2 ;;
    --json=*) json=${1#--json=}; shift ;;
    --mode) [ $# -ge 2 ] || usage; mode=$2; shift 2 ;;
    --mode=*) mode=${1#--mode=}; shift ;;
    --) shift; break ;;
    -*) echo "$me: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
file=$1
if [ ! -f "$file" ]; then
  echo "$me: no such file: $file" >&2
  exit 2
fi
case $mode in
  pixelate|blur|fill) ;;
  *) echo "$me: --mode must be pixelate, blur or fill: $mode" >&2; exit 2 ;;
esac
detectors=${NNP_FACES_MODELS:-back}
case $detectors in
  back+front|back|front) ;;
  *) echo "$me: NNP_FACES_MODELS must be back+front, back or front: $detectors" >&2
     exit 2 ;;
esac
back_threshold=${NNP_FACES_THRESHOLD:-0.7}
front_threshold=${NNP_FACES_FRONT_THRESHOLD:-0.5}
for t in "$back_threshold" "$front_threshold"; do
  case $t in
    ''|*[!0-9.]*) echo "$me: NNP_FACES_THRESHOLD and NNP_FACES_FRONT_THRESHOLD must be numbers: $t" >&2
       exit 2 ;;
  esac
done
tile=${NNP_FACES_TILE:-auto}
interval=${NNP_FACES_INTERVAL:-1}
case $interval in
  ''|*[!0-9]*|0) echo "$me: NNP_FACES_INTERVAL must be a number from 1: $interval" >&2
     exit 2 ;;
esac
nnp_need_models face_detection_back_256x256_barracuda.onnx \
  face_detection_front_128x128_barracuda.onnx
nnp_use_plugin

# still image or video?  (gst-typefind-1.0 prints "FILE - CAPS")
kind=$(gst-typefind-1.0 "$file" 2>/dev/null | sed -n 's/.* - \([a-z]*\)\/.*/\1/p' | head -n 1)
if [ "$kind" = image ]; then
  video=0
  out=${2:-faces.png}
else
  video=1
  out=${2:-faces.webm}
fi
# tiles (below): on still images by default, on a video when asked
case $tile in
  auto) if [ $video = 0 ]; then tile=480; else tile=0; fi ;;
  *[!0-9]*|'') echo "$me: NNP_FACES_TILE must be auto or a number of pixels (0: none): $tile" >&2
     exit 2 ;;
esac

# one BlazeFace pass: the frame letterboxed into SIZE x SIZE (NHWC,
# [-1, 1]), the model, the boxes back on the frame; a second pass adds its
# faces to the first's (merge=true: one weighted NMS over both).  q quotes
# a value for the eval below (\ " $ ` escaped).
q () { printf '"%s"' "$(printf '%s' "$1" | sed 's/["\\$`]/\\&/g')"; }
skip=""
[ "$interval" = 1 ] || skip="inference-interval=$interval"
pass () { # MODEL SIZE MERGE THRESHOLD [REGION]
  printf '%s' "nnconvert width=$2 height=$2 keep-aspect-ratio=true layout=nhwc \
    mean=0.5 std=0.5 pad-value=-1 keep-frame=true ${5:-} ! \
    nnstage model=$(q "$models/$1") $skip ! \
    nndetectdecode preset=blazeface threshold=$4 merge=$3"
}
back=face_detection_back_256x256_barracuda.onnx
front=face_detection_front_128x128_barracuda.onnx
case $detectors in
  back) chain="$(pass "$back" 256 false "$back_threshold")" ;;
  front) chain="$(pass "$front" 128 false "$front_threshold")" ;;
  *) chain="$(pass "$back" 256 false "$back_threshold") ! \
       $(pass "$front" 128 true "$front_threshold")" ;;
esac
# tiles: a face under about 5% of the frame's longer side is too small for
# the back model on the whole frame.  Frames larger than 1.25 tiles also
# go through the back model tile by tile (square tiles of TILE pixels, at
# least 20% overlap, larger when that would take over 6 x 6 tiles), the
# faces of all passes merged by weighted NMS.
if [ "$tile" -gt 0 ]; then
  # the frame size, from its caps
  dims=$(gst-launch-1.0 -v filesrc "location=$file" ! decodebin ! videoconvert ! \
    video/x-raw,format=RGB ! fakesink num-buffers=1 2>/dev/null |
    sed -n 's/.*caps = video\/x-raw.*width=(int)\([0-9]*\), height=(int)\([0-9]*\).*/\1 \2/p' |
    head -n 1)
  set -- $dims
  if [ $# = 2 ]; then
    regions=$(echo "$1 $2 $tile" | awk '{
      w = $1; h = $2; t = $3
      if (w <= 1.25 * t && h <= 1.25 * t) exit
      # at most 6 x 6 tiles: larger tiles on very large frames
      do {
        fx = t < w ? t / w : 1; fy = t < h ? t / h : 1
        nx = fx < 1 ? int((w - t) / (0.8 * t) + 0.999) + 1 : 1
        ny = fy < 1 ? int((h - t) / (0.8 * t) + 0.999) + 1 : 1
        t *= 1.25
      } while (nx > 6 || ny > 6)
      for (j = 0; j < ny; j++)
        for (i = 0; i < nx; i++)
          printf "region-x=%.5f,region-y=%.5f,region-width=%.5f,region-height=%.5f\n",
            (nx > 1 ? i * (1 - fx) / (nx - 1) : 0), (ny > 1 ? j * (1 - fy) / (ny - 1) : 0), fx, fy }')
    for region in $regions; do
      chain="$chain ! $(pass "$back" 256 true "$back_threshold" "$(echo "$region" | tr , ' ')")"
    done
  fi
fi
# without --json the last decoder prints its faces
[ -n "$json" ] || chain="$chain location=-"

set -- -q filesrc "location=$file" ! decodebin ! videoconvert ! video/x-raw,format=RGB !
eval "set -- \"\$@\" $chain"
[ $video = 0 ] || set -- "$@" ! nntrack
[ -z "$json" ] || set -- "$@" ! nnmetapublish results=objects "location=$json"
set -- "$@" ! nnredact "mode=$mode" labels=face

if [ "$out" = - ]; then
  set -- "$@" ! fakesink
  exec gst-launch-1.0 "$@"
fi
set -- "$@" ! videoconvert
if [ $video = 0 ]; then
  case $out in
    *.jpg|*.jpeg) set -- "$@" ! jpegenc snapshot=true ! filesink "location=$out" ;;
    *) set -- "$@" ! pngenc snapshot=true ! filesink "location=$out" ;;
  esac
else
  case $out in
    *.png) set -- "$@" ! pngenc ! multifilesink "location=${out%.png}-%05d.png" ;;
    *.webm) set -- "$@" ! vp8enc deadline=1 ! webmmux ! filesink "location=$out" ;;
    *.mkv) set -- "$@" ! vp8enc deadline=1 ! matroskamux ! filesink "location=$out" ;;
    *.avi) set -- "$@" ! jpegenc ! avimux ! filesink "location=$out" ;;
    *) echo "$me: OUTPUT of a video must end in .webm, .mkv, .avi or .png: $out" >&2
       exit 2 ;;
  esac
fi

exec gst-launch-1.0 "$@"

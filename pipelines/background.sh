#!/bin/sh
# Blur or replace the background behind the salient object (a person, a
# product) of an image or a video, with ISNet split over the cores.
#
#   pipelines/background.sh [--mode blur|color|alpha] INPUT [OUTPUT]
#
# Decodes INPUT with decodebin, runs ISNet (imgly's isnet, 1024x1024,
# salient-object segmentation; docs/models.md) on every frame through
# nnpipeline (the model split into stages over the cores: stages=auto) and
# applies its mask to the frame with nnmask: --mode blur (the default)
# blurs the background, color replaces it by green, alpha writes the mask
# into the alpha channel (an RGBA PNG; with a video, for compositor).  An
# image goes to OUTPUT (default background.png), a video to OUTPUT
# (default background.webm: .webm, .mkv, .avi, .png per frame); "-" none.
#
# ISNet is fetched in float16 (isnet_fp16.onnx); until libnnpipe runs
# float16 graphs, a float32 copy made once by tools/onnx-fp32.py
# (python3-onnx) in BUILD_DIR/models-fp32/ is what runs.  About 320 GFLOP a
# frame: tens of seconds a frame on two cores (benchmarks/background.sh).
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), NNP_BG_STAGES (nnpipeline stages=, default auto),
# NNP_BG_DEVICES (nnpipeline devices=, e.g. cpu:1,remote://HOST:7000 for a
# stage on a host running `nnpipe serve`; default: the partitioner's).
set -eu

me=background.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"

usage () {
  echo "usage: $0 [--mode blur|color|alpha] INPUT [OUTPUT]" >&2
  exit 2
}
mode=blur
while [ $# -gt 0 ]; do
  case $1 in
    --mode) [ $# -ge 2 ] || usage; mode=$2; shift 2 ;;
    --mode=*) mode=${1#--mode=}; shift ;;
    --) shift; break ;;
    -*) echo "$me: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
file=$1
[ -f "$file" ] || { echo "$me: no such file: $file" >&2; exit 2; }
case $mode in
  blur|color|alpha) ;;
  *) echo "$me: --mode must be blur, color or alpha: $mode" >&2; exit 2 ;;
esac
stages=${NNP_BG_STAGES:-auto}
devices=${NNP_BG_DEVICES:-}
nnp_need_models isnet_fp16.onnx
nnp_use_plugin

# the float32 copy of the model, made once
model=$build/models-fp32/isnet_fp32.onnx
if [ ! -f "$model" ] || [ "$model" -ot "$models/isnet_fp16.onnx" ]; then
  mkdir -p "$build/models-fp32"
  /usr/bin/python3 "$root/tools/onnx-fp32.py" "$models/isnet_fp16.onnx" "$model.tmp$$" > /dev/null ||
    { rm -f "$model.tmp$$"; echo "$me: could not convert ISNet to float32 (python3-onnx)" >&2; exit 1; }
  mv "$model.tmp$$" "$model"
fi

kind=$(gst-typefind-1.0 "$file" 2>/dev/null | sed -n 's/.* - \([a-z]*\)\/.*/\1/p' | head -n 1)
if [ "$kind" = image ]; then video=0; out=${2:-background.png}; else video=1; out=${2:-background.webm}; fi
format=RGB
[ "$mode" != alpha ] || format=RGBA

# imgly's preprocessing: the frame stretched to 1024x1024, (x / 255 - 0.5)
set -- -q filesrc "location=$file" ! decodebin ! videoconvert ! "video/x-raw,format=$format" ! \
  nnconvert width=1024 height=1024 mean=0.5 std=1.0 keep-frame=true ! \
  nnpipeline "model=$model" "stages=$stages" stats-interval=0
[ -z "$devices" ] || set -- "$@" "devices=$devices"
set -- "$@" ! nnmask "mode=$mode" tensor=0

if [ "$out" = - ]; then
  exec gst-launch-1.0 "$@" ! fakesink
fi
set -- "$@" ! videoconvert
if [ $video = 0 ]; then
  set -- "$@" ! pngenc snapshot=true ! filesink "location=$out"
else
  case $out in
    *.png) set -- "$@" ! pngenc ! multifilesink "location=${out%.png}-%05d.png" ;;
    *.webm) set -- "$@" ! vp8enc deadline=1 ! webmmux ! filesink "location=$out" ;;
    *.mkv) set -- "$@" ! vp8enc deadline=1 ! matroskamux ! filesink "location=$out" ;;
    *.avi) set -- "$@" ! jpegenc ! avimux ! filesink "location=$out" ;;
    *) echo "$me: OUTPUT of a video must end in .webm, .mkv, .avi or .png: $out" >&2; exit 2 ;;
  esac
fi
exec gst-launch-1.0 "$@"

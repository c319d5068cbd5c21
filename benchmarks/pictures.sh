#!/bin/sh
# The pictures of docs/pipeline.md, from a real run of the text detector:
#
#   benchmarks/pictures.sh [OUT_DIR [FRAMES [STAGES [DEVICES]]]]
#
# Defaults: docs/img, 20 frames of 1x3x640x640, 2 stages on cpu:1,cpu:1.
#   1. nnpipe split --svg      OUT_DIR/plan.svg (and the plan nnpipeline runs, in a
#                              temporary folder)
#   2. nnpipeline trace=FILE   OUT_DIR/trace.json (Chrome trace-event JSON:
#                              open it in ui.perfetto.dev or chrome://tracing)
#   3. nnpipe timeline         OUT_DIR/timeline.svg
#   4. both SVGs rendered to PNG in a real browser (headless Chromium,
#      Debian package chromium) to check that they render; the PNGs go to
#      the temporary folder (printed; not for the docs: look at them).
# Not a CI test (it takes the detector a few seconds a frame); the checks
# of the same commands on a small model are tests/plugins/test-trace.py.
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models).
set -eu

me=pictures.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
out=${1:-$root/docs/img}
frames=${2:-20}
stages=${3:-2}
devices=${4:-cpu:1,cpu:1}
size=640
model=$models/ch_PP-OCRv4_det_infer.onnx
nnpipe=$build/tools/nnpipe

[ -f "$model" ] || { echo "pictures.sh: $model missing (tools/fetch-models.sh)" >&2; exit 1; }
[ -x "$nnpipe" ] || { echo "pictures.sh: $nnpipe missing (ninja -C $build)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)   # absolute: chromium opens file:// URLs
work=$(mktemp -d "${TMPDIR:-/tmp}/nnpipe-pictures.XXXXXX")   # plan.json, PNGs: kept
export GST_PLUGIN_PATH="$build/plugins"

# 1. the plan, drawn; nnpipeline runs the same plan file
"$nnpipe" split "$model" --shape x=1,3,$size,$size --stages "$stages" --devices "$devices" \
  -o "$work/plan.json" --svg "$out/plan.svg"

# 2. the run, traced
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
  "video/x-raw,format=RGB,width=$size,height=$size,framerate=30/1" ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
  nnpipeline model="$model" plan="$work/plan.json" trace="$out/trace.json" ! fakesink

# 3. the timeline
"$nnpipe" timeline "$out/trace.json" -o "$out/timeline.svg" \
  --title "text detector 1x3x${size}x${size} on $devices"

# 4. render both
for name in timeline plan; do
  svg=$out/$name.svg
  png=$work/$name.png
  w=$(sed -n 's/.*<svg [^>]*width="\([0-9]*\)".*/\1/p' "$svg" | head -1)
  h=$(sed -n 's/.*<svg [^>]*height="\([0-9]*\)".*/\1/p' "$svg" | head -1)
  command -v chromium >/dev/null 2>&1 || {
    echo "pictures.sh: chromium is not installed (Debian package chromium)" >&2; exit 1; }
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="$w,$h" --screenshot="$png" "file://$svg" >/dev/null 2>&1
  how=chromium
  [ -s "$png" ] || { echo "pictures.sh: $how made no $png" >&2; exit 1; }
  echo "$svg rendered by $how: $png (${w}x${h})"
done

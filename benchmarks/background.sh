#!/bin/sh
# ISNet (pipelines/background.sh's model, 1024x1024, ~320 GFLOP a frame)
# whole against split, in one run: frames/s of
#   whole   one nnstage with every core's thread (threads = nproc)
#   split   nnpipeline stages=auto (one-thread stages over the cores, queues
#           between: pipeline parallelism)
#   remote  nnpipeline stages=2 devices=cpu:1,remote://127.0.0.1:PORT: the
#           second stage in an `nnpipe serve` process (on this host: what a
#           stage on another machine costs in copies and the wire format,
#           not a second machine's cores)
# on FRAMES frames of a photo (imagefreeze).  Each configuration runs with 1
# and with 1 + FRAMES frames; frames/s is FRAMES over the difference (the
# model's loading and preparation cancel out).  Not a test: prints figures
# (docs/faces.md).
#
#   benchmarks/background.sh [BUILD_DIR]
#
# Environment: FRAMES (default 3), NNP_MODELS_DIR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${1:-$top/build}
frames=${FRAMES:-3}
sh "$top/tools/check-deps.sh" >/dev/null || exit 1
export NNP_BUILD_DIR="$build"
nnp_use_plugin
# the float32 model (background.sh makes it; its output here is unused)
photo=/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg
sh "$top/pipelines/background.sh" "$photo" - > /dev/null
model=$build/models-fp32/isnet_fp32.onnx
tmp=$(mktemp -d "${TMPDIR:-/tmp}/background-bench-$$-XXXXXX")
port=$((20000 + $$ % 20000))
"$build/tools/nnpipe" serve "$model" --listen "127.0.0.1:$port" > "$tmp/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
t=0
until grep -q listening "$tmp/serve.log"; do
  sleep 0.2; t=$((t + 1))
  [ $t -lt 300 ] || { echo "background.sh: nnpipe serve did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
done
cores=$(nproc 2>/dev/null || echo 2)

run () { # N STAGE-ELEMENT...
  n=$1; shift
  t0=$(date +%s.%N)
  gst-launch-1.0 -q filesrc "location=$photo" ! decodebin ! imagefreeze "num-buffers=$n" ! \
    videoconvert ! video/x-raw,format=RGB ! \
    nnconvert width=1024 height=1024 mean=0.5 std=1.0 keep-frame=true ! "$@" ! \
    nnmask ! fakesink > /dev/null
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ print $2 - $1 }'
}
for c in whole split remote; do
  case $c in
    whole) set -- nnstage "model=$model" "threads=$cores" ;;
    split) set -- nnpipeline "model=$model" stages=auto stats-interval=0 ;;
    remote) set -- nnpipeline "model=$model" stages=2 "devices=cpu:1,remote://127.0.0.1:$port" \
              stats-interval=0 ;;
  esac
  a=$(run 1 "$@")
  b=$(run $((frames + 1)) "$@")
  echo "$c $a $b $frames" | awk '{ printf "%-7s %.3f frames/s (%.1f s a frame; 1 frame %.1f s, %d frames %.1f s)\n",
    $1, $4 / ($3 - $2), ($3 - $2) / $4, $2, $4 + 1, $3 }' | tee -a "$tmp/res"
done
awk '{ f[$1] = $2 } END {
  printf "split / whole: %.2fx, remote / whole: %.2fx\n", f["split"] / f["whole"], f["remote"] / f["whole"] }' "$tmp/res"

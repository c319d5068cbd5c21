#!/bin/sh
# What a new input shape costs: specialising the recogniser and building its
# CPU stage for a new crop width, cold (a freshly loaded model: weights folded
# and packed again, what every new width cost before the derived-data cache)
# against warm (the same model: folded and packed weights shared by every
# specialisation, lib/graph/derived.h).  Medians over N widths.
#
#   benchmarks/respecialize.sh [MODEL [HEIGHT [N]]]
#
# Default: the PP-OCRv4 recogniser, height 48, widths 192, 224, ... (N = 9).
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models).  Timings are only meaningful on an otherwise idle machine.
set -eu

me=respecialize.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 1 ]; then
  model=$1
else
  nnp_need_models ch_PP-OCRv4_rec_infer.onnx
  model=$models/ch_PP-OCRv4_rec_infer.onnx
fi
height=${2:-48}
n=${3:-9}
[ -f "$model" ] || { echo "$me: no such model: $model" >&2; exit 2; }
[ -f "$build/lib/libnnpipe.so" ] || { echo "$me: build libnnpipe first (ninja -C $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# shellcheck disable=SC2046
cc -O2 -o "$tmp/respecialize" "$top/benchmarks/respecialize.c" -I"$top/include" \
  $(pkg-config --cflags --libs glib-2.0) -L"$build/lib" -lnnpipe \
  -Wl,-rpath,"$build/lib"
echo "$(basename "$model"), height $height, $n new widths from 192 by 32, $(nproc) cores"
"$tmp/respecialize" "$model" "$height" 160 32 "$n"

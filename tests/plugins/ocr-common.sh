# Sourced by test-ocr.sh and test-ocr-opencl.sh (arguments SOURCE_DIR
# BUILD_DIR): sets src, build, models, python and a temporary directory
# $tmp (removed on exit).  Fails (exit 1) naming the Debian package or
# tools/fetch-models.sh when a dependency is missing (tools/check-deps.sh):
# a test of ours never skips for that.

src=${1:-${NNP_SOURCE_DIR:-.}}
build=${2:-${NNP_BUILD_DIR:-$src/build}}
models=${NNP_MODELS_DIR:-$src/.cache/models}
python=/usr/bin/python3

sh "$src/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt; do
  [ -f "$models/$f" ] || { echo "FAIL: $models/$f missing: run tools/fetch-models.sh"; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

#!/bin/sh
# Character accuracy and exact lines on the real-image OCR set
# (tests/data/ocr-real) for nnpipe and the peers that are installed.
#
#   benchmarks/ocr-real.sh [-v] [--steps] [--speed]
#
# nnpipe: pipelines/ocr-file.sh.  Tesseract: Debian's tesseract-ocr with
# tesseract-ocr-eng (tools/setup.sh), page segmentation 3 (automatic), one
# line of its output per text line.  @gutenye/ocr-node (PaddleOCR's models
# on ONNX Runtime) when NNP_GUTENYE_DIR names a directory where it is
# installed (npm install @gutenye/ocr-node, ONNXRUNTIME_NODE_INSTALL_CUDA=skip).
# The scoring rule is in tests/ocr-real/eval.py.  -v prints every line not
# read exactly.  --steps also runs nnpipe once with each step of issue 23
# turned off (NNP_OCR_OFF of pipelines/ocr-file.sh: filter, whole-frame,
# tidy, read-both, normalize, region, join, icon) and once with all of them
# off, to show what each one brings.  --speed also times nnpipe per image (one ocr-file.sh
# process per image, start-up included: wall and CPU seconds, /usr/bin/time)
# with the steps on and off, interleaved image by image, and Tesseract.
set -eu
me=ocr-real.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
steps=false
speed=false
verbose=""
for a in "$@"; do
  case $a in
    --steps) steps=true ;;
    --speed) speed=true ;;
    -v) verbose=-v ;;
    *) echo "$me: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
eval="/usr/bin/python3 $root/tests/ocr-real/eval.py --jobs 2 $verbose"

echo "== nnpipe (pipelines/ocr-file.sh)"
$eval --cmd "sh $root/pipelines/ocr-file.sh {image} {out}"
if $steps; then
  for off in filter whole-frame tidy read-both normalize region join icon \
      filter,whole-frame,tidy,read-both,normalize,region,join,icon; do
    echo "== nnpipe without $off (NNP_OCR_OFF=$off)"
    NNP_OCR_OFF=$off $eval --cmd "sh $root/pipelines/ocr-file.sh {image} {out}"
  done
fi

command -v tesseract >/dev/null || {
  echo "$me: tesseract is missing: install the Debian packages tesseract-ocr tesseract-ocr-eng (tools/setup.sh)" >&2
  exit 1
}
echo "== tesseract $(tesseract --version 2>&1 | head -1 | cut -d' ' -f2) (--psm 3, eng)"
$eval --cmd "tesseract {image} - -l eng --psm 3 2>/dev/null"

if [ -n "${NNP_GUTENYE_DIR:-}" ]; then
  echo "== @gutenye/ocr-node"
  $eval --cmd "node $root/benchmarks/gutenye-ocr.mjs {image}"
fi

if $speed; then
  data=$root/tests/data/ocr-real
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  all_off=filter,whole-frame,tidy,read-both,normalize,region,join,icon
  echo "== seconds per image, one process per image (wall, CPU user+sys; mean of $(ls "$data"/*.png "$data"/*.jpg | wc -l) images)"
  for img in "$data"/*.png "$data"/*.jpg; do
    /usr/bin/time -f "on %e %U %S" -a -o "$tmp/t" sh "$root/pipelines/ocr-file.sh" "$img" - >/dev/null 2>&1
    NNP_OCR_OFF=$all_off /usr/bin/time -f "off %e %U %S" -a -o "$tmp/t" \
      sh "$root/pipelines/ocr-file.sh" "$img" - >/dev/null 2>&1
    /usr/bin/time -f "tesseract %e %U %S" -a -o "$tmp/t" \
      tesseract "$img" - -l eng --psm 3 >/dev/null 2>&1
  done
  awk '{ n[$1]++; w[$1] += $2; c[$1] += $3 + $4 }
    END {
      printf "nnpipe, steps of issue 23 on : %.2f s wall, %.2f s CPU\n", w["on"] / n["on"], c["on"] / n["on"]
      printf "nnpipe, steps off (%s): %.2f s wall, %.2f s CPU\n", "'"$all_off"'", w["off"] / n["off"], c["off"] / n["off"]
      printf "tesseract: %.2f s wall, %.2f s CPU\n", w["tesseract"] / n["tesseract"], c["tesseract"] / n["tesseract"]
      printf "on / off: %.3fx wall, %.3fx CPU\n", w["on"] / w["off"], c["on"] / c["off"]
    }' "$tmp/t"
fi

#!/bin/sh
# Single-thread latency of each working model, nnpipe next to ONNX Runtime.
# Not a test: prints figures (the issue asks for them next to each other).
#
#   tests/models/latency.sh [BUILD_DIR] [REPEAT] [THREADS]
#
# BUILD_DIR defaults to ./build; REPEAT (timed runs per model, median taken)
# to 20; THREADS to 1.  Inputs are the deterministic pattern (the same for
# both).  ONNX Runtime runs with all graph optimisations on.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
repeat=${2:-20}
threads=${3:-1}
models=${NNP_MODELS_DIR:-$top/.cache/models}
nnpipe=$build/tools/nnpipe
ort=$build/tests/nnp-ort

for f in "$nnpipe" "$ort"; do
  [ -x "$f" ] || { echo "latency.sh: $f not built (meson setup/ninja in $build)" >&2; exit 1; }
done

median () { sed -n 's/.*latency_ms median=\([0-9.]*\).*/\1/p' | head -1; }

printf '%-44s %12s %12s %8s\n' "model (threads=$threads, $repeat runs)" "nnpipe ms" "ORT ms" "ratio"
for spec in \
    "ch_PP-OCRv4_det_infer.onnx 1,3,640,640" \
    "ch_PP-OCRv4_det_infer.onnx 1,3,320,480" \
    "ch_PP-OCRv4_rec_infer.onnx 1,3,48,320" \
    "ch_ppocr_mobile_v2.0_cls_infer.onnx 1,3,48,192"; do
  set -- $spec
  model=$1 dims=$2
  label="$(echo "$model" | sed 's/_infer.onnx//') $(echo "$dims" | tr , x)"
  if [ ! -f "$models/$model" ]; then
    printf '%-44s %s\n' "$label" "missing (tools/fetch-models.sh)"
    continue
  fi
  n=$("$nnpipe" run "$models/$model" --shape "x=$dims" --threads "$threads" --repeat "$repeat" 2>&1 | median)
  o=$("$ort" "$models/$model" --shape "x=$dims" --threads "$threads" --repeat "$repeat" 2>&1 | median)
  if [ -n "$n" ] && [ -n "$o" ]; then
    r=$(awk -v a="$n" -v b="$o" 'BEGIN { printf "%.2f", a / b }')
  else
    r="-"
  fi
  printf '%-44s %12s %12s %8s\n' "$label" "${n:-failed}" "${o:-failed}" "$r"
done
echo "ratio = nnpipe median / ONNX Runtime median (below 1: nnpipe is faster)"

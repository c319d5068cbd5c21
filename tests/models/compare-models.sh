#!/bin/sh
# models-vs-ort: the working models against ONNX Runtime on the same inputs.
#
# For each case: make an input (a rendered frame with text for the detector, a
# rendered text line for the recognizer and classifier; the small models get
# the deterministic pattern), run `nnpipe run --input` and `nnp-ort --input`,
# and compare every output: max abs error / max abs reference <= 1e-4.
# Fails (never skips) when the models or ONNX Runtime are not fetched
# (tools/fetch-models.sh) or a dependency is missing (tools/check-deps.sh
# names its Debian package); a frame that cannot be rendered is a failure,
# not a fallback to another input.
#
# Usage: compare-models.sh [ocr|small]   (small: the tiny models in tests/data/,
# always present; ocr: the working models, the default)
#
# Environment (set by tests/meson.build): NNPIPE, NNP_ORT, RGB2TENSOR,
# COMPARE_RAW, NNP_SOURCE_DIR, NNP_TEST_WORKDIR; optional NNP_MODELS_DIR,
# NNP_TEST_THREADS, NNP_TEST_DEVICE (nnpipe's --device, default cpu), NNP_TEST_TOL
# (default 1e-4).
set -u

set_name=${1:-ocr}
src=${NNP_SOURCE_DIR:?}
models=${NNP_MODELS_DIR:-$src/.cache/models}
work=${NNP_TEST_WORKDIR:-${TMPDIR:-/tmp}/nnp-models-vs-ort}
threads=${NNP_TEST_THREADS:-2}
tol=${NNP_TEST_TOL:-1e-4}
device=${NNP_TEST_DEVICE:-cpu}

[ "$set_name" = small ] && models=$src/tests/data
[ "$set_name" = small ] && work=$work-small

if [ "$set_name" != small ]; then
  sh "$src/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
fi
for m in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx; do
  [ "$set_name" = small ] && break
  if [ ! -f "$models/$m" ]; then
    echo "FAIL: models-vs-ort: $models/$m missing: run tools/fetch-models.sh"
    exit 1
  fi
done
mkdir -p "$(dirname "$work")"
"$NNP_ORT" "$src/tests/data/small.onnx" --shape x=1,3,8,8 >/dev/null 2>"$work.ortprobe"
if [ $? -eq 77 ]; then
  echo "FAIL: models-vs-ort: ONNX Runtime not available ($(cat "$work.ortprobe")):" \
    "run tools/fetch-models.sh"
  rm -f "$work.ortprobe"
  exit 1
fi
rm -f "$work.ortprobe"

rm -rf "$work"
mkdir -p "$work"

# render NAME W H PATTERN FONT TEXT MEANS STDS -> $work/NAME.raw (errors in $work/NAME.render)
render () {
  name=$1 w=$2 h=$3 pattern=$4 font=$5 text=$6 means=$7 stds=$8
  gst-launch-1.0 -q videotestsrc num-buffers=1 pattern="$pattern" \
    ! textoverlay text="$text" font-desc="$font" valignment=center halignment=center \
    ! videoconvert ! video/x-raw,format=RGB,width="$w",height="$h" \
    ! filesink location="$work/$name.rgb" >"$work/$name.render" 2>&1 || return 1
  "$RGB2TENSOR" "$work/$name.rgb" "$w" "$h" "$work/$name.raw" "$means" "$stds" || return 1
}

failed=0
passed=0
det_norm="0.485,0.456,0.406 0.229,0.224,0.225"
line_norm="0.5,0.5,0.5 0.5,0.5,0.5"

# check NAME MODEL N,C,H,W PATTERN FONT TEXT NORM [F16_OUTPUTS [F16_TOL]]
# (F16_OUTPUTS: outputs that are float16, compared within F16_TOL)
check () {
  name=$1 model=$2 dims=$3 pattern=$4 font=$5 text=$6 norm=$7 f16outs=${8:-} f16tol=${9:-$tol}
  h=$(echo "$dims" | cut -d, -f3)
  w=$(echo "$dims" | cut -d, -f4)
  # shellcheck disable=SC2086
  if [ "$pattern" = none ]; then
    input=""
    what="pattern"
  elif render "$name" "$w" "$h" "$pattern" "$font" "$text" $norm; then
    input="--input x=$work/$name.raw"
    what="rendered text"
  else
    echo "FAIL $name: could not render its input frame:"; sed 's/^/  /' "$work/$name.render"
    failed=$((failed + 1)); return
  fi
  mkdir -p "$work/$name/nnpipe" "$work/$name/ort"
  # shellcheck disable=SC2086
  if ! "$NNPIPE" run "$models/$model" --shape "x=$dims" $input --threads "$threads" \
      --device "$device" --output-dir "$work/$name/nnpipe" >"$work/$name/nnpipe.log" 2>&1; then
    echo "FAIL $name: nnpipe run failed:"; sed 's/^/  /' "$work/$name/nnpipe.log"
    failed=$((failed + 1)); return
  fi
  # shellcheck disable=SC2086
  if ! "$NNP_ORT" "$models/$model" --shape "x=$dims" $input --threads "$threads" \
      --output-dir "$work/$name/ort" >"$work/$name/ort.log" 2>&1; then
    echo "FAIL $name: nnp-ort failed:"; sed 's/^/  /' "$work/$name/ort.log"
    failed=$((failed + 1)); return
  fi
  ok=yes
  n=0
  for ref in "$work/$name/ort"/*.raw; do
    out=$(basename "$ref")
    n=$((n + 1))
    if [ ! -f "$work/$name/nnpipe/$out" ]; then
      echo "FAIL $name: nnpipe wrote no $out"; ok=no; continue
    fi
    otol=$tol odtype=float32
    case " $f16outs " in *" ${out%.raw} "*) otol=$f16tol odtype=float16 ;; esac
    res=$("$COMPARE_RAW" "$work/$name/nnpipe/$out" "$ref" "$otol" "$odtype")
    st=$?
    echo "$name ($model $dims, $what) ${out%.raw}: $res"
    [ $st -eq 0 ] || ok=no
  done
  if [ $n -eq 0 ]; then
    echo "FAIL $name: ONNX Runtime wrote no output"; ok=no
  fi
  if [ $ok = yes ]; then passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}

if [ "$set_name" = small ]; then
  check small-2x3x8x8 small.onnx 2,3,8,8 none "" "" ""
  check small-constants-1x4x16x24 small-constants.onnx 1,4,16,24 none "" "" ""
  check small-constants-1x4x5x7 small-constants.onnx 1,4,5,7 none "" "" ""
  # float16 input, weights and output (make-half-model.py): computed in float32,
  # rounded to float16 once at the output (one float16 step: 1e-3 relative)
  check half-1x3x12x14 half.onnx 1,3,12,14 none "" "" "" y 1e-3
  echo "$passed passed, $failed failed, 0 skipped"
  [ $failed -eq 0 ]
  exit
fi

check det-640x640 ch_PP-OCRv4_det_infer.onnx 1,3,640,640 smpte "Sans 48" \
  "nnpipe OCR 2024" "$det_norm"
check det-320x480 ch_PP-OCRv4_det_infer.onnx 1,3,320,480 smpte "Sans 32" \
  "Hello nnpipe" "$det_norm"
check rec-48x320 ch_PP-OCRv4_rec_infer.onnx 1,3,48,320 white "Sans 20" \
  "Hello nnpipe 42" "$line_norm"
check cls-48x192 ch_ppocr_mobile_v2.0_cls_infer.onnx 1,3,48,192 white "Sans 20" \
  "nnpipe 42" "$line_norm"

echo "$passed passed, $failed failed, 0 skipped"
[ $failed -eq 0 ]

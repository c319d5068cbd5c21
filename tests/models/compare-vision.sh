#!/bin/sh
# vision-models-vs-ort: the vision models that npm packages ship, as shipped,
# against ONNX Runtime on real photos (docs/models.md lists them and their
# licences).
#
# Each input is a photo of python3-skimage's data set (public domain: NASA's
# astronaut, the coffee cup; skimage/data/README.txt) decoded, scaled and
# normalised by GStreamer + nnconvert (NHWC for the tf2onnx models, 4 channels
# for M-LSD), then run through `nnpipe run` and `nnp-ort`; every output must
# satisfy max abs error / max abs reference <= the case's tolerance:
#   BlazeFace front 128 / back 256 (float32)   1e-4, the astronaut's face
#   M-LSD 320 tiny (float32, 1x320x320x4)      1e-4 (see below), the coffee cup
#   ISNet float16 as shipped (1x3x1024x1024)   1e-2 (float16 weights and
#       Casts; nnpipe computes in float32 between them), the astronaut
# ISNet's input is fixed at 1024x1024 (320 GFLOP): one run each side, 2
# threads; the whole test takes about a minute and a half on 2 loaded cores.
# M-LSD is badly conditioned: ONNX Runtime with and without its graph
# optimisations (nnp-ort --no-optimization) differs by 3e-5 to 9e-4 of the
# maximum depending on the photo, and nnpipe from ONNX Runtime by as much.
# Its outputs must be within max(1e-4, 2 x ONNX Runtime's own disagreement
# on that output), both printed.
#
# Fails (never skips) when a model, ONNX Runtime or a dependency is missing
# (tools/fetch-models.sh, tools/check-deps.sh name what to install).
#
# Environment (tests/meson.build): NNPIPE, NNP_ORT, COMPARE_RAW, NNP_SOURCE_DIR,
# NNP_TEST_WORKDIR, GST_PLUGIN_PATH (the built plugin); optional
# NNP_MODELS_DIR, NNP_TEST_THREADS (default 2).
set -u

src=${NNP_SOURCE_DIR:?}
models=${NNP_MODELS_DIR:-$src/.cache/models}
work=${NNP_TEST_WORKDIR:-${TMPDIR:-/tmp}/nnp-vision-vs-ort-$$}
threads=${NNP_TEST_THREADS:-2}
photos=/usr/lib/python3/dist-packages/skimage/data

sh "$src/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
for m in face_detection_front_128x128_barracuda.onnx face_detection_back_256x256_barracuda.onnx \
    mlsd_320x320_tiny.onnx isnet_fp16.onnx; do
  if [ ! -f "$models/$m" ]; then
    echo "FAIL: vision-models-vs-ort: $models/$m missing: run tools/fetch-models.sh"
    exit 1
  fi
done
rm -rf "$work"
mkdir -p "$work"

failed=0
passed=0

# render NAME PHOTO W H LAYOUT CHANNELS MEAN STD -> $work/NAME.raw (float32)
render () {
  name=$1 photo=$2 w=$3 h=$4 layout=$5 c=$6 mean=$7 std=$8
  if [ "$layout" = nhwc ]; then dims=$c:$w:$h:1; else dims=$w:$h:$c:1; fi
  gst-launch-1.0 -q filesrc location="$photos/$photo" ! decodebin ! videoconvert ! videoscale \
    ! video/x-raw,width="$w",height="$h",pixel-aspect-ratio=1/1 \
    ! nnconvert layout="$layout" mean="$mean" std="$std" \
    ! other/tensors,types=float32,dimensions="$dims" \
    ! filesink location="$work/$name.raw" >"$work/$name.render" 2>&1
}

# compare NAME DIR_GOT DIR_REF TOL [DIR_SELF] -> 0 when every output is within
# TOL; with DIR_SELF (ONNX Runtime without graph optimisations), within
# max(TOL, 2 x how far ONNX Runtime is from itself on that output)
compare () {
  name=$1 got=$2 ref=$3 tol=$4 self=${5:-} ok=0 n=0
  for r in "$ref"/*.raw; do
    out=$(basename "$r")
    n=$((n + 1))
    if [ ! -f "$got/$out" ]; then
      echo "FAIL $name: nnpipe wrote no $out"; ok=1; continue
    fi
    t=$tol
    if [ -n "$self" ]; then
      selfres=$("$COMPARE_RAW" "$self/$out" "$r" 1)
      echo "$name ${out%.raw}: ONNX Runtime without graph optimisations against itself: $selfres"
      t=$(echo "$selfres" | sed -n 's/.*ratio=\([^ ]*\).*/\1/p' \
        | awk -v tol="$tol" '{ t = 2 * $1; if (t < tol + 0) t = tol; printf "%.3g", t }')
      [ -n "$t" ] || { echo "FAIL $name: no ratio in '$selfres'"; ok=1; continue; }
    fi
    res=$("$COMPARE_RAW" "$got/$out" "$r" "$t") || ok=1
    echo "$name ${out%.raw}: $res (tolerance $t)"
  done
  [ $n -gt 0 ] || { echo "FAIL $name: ONNX Runtime wrote no output"; ok=1; }
  return $ok
}

# check NAME MODEL INPUT PHOTO W H LAYOUT CHANNELS MEAN STD TOL [conditioned]
check () {
  name=$1 model=$2 input=$3 photo=$4 w=$5 h=$6 layout=$7 c=$8 mean=$9
  shift 9
  std=$1 tol=$2 cond=${3:-}
  if ! render "$name" "$photo" "$w" "$h" "$layout" "$c" "$mean" "$std"; then
    echo "FAIL $name: could not make its input from $photos/$photo:"
    sed 's/^/  /' "$work/$name.render"
    failed=$((failed + 1)); return
  fi
  mkdir -p "$work/$name/nnpipe" "$work/$name/ort"
  if ! "$NNPIPE" run "$models/$model" --input "$input=$work/$name.raw" --threads "$threads" \
      --output-dir "$work/$name/nnpipe" >"$work/$name/nnpipe.log" 2>&1; then
    echo "FAIL $name: nnpipe run failed:"; sed 's/^/  /' "$work/$name/nnpipe.log"
    failed=$((failed + 1)); return
  fi
  if ! "$NNP_ORT" "$models/$model" --input "$input=$work/$name.raw" --threads "$threads" \
      --output-dir "$work/$name/ort" >"$work/$name/ort.log" 2>&1; then
    echo "FAIL $name: nnp-ort failed:"; sed 's/^/  /' "$work/$name/ort.log"
    failed=$((failed + 1)); return
  fi
  self=
  if [ -n "$cond" ]; then
    self=$work/$name/ort-noopt
    mkdir -p "$self"
    if ! "$NNP_ORT" "$models/$model" --no-optimization --input "$input=$work/$name.raw" \
        --threads "$threads" --output-dir "$self" >"$work/$name/ort-noopt.log" 2>&1; then
      echo "FAIL $name: nnp-ort --no-optimization failed:"
      sed 's/^/  /' "$work/$name/ort-noopt.log"
      failed=$((failed + 1)); return
    fi
  fi
  if compare "$name ($model, $photo)" "$work/$name/nnpipe" "$work/$name/ort" "$tol" $self; then
    passed=$((passed + 1))
  else
    echo "FAIL $name"; failed=$((failed + 1))
  fi
}

check blazeface-front face_detection_front_128x128_barracuda.onnx input:0 astronaut.png \
  128 128 nhwc 3 0.5 0.5 1e-4
check blazeface-back face_detection_back_256x256_barracuda.onnx input:0 astronaut.png \
  256 256 nhwc 3 0.5 0.5 1e-4
check mlsd-320-tiny mlsd_320x320_tiny.onnx input_image_with_alpha:0 coffee.png \
  320 320 nhwc 4 0.5 0.5 1e-4 conditioned
# ISNet: @imgly's normalisation, (x - 128) / 256
check isnet-fp16 isnet_fp16.onnx input astronaut.png \
  1024 1024 nchw 3 0.50196 1.00392 1e-2

echo "$passed passed, $failed failed, 0 skipped"
[ $failed -eq 0 ]

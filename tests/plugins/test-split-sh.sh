#!/bin/sh
# Smoke test of pipelines/split.sh (the text detector through nnpipeline)
# at 64x64 with a few frames:
#   1. videotestsrc ! nnconvert ! nnpipeline stages=2 devices=cpu:1,cpu:1;
#   2. NNP_INPUT=raw file (filesrc ! other/tensors caps ! nnpipeline),
#      3 stages;
#   3. devices=cpu,opencl: the plan puts stage 0 on the CPU and stage 1 on
#      OpenCL (the partitioner's OpenCL costs); no OpenCL device is a
#      failure naming pocl-opencl-icd.
# Each run must post an nnpipeline-plan message with the stage count and a
# final nnpipeline-stats message with frames-in == frames-out.
#
# usage: test-split-sh.sh SOURCE_DIR BUILD_DIR
set -u

src=$1
build=$2
models=${NNP_MODELS_DIR:-$src/.cache/models}

sh "$src/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
[ -f "$models/ch_PP-OCRv4_det_infer.onnx" ] ||
  { echo "FAIL: $models/ch_PP-OCRv4_det_infer.onnx missing: run tools/fetch-models.sh"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NNP_BUILD_DIR="$build" NNP_MODELS_DIR="$models"
fail=0

# check WHAT STAGES FRAMES: read $tmp/out (gst-launch -m output)
check () {
  # gst-launch escapes the nested structures: drop the backslashes
  tr -d '\\' <"$tmp/out" >"$tmp/msgs"
  if ! grep -q "nnpipeline-plan, .*n-stages=(int)$2," "$tmp/msgs"; then
    echo "FAIL: $1: no nnpipeline-plan message with $2 stages"; fail=1; return 1
  fi
  if ! grep -q "nnpipeline-stats, final=(boolean)true.*frames-in=(guint64)$3, frames-out=(guint64)$3," "$tmp/msgs"; then
    echo "FAIL: $1: no final nnpipeline-stats message with $3 frames in and out"
    grep "nnpipeline-stats" "$tmp/msgs" | tail -1; fail=1; return 1
  fi
  echo "ok  : $1: $2 stages, $3 frames in and out"
}

if sh "$src/pipelines/split.sh" 2 cpu:1,cpu:1 3 64 >"$tmp/out" 2>&1; then
  check "split.sh 2 cpu:1,cpu:1 3 64" 2 3
else
  echo "FAIL: split.sh 2 cpu:1,cpu:1 3 64:"; tail -5 "$tmp/out"; fail=1
fi

# three 1x3x64x64 float32 frames
head -c $((3 * 3 * 64 * 64 * 4)) /dev/zero >"$tmp/in.f32"
if NNP_INPUT="$tmp/in.f32" sh "$src/pipelines/split.sh" 3 cpu:1 0 64 >"$tmp/out" 2>&1; then
  check "NNP_INPUT=in.f32 split.sh 3 cpu:1 0 64" 3 3
else
  echo "FAIL: NNP_INPUT=in.f32 split.sh 3 cpu:1:"; tail -5 "$tmp/out"; fail=1
fi

if sh "$src/pipelines/split.sh" 2 cpu,opencl 2 64 >"$tmp/out" 2>&1; then
  if check "split.sh 2 cpu,opencl 2 64" 2 2; then
    devs=$(grep -o 'device=(string)[a-z0-9:]*' "$tmp/msgs" | sed 's/.*)//' | tr '\n' ' ')
    if [ "$devs" = "cpu opencl " ]; then
      echo "ok  : split.sh 2 cpu,opencl: stage devices $devs"
    else
      echo "FAIL: split.sh 2 cpu,opencl: stage devices '$devs', expected 'cpu opencl'"; fail=1
    fi
  fi
elif grep -q "device 'opencl' is not available" "$tmp/out"; then
  echo "FAIL: split.sh 2 cpu,opencl: no OpenCL device (install the Debian package pocl-opencl-icd)"
  fail=1
else
  echo "FAIL: split.sh 2 cpu,opencl 2 64:"; tail -5 "$tmp/out"; fail=1
fi
exit $fail

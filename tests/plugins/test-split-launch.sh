#!/bin/sh
# Issue 4's acceptance through gst-launch-1.0 itself (the harness tests of
# test-nnpipeline.c do the same in-process): for the direction classifier
# (1x3x48x192), the recogniser (1x3x48x160) and the two-output DAG model
# (make-dag-models.py, 1x3x32x32), 100 frames of distinct deterministic
# input in one raw file go through
#   filesrc blocksize=BYTES ! other/tensors,...,framerate=0/1 ! ELEMENT ! filesink
# with ELEMENT = a whole-model nnstage, nnpipeline stages=2, 3 and 4, and
# nnpipeline cuts=A,B (manual, thirds of the specialised graph).  Every
# output file must hold exactly 100 frames' worth of bytes and equal the
# whole-model file byte for byte (the same CPU kernels run either way), and
# its first frame must equal `nnpipe run --input` on frame 0 (a model with
# several outputs writes them one after the other in each frame, in graph
# output order).  A missing dependency or OCR model is a failure naming
# its Debian package or tools/fetch-models.sh.
#
# usage: test-split-launch.sh NNPIPE_CLI TEST_MODELS_DIR
set -u

cli=$1
tmodels=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
models=${NNP_MODELS_DIR:-$root/.cache/models}
python=/usr/bin/python3
frames=100

sh "$root/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# check NAME MODEL C H W
check () {
  name=$1 model=$2 c=$3 h=$4 w=$5
  bytes=$((c * h * w * 4))
  caps="other/tensors,format=static,num_tensors=1,types=float32,dimensions=$w:$h:$c:1,framerate=0/1"
  in=$tmp/$name-in.raw

  # frame i: uniform in [-1, 1), seeded by the model's name
  "$python" - "$in" "$name" "$frames" "$c" "$h" "$w" <<'PY'
import sys, zlib
import numpy as np
path, name, n, c, h, w = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
rng = np.random.default_rng(zlib.crc32(name.encode()))
rng.uniform(-1.0, 1.0, (n, c, h, w)).astype('<f4').tofile(path)
PY
  [ "$(wc -c <"$in")" -eq $((frames * bytes)) ] || { echo "FAIL: $name: input not written"; fail=1; return; }

  # the whole model, the reference
  if ! gst-launch-1.0 -q filesrc "location=$in" "blocksize=$bytes" ! "$caps" ! \
      nnstage "model=$model" ! filesink "location=$tmp/$name-whole.raw" 2>"$tmp/err"; then
    echo "FAIL: $name: whole-model nnstage:"; cat "$tmp/err"; fail=1; return
  fi
  total=$(wc -c <"$tmp/$name-whole.raw")
  out=$((total / frames))
  if [ "$total" -eq 0 ] || [ $((out * frames)) -ne "$total" ]; then
    echo "FAIL: $name: whole model wrote $total bytes, not $frames equal frames"; fail=1; return
  fi

  # frame 0 with the command-line runner; outputs in graph order
  head -c "$bytes" "$in" >"$tmp/$name-f0.raw"
  rm -rf "$tmp/cli"
  if ! "$cli" run "$model" --shape "x=1,$c,$h,$w" --input "x=$tmp/$name-f0.raw" \
      --output-dir "$tmp/cli" >/dev/null 2>"$tmp/err"; then
    echo "FAIL: $name: nnpipe run:"; cat "$tmp/err"; fail=1; return
  fi
  : >"$tmp/cli-frame0.raw"
  for o in $(sed -n 's/^[[:space:]]*"\([^"]*\)":.*/\1/p' "$tmp/cli/outputs.json"); do
    cat "$tmp/cli/$o.raw" >>"$tmp/cli-frame0.raw"
  done
  if head -c "$out" "$tmp/$name-whole.raw" | cmp -s - "$tmp/cli-frame0.raw"; then
    echo "ok  : $name: nnstage frame 0 == nnpipe run ($out bytes per frame)"
  else
    echo "FAIL: $name: nnstage frame 0 differs from nnpipe run"; fail=1
  fi

  # thirds of the specialised graph for the manual cuts
  n=$("$cli" split "$model" --shape "x=1,$c,$h,$w" --stages 1 --estimate 2>/dev/null |
    awk '$1 == "0" && $2 == "cpu" { print $4; exit }')
  case "$n" in
    ''|*[!0-9]*) echo "FAIL: $name: no node count from nnpipe split"; fail=1; return ;;
  esac

  for split in stages=2 stages=3 stages=4 "cuts=$((n / 3)),$((2 * n / 3))"; do
    got=$tmp/$name-split.raw
    rm -f "$got"
    if ! gst-launch-1.0 -q filesrc "location=$in" "blocksize=$bytes" ! "$caps" ! \
        nnpipeline "model=$model" "$split" stats-interval=0 ! \
        filesink "location=$got" 2>"$tmp/err"; then
      echo "FAIL: $name: nnpipeline $split:"; cat "$tmp/err"; fail=1; continue
    fi
    size=$(wc -c <"$got")
    if [ "$size" -ne "$total" ]; then
      echo "FAIL: $name: nnpipeline $split wrote $size bytes, expected $total ($frames frames)"; fail=1
    elif ! cmp -s "$got" "$tmp/$name-whole.raw"; then
      echo "FAIL: $name: nnpipeline $split: output differs from the whole model:"
      cmp "$got" "$tmp/$name-whole.raw" | head -1; fail=1
    else
      echo "ok  : $name: nnpipeline $split == whole model ($frames frames, $size bytes)"
    fi
  done
  rm -f "$tmp/$name-whole.raw" "$tmp/$name-split.raw" "$in"
}

check two-out "$tmodels/two-out.onnx" 3 32 32
for m in ch_ppocr_mobile_v2.0_cls_infer.onnx ch_PP-OCRv4_rec_infer.onnx; do
  [ -f "$models/$m" ] || { echo "FAIL: $models/$m missing: run tools/fetch-models.sh"; fail=1; }
done
[ $fail = 0 ] && check cls "$models/ch_ppocr_mobile_v2.0_cls_infer.onnx" 3 48 192
[ $fail = 0 ] && check rec "$models/ch_PP-OCRv4_rec_infer.onnx" 3 48 160
exit $fail

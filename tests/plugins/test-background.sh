#!/bin/sh
# pipelines/background.sh (issue 21 item 6): ISNet through nnpipeline
# stages=auto and nnmask on a real portrait (opencv-doc's 230501201_1.jpg,
# tests/data/faces/SOURCES.md): with --mode alpha the RGBA output keeps the
# photo's colours, its alpha is opaque on the man's face and chest and
# transparent in the garden's corners; a bad --mode is refused by name.
#
# usage: test-background.sh SOURCE_DIR BUILD_DIR
set -u
src=${1:-${NNP_SOURCE_DIR:-.}}
build=${2:-${NNP_BUILD_DIR:-$src/build}}
models=${NNP_MODELS_DIR:-$src/.cache/models}
sh "$src/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
[ -f "$models/isnet_fp16.onnx" ] || { echo "FAIL: $models/isnet_fp16.onnx missing: run tools/fetch-models.sh"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-background-$$-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export NNP_BUILD_DIR="$build" NNP_MODELS_DIR="$models"
photo=/usr/share/doc/opencv-doc/opencv4/html/230501201_1.jpg
fail=0

if sh "$src/pipelines/background.sh" --mode alpha "$photo" "$tmp/cut.png" 2> "$tmp/err"; then
  /usr/bin/python3 - "$photo" "$tmp/cut.png" <<'EOF_PY' || fail=1
import sys
from PIL import Image
a = Image.open(sys.argv[1]).convert("RGB")
b = Image.open(sys.argv[2])
assert b.mode == "RGBA" and b.size == a.size, (b.mode, b.size, a.size)
# the face and the chest (tests/data/faces: face 185..487 x 200..595)
for p in [(330, 400), (250, 300), (400, 500), (300, 750)]:
    assert b.getpixel(p)[3] == 255, ("foreground not opaque", p, b.getpixel(p))
    # the photo's colour (PIL and GStreamer decode the JPEG's YUV a little
    # differently: a few levels)
    assert max(abs(u - v) for u, v in zip(b.getpixel(p)[:3], a.getpixel(p))) <= 12, \
        ("colour changed", p, b.getpixel(p), a.getpixel(p))
# the garden in the corners
for p in [(10, 10), (570, 10), (10, 150), (570, 150)]:
    assert b.getpixel(p)[3] == 0, ("background not transparent", p, b.getpixel(p))
print("background.sh --mode alpha: face opaque, garden transparent")
EOF_PY
else
  cat "$tmp/err"; echo "FAIL: background.sh"; fail=1
fi
if sh "$src/pipelines/background.sh" --mode smear "$photo" - > /dev/null 2> "$tmp/err" ||
   ! grep -q -- "--mode" "$tmp/err"; then
  echo "FAIL: --mode smear not refused"; fail=1
fi
if [ $fail = 0 ]; then echo "1 passed, 0 failed, 0 skipped"; else echo "0 passed, 1 failed, 0 skipped"; fi
exit $fail

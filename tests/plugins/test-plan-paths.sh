#!/bin/sh
# A plan written with `nnpipe split ... -o DIR/plan.json` loads from any
# directory (issue 10): in a plan file a relative model path is relative to
# the plan file's folder (lib/partition/plan-file.c, one rule for the CLI and the
# elements).  From a working folder W, split ../models/unet.onnx into
# W/out/sub/plan.json (and through a symbolic link to that folder); then,
# from another folder, `nnpipe run --plan`, a chain of `nnstage plan=
# stage=K` and `nnpipeline plan=` (no model= property) must load it and
# give the whole model's output byte for byte, frames counted.
#
# usage: test-plan-paths.sh NNPIPE_CLI TEST_MODELS_DIR
set -u
cli=$1
tmodels=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
sh "$root/tools/check-deps.sh" >/dev/null || { echo "FAIL: dependencies missing (above)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
frames=5
caps="other/tensors,format=static,num_tensors=1,types=float32,dimensions=16:16:3:1,framerate=0/1"
bytes=$((3 * 16 * 16 * 4))

mkdir -p "$tmp/models" "$tmp/work/out/sub" "$tmp/x/elsewhere"
cp "$tmodels/unet.onnx" "$tmp/models/"
ln -s "$tmp/work/out/sub" "$tmp/link"
head -c $((bytes * frames)) /dev/urandom > "$tmp/in.f32"

# split from W into a subfolder, a relative model path
(cd "$tmp/work" && "$cli" split ../models/unet.onnx --shape x=1,3,16,16 --stages 2 \
   -o out/sub/plan.json > "$tmp/split.log" 2>&1) || { echo "FAIL: nnpipe split:"; cat "$tmp/split.log"; exit 1; }
model=$(sed -n 's/.*"model":[[:space:]]*"\([^"]*\)".*/\1/p' "$tmp/work/out/sub/plan.json")
if [ "$model" = ../../../models/unet.onnx ]; then
  echo "ok  : plan.json stores the model relative to its folder: $model"
else
  echo "FAIL: plan.json's model is '$model', expected ../../../models/unet.onnx"; fail=1
fi
# the same through a link to the folder: the stored path must work physically
(cd "$tmp/work" && "$cli" split ../models/unet.onnx --shape x=1,3,16,16 --stages 2 \
   -o "$tmp/link/plan-link.json" > "$tmp/split.log" 2>&1) || { echo "FAIL: nnpipe split (link):"; cat "$tmp/split.log"; exit 1; }
# an absolute model path stays absolute
(cd "$tmp/work" && "$cli" split "$tmp/models/unet.onnx" --shape x=1,3,16,16 --stages 2 \
   -o out/plan-abs.json > "$tmp/split.log" 2>&1) || { echo "FAIL: nnpipe split (absolute):"; cat "$tmp/split.log"; exit 1; }
grep -q "\"model\":[[:space:]]*\"$tmp/models/unet.onnx\"" "$tmp/work/out/plan-abs.json" ||
  { echo "FAIL: an absolute model path was not kept:"; grep '"model"' "$tmp/work/out/plan-abs.json"; fail=1; }

# a folder where neither the cwd-relative nor the lexical path would work
cd "$tmp/x/elsewhere"
gst-launch-1.0 -q filesrc location=../../in.f32 blocksize=$bytes ! "$caps" ! \
  nnstage model=../../models/unet.onnx ! filesink location=whole.raw 2>"$tmp/err" ||
  { echo "FAIL: whole model:"; cat "$tmp/err"; exit 1; }
size=$(wc -c < whole.raw)
[ "$size" -gt 0 ] && [ $((size % frames)) = 0 ] ||
  { echo "FAIL: whole model wrote $size bytes for $frames frames"; exit 1; }

for plan in ../../work/out/sub/plan.json ../../link/plan-link.json ../../work/out/plan-abs.json; do
  if "$cli" run ../../models/unet.onnx --shape x=1,3,16,16 --plan "$plan" > "$tmp/run.log" 2>&1; then
    echo "ok  : nnpipe run --plan $plan"
  else
    echo "FAIL: nnpipe run --plan $plan:"; cat "$tmp/run.log"; fail=1
  fi
  for what in stages bin; do
    if [ $what = stages ]; then
      set -- nnstage "plan=$plan" stage=0 ! queue ! nnstage "plan=$plan" stage=1
    else
      set -- nnpipeline "plan=$plan" stats-interval=0
    fi
    rm -f out.raw
    if ! gst-launch-1.0 -q filesrc location=../../in.f32 blocksize=$bytes ! "$caps" ! "$@" ! \
        filesink location=out.raw 2>"$tmp/err"; then
      echo "FAIL: $* from another folder:"; cat "$tmp/err"; fail=1
    elif ! cmp -s out.raw whole.raw; then
      echo "FAIL: $*: $(wc -c < out.raw) bytes differ from the whole model's $(wc -c < whole.raw)"; fail=1
    else
      echo "ok  : $* ($(wc -c < out.raw) bytes of $frames frames == whole model)"
    fi
  done
done
exit $fail

#!/bin/sh
# pipelines/ocr-opencl.sh (issue 6): the detector on OpenCL, the recogniser
# on the CPU.  One small frame per string (PoCL is slow); the recognised
# text must reach >= 95% character accuracy and equal what the CPU-only
# pipelines/ocr.sh reads on the same frame.
#
# usage: test-ocr-opencl.sh SOURCE_DIR BUILD_DIR
set -u

. "$(dirname "$0")/ocr-common.sh"
export NNP_BUILD_DIR="$build" NNP_MODELS_DIR="$models"
export NNP_OCR_WIDTH=320 NNP_OCR_HEIGHT=96 NNP_OCR_FONT="Sans 24"
fail=0
n=0

while IFS= read -r text; do
  [ -n "$text" ] || continue
  n=$((n + 1))
  if ! sh "$src/pipelines/ocr-opencl.sh" "$text" "$tmp/cl-$n.png" >"$tmp/cl" 2>"$tmp/err"; then
    if grep -q "device .* is not available" "$tmp/err"; then
      echo "FAIL: no OpenCL device (install the Debian package pocl-opencl-icd, tools/setup.sh):"
      cat "$tmp/err"; exit 1
    fi
    echo "FAIL: ocr-opencl.sh '$text' failed:"; cat "$tmp/err"; fail=1; continue
  fi
  [ -s "$tmp/cl-$n.png" ] || { echo "FAIL: ocr-opencl.sh '$text' wrote no PNG"; fail=1; }
  if ! sh "$src/pipelines/ocr.sh" "$text" "$tmp/cpu-$n.png" >"$tmp/cpu" 2>"$tmp/err"; then
    echo "FAIL: ocr.sh '$text' failed:"; cat "$tmp/err"; fail=1; continue
  fi
  if ! "$python" - "$text" "$tmp/cl" "$tmp/cpu" <<'PY'
import sys
text, cl_path, cpu_path = sys.argv[1:4]

def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]

def read(path):
    return ' '.join(l.split('\t')[0] for l in open(path, encoding='utf-8')
                    if l.count('\t') == 2)

cl, cpu = read(cl_path), read(cpu_path)
acc = 1.0 - edit_distance(text, cl) / max(len(text), 1)
print("%-24r opencl %-24r cpu %-24r accuracy %.3f" % (text, cl, cpu, acc))
sys.exit(0 if acc >= 0.95 and cl == cpu else 1)
PY
  then
    echo "FAIL: '$text'"; fail=1
  fi
done <<'EOF2'
Hello 42
OpenCL 2024!
EOF2

[ "$n" -gt 0 ] || { echo "FAIL: no strings"; exit 1; }
exit $fail

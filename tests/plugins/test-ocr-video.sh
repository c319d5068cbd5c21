#!/bin/sh
# OCR of a video (issue 10, items 3 and 4): a generated video whose text
# changes every frame (6 frames, each its own string, Motion JPEG in AVI)
# through pipelines/ocr-file.sh and pipelines/ocr-results.py.
#  - every frame is reported: stdout lines "FRAME<TAB>PTS<TAB>TEXT..." for
#    frames 0..5 with their own text; --json gives 6 JSON objects (parsed
#    back) with frame 0..5, pts k * 200 ms and the frame's text;
#  - the parallel chain (default: nnparallel), 3 copies, the pipelined
#    stages form and the serial one (NNP_OCR_PIPELINE=0) read the same; a
#    bad NNP_OCR_PIPELINE / NNP_OCR_COPIES is refused by name;
#  - the annotated video has 6 frames, differs from the input; OUTPUT.png
#    gives 6 PNGs; a still image still gives one PNG and one JSON object;
#  - ocr-results.py (PyGObject pad probe + JSON) prints 6 frames.
#
# usage: test-ocr-video.sh SOURCE_DIR BUILD_DIR
set -u

. "$(dirname "$0")/ocr-common.sh"
export GST_PLUGIN_PATH="$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
export NNP_BUILD_DIR="$build" NNP_MODELS_DIR="$models"
fail=0
n=6
"$python" -c 'import gi; gi.require_version("GstVideo", "1.0")' 2>/dev/null ||
  { echo "FAIL: no PyGObject with GstVideo: install python3-gi gir1.2-gst-plugins-base-1.0"; exit 1; }

# one PNG per frame, then the video (5 frames/s: frame k at k * 200 ms)
k=0
while IFS= read -r text; do
  gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=white ! \
    video/x-raw,width=640,height=480 ! \
    textoverlay "text=$text" "font-desc=Sans 32" color=0xff000000 \
      draw-shadow=false draw-outline=false valignment=center halignment=center ! \
    videoconvert ! pngenc ! filesink "location=$tmp/f$k.png" ||
    { echo "FAIL: could not render '$text'"; exit 1; }
  echo "$text" >> "$tmp/texts"
  k=$((k + 1))
done <<'EOF_TEXTS'
Hello video 2026
Second frame here
Price 42.50 today
Fourth line ABC
Moving text xyz
Last frame 789
EOF_TEXTS
gst-launch-1.0 -q multifilesrc "location=$tmp/f%d.png" index=0 stop-index=$((n - 1)) \
  caps=image/png,framerate=5/1 ! pngdec ! videoconvert ! jpegenc ! avimux ! \
  filesink "location=$tmp/in.avi" || { echo "FAIL: could not make the video"; exit 1; }

# check_lines LINES_FILE JSONL_FILE WHAT: every frame reported with its text
check () {
  "$python" - "$tmp/texts" "$1" "$2" "$3" "$n" <<'PY'
import json, sys
texts_path, lines_path, jsonl_path, what, n = sys.argv[1:6]
n = int(n)
want = [t.rstrip('\n') for t in open(texts_path, encoding='utf-8')]

def accuracy(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return 1.0 - prev[-1] / max(len(a), 1)

ok = True
# the stdout lines: FRAME, PTS (s), TEXT, SCORE, CORNERS
if lines_path != '-':
    got = {}
    for line in open(lines_path, encoding='utf-8'):
        parts = line.rstrip('\n').split('\t')
        if len(parts) != 5:
            print('FAIL: %s: malformed line %r' % (what, line)); ok = False; continue
        got.setdefault(int(parts[0]), []).append((float(parts[1]), parts[2]))
    for k in range(n):
        texts = ' '.join(t for _, t in got.get(k, []))
        pts = [p for p, _ in got.get(k, [])]
        good = accuracy(want[k], texts) >= 0.9 and all(abs(p - 0.2 * k) < 1e-3 for p in pts)
        ok &= good
        print('%s: %s lines, frame %d at %s s: %r (want %r)'
              % ('ok  ' if good else 'FAIL', what, k, pts[:1], texts, want[k]))
    if sorted(got) != list(range(n)):
        print('FAIL: %s: lines for frames %s, want 0..%d' % (what, sorted(got), n - 1)); ok = False
# the JSON Lines, parsed back: one object per frame
objs = [json.loads(l) for l in open(jsonl_path, encoding='utf-8')]
if len(objs) != n:
    print('FAIL: %s: %d JSON objects for %d frames' % (what, len(objs), n)); ok = False
for k, o in enumerate(objs):
    texts = ' '.join(l['text'] for l in o['lines'] if 'text' in l)
    good = (o['frame'] == k and o['pts'] == k * 200000000 and o['width'] == 640
            and o['height'] == 480 and accuracy(want[k], texts) >= 0.9
            and all(len(l['box']) == 4 and 0 < l['score'] <= 1 for l in o['lines']))
    ok &= good
    if not good:
        print('FAIL: %s: JSON frame %d: %r (want %r)' % (what, k, o, want[k]))
print('%s: %s: %d JSON objects' % ('ok  ' if ok else 'FAIL', what, len(objs)))
sys.exit(0 if ok else 1)
PY
}

# pipelined (the default for a video), annotated video in AVI
if sh "$src/pipelines/ocr-file.sh" --json "$tmp/pipe.jsonl" "$tmp/in.avi" "$tmp/out.avi" \
    > "$tmp/pipe.lines" 2> "$tmp/err"; then
  check "$tmp/pipe.lines" "$tmp/pipe.jsonl" pipelined || fail=1
else
  echo "FAIL: ocr-file.sh on the video:"; cat "$tmp/err"; fail=1
fi
# the annotated video: n frames (counted by nnmetapublish), not the input
gst-launch-1.0 -q filesrc "location=$tmp/out.avi" ! decodebin ! videoconvert ! \
  nnmetapublish "location=$tmp/count.jsonl" ! fakesink
frames_out=$(wc -l < "$tmp/count.jsonl" 2>/dev/null || echo 0)
if [ "$frames_out" -eq $n ] && ! cmp -s "$tmp/in.avi" "$tmp/out.avi"; then
  echo "ok  : the annotated video has $frames_out frames"
else
  echo "FAIL: the annotated video has $frames_out frames, want $n"; fail=1
fi

# serial: the same text
if NNP_OCR_PIPELINE=0 sh "$src/pipelines/ocr-file.sh" --json "$tmp/serial.jsonl" \
    "$tmp/in.avi" "$tmp/out.png" > "$tmp/serial.lines" 2> "$tmp/err"; then
  check "$tmp/serial.lines" "$tmp/serial.jsonl" serial || fail=1
  cut -f1,2,3 "$tmp/pipe.lines" > "$tmp/a"
  cut -f1,2,3 "$tmp/serial.lines" > "$tmp/b"
  if cmp -s "$tmp/a" "$tmp/b"; then
    echo "ok  : pipelined and serial read the same"
  else
    echo "FAIL: pipelined and serial differ:"; diff "$tmp/a" "$tmp/b"; fail=1
  fi
  # PNG output of a video: one file per frame
  pngs=$(ls "$tmp"/out-0000*.png 2>/dev/null | wc -l)
  [ "$pngs" -eq $n ] && echo "ok  : $pngs PNGs" || { echo "FAIL: $pngs PNGs, want $n"; fail=1; }
else
  echo "FAIL: NNP_OCR_PIPELINE=0 ocr-file.sh on the video:"; cat "$tmp/err"; fail=1
fi

# the other forms on a video read the same as the serial chain: 3 copies
# (nnparallel), the pipelined stages; a bad form is refused by name
for form in "NNP_OCR_COPIES=3" "NNP_OCR_PIPELINE=stages"; do
  if env "$form" sh "$src/pipelines/ocr-file.sh" "$tmp/in.avi" - > "$tmp/form.lines" \
      2> "$tmp/err"; then
    cut -f1,2,3 "$tmp/form.lines" > "$tmp/a"
    if cmp -s "$tmp/a" "$tmp/b"; then
      echo "ok  : $form reads as the serial chain"
    else
      echo "FAIL: $form and serial differ:"; diff "$tmp/a" "$tmp/b"; fail=1
    fi
  else
    echo "FAIL: $form ocr-file.sh on the video:"; cat "$tmp/err"; fail=1
  fi
done
for form in "NNP_OCR_PIPELINE=fast" "NNP_OCR_COPIES=two"; do
  if env "$form" sh "$src/pipelines/ocr-file.sh" "$tmp/in.avi" - > /dev/null 2> "$tmp/err"; then
    echo "FAIL: $form was accepted"; fail=1
  elif grep -q "${form%%=*} must be" "$tmp/err"; then
    echo "ok  : $form refused: $(cat "$tmp/err")"
  else
    echo "FAIL: $form: no message naming ${form%%=*}:"; cat "$tmp/err"; fail=1
  fi
done

# JSON on stdout instead of the lines
if sh "$src/pipelines/ocr-file.sh" --json - "$tmp/in.avi" - > "$tmp/stdout.jsonl" 2> "$tmp/err"; then
  check - "$tmp/stdout.jsonl" "--json -" || fail=1
else
  echo "FAIL: ocr-file.sh --json -:"; cat "$tmp/err"; fail=1
fi

# a still image: one PNG, the old line format, one JSON object
if sh "$src/pipelines/ocr-file.sh" --json "$tmp/still.jsonl" "$tmp/f2.png" "$tmp/still.png" \
    > "$tmp/still.lines" 2> "$tmp/err"; then
  got=$(cut -f1 "$tmp/still.lines")
  objs=$(wc -l < "$tmp/still.jsonl")
  if [ "$got" = "Price 42.50 today" ] && [ "$objs" -eq 1 ] && [ -s "$tmp/still.png" ]; then
    echo "ok  : still image: '$got', 1 JSON object, one PNG"
  else
    echo "FAIL: still image: '$got', $objs JSON objects"; fail=1
  fi
else
  echo "FAIL: ocr-file.sh on a PNG:"; cat "$tmp/err"; fail=1
fi

# bad arguments: clear errors, non-zero exit
if sh "$src/pipelines/ocr-file.sh" "$tmp/in.avi" "$tmp/out.txt" > /dev/null 2> "$tmp/err" ||
   ! grep -q "must end in" "$tmp/err"; then
  echo "FAIL: an OUTPUT of unknown type was not refused"; cat "$tmp/err"; fail=1
fi
if sh "$src/pipelines/ocr-file.sh" --bogus "$tmp/in.avi" > /dev/null 2> "$tmp/err" ||
   ! grep -q "unknown option '--bogus'" "$tmp/err"; then
  echo "FAIL: an unknown option was not refused"; cat "$tmp/err"; fail=1
fi

# nnpipeline stage-load: a malformed list fails, naming the item
if gst-launch-1.0 -q videotestsrc num-buffers=1 ! video/x-raw,width=64,height=64 ! \
    nnconvert ! nnpipeline "model=$models/ch_PP-OCRv4_det_infer.onnx" stages=2 \
    stage-load=0,abc ! fakesink > "$tmp/err" 2>&1 || ! grep -q "invalid stage-load item 'abc'" "$tmp/err"; then
  echo "FAIL: nnpipeline stage-load=0,abc was not refused by name:"; cat "$tmp/err"; fail=1
else
  echo "ok  : nnpipeline stage-load=0,abc refused"
fi

# the Python example: pad probe on the ROI metas + the JSON Lines
if "$python" "$src/pipelines/ocr-results.py" "$tmp/in.avi" "$tmp/py.jsonl" > "$tmp/py.out" 2> "$tmp/err"; then
  cut -f1,2 "$tmp/py.out" | head -n $n > "$tmp/a"
  printf '0\t0\n1\t200000000\n2\t400000000\n3\t600000000\n4\t800000000\n5\t1000000000\n' > "$tmp/b"
  if cmp -s "$tmp/a" "$tmp/b" && grep -qx "frames: $n" "$tmp/py.out"; then
    check - "$tmp/py.jsonl" ocr-results.py || fail=1
  else
    echo "FAIL: ocr-results.py printed:"; cat "$tmp/py.out"; fail=1
  fi
else
  echo "FAIL: ocr-results.py:"; cat "$tmp/py.out" "$tmp/err"; fail=1
fi
exit $fail

#!/bin/sh
# nnparallel (issue 10, item 3): copies of the whole one-thread OCR chain
# taking frames in turn give what the serial chain gives.
#  - a 12-frame Motion JPEG video whose text changes every frame
#    (timeoverlay), 5 frames/s: serial chain vs nnparallel copies=2 and
#    copies=3 around the same chain: the JSON Lines (frame numbers, pts,
#    text, scores, boxes) are identical, 12 objects, pts k * 200 ms in
#    order, the texts differ from frame to frame (a reordering would show),
#    and every copy ran frames;
#  - a bad chain= or copies= fails at start with a message naming it; a
#    chain that drops frames fails at EOS naming the copy (no hang).
#
# usage: test-parallel.sh SOURCE_DIR BUILD_DIR
set -u

. "$(dirname "$0")/ocr-common.sh"
export GST_PLUGIN_PATH="$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
fail=0
n=12

gst-launch-1.0 -q videotestsrc num-buffers=$n pattern=white ! \
  video/x-raw,width=640,height=480,framerate=5/1 ! \
  textoverlay "text=Frames in turn" "font-desc=Sans 28" color=0xff000000 \
    draw-shadow=false draw-outline=false valignment=top ! \
  timeoverlay "font-desc=Sans 32" color=0xff000000 draw-shadow=false \
    draw-outline=false valignment=center halignment=center ! \
  videoconvert ! jpegenc ! avimux ! filesink "location=$tmp/in.avi" ||
  { echo "FAIL: could not make the video"; exit 1; }

det="$models/ch_PP-OCRv4_det_infer.onnx"
rec="$models/ch_PP-OCRv4_rec_infer.onnx"
keys="$models/ppocr_keys_v1.txt"
chain="nnstage model=$det threads=1 ! nndbdecode ! nncrop channel-order=bgr ! \
nnstage model=$rec threads=1 ! nnctcdecode keys=$keys"

# ocr NAME [nnparallel properties]: the chain, serial or inside nnparallel
ocr () {
  name=$1
  shift
  if [ $# -eq 0 ]; then
    # shellcheck disable=SC2086
    set -- $chain
  else
    set -- nnparallel "$@" "chain=$chain"
  fi
  timeout 300 gst-launch-1.0 -q filesrc "location=$tmp/in.avi" ! decodebin ! \
    videoconvert ! video/x-raw,format=RGB ! \
    nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
      keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
    "$@" ! nnmetapublish "location=$tmp/$name.jsonl" ! fakesink \
    > "$tmp/$name.log" 2>&1 ||
    { echo "FAIL: $name: gst-launch failed:"; cat "$tmp/$name.log"; return 1; }
}

ocr serial || fail=1
"$python" - "$tmp/serial.jsonl" $n <<'PY' || fail=1
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
n = int(sys.argv[2])
texts = [' '.join(l.get('text', '') for l in o['lines']) for o in objs]
ok = (len(objs) == n and [o['frame'] for o in objs] == list(range(n))
      and [o['pts'] for o in objs] == [k * 200000000 for k in range(n)])
# the time line makes every frame's text its own (a reordering would show)
ok = ok and len(set(texts)) == n and all('Frames' in t for t in texts)
print('%s: serial: %d frames: %s' % ('ok  ' if ok else 'FAIL', len(objs), texts))
sys.exit(0 if ok else 1)
PY

# a JSON Lines file without the wall-clock fields of each object
untimed () {
  sed -E 's/"time":"[^"]*","unix_ms":[0-9]+,//' "$1"
}

for k in 2 3; do
  if GST_DEBUG=nnreplicas:6 GST_DEBUG_FILE="$tmp/debug$k.log" ocr "copies$k" copies=$k; then
    # (but for when each run saw the frames: "time", "unix_ms")
    untimed "$tmp/serial.jsonl" > "$tmp/serial.untimed"
    untimed "$tmp/copies$k.jsonl" > "$tmp/copies$k.untimed"
    if cmp -s "$tmp/serial.untimed" "$tmp/copies$k.untimed"; then
      echo "ok  : copies=$k: the same $(wc -l < "$tmp/copies$k.jsonl") JSON objects as the serial chain"
    else
      echo "FAIL: copies=$k: other results than the serial chain:"
      diff "$tmp/serial.untimed" "$tmp/copies$k.untimed" | head -n 20
      fail=1
    fi
    # every copy ran frames
    r=0
    while [ $r -lt $k ]; do
      got=$(grep -c "frame to replica $r\$" "$tmp/debug$k.log")
      if [ "$got" -gt 0 ]; then
        echo "ok  : copies=$k: copy $r ran $got frames"
      else
        echo "FAIL: copies=$k: copy $r ran no frame"; fail=1
      fi
      r=$((r + 1))
    done
  else
    fail=1
  fi
done

# bad settings: fail at start (or at EOS for a chain that drops frames),
# naming the problem, within the timeout
bad () {
  want=$1
  shift
  timeout 60 gst-launch-1.0 videotestsrc num-buffers=4 ! video/x-raw,width=64,height=48 ! \
    nnparallel "$@" ! fakesink > "$tmp/bad.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "$want" "$tmp/bad.log"; then
    echo "ok  : nnparallel $*: fails with \"$want\""
  else
    echo "FAIL: nnparallel $*: rc=$rc, want an error with \"$want\":"
    cat "$tmp/bad.log"
    fail=1
  fi
}
bad 'nnparallel needs chain='
bad 'nnparallel needs chain=' "chain= "
bad 'chain="nosuchelement ! identity" cannot be made: no element "nosuchelement"' \
  "chain=nosuchelement ! identity"
bad 'no property "nosuchproperty" in element "identity"' "chain=identity nosuchproperty=1"
bad 'it has no unlinked sink pad' "chain=videotestsrc ! identity"
bad 'it has no unlinked src pad' "chain=identity ! fakesink"
bad "invalid value 0 for property 'copies'" copies=0 chain=identity
bad "invalid value 65 for property 'copies'" copies=65 chain=identity
bad 'gave no output for' copies=2 "chain=identity drop-probability=1.0"

exit $fail

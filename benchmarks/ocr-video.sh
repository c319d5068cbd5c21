#!/bin/sh
# Frames/s of the OCR chain on a video (issue 10, item 3): serial (every
# element in one thread, one-thread stages) against pipelined on two cores.
# Prints frames/s of each configuration and the ratios; the target is
# >= 1.8x the serial chain, the ceiling the rate of two serial chains at once.
#
#   benchmarks/ocr-video.sh [FRAMES [LINES]]     (default 100 frames, 3 lines)
#
# The input is made once: FRAMES frames of 640x480 with LINES lines of text
# (textoverlay), Motion JPEG in AVI.  Every configuration runs
#   filesrc ! decodebin ! videoconvert ! nnconvert ! DETECTOR ! nndbdecode !
#   nncrop ! RECOGNISER ! nnctcdecode ! nnmetapublish ! fakesink
# with DETECTOR / RECOGNISER:
#   serial   : nnpipeline stages=1 devices=cpu:1 (= one nnstage threads=1)
#              for both, no queue: the whole chain in one thread
#   queue    : the same with a queue between the detector and the crops
#              (detector on one core, recogniser on the other)
#   pipelined: what pipelines/ocr-file.sh runs on a video: the detector
#              split in two one-thread stages (nnpipeline stages=2), a queue,
#              then the recogniser split in two one-thread stages as well:
#              four threads, none more than about half of the chain's work
#              whatever the number and width of the text lines, balanced
#              over the two cores by the scheduler
#   parallel : nnparallel copies=2 around the serial chain (detector to
#              nnctcdecode): two whole one-thread chains taking frames in
#              turn, outputs in frame order (what ocr-file.sh runs)
#   twoproc  : the ceiling of parallelism over frames on this machine: two
#              serial chains at once in two processes, each over the whole
#              video; its figure is the sum of the two rates
# The figure is the detector bin's final nnpipeline-stats steady-fps (frames
# between its first and last output; model loading is not counted; with
# nnparallel the sum of its copies' detectors, each of which sees its share
# of the frames and the end of the stream): in
# serial the recogniser runs in the same thread right after it, and in the
# other forms a queue of 2 frames holds the detector back to the
# recogniser's pace, so that is the chain's rate.  Each configuration runs
# ROUNDS times in rotating order; the figures are medians.  Every run must
# report FRAMES frames (nnmetapublish JSON Lines) with the same text as the
# first serial run.  Before the runs the detector is profiled at the frame size
# (nnpipe split --profile fills the cost cache nnpipeline plans with).
#
# Last, one more run of each with GStreamer's rusage tracer gives the CPU time
# of every thread: the frames/s each form would reach with two cores of its
# own (the wall-clock figures need an idle machine; this does not).
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), ROUNDS (default 3), PIN=1 to pin the stages to cores 0
# and 1.  Timings are only meaningful on an otherwise idle machine.
set -eu

me=ocr-video.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
frames=${1:-100}
lines=${2:-3}
rounds=${ROUNDS:-3}
pin=false
[ "${PIN:-0}" = 1 ] && pin=true
det=$models/ch_PP-OCRv4_det_infer.onnx
rec=$models/ch_PP-OCRv4_rec_infer.onnx
keys=$models/ppocr_keys_v1.txt

nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt
nnp_use_plugin
python=/usr/bin/python3
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# the video: LINES lines (top, centre, bottom)
set -- videotestsrc num-buffers="$frames" pattern=white ! \
  video/x-raw,width=640,height=480,framerate=25/1
i=0
for valign in top center bottom; do
  [ $i -lt "$lines" ] || break
  case $i in
    0) t="Pipelined OCR on video" ;;
    1) t="Second line: 2026-11-24" ;;
    *) t="Third line 42 nnpipe" ;;
  esac
  set -- "$@" ! textoverlay "text=$t" "font-desc=Sans 28" color=0xff000000 \
    draw-shadow=false draw-outline=false valignment=$valign
  i=$((i + 1))
done
gst-launch-1.0 -q "$@" ! videoconvert ! jpegenc ! avimux ! filesink "location=$tmp/in.avi"

# fill the profile cache at the detector's input size (480x640)
"$build/tools/nnpipe" split "$det" --shape x=1,3,480,640 --stages 2 --profile \
  > "$tmp/profile.log" 2>&1 || { cat "$tmp/profile.log" >&2; exit 1; }

# run CONFIG [SUFFIX] -> prints frames/s (SUFFIX: of its log and output)
run () {
  if [ "$1" = twoproc ]; then
    # the ceiling: two serial chains at once in two processes, each over
    # the whole video: the sum of their rates
    run serial .a > "$tmp/fps.a" & pa=$!
    run serial .b > "$tmp/fps.b" || { wait $pa; return 1; }
    wait $pa || return 1
    awk '{ s += $1 } END { print s }' "$tmp/fps.a" "$tmp/fps.b"
    return 0
  fi
  log=log${2:-} out=out${2:-}.jsonl
  case $1 in
    reference|serial|queue|parallel) d="nnpipeline name=det model=$det stages=1 devices=cpu:1" ;;
    pipelined) d="nnpipeline name=det model=$det stages=2 devices=cpu:1,cpu:1" ;;
  esac
  case $1 in queue|pipelined) q="queue max-size-buffers=2 !" ;; *) q="" ;; esac
  # the recogniser (with PIN=1: on the core of the detector's last stage,
  # or its two stages on cores 0 and 1)
  case $1 in
    pipelined) r="nnpipeline model=$rec stages=2 devices=cpu:1,cpu:1 pin=$pin stats-interval=0" ;;
    reference|serial|parallel) r="nnstage model=$rec threads=1"; [ "$pin" = true ] && r="$r cpus=0" ;;
    *) r="nnstage model=$rec threads=1"; [ "$pin" = true ] && r="$r cpus=1" ;;
  esac
  chain="$d pin=$pin stats-interval=0 ! $q nndbdecode ! nncrop channel-order=bgr ! $r ! nnctcdecode keys=$keys"
  # parallel: two copies of the serial chain taking frames in turn
  [ "$1" = parallel ] && chain="nnparallel copies=2 chain=\"$chain\""
  # shellcheck disable=SC2086
  eval "$tracer gst-launch-1.0 -m filesrc location=\"$tmp/in.avi\" ! decodebin ! videoconvert ! \
    video/x-raw,format=RGB ! \
    nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
      keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
    $chain ! nnmetapublish location=\"$tmp/$out\" ! fakesink" \
    > "$tmp/$log" 2>&1 || { echo "$me: $1 failed:" >&2; cat "$tmp/$log" >&2; return 1; }
  # every frame reported, with the reference run's text
  "$python" - "$tmp/$out" "$frames" "$tmp/texts" "$1" <<'PY' || return 1
import json, os, sys
path, frames, ref, name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
objs = [json.loads(l) for l in open(path, encoding='utf-8')]
texts = '\n'.join('%d %s' % (o['frame'], ' | '.join(l.get('text', '') for l in o['lines']))
                  for o in objs)
if len(objs) != frames or [o['frame'] for o in objs] != list(range(frames)):
    sys.exit('ocr-video.sh: %s reported %d frames of %d' % (name, len(objs), frames))
if os.path.exists(ref):
    if open(ref, encoding='utf-8').read() != texts:
        sys.exit('ocr-video.sh: %s read other text than the reference run' % name)
else:
    open(ref, 'w', encoding='utf-8').write(texts)
PY
  # (parallel: each copy's detector reports its own frames: the sum)
  fps=$(sed -n 's/.*from element "det".*final=(boolean)true.*steady-fps=(double)\([0-9.e+-]*\).*/\1/p' "$tmp/$log" |
    awk '{ s += $1; n++ } END { if (n) print s }')
  [ -n "$fps" ] || { echo "$me: $1: no final nnpipeline-stats" >&2; return 1; }
  echo "$fps"
}

# thread_cpu: "TOTAL MAX" CPU ms of the last run's threads (rusage tracer)
thread_cpu () {
  sed -n 's/.*thread-rusage, thread-id=(guint64)\([0-9]*\),.*time=(guint64)\([0-9]*\);.*/\1 \2/p' "$tmp/trace" |
    awk '{ t[$1] = $2 } END { for (k in t) { s += t[k]; if (t[k] > m) m = t[k] } printf "%.1f %.1f", s / 1e6, m / 1e6 }'
}

echo "OCR chain on $frames frames of 640x480 with $lines text lines, $(nproc) cores, pin=$pin, $rounds rounds (medians)"
# The reference run (serial) gives the text, and with the detector alone
# (decoding and conversion included, fakesink after it) the balance of the
# chain: CPU of the detector side against what follows it (the recogniser
# above all).  CPU time, not wall time: on a busy machine the
# stages' busy times count the time they wait for a core.
# (the trace goes to its own file: on stderr it would split the -m lines)
tracer="env GST_TRACERS=rusage GST_DEBUG=GST_TRACER:7 GST_DEBUG_FILE=$tmp/trace"
run reference > /dev/null
set -- $(thread_cpu)
chain_ms=$2
$tracer gst-launch-1.0 -q filesrc location="$tmp/in.avi" ! decodebin ! videoconvert ! \
  video/x-raw,format=RGB ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
  nnstage model="$det" threads=1 ! fakesink > "$tmp/log" 2>&1 ||
  { cat "$tmp/log" >&2; exit 1; }
set -- $(thread_cpu)
det_ms=$2
awk -v c="$chain_ms" -v d="$det_ms" -v n="$frames" 'BEGIN {
  printf "CPU per frame: serial chain %.1f ms = detector side %.1f ms + recogniser side %.1f ms (%.2fx the detector)\n",
    c / n, d / n, (c - d) / n, (d > 0) ? (c - d) / d : 0 }'
tracer=""
configs="serial queue pipelined parallel twoproc"
for c in $configs; do : > "$tmp/$c"; done
r=0
while [ "$r" -lt "$rounds" ]; do
  # rotating order: each form runs first in some round
  set -- $configs
  k=0
  while [ $k -lt $((r % 5)) ]; do c=$1; shift; set -- "$@" "$c"; k=$((k + 1)); done
  for c in "$@"; do
    v=$(run "$c") || exit 1
    echo "$v" >> "$tmp/$c"
  done
  r=$((r + 1))
done
echo "runs (frames/s):$(for c in $configs; do printf ' %s: %s|' "$c" "$(tr '\n' ' ' < "$tmp/$c")"; done)"
serial=$(nnp_median < "$tmp/serial")
queue=$(nnp_median < "$tmp/queue")
pipelined=$(nnp_median < "$tmp/pipelined")
parallel=$(nnp_median < "$tmp/parallel")
twoproc=$(nnp_median < "$tmp/twoproc")
# CPU time per thread, one more run each with GStreamer's rusage tracer: the
# frames/s each form would reach if every thread had its core to itself and
# two cores (time per frame = max (busiest thread, all threads / 2)); what
# the wall-clock figures show only on an otherwise idle machine.  Start-up
# (model loading) is included.
tracer="env GST_TRACERS=rusage GST_DEBUG=GST_TRACER:7 GST_DEBUG_FILE=$tmp/trace"
for c in serial queue pipelined parallel; do
  run "$c" > /dev/null
  set -- $(thread_cpu)
  awk -v c="$c" -v tot="$1" -v max="$2" -v n="$frames" 'BEGIN {
    t = (max > tot / 2) ? max : tot / 2
    printf "cpu %s: %.1f ms/frame in all threads, busiest thread %.1f ms/frame: %.3f frames/s on 2 free cores\n", c, tot / n, max / n, 1000 * n / t
  }' | tee -a "$tmp/cpu"
done
cpu_of () { sed -n "s/^cpu $1:.* \([0-9.]*\) frames.*/\1/p" "$tmp/cpu"; }
awk -v s="$(cpu_of serial)" -v q="$(cpu_of queue)" -v b="$(cpu_of pipelined)" -v p="$(cpu_of parallel)" 'BEGIN {
  printf "from CPU time: queue %.2fx, pipelined %.2fx, parallel %.2fx the serial chain\n", q / s, b / s, p / s
  printf "target >= 1.8x by CPU time (parallel): %s\n", (p / s >= 1.8) ? "met" : "not met" }'

awk -v s="$serial" -v q="$queue" -v b="$pipelined" -v p="$parallel" -v t="$twoproc" 'BEGIN {
  printf "serial (one thread, 1-thread stages)         : %7.3f frames/s  (1.00x)\n", s
  printf "detector ! queue ! recogniser                 : %7.3f frames/s  (%.2fx)\n", q, q / s
  printf "detector 2 stages ! queue ! recogniser 2 st. : %7.3f frames/s  (%.2fx)\n", b, b / s
  printf "nnparallel copies=2 (whole chain, by frames)  : %7.3f frames/s  (%.2fx)\n", p, p / s
  printf "ceiling: two serial chains in two processes   : %7.3f frames/s  (%.2fx)\n", t, t / s
  printf "target >= 1.8x by wall clock (parallel): %s (meaningful only on an idle machine)\n", (p / s >= 1.8) ? "met" : "not met"
  printf "parallel / ceiling: %.2f\n", p / t
}'
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

#!/bin/sh
# Many streams through one nnpipeline, and replicated stages (issue 13).
#
#   benchmarks/streams.sh [FRAMES [SIZE]]    (default 20 frames per stream, 640)
#
# 1. Four detector streams (ch_PP-OCRv4_det, 1x3xSIZExSIZE, four different
#    videotestsrc patterns converted once to raw tensor files) on the same
#    cores, three ways:
#      shared    one process, one nnpipeline stages=2 devices=cpu:1,cpu:1
#                with request pads sink_0..3 / src_0..3 (frames interleave)
#      batched   the same with batch-size=4: the four streams' frames run as
#                one 4x3xSIZExSIZE batch (the detector's batch dim is
#                dynamic); its outputs are checked equal to shared's, byte
#                for byte
#      separate  four processes, each its own nnpipeline (same properties)
#      in-proc   one process, four nnpipelines (same properties)
#    Figures: frames/s over the wall time of the whole run (4 x FRAMES frames,
#    model loading included: every configuration pays it once per nnpipeline)
#    and peak RSS (/usr/bin/time; separate: the sum of the four processes).
#    Every run must deliver 4 x FRAMES frames (nnpipeline's final stats).
# 2. Replicas: benchmarks/make-bottleneck-model.py (one big Conv, ~9/10 of
#    the model, that no split can divide) at 1x3x96x96, REP_FRAMES frames
#    (default 40) through nnpipeline: the whole model on one thread, on two
#    threads, 2 stages (the split caps at the big Conv), the whole model as 2
#    replicas (cpu:1*2), 2 stages with the second as 2 replicas
#    (cpu:1,cpu:1*2), the 2 replicas pinned to a core each (pin=true), and
#    stages=auto max-replicas=2 (the partitioner chooses).  Figure: the
#    median over ROUNDS (default 3) of the final steady-fps (frames between
#    the first and the last output).  REP_MODEL=det runs this part on the
#    detector instead, at REP_SIZE (default 320) square.
#
#    Last row, the ceiling of frame-level parallelism here: two processes
#    running the `one` configuration at once, their frames/s summed.
#
# 3. Live (issue 22): live sources, the lag of the results behind the
#    camera (at each sink the clock's running time when a frame arrives
#    less the frame's running time, frames arriving after the first 2 s;
#    percentiles over the frames, benchmarks/live-latency.py) and the frames dropped per
#    stream, for LIVE_SECONDS (default 20) each:
#      4x25 auto   4 live 25 fps streams (videotestsrc is-live, LIVE_SIZE,
#                  default 320 square) through one nnpipeline stages=2
#                  devices=cpu:1,cpu:1 (the default drop=auto)
#      4x25 batch  the same with batch-size=4 (a frame of every camera in
#                  one run of the model)
#      4x25 off    the same with drop=off (every frame queued: the peer)
#      1x30 auto   one live 30 fps stream into the detector on one thread
#                  (nnstage threads=1) at LIVE1_SIZE (default 512 square,
#                  about 8 frames/s here)
#      1x30 off    the same with drop=off
#
# Environment: NNP_BUILD_DIR, NNP_MODELS_DIR (pipelines/common.sh), ROUNDS,
# REP_FRAMES, REP_MODEL, REP_SIZE, LIVE_SECONDS, LIVE_SIZE, LIVE1_SIZE,
# SKIP_STREAMS=1 / SKIP_REPLICAS=1 / SKIP_LIVE=1 to leave a part out.
set -eu

me=streams.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
model=$models/ch_PP-OCRv4_det_infer.onnx
frames=${1:-20}
size=${2:-640}
rounds=${ROUNDS:-3}
rep_frames=${REP_FRAMES:-40}
nnp_need_models "$(basename "$model")"
nnp_use_plugin
command -v /usr/bin/time > /dev/null || { echo "$me: needs /usr/bin/time (Debian package time)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# frames-out of the final nnpipeline-stats messages in a log, summed
frames_out () {
  sed -n 's/.*nnpipeline-stats, final=(boolean)true.*frames-out=(guint64)\([0-9]*\).*/\1/p' "$1" |
    awk '{ s += $1 } END { print s + 0 }'
}
steady_fps () {
  sed -n 's/.*nnpipeline-stats, final=(boolean)true.*steady-fps=(double)\([0-9.e+-]*\).*/\1/p' "$1"
}
now () { date +%s.%N; }

if [ "${SKIP_STREAMS:-0}" != 1 ]; then
  bytes=$((3 * size * size * 4))
  caps="other/tensors,format=static,num_tensors=1,types=float32,dimensions=$size:$size:3:1,framerate=30/1"
  i=0
  for pattern in ball snow smpte circular; do
    gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern="$pattern" ! \
      video/x-raw,format=RGB,width="$size",height="$size",framerate=30/1 ! \
      nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
      filesink location="$tmp/in$i.raw"
    i=$((i + 1))
  done
  src () { echo "filesrc location=$tmp/in$1.raw blocksize=$bytes ! $caps ! queue"; }
  props="model=$model stages=2 devices=cpu:1,cpu:1 stats-interval=0"

  shared="nnpipeline name=p $props"
  batched="nnpipeline name=p $props batch-size=4"
  inproc=""
  for i in 0 1 2 3; do
    shared="$shared $(src $i) ! p.sink_$i p.src_$i ! filesink location=$tmp/out.shared.$i"
    batched="$batched $(src $i) ! p.sink_$i p.src_$i ! filesink location=$tmp/out.batched.$i"
    inproc="$inproc $(src $i) ! nnpipeline $props ! fakesink"
  done

  echo "4 detector streams 1x3x${size}x${size}, $frames frames each, $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  # warm-up (profile cache, page cache)
  gst-launch-1.0 -q $(src 0) ! nnpipeline $props ! fakesink > /dev/null
  printf '%-10s %10s %10s %12s %8s\n' config "frames/s" "wall s" "peak RSS MiB" frames
  for c in shared batched separate inproc; do
    t0=$(now)
    case $c in
      shared)
        # shellcheck disable=SC2086
        /usr/bin/time -f %M -o "$tmp/rss.shared" gst-launch-1.0 -m $shared > "$tmp/log.shared" 2>&1
        rss=$(cat "$tmp/rss.shared"); n=$(frames_out "$tmp/log.shared") ;;
      batched)
        # shellcheck disable=SC2086
        /usr/bin/time -f %M -o "$tmp/rss.batched" gst-launch-1.0 -m $batched > "$tmp/log.batched" 2>&1
        rss=$(cat "$tmp/rss.batched"); n=$(frames_out "$tmp/log.batched")
        for i in 0 1 2 3; do
          cmp -s "$tmp/out.shared.$i" "$tmp/out.batched.$i" || {
            echo "$me: stream $i: batched outputs differ from shared" >&2; exit 1; }
        done ;;
      inproc)
        # shellcheck disable=SC2086
        /usr/bin/time -f %M -o "$tmp/rss.inproc" gst-launch-1.0 -m $inproc > "$tmp/log.inproc" 2>&1
        rss=$(cat "$tmp/rss.inproc"); n=$(frames_out "$tmp/log.inproc") ;;
      separate)
        for i in 0 1 2 3; do
          # shellcheck disable=SC2046
          /usr/bin/time -f %M -o "$tmp/rss.sep$i" gst-launch-1.0 -m $(src $i) ! nnpipeline $props ! \
            fakesink > "$tmp/log.sep$i" 2>&1 &
        done
        wait
        rss=$(cat "$tmp"/rss.sep? | awk '{ s += $1 } END { print s }')
        cat "$tmp"/log.sep? > "$tmp/log.separate"
        n=$(frames_out "$tmp/log.separate") ;;
    esac
    t1=$(now)
    if [ "$n" -ne $((4 * frames)) ]; then
      echo "$me: $c delivered $n frames, expected $((4 * frames))" >&2
      exit 1
    fi
    awk -v c="$c" -v n="$n" -v t0="$t0" -v t1="$t1" -v rss="$rss" 'BEGIN {
      printf "%-10s %10.2f %10.2f %12.1f %8d\n", c, n / (t1 - t0), t1 - t0, rss / 1024, n }'
  done
fi

if [ "${SKIP_REPLICAS:-0}" != 1 ]; then
  case ${REP_MODEL:-bottleneck} in
    det)
      rh=${REP_SIZE:-320} rw=${REP_SIZE:-320}
      cp "$model" "$tmp/bn.onnx" ;;
    rec|cls)
      # the recogniser reads one text line at height 48 (width: the line's),
      # the direction classifier a 48x192 crop
      [ "$REP_MODEL" = rec ] && def=320 || def=192
      rh=48 rw=${REP_SIZE:-$def}
      [ "$REP_MODEL" = rec ] && f=ch_PP-OCRv4_rec_infer.onnx || f=ch_ppocr_mobile_v2.0_cls_infer.onnx
      nnp_need_models "$f"
      cp "$models/$f" "$tmp/bn.onnx" ;;
    bottleneck)
      rh=96 rw=96
      /usr/bin/python3 "$(dirname "$0")/make-bottleneck-model.py" "$tmp/bn.onnx" 96 96 ;;
    *)
      echo "$me: REP_MODEL=$REP_MODEL: not det, rec, cls or bottleneck" >&2
      exit 2 ;;
  esac
  case ${REP_MODEL:-bottleneck} in
    det) rep_name="detector 1x3x${rh}x${rw}" ;;
    rec) rep_name="recogniser 1x3x${rh}x${rw}" ;;
    cls) rep_name="direction classifier 1x3x${rh}x${rw}" ;;
    *) rep_name="bottleneck model 1x3x96x96 (one big Conv)" ;;
  esac
  rbytes=$((3 * rh * rw * 4))
  gst-launch-1.0 -q videotestsrc num-buffers="$rep_frames" pattern=ball ! \
    video/x-raw,format=RGB,width="$rw",height="$rh",framerate=30/1 ! nnconvert ! \
    filesink location="$tmp/bn.raw"
  # run NAME PROPS -> steady frames/s
  run () {
    gst-launch-1.0 -m filesrc location="$tmp/bn.raw" blocksize="$rbytes" ! \
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=$rw:$rh:3:1,framerate=30/1" ! \
      queue ! nnpipeline model="$tmp/bn.onnx" stats-interval=0 $2 ! fakesink > "$tmp/rlog.$1" 2>&1
    [ "$(frames_out "$tmp/rlog.$1")" -eq "$rep_frames" ] || {
      echo "$me: $1 did not deliver $rep_frames frames" >&2; exit 1; }
    steady_fps "$tmp/rlog.$1"
  }
  # twoproc: the ceiling of frame-level parallelism on this machine, two
  # processes each running the whole model on one thread at once (the sum of
  # their frames/s): what two replicas could reach with nothing shared
  twoproc () {
    run twoproc-a "$(props_of one)" > "$tmp/tp.a" &
    tp=$!
    run twoproc-b "$(props_of one)" > "$tmp/tp.b"
    wait "$tp" || exit 1
    awk '{ s += $1 } END { printf "%.4f\n", s }' "$tmp/tp.a" "$tmp/tp.b"
  }
  configs="one two split rep2 rep2-pin split-rep auto twoproc"
  props_of () {
    case $1 in
      one) echo "stages=1 devices=cpu:1" ;;
      two) echo "stages=1 devices=cpu:2" ;;
      split) echo "stages=2 devices=cpu:1,cpu:1" ;;
      rep2) echo "stages=1 devices=cpu:1*2" ;;
      rep2-pin) echo "stages=1 devices=cpu:1*2 pin=true" ;;
      split-rep) echo "stages=2 devices=cpu:1,cpu:1*2" ;;
      auto) echo "stages=auto devices=cpu:1,cpu:1 max-replicas=2" ;;
      twoproc) echo "2 processes x (stages=1 devices=cpu:1)" ;;
    esac
  }
  echo "replicas: $rep_name, $rep_frames frames, $rounds rounds (medians); load: $(cut -d' ' -f1-3 /proc/loadavg)"
  run warm "$(props_of one)" > /dev/null
  for c in $configs; do : > "$tmp/r.$c"; done
  r=0
  while [ "$r" -lt "$rounds" ]; do
    # rotate the order so that no configuration always runs first
    order=$(echo $configs | tr ' ' '\n' | awk -v r="$r" '{ a[NR] = $0 } END {
      for (i = 0; i < NR; i++) print a[(i + r) % NR + 1] }')
    for c in $order; do
      if [ "$c" = twoproc ]; then
        twoproc >> "$tmp/r.$c"
      else
        run "$c" "$(props_of "$c")" >> "$tmp/r.$c"
      fi
    done
    r=$((r + 1))
  done
  one=$(nnp_median < "$tmp/r.one")
  printf '%-10s %-42s %10s %8s  %s\n' config properties "frames/s" "vs one" runs
  for c in $configs; do
    m=$(nnp_median < "$tmp/r.$c")
    awk -v c="$c" -v p="$(props_of "$c")" -v m="$m" -v one="$one" -v runs="$(tr '\n' ' ' < "$tmp/r.$c")" \
      'BEGIN { printf "%-10s %-42s %10.2f %7.2fx  %s\n", c, p, m, m / one, runs }'
  done
  sed -n 's/.*nnpipeline-plan.*n-stages=(int)\([0-9]*\).*/auto chose \1 stage(s)/p' "$tmp/rlog.auto"
  grep -o 'replicas\\=\\(int\\)[0-9]*' "$tmp/rlog.auto" | sed 's/.*)/  replicas /'
fi

if [ "${SKIP_LIVE:-0}" != 1 ]; then
  secs=${LIVE_SECONDS:-20}
  ls=${LIVE_SIZE:-320}
  l1=${LIVE1_SIZE:-512}
  conv="nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225"
  live_src () {  # PATTERN FPS SIZE
    echo "videotestsrc is-live=true pattern=$1 ! video/x-raw,format=RGB,width=$3,height=$3,framerate=$2/1 ! $conv"
  }
  echo "live: lag of the results behind the camera (s, frames out after the first 2 s), $secs s per row; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-10s %-6s %7s %8s %7s %7s %7s %7s\n' config stream frames dropped p50 p90 p99 max
  for drop in auto batch off; do
    case $drop in
      batch) d="nnpipeline name=p model=$model stages=2 devices=cpu:1,cpu:1 stats-interval=0 batch-size=4" ;;
      *) d="nnpipeline name=p model=$model stages=2 devices=cpu:1,cpu:1 stats-interval=0 drop=$drop" ;;
    esac
    i=0
    for pattern in ball snow smpte circular; do
      d="$d $(live_src $pattern 25 "$ls") ! p.sink_$i p.src_$i ! fakesink name=sink$i sync=false"
      i=$((i + 1))
    done
    /usr/bin/python3 "$(dirname "$0")/live-latency.py" "$secs" "$d" > "$tmp/live.$drop"
    awk -v c="4x25 $drop" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      printf "%-10s %-6s %7d %8s %7s %7s %7s %7s\n", c, $1, v["frames"], v["dropped"], v["p50"], v["p90"], v["p99"], v["max"] }' \
      "$tmp/live.$drop"
  done
  for drop in auto off; do
    d="$(live_src ball 30 "$l1") ! nnstage name=st model=$model threads=1 drop=$drop ! fakesink name=sink0 sync=false"
    /usr/bin/python3 "$(dirname "$0")/live-latency.py" "$secs" "$d" > "$tmp/live1.$drop"
    awk -v c="1x30 $drop" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      printf "%-10s %-6s %7d %8s %7s %7s %7s %7s\n", c, $1, v["frames"], v["dropped"], v["p50"], v["p90"], v["p99"], v["max"] }' \
      "$tmp/live1.$drop"
  done
fi

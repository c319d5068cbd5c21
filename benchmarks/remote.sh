#!/bin/sh
# Remote stage over a network link (issue 12's benchmark): the text detector
# at 1x3x640x640 split in two single-thread stages, run
#   local   both stages on this host, stage k pinned to core k (nnpipeline pin=true)
#   remote  stage 0 here (core 0), stage 1 on another host: `nnpipe serve` in a
#           network namespace joined by veth, pinned to core 1; the client is
#           nnremote with IN_FLIGHT frames in flight
#   delay   the same through tests/remote/delay-proxy.c adding DELAY_MS each
#           way (2 x DELAY_MS on the round trip; this kernel has no netem)
#   proxy   the same through the proxy with no delay (what its copies cost)
# Prints frames/s of each (median of ROUNDS runs, rotating order) and the
# ratios; fails (exit 1) when the delayed throughput is below 90 % of the
# same proxy's without delay (issue 12 item 4: latency hidden by in-flight).
#
#   benchmarks/remote.sh [FRAMES [SIZE]]      (default 60 frames, 640)
#
# Frames are converted once beforehand (videotestsrc ! nnconvert ! filesink)
# and read with filesrc; frames/s is steady-state (tests/remote/gst-count.py:
# the frames after the first 5 over the time from the 6th to the last),
# every run is also checked: all frames at EOS, outputs identical to the
# local run's, in the same order (sha256 of the output tensors in order).  Needs root (network
# namespaces: tests/remote/hosts.sh).
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), ROUNDS (default 3), IN_FLIGHT (default 4, nnremote's default), DELAY_MS
# (default 10 each way), RATE (a tc tbf rate for the host's link, e.g.
# 1gbit; default none: veth speed).
set -eu

me=remote.sh
. "$(dirname "$0")/../pipelines/common.sh"
nnp_help "$@"
model=$models/ch_PP-OCRv4_det_infer.onnx
frames=${1:-60}
size=${2:-640}
rounds=${ROUNDS:-3}
inflight=${IN_FLIGHT:-4}
delay=${DELAY_MS:-10}
port=7000
py=/usr/bin/python3
nnpipe=$build/tools/nnpipe

nnp_need_models "$(basename "$model")"
nnp_use_plugin
[ -x "$nnpipe" ] || { echo "$me: no $nnpipe (build first)" >&2; exit 2; }
[ -x "$build/tests/remote/delay-proxy" ] || { echo "$me: no $build/tests/remote/delay-proxy (build first)" >&2; exit 2; }

tmp=$(mktemp -d)
. "$root/tests/remote/hosts.sh"
hosts_up 1
hosts_on_exit 'rm -rf "$tmp"'
[ -z "${RATE:-}" ] || hosts_rate 1 "$RATE"
addr=$(hosts_addr 1)

bytes=$((3 * size * size * 4))
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
  video/x-raw,format=RGB,width="$size",height="$size",framerate=30/1 ! \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
  filesink location="$tmp/in.raw"
src="filesrc location=$tmp/in.raw blocksize=$bytes ! other/tensors,format=static,num_tensors=1,types=float32,dimensions=$size:$size:3:1,framerate=30/1 ! queue"

# the split both configurations use (profiled: fills the profile cache)
"$nnpipe" split "$model" --shape "x=1,3,$size,$size" --stages 2 --devices cpu:1,cpu:1 \
  --profile -o "$tmp/plan.json" > "$tmp/split.txt"

# the server: stage 1 of the plan on host 1, core 1
hosts_spawn 1 1 "$tmp/serve.log" "$nnpipe" serve "$model" --listen "$addr:$port" \
  --plan "$tmp/plan.json" --stage 1 --insecure
# two proxies in the client's namespace to the server: no delay (what the
# proxy's copies cost) and DELAY_MS each way
for d in 0 "$delay"; do
  hosts_client "$build/tests/remote/delay-proxy" --listen "127.0.0.1:$((port + 1 + d))" \
    --target "$addr:$port" --delay "$d" > "$tmp/proxy$d.log" 2>&1 &
done
t=0
until grep -q listening "$tmp/serve.log" && grep -q listening "$tmp/proxy0.log" &&
    grep -q listening "$tmp/proxy$delay.log"; do
  t=$((t + 1))
  [ $t -lt 100 ] || { echo "$me: the server or a proxy did not start:" >&2; cat "$tmp/serve.log" "$tmp"/proxy*.log >&2; exit 1; }
  sleep 0.2
done

# run CONFIG -> one JSON line of gst-count.py
remote_to () {
  hosts_client taskset -c 0 "$py" "$root/tests/remote/gst-count.py" \
    "$src ! nnstage model=$model plan=$tmp/plan.json stage=0 ! queue ! nnremote model=$model plan=$tmp/plan.json stage=1 hosts=$1 in-flight=$inflight ! fakesink name=out"
}
run () {
  case $1 in
    local) taskset -c 0,1 "$py" "$root/tests/remote/gst-count.py" \
             "$src ! nnpipeline model=$model plan=$tmp/plan.json pin=true ! fakesink name=out" ;;
    remote) remote_to "$addr:$port" ;;
    proxy) remote_to "127.0.0.1:$((port + 1))" ;;
    delay) remote_to "127.0.0.1:$((port + 1 + delay))" ;;
  esac
}
field () { "$py" -c "import json, sys; v = json.loads(sys.argv[1]).get('$2'); print('' if v is None else v)" "$1"; }

echo "detector 1x3x${size}x${size}, $frames frames, $rounds rounds (medians), in-flight $inflight," \
  "delay +$delay ms each way, link ${RATE:-veth}"
sed -n '1,12p' "$tmp/split.txt"
ref=$(run local)
ref_sha=$(field "$ref" sha256)
: > "$tmp/local"; : > "$tmp/remote"; : > "$tmp/proxy"; : > "$tmp/delay"
r=0
while [ "$r" -lt "$rounds" ]; do
  case $((r % 4)) in
    0) order="local remote proxy delay" ;;
    1) order="remote proxy delay local" ;;
    2) order="proxy delay local remote" ;;
    *) order="delay local remote proxy" ;;
  esac
  for c in $order; do
    j=$(run "$c") || { echo "$me: $c run failed: $j" >&2; cat "$tmp/serve.log" >&2; exit 1; }
    # the same digest = the same tensors in the same order (filesrc: no PTS)
    if [ "$(field "$j" frames)" != "$frames" ] || [ "$(field "$j" sha256)" != "$ref_sha" ]; then
      echo "$me: $c run: frames or outputs (content, order) differ from the local run: $j" >&2
      exit 1
    fi
    field "$j" steady_fps >> "$tmp/$c"
  done
  r=$((r + 1))
done
local_fps=$(nnp_median < "$tmp/local")
remote_fps=$(nnp_median < "$tmp/remote")
proxy_fps=$(nnp_median < "$tmp/proxy")
delay_fps=$(nnp_median < "$tmp/delay")
for c in local remote proxy delay; do
  echo "runs $c (frames/s): $(tr '\n' ' ' < "$tmp/$c")"
done
awk -v l="$local_fps" -v r="$remote_fps" -v p="$proxy_fps" -v d="$delay_fps" -v ms="$((2 * delay))" \
    -v w="$inflight" 'BEGIN {
  printf "local 2 stages (cores 0, 1)                 : %7.3f frames/s\n", l
  printf "stage 1 remote over veth                    : %7.3f frames/s  (%.2fx local)\n", r, r / l
  printf "stage 1 remote through the proxy, no delay  : %7.3f frames/s  (%.2fx local)\n", p, p / l
  printf "stage 1 remote, proxy +%d ms RTT, in-flight %d: %7.3f frames/s  (%.2fx local, %.2fx the proxy without delay, %.2fx veth)\n", ms, w, d, d / l, d / p, d / r
  ok = d / p >= 0.90
  printf "target: +%d ms >= 0.90 x no delay (same proxy): %s\n", ms, ok ? "met" : "NOT MET"
  exit !ok
}'

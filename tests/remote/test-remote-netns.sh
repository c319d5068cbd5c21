#!/bin/sh
# tests/remote/test-remote-netns.sh: remote stages between network-namespace
# hosts (issue 12 acceptance).
#
# usage: test-remote-netns.sh SOURCE_DIR BUILD_DIR
#
# Hosts from tests/remote/hosts.sh: a client and hosts 1 and 2, each
# running `nnpipe serve` for stage 1 of the detector pinned to a core (host
# 1 on core 0, host 2 on core 1; for the latency runs host 1 on core 1 and
# the client on core 0).  The detector at 1x3x128x128 is split in two
# stages (--estimate: the same plan on every machine); every run sends
# FRAMES (120) frames and counts them at EOS (tests/remote/gst-count.py):
#   exact     stage 0 here, stage 1 on host 1 (nnremote): every frame once, in
#             order, outputs bit-exactly the whole model's run locally
#   failover  the same with hosts="host1|host2", paced at 10 ms a frame, and a
#             kill -9 of host 1's server mid-stream: every frame once, in
#             order, bit-exact, and the client says it reconnected
#   latency   through tests/remote/delay-proxy.c (+10 ms each way = 20 ms
#             round trip) with in-flight=8: frames/s printed against the same
#             proxy with no delay; asserted loosely here (>= 50 %: the machine may be shared), the 90 %
#             target is benchmarks/remote.sh's
#   split     nnpipe split --devices cpu:1,remote://host2: with a fast link
#             the compute-balanced cut, with host 2's link at 8 mbit (tc tbf,
#             measured at connect) a cut where fewer bytes cross
# Needs root (network namespaces); fails with the reason otherwise.
set -u
src=$(cd "${1:?usage: test-remote-netns.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: test-remote-netns.sh SOURCE_DIR BUILD_DIR}" && pwd)
py=/usr/bin/python3
nnpipe=$build/tools/nnpipe
model=$src/.cache/models/ch_PP-OCRv4_det_infer.onnx
count=$src/tests/remote/gst-count.py
frames=${FRAMES:-120}
size=128
port=7000
export GST_PLUGIN_PATH="$build/plugins"
fail=0
ok () { echo "ok  : $*"; }
bad () { echo "FAIL: $*"; fail=1; }
[ -f "$model" ] || { echo "FAIL: $model is missing: run tools/fetch-models.sh"; exit 1; }

tmp=$(mktemp -d)
. "$src/tests/remote/hosts.sh"
hosts_up 2
hosts_on_exit 'rm -rf "$tmp"'
a1=$(hosts_addr 1)
a2=$(hosts_addr 2)

"$nnpipe" split "$model" --shape "x=1,3,$size,$size" --stages 2 --devices cpu:1,cpu:1 \
  --estimate -o "$tmp/plan.json" > "$tmp/split.txt" || { cat "$tmp/split.txt"; exit 1; }
source="videotestsrc num-buffers=$frames pattern=ball ! video/x-raw,format=RGB,width=$size,height=$size,framerate=30/1 ! nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225"
stage0="nnstage model=$model plan=$tmp/plan.json stage=0 ! queue"
remote="nnremote model=$model plan=$tmp/plan.json stage=1"

# serve I CORE: `nnpipe serve` on host I, pinned; sets server_pid<I> (--insecure:
# the hosts are namespaces of this machine on a veth network of their own)
serve () {
  hosts_spawn "$1" "$2" "$tmp/serve$1.log" "$nnpipe" serve "$model" \
    --listen "$(hosts_addr "$1"):$port" --plan "$tmp/plan.json" --stage 1 --insecure
  eval "server_pid$1=$HOSTS_PID"
  t=0
  until hosts_client "$py" -c "import socket; socket.create_connection(('$(hosts_addr "$1")', $port), 1).close()" 2>/dev/null; do
    t=$((t + 1))
    [ $t -lt 100 ] || { echo "FAIL: the server on host $1 did not start:"; cat "$tmp/serve$1.log"; exit 1; }
    sleep 0.1
  done
}
field () { "$py" -c "import json, sys; v = json.loads(sys.argv[1]).get('$2'); print('' if v is None else v)" "$1"; }
# check NAME JSON: every frame once, in order, outputs equal the reference
check_run () {
  f=$(field "$2" frames); o=$(field "$2" in_order); u=$(field "$2" pts_unique); s=$(field "$2" sha256)
  if [ "$f" = "$frames" ] && [ "$o" = True ] && [ "$u" = True ] && [ "$s" = "$ref" ]; then
    ok "$1: $f frames at EOS, in order, outputs bit-exact ($(field "$2" steady_fps) frames/s)"
  else
    bad "$1: frames $f of $frames, in order $o, unique $u, sha256 ${s:-none} (want $ref): $2"
  fi
}

ref=$("$py" "$count" "$source ! nnstage model=$model ! fakesink name=out")
ref=$(field "$ref" sha256)
[ -n "$ref" ] || { echo "FAIL: the local reference run failed"; exit 1; }

serve 1 0
serve 2 1

# --- exact: stage 1 on host 1
j=$(hosts_client "$py" "$count" "$source ! $stage0 ! $remote hosts=$a1:$port in-flight=8 ! fakesink name=out")
check_run "stage 1 on host 1 ($a1)" "$j"
grep -q . "$tmp/serve1.log" && ok "host 1's server logged: $(head -n 1 "$tmp/serve1.log")" ||
  bad "host 1's server logged nothing (it should log connections)"

# --- failover: kill -9 host 1's server mid-stream, host 2 listed second
hosts_client "$py" "$count" --timeout 120 \
  "$source ! identity sleep-time=10000 ! $stage0 ! $remote hosts=\"$a1:$port|$a2:$port\" in-flight=8 name=rem ! fakesink name=out" \
  > "$tmp/failover.json" 2> "$tmp/failover.err" &
client=$!
# mid-stream: once host 1's server has the client and ~30 frames went by
t=0
until grep -q connected "$tmp/serve1.log"; do
  t=$((t + 1)); [ $t -lt 300 ] || break
  sleep 0.05
done
sleep 0.3
kill -9 "$server_pid1"
grep -q connected "$tmp/serve1.log" && ok "host 1's server killed (kill -9) with the client connected" ||
  bad "the client never connected to host 1: $(cat "$tmp/serve1.log")"
wait "$client"
j=$(cat "$tmp/failover.json")
check_run "kill -9 of host 1's server mid-stream, failover to host 2" "$j"
grep -q "connected" "$tmp/serve2.log" && ok "host 2 took over: $(grep connected "$tmp/serve2.log" | head -n 1)" ||
  bad "host 2's server saw no client: $(cat "$tmp/serve2.log")"

# --- latency: +10 ms each way through the proxy against the same proxy with
# no delay (both runs pay the proxy's copies: the ratio is the latency's
# cost), in-flight 8; the server on core 1, the client on core 0
serve 1 1
for d in 0 10; do
  hosts_client "$build/tests/remote/delay-proxy" --listen "127.0.0.1:$((port + 1 + d))" \
    --target "$a1:$port" --delay "$d" > "$tmp/proxy$d.log" 2>&1 &
done
t=0
until grep -q listening "$tmp/proxy0.log" && grep -q listening "$tmp/proxy10.log"; do
  t=$((t + 1)); [ $t -lt 100 ] || { bad "the proxies did not start: $(cat "$tmp"/proxy*.log)"; exit 1; }
  sleep 0.1
done
j0=$(hosts_client taskset -c 0 "$py" "$count" "$source ! $stage0 ! $remote hosts=127.0.0.1:$((port + 1)) in-flight=8 ! fakesink name=out")
check_run "through the proxy, no delay, in-flight 8" "$j0"
j1=$(hosts_client taskset -c 0 "$py" "$count" "$source ! $stage0 ! $remote hosts=127.0.0.1:$((port + 11)) in-flight=8 ! fakesink name=out")
check_run "through the proxy, +20 ms round trip, in-flight 8" "$j1"
f0=$(field "$j0" steady_fps); f1=$(field "$j1" steady_fps)
if [ -n "$f0" ] && [ -n "$f1" ] && awk -v a="$f0" -v b="$f1" 'BEGIN { exit !(b >= 0.5 * a) }'; then
  ok "+20 ms round trip: $f1 frames/s = $(awk -v a="$f0" -v b="$f1" 'BEGIN { printf "%.2f", b / a }') x undelayed ($f0)"
else
  bad "+20 ms round trip: '$f1' frames/s against '$f0' undelayed (want >= 0.5x here)"
fi
# --- the link-aware split (issue 12 item 5): host 2 serves the whole model
# (it answers the HELLO and COST of nnpipe split), costs estimated on both
# sides (an empty profile cache) so that they agree.  A fast what-if link
# (--link 100GB/0.01ms: bytes nearly free) gives the compute-balanced cut of cpu:1,cpu:1;
# host 2's link limited to 8 mbit (tc tbf), measured by nnpipe split at
# connect (~1 MB/s), moves the cut to where fewer bytes cross.
export NNP_PROFILE_DIR="$tmp/profiles"
kill -9 "$server_pid2" 2>/dev/null
hosts_spawn 2 1 "$tmp/serve2w.log" env NNP_PROFILE_DIR="$tmp/profiles" "$nnpipe" serve "$model" \
  --listen "$a2:$port" --insecure
t=0
until grep -q listening "$tmp/serve2w.log"; do
  t=$((t + 1)); [ $t -lt 100 ] || { bad "host 2's whole-model server did not start: $(cat "$tmp/serve2w.log")"; exit 1; }
  sleep 0.1
done
# split NAME ARGS...: nnpipe split from the client host -> plan NAME.json
split () {
  name=$1; shift
  hosts_client "$nnpipe" split "$model" --shape "x=1,3,$size,$size" --stages 2 --estimate \
    -o "$tmp/$name.json" "$@" > "$tmp/$name.txt" 2>&1 || { bad "nnpipe split $*: $(cat "$tmp/$name.txt")"; return 1; }
}
# cut NAME: "nodes-of-stage-0 bytes-crossing-cut-0"
cut () { "$py" -c "import json, sys; p = json.load(open(sys.argv[1])); s = p['stages'][0]; print(len(s['nodes']), s['out_bytes'], p['predicted_bottleneck_ms'])" "$tmp/$1.json"; }
split local --devices cpu:1,cpu:1
split fast --devices "cpu:1,remote://$a2:$port" --link 100GB/0.01ms/8
hosts_rate 2 8mbit
split slow --devices "cpu:1,remote://$a2:$port"
hosts_rate 2 off
if [ -f "$tmp/local.json" ] && [ -f "$tmp/fast.json" ] && [ -f "$tmp/slow.json" ]; then
  set -- $(cut local) $(cut fast) $(cut slow)
  measured=$(sed -n 's/.*link \([0-9.]*\) Mbit\/s.*measured.*/\1/p' "$tmp/slow.txt")
  # near-ties between cuts are broken by the measured memcpy rate: compare
  # the predicted bottlenecks, not the node counts
  awk -v a="$3" -v b="$6" 'BEGIN { exit !(b <= 1.05 * a) }' &&
    ok "fast link: a compute-balanced cut (stage 0 = $4 nodes, $5 bytes cross, bottleneck $6 ms; cpu:1,cpu:1: $1 nodes, $3 ms)" ||
    bad "fast link: bottleneck $6 ms (stage 0 = $4 nodes) against $3 ms for cpu:1,cpu:1 ($1 nodes)"
  [ "$8" -lt "$5" ] && ok "8 mbit link (measured $measured Mbit/s): the cut moves to $8 bytes (stage 0 = $7 nodes, bottleneck $9 ms)" ||
    bad "8 mbit link (measured $measured Mbit/s): $8 bytes cross (stage 0 = $7 nodes), not fewer than $5"
  awk -v m="${measured:-0}" 'BEGIN { exit !(m >= 4 && m <= 16) }' && ok "the probe measured the tbf link: $measured Mbit/s (8 set)" ||
    bad "the probe measured '$measured' Mbit/s on an 8 mbit link"
fi
exit $fail

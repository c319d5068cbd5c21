#!/bin/sh
# inference-interval on the faces job: frames/s of pipelines/faces.sh on a
# video of faces (tests/plugins/faces-track.py: three photos panned across
# a 640x360 canvas, 90 frames) with the detector on every frame against
# NNP_FACES_INTERVAL=3 (the model on one frame in 3, nntrack predicting
# the boxes between), in one run, alternating; then the box error of the
# interval run on the frames the model skipped (IoU against the
# every-frame run's boxes).  Not a test: prints figures (docs/faces.md).
#
#   benchmarks/faces-interval.sh [BUILD_DIR]
#
# Environment: ROUNDS (runs of each, alternating; default 3), INTERVAL
# (default 3), NNP_MODELS_DIR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${1:-$top/build}
rounds=${ROUNDS:-3}
interval=${INTERVAL:-3}
sh "$top/tools/check-deps.sh" >/dev/null || exit 1
export NNP_BUILD_DIR="$build"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/faces-interval-$$-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$top/tests/plugins/faces-track.py" render "$tmp"
frames=90

# wall time of one run (the redacted video is not written: OUTPUT -)
run () { # INTERVAL JSON
  t0=$(date +%s.%N)
  NNP_FACES_INTERVAL=$1 sh "$top/pipelines/faces.sh" --json "$2" "$tmp/faces.avi" - > /dev/null
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{ print $2 - $1 }'
}
: > "$tmp/t1"
: > "$tmp/tn"
r=1
while [ "$r" -le "$rounds" ]; do
  if [ $((r % 2)) = 1 ]; then
    run 1 "$tmp/every.jsonl" >> "$tmp/t1"
    run "$interval" "$tmp/interval.jsonl" >> "$tmp/tn"
  else
    run "$interval" "$tmp/interval.jsonl" >> "$tmp/tn"
    run 1 "$tmp/every.jsonl" >> "$tmp/t1"
  fi
  r=$((r + 1))
done
t1=$(nnp_median < "$tmp/t1")
tn=$(nnp_median < "$tmp/tn")
echo "$frames $t1 $tn $interval" | awk '{
  printf "every frame:           %.1f frames/s (median of the runs: %.2f s for %d frames)\n", $1 / $2, $2, $1
  printf "inference-interval=%d:  %.1f frames/s (%.2f s)\n", $4, $1 / $3, $3
  printf "throughput gain: %.2fx\n", $2 / $3 }'
/usr/bin/python3 "$top/tests/plugins/faces-track.py" compare "$tmp" "$tmp/every.jsonl" \
  "$tmp/interval.jsonl" "$interval"

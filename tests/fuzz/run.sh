#!/bin/sh
# Run the libFuzzer harnesses of a -Dfuzzing=enabled build.
#
#   tests/fuzz/run.sh [--build DIR] [--jobs N] DURATION [HARNESS...]
#
# DURATION: seconds ("600"), hours ("2h") or "smoke" ($NNP_FUZZ_SECONDS,
# default 45 s: what CI runs).  HARNESS: onnx-load, onnx-run, plan-json,
# tensor-caps, remote-frame (default: all, one after the other; --jobs N runs N libFuzzer
# workers per harness).  DIR defaults to build-fuzz/, set up with:
#
#   CC=clang meson setup build-fuzz -Dfuzzing=enabled -Db_lundef=false \
#       -Dplugin=disabled -Dopencl=disabled && ninja -C build-fuzz
#
# Each harness starts from its seed corpus tests/fuzz/corpus/NAME/ (never
# written) and a working corpus DIR/fuzz-work/NAME/corpus/ (kept between
# runs); a crash, leak, timeout (10 s) or out-of-memory (2 GB) input is saved
# under DIR/fuzz-work/NAME/ and fails the run.  Prints one line per harness:
#   fuzz NAME: N executions in S s (R/s), corpus C files, OK|FAILED
# and exits 1 when any harness failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$top/build-fuzz
jobs=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
# the CI smoke is reproducible: a fixed libFuzzer seed (NNP_FUZZ_SEED, default
# 1) from the seed corpus; long runs take a random seed unless one is given
seed_arg=${NNP_FUZZ_SEED:+-seed=$NNP_FUZZ_SEED}
case $1 in
  smoke) seconds=${NNP_FUZZ_SECONDS:-45}; seed_arg=-seed=${NNP_FUZZ_SEED:-1} ;;
  *h) seconds=$(( ${1%h} * 3600 )) ;;
  *s) seconds=${1%s} ;;
  *) seconds=$1 ;;
esac
shift
harnesses=${*:-onnx-load onnx-run plan-json tensor-caps remote-frame server}

status=0
for name in $harnesses; do
  exe=$build/tests/fuzz/fuzz-$name
  seeds=$here/corpus/$name
  work=$build/fuzz-work/$name
  if [ ! -x "$exe" ]; then
    echo "fuzz $name: $exe not built (see the header of $0)"
    status=1
    continue
  fi
  mkdir -p "$work/corpus"
  log=$work/last.log
  start=$(date +%s)
  # leaks are checked after every input; no GStreamer plugin is loaded (no
  # harness needs an element, and a registry scan in the process left the
  # interned strings of every plugin's class init behind: a 16 KiB "leak"
  # at exit of fuzz-tensor-caps)
  # G_SLICE=always-malloc: GLib 2.74's slice magazines of threads read as
  # leaks, and slices leaked hide in its slabs (it is read at GLib's start)
  G_SLICE=always-malloc \
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  GST_REGISTRY_FORK=no GST_REGISTRY_DISABLE=yes GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0= \
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$work/" $seed_arg \
      $( [ "$jobs" -gt 1 ] && echo "-fork=$jobs -ignore_crashes=0" ) \
      "$work/corpus" "$seeds" >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  # (printed again with a report at exit: take the largest, not the sum)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '$1>m {m=$1} END {print m+0}')
  if [ "$jobs" -gt 1 ] && [ "$execs" = 0 ]; then
    # -fork prints "#N ... exec/s" progress lines instead of final stats
    execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  fi
  files=$(ls "$work/corpus" | wc -l)
  secs=$(( end - start ))
  [ "$secs" -gt 0 ] || secs=1
  if [ $rc -eq 0 ]; then
    verdict=OK
  else
    verdict="FAILED (exit $rc; log $log)"
    status=1
    tail -n 40 "$log"
  fi
  echo "fuzz $name: ${execs:-0} executions in $secs s ($(( ${execs:-0} / secs ))/s), corpus $files files, $verdict"
done
exit $status

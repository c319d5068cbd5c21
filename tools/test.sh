#!/bin/sh
# The whole test suite, as CI runs it (.ci/run calls this):
#
#   tools/test.sh
#
#   1. tools/setup.sh: Debian packages, models, build in build/ (warnings are errors)
#   2. tools/check-deps.sh: every element, tool and package the tests use is there
#      (a missing one fails the run, naming its Debian package)
#   3. meson test in build/: unit, conformance, models (vs ONNX Runtime), plugin tests
#   4. an AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
#      (GCC; float-cast-overflow too; any report aborts) running the 'asan'
#      suite (bad models, loader fuzzing)
#   5. the libFuzzer harnesses (tests/fuzz/) in build-fuzz/ (clang), each for
#      $NNP_FUZZ_SECONDS (default 45) from its seed corpus
#   6. a ThreadSanitizer build in build-tsan/ running the unit and C plugin
#      tests with GLib's locks made visible (tests/tsan/)
# Prints each phase's duration and one closing line "N passed, N failed,
# N skipped" over all runs.  A test that meson reports as SKIP fails the run
# unless its name is in skip_allowed (below; empty: nothing we test is
# optional on a machine set up by tools/setup.sh).
#
# Environment: NNP_BUILD_DIR (default build), NNP_ASAN_BUILD_DIR (default
# build-asan), NNP_FUZZ_BUILD_DIR (build-fuzz), NNP_TSAN_BUILD_DIR (build-tsan),
# NNP_FUZZ_SECONDS.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${NNP_BUILD_DIR:-$top/build}
asan=${NNP_ASAN_BUILD_DIR:-$top/build-asan}
fuzz=${NNP_FUZZ_BUILD_DIR:-$top/build-fuzz}
tsan=${NNP_TSAN_BUILD_DIR:-$top/build-tsan}
cd "$top"

# Tests allowed to be skipped (meson exit 77), space-separated names, each with
# the reason in a comment here.  Empty.
skip_allowed=""

t0=$(date +%s)
phase_start=$t0
# phase NAME: print how long the phase that just ended took
phase () {
  now=$(date +%s)
  echo "=== phase $1: $((now - phase_start)) s"
  phase_start=$now
}

NNP_MESON_ARGS="-Dwerror=true" NNP_BUILD_DIR="$build" "$top/tools/setup.sh" || exit 1
meson configure "$build" -Dwerror=true >/dev/null && ninja -C "$build" || exit 1
"$top/tools/check-deps.sh" || exit 1
phase "setup and build"

# ASan + UBSan: GCC's 'undefined' leaves out float-cast-overflow (a double
# out of an integer's range converted to it); no recovery, so a report fails
# the test that made it.
san_args="-fsanitize=float-cast-overflow -fno-sanitize-recover=all"
if [ ! -f "$asan/build.ninja" ]; then
  meson setup "$asan" "$top" -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true \
    -Dplugin=disabled >/dev/null || exit 1
fi
meson configure "$asan" -Db_sanitize=address,undefined "-Dc_args=$san_args" \
  "-Dc_link_args=$san_args" >/dev/null || exit 1
ninja -C "$asan" || exit 1
phase "asan+ubsan build"

status=0
meson test -C "$build" --no-suite asan --print-errorlogs --num-processes 2 || status=1
phase "tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C "$asan" --suite asan --print-errorlogs || status=1
phase "asan+ubsan tests"
logs="$build/meson-logs/testlog.json $asan/meson-logs/testlog.json"

# ---- issue 14: fuzz smoke and ThreadSanitizer --------------------------------
# libFuzzer harnesses (clang; tests/fuzz/run.sh runs them for hours)
if [ ! -f "$fuzz/build.ninja" ]; then
  CC=clang meson setup "$fuzz" "$top" -Dfuzzing=enabled -Db_lundef=false -Dwerror=true \
    -Dplugin=disabled -Dopencl=disabled -Ddocs=disabled >/dev/null || exit 1
fi
ninja -C "$fuzz" || exit 1
phase "fuzz build"
meson test -C "$fuzz" --suite fuzz --print-errorlogs || status=1
phase "fuzz smoke"
logs="$logs $fuzz/meson-logs/testlog.json"

# ThreadSanitizer: GLib's futex locks are invisible to it, so the tests run
# with tests/tsan/'s pthread GMutex/GCond/GRecMutex/GRWLock preloaded; no
# forks (plugin scanner, check); tests/tsan/tsan.supp names GLib/GStreamer
# internals only; G_SLICE=always-malloc: GLib 2.74's slice allocator hands
# memory between threads through its own (invisible) locks, plain malloc is
# intercepted.  The shell and Python tests (uninstrumented gst-launch,
# python) are left out.  nnpipeline's stats run on a thread of its own,
# joined before the final message (issue 14 F4/F5, docs/reliability.md), and
# its tests run here (plugin-nnpipeline without its PP-OCR and U-Net cases,
# tests/plugins/meson.build).  This build has no OpenCL backend:
# plugin-plan-make runs without its OpenCL fallback request.
if [ ! -f "$tsan/build.ninja" ]; then
  meson setup "$tsan" "$top" -Db_sanitize=thread -Db_lundef=false -Dwerror=true \
    -Dopencl=disabled -Ddocs=disabled >/dev/null || exit 1
fi
ninja -C "$tsan" || exit 1
# The plugin tests' registry (tests/plugins/meson.build: GST_REGISTRY in the
# build tree) gets the system's plugins from an uninstrumented scan first, in
# gst-plugin-scanner: with GST_REGISTRY_FORK=no below, a test would otherwise
# load every installed plugin into its own TSan process to scan it, and third-
# party libraries they pull in report at load (gstreamer1.0-opencv, the faces
# peer, brings libOpenNI2 and DirectFB's libdirect, which misuse pthread
# mutexes in their constructors).  The tests then load only what they use, and
# our own plugin, instrumented, in-process.
GST_REGISTRY="$tsan/tests/plugins/registry.bin" GST_PLUGIN_PATH= \
  GST_PLUGIN_SYSTEM_PATH="$(pkg-config --variable=pluginsdir gstreamer-1.0)" \
  gst-inspect-1.0 >/dev/null 2>&1 || exit 1
phase "tsan build"
G_SLICE=always-malloc GST_REGISTRY_FORK=no CK_FORK=no \
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$top/tests/tsan/tsan.supp" \
  meson test -C "$tsan" --logbase tsan --print-errorlogs --timeout-multiplier 4 \
    --wrapper "$top/tests/tsan/preload.sh $tsan/tests/tsan/libnnp-tsan-glib-locks.so" \
    tsan-glib-locks tsan-glib-locks-unseen tsan-glib-errors tsan-glib-errors-unseen tsan-glib-clear tsan-glib-clear-unseen tsan-tensor-pool tsan-tensor-pool-unseen tensor graph model stage threadpool partition derived \
    plugin-tensorcaps plugin-nnconvert plugin-post plugin-post-output plugin-nnstage \
    plugin-nnpipeline plugin-streams plugin-streams-replicas plugin-robustness plugin-plan-make \
    plugin-torture plugin-server-replay plugin-live \
    || status=1
phase "tsan tests"
# (with --wrapper meson names the log after the wrapper)
logs="$logs $tsan/meson-logs/tsan-preload.sh.json"
# ---- end of issue 14 block ----------------------------------------------------

# One summary line over all logs (meson writes meson-logs/testlog.json); a
# skipped test not in skip_allowed is a failure of the run.
# shellcheck disable=SC2086
python3 - "$skip_allowed" $logs <<'PY' || status=1
import json, sys
allowed = set(sys.argv[1].split())
counts = {"passed": 0, "failed": 0, "skipped": 0}
bad_skips = []
failed = []
for path in sys.argv[2:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        t = json.loads(line)
        r = t.get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif r == "SKIP":
            counts["skipped"] += 1
            if t.get("name") not in allowed:
                bad_skips.append(t.get("name"))
        else:
            counts["failed"] += 1
            failed.append(t)
# A failing test's name and the end of its output come last, so that the tail
# of a CI log (all that a CI report may keep) says what failed and why.
for t in failed:
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    tail = out.splitlines()[-40:]
    print("tests: FAILED %s (%s, %.1f s); the end of its output:" %
          (t.get("name"), t.get("result"), t.get("duration", 0)))
    for line in tail:
        print("  | " + line[:300])
print("tests: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts)
for name in bad_skips:
    print("tests: FAIL: %s was skipped; a skip is a failure unless the test is on tools/test.sh's "
          "allow-list (see its log: a missing dependency names its Debian package)" % name)
sys.exit(1 if bad_skips else 0)
PY
echo "=== total: $(( $(date +%s) - t0 )) s"
exit $status

#!/bin/sh
# The whole test suite, as CI runs it (.ci/run calls this):
#
#   tools/test.sh
#
#   1. tools/setup.sh: Debian packages, models, build in build/ (warnings are errors)
#   2. tools/check-deps.sh: every element, tool and package the tests use is there
#      (a missing one fails the run, naming its Debian package)
#   3. meson test in build/: unit, conformance, models (vs ONNX Runtime), plugin tests
#   4. an AddressSanitizer build in build-asan/ running the 'asan' suite (bad models, fuzzing)
# Prints one closing line "N passed, N failed, N skipped" over both runs.  A test
# that meson reports as SKIP fails the run unless its name is in skip_allowed
# (below; empty: nothing we test is optional on a machine set up by tools/setup.sh).
#
# Environment: NNP_BUILD_DIR (default build), NNP_ASAN_BUILD_DIR (default build-asan).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${NNP_BUILD_DIR:-$top/build}
asan=${NNP_ASAN_BUILD_DIR:-$top/build-asan}
cd "$top"

# Tests allowed to be skipped (meson exit 77), space-separated names, each with
# the reason in a comment here.  Empty.
skip_allowed=""

NNP_MESON_ARGS="-Dwerror=true" NNP_BUILD_DIR="$build" "$top/tools/setup.sh" || exit 1
meson configure "$build" -Dwerror=true >/dev/null && ninja -C "$build" || exit 1
"$top/tools/check-deps.sh" || exit 1

if [ ! -f "$asan/build.ninja" ]; then
  meson setup "$asan" "$top" -Db_sanitize=address -Db_lundef=false -Dwerror=true \
    -Dplugin=disabled >/dev/null || exit 1
fi
ninja -C "$asan" || exit 1

status=0
meson test -C "$build" --no-suite asan --print-errorlogs --num-processes 2 || status=1
ASAN_OPTIONS=detect_leaks=1 meson test -C "$asan" --suite asan --print-errorlogs || status=1

# One summary line over both logs (meson writes meson-logs/testlog.json); a
# skipped test not in skip_allowed is a failure of the run.
python3 - "$skip_allowed" "$build/meson-logs/testlog.json" "$asan/meson-logs/testlog.json" <<'PY' || status=1
import json, sys
allowed = set(sys.argv[1].split())
counts = {"passed": 0, "failed": 0, "skipped": 0}
bad_skips = []
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
print("tests: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts)
for name in bad_skips:
    print("tests: FAIL: %s was skipped; a skip is a failure unless the test is on tools/test.sh's "
          "allow-list (see its log: a missing dependency names its Debian package)" % name)
sys.exit(1 if bad_skips else 0)
PY
exit $status

#!/bin/sh
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. tools/setup.sh: Debian packages, models, build in build/ (warnings are errors)
#   2. meson test in build/: unit, conformance, models (vs ONNX Runtime), plugin tests
#   3. an AddressSanitizer build in build-asan/ running the 'asan' suite (bad models, fuzzing)
# Prints one closing line "N passed, N failed, N skipped" over both runs.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${NNP_BUILD_DIR:-$top/build}
asan=${NNP_ASAN_BUILD_DIR:-$top/build-asan}
cd "$top"

NNP_MESON_ARGS="-Dwerror=true" NNP_BUILD_DIR="$build" "$top/tools/setup.sh" || exit 1
meson configure "$build" -Dwerror=true >/dev/null && ninja -C "$build" || exit 1

if [ ! -f "$asan/build.ninja" ]; then
  meson setup "$asan" "$top" -Db_sanitize=address -Db_lundef=false -Dwerror=true \
    -Dplugin=disabled >/dev/null || exit 1
fi
ninja -C "$asan" || exit 1

status=0
meson test -C "$build" --no-suite asan --print-errorlogs --num-processes 2 || status=1
ASAN_OPTIONS=detect_leaks=1 meson test -C "$asan" --suite asan --print-errorlogs || status=1

# One summary line over both logs (meson writes meson-logs/testlog.json).
python3 - "$build/meson-logs/testlog.json" "$asan/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif r == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
print("tests: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts)
PY
exit $status

#!/bin/sh
# The whole test suite N times in a row, as a check that nothing flakes
# (issue 19: "tools/test.sh 10 times in a row with no failure"):
#
#   tools/test-repeat.sh [N] [LOGDIR]
#
# Runs tools/test.sh N times (default 10), each run's output in
# LOGDIR/run-K.log (default test-repeat-logs/ in the source tree), one line
# per run in LOGDIR/summary (start time, commit, exit status, seconds, the
# run's "tests: N passed, N failed, N skipped" line), and stops at the first
# run that fails, with its status.  Exit 0 when all N passed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
me=test-repeat.sh
n=${1:-10}
logs=${2:-$top/test-repeat-logs}
case $n in
  ''|*[!0-9]*|0) echo "$me: N must be a positive number, not '$n'" >&2; exit 2 ;;
esac
mkdir -p "$logs" || exit 2
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo "?")
if [ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit+changes"
fi
k=1
while [ "$k" -le "$n" ]; do
  t0=$(date +%s)
  "$top/tools/test.sh" > "$logs/run-$k.log" 2>&1
  rc=$?
  line="run $k of $n: started $(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ), commit $commit, exit $rc, $(( $(date +%s) - t0 )) s, $(grep '^tests:' "$logs/run-$k.log" | tail -1)"
  echo "$line" | tee -a "$logs/summary"
  if [ "$rc" -ne 0 ]; then
    echo "$me: run $k failed: see $logs/run-$k.log" >&2
    exit "$rc"
  fi
  k=$((k + 1))
done
echo "$me: $n runs in a row passed ($commit)" | tee -a "$logs/summary"

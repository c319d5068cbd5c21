#!/bin/sh
# Format C sources with clang-format and the checked-in style files:
# .clang-format (libnnpipe, its headers, tools and tests: 2-space indent,
# 100 columns, return type on its own line, `f (x)`) and plugins/.clang-format
# (the GStreamer elements: gst-indent's style, 80 columns, 4-space
# continuation, `Type * name` in prototypes).  clang-format uses the file
# nearest to each source.
#
#   tools/format.sh [FILE...]            format the files in place
#   tools/format.sh --check [FILE...]    change nothing; list each file that
#                                        would change with the number of lines
#                                        that would, then the total; exit 1
#                                        when any would change
#
# Without FILEs: every tracked *.c and *.h of lib/, include/, plugins/,
# tools/, tests/ and benchmarks/.  Needs clang-format (Debian: clang-format).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
cd "$top"

check=false
if [ "${1:-}" = --check ]; then
  check=true
  shift
fi
if ! command -v clang-format >/dev/null; then
  echo "format.sh: clang-format not found (apt-get install clang-format)" >&2
  exit 2
fi
if [ $# -eq 0 ]; then
  set -- $(git ls-files -- 'lib/*.[ch]' 'include/*.h' 'plugins/*.[ch]' 'tools/*.[ch]' \
    'tests/*.[ch]' 'benchmarks/*.[ch]')
fi

if ! $check; then
  clang-format -i --style=file "$@"
  exit 0
fi

# one clang-format process finds the files that would change (--dry-run
# warns per violation); only those are diffed for the count
bad=$(clang-format --style=file --dry-run "$@" 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
total=0
files=0
for f in $bad; do
  # lines of the file that the formatter would remove or replace
  n=$(clang-format --style=file "$f" | diff "$f" - | grep -c '^<' || true)
  if [ "$n" -gt 0 ]; then
    echo "$f: $n lines would change"
    total=$((total + n))
    files=$((files + 1))
  fi
done
echo "format.sh: $files of $# files would change, $total lines"
[ "$total" -eq 0 ]

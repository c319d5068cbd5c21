#!/bin/sh
# Every script in pipelines/, benchmarks/ and tools/ answers -h and --help
# with its usage (its header comment, pipelines/common.sh's nnp_help): exit
# status 0, the script's own path (its usage line) on stdout, nothing on
# stderr, and no work done (no file written in the current directory, so
# `pipelines/ocr.sh --help` does not OCR the word "--help").
#
# usage: test-help.sh SOURCE_DIR
set -u
src=$(cd "${1:-.}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for script in "$src"/pipelines/*.sh "$src"/benchmarks/*.sh "$src"/tools/*.sh; do
  rel=${script#"$src"/}
  [ "$rel" = pipelines/common.sh ] && continue   # sourced, not run
  for opt in --help -h; do
    n=$((n + 1))
    mkdir "$tmp/cwd"
    (cd "$tmp/cwd" && timeout 30 sh "$script" "$opt" >"$tmp/out" 2>"$tmp/err")
    st=$?
    if [ $st -ne 0 ]; then
      echo "FAIL: $rel $opt: exit status $st"; sed 's/^/  /' "$tmp/err"; fail=1
    elif ! grep -q "$rel" "$tmp/out"; then
      echo "FAIL: $rel $opt: the usage printed does not name $rel:"; sed 's/^/  /' "$tmp/out"; fail=1
    elif [ -s "$tmp/err" ]; then
      echo "FAIL: $rel $opt: wrote to stderr:"; sed 's/^/  /' "$tmp/err"; fail=1
    elif [ -n "$(ls -A "$tmp/cwd")" ]; then
      echo "FAIL: $rel $opt: did work, it wrote $(ls -A "$tmp/cwd" | tr '\n' ' ')"; fail=1
    else
      echo "ok  : $rel $opt ($(wc -l < "$tmp/out" | tr -d ' ') lines of usage)"
    fi
    rm -rf "$tmp/cwd"
  done
done
[ $n -gt 10 ] || { echo "FAIL: only $n runs: scripts not found in $src"; fail=1; }
exit $fail

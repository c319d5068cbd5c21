#!/bin/sh
# gst-inspect-1.0 of the nnpipe plugin and of each of its elements must
# succeed, print no warnings and show a description and pad templates.
# usage: inspect.sh [gst-inspect-1.0]
inspect=${1:-gst-inspect-1.0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

check () {
  what=$1
  shift
  if ! "$inspect" "$@" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: gst-inspect-1.0 $* exited with an error"; cat "$tmp/err"; fail=1; return
  fi
  if [ -s "$tmp/err" ] || grep -Eq 'WARNING|CRITICAL|Gtk-|GLib-' "$tmp/out"; then
    echo "FAIL: gst-inspect-1.0 $* printed warnings:"; cat "$tmp/err"; fail=1
  fi
  if [ "$what" = element ]; then
    # a source has no sink pad, a sink no source pad (nnserversrc, nnserversink)
    wants="Description|Pad Templates:|SINK template|SRC template"
    if grep -Eq '^ *Klass +Source/' "$tmp/out"; then
      wants="Description|Pad Templates:|SRC template"
    elif grep -Eq '^ *Klass +Sink/' "$tmp/out"; then
      wants="Description|Pad Templates:|SINK template"
    fi
    args="$*"
    old_ifs=$IFS
    IFS='|'
    # shellcheck disable=SC2086
    set -- $wants
    IFS=$old_ifs
    for want in "$@"; do
      grep -q "$want" "$tmp/out" || { echo "FAIL: $args lacks '$want'"; fail=1; }
    done
  fi
}

check plugin nnpipe
elements=$(sed -n 's/^  \([a-z0-9]*\): .*/\1/p' "$tmp/out")
[ -n "$elements" ] || { echo "FAIL: no elements in the nnpipe plugin"; exit 1; }
for e in $elements; do
  check element "$e"
  echo "ok: $e"
done
exit $fail

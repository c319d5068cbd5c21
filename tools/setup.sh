#!/bin/sh
# Set up a fresh Debian 12 machine for nnpipe (run as root, or with sudo
# available): install every Debian package the build, tests, pipelines and
# benchmarks need (the list is the table of tools/check-deps.sh), fetch the
# working models and the ONNX Runtime oracle from the npm registry into
# .cache/, check that nothing is missing (tools/check-deps.sh) and build
# into build/.  Idempotent and quick when all is in place.
#
#   tools/setup.sh            install + fetch + check + build (debugoptimized)
#   NNP_BUILD_DIR=dir tools/setup.sh   build elsewhere
#   NNP_MESON_ARGS="..."      extra arguments of the first `meson setup`
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
build=${NNP_BUILD_DIR:-$top/build}

# the packages of what is absent (tools/check-deps.sh's table is the list)
missing=$("$top/tools/check-deps.sh" --missing-packages | tr '\n' ' ')
missing=${missing% }
if [ -n "$missing" ]; then
  echo "setup: installing $missing"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

"$top/tools/fetch-models.sh"
"$top/tools/check-deps.sh"

if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086
  meson setup "$build" "$top" ${NNP_MESON_ARGS:-}
fi
ninja -C "$build"
echo "setup: built in $build"

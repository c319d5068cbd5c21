#!/bin/sh
# Set up a fresh Debian 12 machine for nnpipe (run as root, or with sudo
# available): install the build and test dependencies from Debian, fetch the
# working models and the ONNX Runtime oracle from the npm registry into
# .cache/, and build into build/.  Idempotent and quick when all is in place.
#
#   tools/setup.sh            install + fetch + build (release-like: debugoptimized)
#   NNP_BUILD_DIR=dir tools/setup.sh   build elsewhere
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${NNP_BUILD_DIR:-$top/build}

packages="build-essential meson ninja-build pkg-config git
  libglib2.0-dev libcjson-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  python3 python3-onnx python3-numpy libonnx-testdata
  clang libclang-rt-14-dev python3-gi gir1.2-gstreamer-1.0"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

"$top/tools/fetch-models.sh"

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$top" ${NNP_MESON_ARGS:-}
fi
ninja -C "$build"
echo "setup: built in $build"

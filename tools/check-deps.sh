#!/bin/sh
# Check that everything nnpipe's build, tests, pipelines and benchmarks use
# from outside the project is there, and name the Debian package (or the
# fetch script) for each missing piece.  The table below is the ONE list of
# Debian packages: tools/setup.sh installs `tools/check-deps.sh --packages`.
#
#   tools/check-deps.sh               check every item; exit 1 listing each missing
#                                     one with its Debian package
#   tools/check-deps.sh --packages    print the Debian packages (one per line)
#   tools/check-deps.sh --missing-packages
#                                     print the packages still to install: those of
#                                     the items that are absent, unless dpkg has the
#                                     package already (an item that is there by other
#                                     means, e.g. npm from a Node.js distribution, needs
#                                     no package)
#   tools/check-deps.sh --self-check  scan pipelines/, tests/, benchmarks/ and tools/
#                                     for gst-launch elements, `command -v` tools,
#                                     meson find_program()s and Python imports;
#                                     exit 1 naming each one the table lacks
#                                     (meson test check-deps-coverage runs this)
#
# Called by tools/setup.sh after installing and fetching, and by tools/test.sh
# before testing: a test never skips because a dependency of ours is missing
# (tests/README.md).  To add a dependency, add a line to the table: its kind,
# what is checked and the Debian package that provides it.
#
# Environment: NNP_CACHE (where tools/fetch-models.sh puts its files, default
# .cache), NNP_CHECK_DEPS_VERBOSE=1 (--self-check lists what it found).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
nnp_help "$@"
cache=${NNP_CACHE:-$top/.cache}

# kind: cmd (a program on PATH or an absolute path), pc (a pkg-config module),
# element (a GStreamer element), py (a Python module of /usr/bin/python3),
# gir (a GObject-introspection namespace for Python), file (a path),
# fetched (a path under NNP_CACHE, from tools/fetch-models.sh).
# Remedy: a Debian package, or "fetch" (tools/fetch-models.sh).  A package
# with no probe of its own is listed as "deb - PACKAGE".
table () {
  cat <<'EOF'
# kind    what                                       remedy
cmd       cc                                         build-essential
cmd       meson                                      meson
cmd       ninja                                      ninja-build
cmd       pkg-config                                 pkg-config
cmd       git                                        git
# tools/format.sh (the style files .clang-format, plugins/.clang-format)
cmd       clang-format                               clang-format
pc        glib-2.0                                   libglib2.0-dev
pc        libcjson                                   libcjson-dev
pc        gstreamer-1.0                              libgstreamer1.0-dev
pc        gstreamer-check-1.0                        libgstreamer1.0-dev
pc        gstreamer-base-1.0                         libgstreamer1.0-dev
pc        gstreamer-video-1.0                        libgstreamer-plugins-base1.0-dev
pc        gstreamer-app-1.0                          libgstreamer-plugins-base1.0-dev
pc        OpenCL                                     ocl-icd-opencl-dev
file      /usr/include/CL/cl.h                       opencl-headers
file      /etc/OpenCL/vendors/pocl.icd               pocl-opencl-icd
cmd       clinfo                                     clinfo
cmd       gst-launch-1.0                             gstreamer1.0-tools
cmd       gst-inspect-1.0                            gstreamer1.0-tools
# benchmarks/pictures.sh: the SVGs of docs/img rendered in a real browser
cmd       chromium                                   chromium
element   filesrc                                    libgstreamer1.0-0
element   filesink                                   libgstreamer1.0-0
element   fakesink                                   libgstreamer1.0-0
element   queue                                      libgstreamer1.0-0
element   identity                                   libgstreamer1.0-0
element   capsfilter                                 libgstreamer1.0-0
element   videotestsrc                               gstreamer1.0-plugins-base
element   videoconvert                               gstreamer1.0-plugins-base
element   videoscale                                 gstreamer1.0-plugins-base
element   decodebin                                  gstreamer1.0-plugins-base
element   appsrc                                     gstreamer1.0-plugins-base
element   videoflip                                  gstreamer1.0-plugins-good
element   pngenc                                     gstreamer1.0-plugins-good
# decodebin's decoders for pipelines/ocr-file.sh (PNG, JPEG, MP4 with H.264)
element   pngdec                                     gstreamer1.0-plugins-good
element   jpegdec                                    gstreamer1.0-plugins-good
element   multifilesink                              gstreamer1.0-plugins-good
element   qtdemux                                    gstreamer1.0-plugins-good
element   avdec_h264                                 gstreamer1.0-libav
element   textoverlay                                gstreamer1.0-x
element   timeoverlay                                gstreamer1.0-x
# annotated video out of pipelines/ocr-file.sh, the video test's input
element   jpegenc                                    gstreamer1.0-plugins-good
element   avimux                                     gstreamer1.0-plugins-good
element   vp8enc                                     gstreamer1.0-plugins-good
element   webmmux                                    gstreamer1.0-plugins-good
element   matroskamux                                gstreamer1.0-plugins-good
element   multifilesrc                               gstreamer1.0-plugins-good
cmd       gst-typefind-1.0                           gstreamer1.0-tools
# nnoverlay draws its labels with Pango on Cairo; a CJK-capable font
pc        pangocairo                                 libpango1.0-dev
pc        cairo                                      libcairo2-dev
file      /usr/share/fonts/truetype/wqy/wqy-microhei.ttc  fonts-wqy-microhei
# the OCR peer of benchmarks/ocr-real.sh
cmd       tesseract                                  tesseract-ocr
file      /usr/share/tesseract-ocr/5/tessdata/eng.traineddata  tesseract-ocr-eng
file      /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf  fonts-dejavu-core
# the libFuzzer harnesses (tests/fuzz/, tools/test.sh's fuzz smoke) build with clang
cmd       clang                                      clang
file      /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a  libclang-rt-14-dev
# remote stages (docs/remote.md): TLS for GIO, certificates in tests/plugins/test-remote.sh
deb       -                                          glib-networking
cmd       openssl                                    openssl
cmd       python3                                    python3
cmd       /usr/bin/python3                           python3
py        numpy                                      python3-numpy
py        onnx                                       python3-onnx
# PyGObject: reading nnpipe results from Python (docs)
py        gi                                         python3-gi
# a real photo for the ISNet int8 test and benchmark (tools/isnet-prep.py)
py        skimage                                    python3-skimage
gir       Gst-1.0                                    gir1.2-gstreamer-1.0
gir       GstVideo-1.0                               gir1.2-gst-plugins-base-1.0
file      /usr/share/libonnx-testdata/data/node      libonnx-testdata
# tests/models/compare-vision.sh: real photos (public domain) for the vision models
file      /usr/lib/python3/dist-packages/skimage/data/astronaut.png  python3-skimage
file      /usr/lib/python3/dist-packages/skimage/data/coffee.png     python3-skimage
cmd       npm                                        npm
cmd       /usr/bin/time                              time
# tests/remote/hosts.sh: test hosts = network namespaces + veth, tbf rates, pinned servers
cmd       ip                                         iproute2
cmd       tc                                         iproute2
cmd       taskset                                    util-linux
cmd       nsenter                                    util-linux
cmd       setpriv                                    util-linux
fetched   models/ch_PP-OCRv4_det_infer.onnx          fetch
fetched   models/ch_PP-OCRv4_rec_infer.onnx          fetch
fetched   models/ch_ppocr_mobile_v2.0_cls_infer.onnx fetch
fetched   models/ppocr_keys_v1.txt                   fetch
fetched   ort/libonnxruntime.so.1                    fetch
# the vision models beyond OCR (docs/models.md): BlazeFace, M-LSD, ISNet float16 / int8
fetched   models/face_detection_front_128x128_barracuda.onnx  fetch
fetched   models/face_detection_back_256x256_barracuda.onnx   fetch
fetched   models/mlsd_320x320_tiny.onnx              fetch
fetched   models/mlsd_320x320_large.onnx             fetch
fetched   models/isnet_fp16.onnx                     fetch
fetched   models/isnet_quint8.onnx                   fetch
# HTTP metrics and health endpoints (nnpipe serve, nnpipeline): libsoup-3; curl reads them in tests
pc        libsoup-3.0                                libsoup-3.0-dev
cmd       curl                                       curl
# results to an MQTT broker (nnmetapublish method=mqtt); tests start a real broker
pc        libmosquitto                               libmosquitto-dev
cmd       mosquitto                                  mosquitto
cmd       mosquitto_sub                              mosquitto-clients
cmd       mosquitto_pub                              mosquitto-clients
# live cameras in tests: an RTSP server made with gst-rtsp-server from Python
gir       GstRtspServer-1.0                          gir1.2-gst-rtsp-server-1.0
element   rtspsrc                                    gstreamer1.0-plugins-good
# the face peers of benchmarks/faces.sh: OpenCV's Haar cascades in GStreamer
element   facedetect                                 gstreamer1.0-opencv
element   faceblur                                   gstreamer1.0-opencv
file      /usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml  opencv-data
# the hand-annotated photos of tests/data/faces/truth.json (benchmarks/faces.sh) and its
# reference decoder's image reading
file      /usr/share/doc/opencv-doc/opencv4/html/05.jpg  opencv-doc
file      /usr/lib/python3/dist-packages/skimage/data/astronaut.png  python3-skimage
file      /usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg  python-matplotlib-data
py        PIL                                        python3-pil
# benchmarks/background.sh: one photo as N frames
element   imagefreeze                                gstreamer1.0-plugins-good
EOF
}

rows () { table | sed -e '/^#/d' -e '/^[[:space:]]*$/d'; }

# Is `what` of `kind` there?
probe () {
  case $1 in
    cmd) command -v "$2" >/dev/null 2>&1 ;;
    pc) pkg-config --exists "$2" 2>/dev/null ;;
    element) gst-inspect-1.0 --exists "$2" 2>/dev/null ;;
    py) /usr/bin/python3 -c "import $2" 2>/dev/null ;;
    gir) /usr/bin/python3 -c "import gi; gi.require_version('${2%-*}', '${2##*-}'); \
from gi.repository import ${2%-*}" 2>/dev/null ;;
    file) [ -e "$2" ] ;;
    fetched) [ -e "$cache/$2" ] ;;
    deb) dpkg-query -W -f='${Status}' "$3" 2>/dev/null | grep -q "install ok installed" ;;
    *) echo "check-deps: unknown kind '$1' in the table" >&2; return 1 ;;
  esac
}

check () {
  missing=0
  rows > "$tmp/rows"
  while read -r kind what remedy; do
    probe "$kind" "$what" "$remedy" && continue
    missing=$((missing + 1))
    case $remedy in
      fetch) echo "check-deps: MISSING $kind $cache/$what: run tools/fetch-models.sh" >&2 ;;
      *) echo "check-deps: MISSING $kind $what: install the Debian package $remedy" >&2
         echo "$remedy" >> "$tmp/pkgs" ;;
    esac
  done < "$tmp/rows"
  if [ "$missing" -gt 0 ]; then
    if [ -s "$tmp/pkgs" ]; then
      echo "check-deps: $missing missing; as root: apt-get install --no-install-recommends" \
        "$(sort -u "$tmp/pkgs" | tr '\n' ' ')(or run tools/setup.sh)" >&2
    else
      echo "check-deps: $missing missing (run tools/fetch-models.sh)" >&2
    fi
    return 1
  fi
  echo "check-deps: all $(wc -l < "$tmp/rows" | tr -d ' ') dependencies present"
}

missing_packages () {
  rows | while read -r kind what remedy; do
    [ "$remedy" = fetch ] && continue
    probe "$kind" "$what" "$remedy" && continue
    dpkg-query -W -f='${Status}' "$remedy" 2>/dev/null | grep -q "install ok installed" && continue
    echo "$remedy"
  done | awk '!seen[$0]++'
}

# scan FILE...: print "kind name file" for what the files use: the elements
# of gst-launch-1.0 lines (comments included: they are documented lines),
# `command -v` tools, meson find_program()s and Python imports
scan () {
  for f in "$@"; do
    case $f in
      # a module beside the script (tests/remote/nnwire.py) is ours
      *.py) sed -n -e 's/^[[:space:]]*import[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/py \1/p' \
              -e 's/^[[:space:]]*from[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).* import .*/py \1/p' "$f" |
              while read -r k m; do [ -e "$(dirname "$f")/$m.py" ] || echo "$k $m"; done ;;
      # find_program() of a file beside the meson.build is ours, not a dependency
      *meson.build) sed -n "s/.*find_program('\([^']*\)'.*/cmd \1/p" "$f" |
                      while read -r k c; do [ -e "$(dirname "$f")/$c" ] || echo "$k $c"; done ;;
      *) awk '
        { line = $0; sub(/^[[:space:]]*#[[:space:]]?/, "", line) }
        /\\$/ { sub(/\\$/, "", line); acc = acc " " line; next }
        { acc = acc " " line; logical(acc); acc = "" }
        END { if (acc != "") logical(acc) }
        function logical(s,   i, n, seg, tok, k, first, w, t) {
          while (match(s, /command -v [A-Za-z0-9_.\/-]+/)) {
            w = substr(s, RSTART + 11, RLENGTH - 11)
            print "cmd " w; s = substr(s, RSTART + RLENGTH)
          }
          # gst-launch-1.0 as a command, not in prose
          if (!match(s, /(^|[;&|(!]|exec|then|do|=[^ \t]*)[ \t]*gst-launch-1\.0[ \t]/)) return
          s = substr(s, RSTART + RLENGTH)
          n = split(s, seg, "!")
          for (k = 1; k <= n; k++) {
            split(seg[k], tok, " ")
            first = 1
            while (k == 1 && tok[first] ~ /^-/) first++
            t = tok[first]; gsub(/"/, "", t)
            if (t ~ /^[a-z][a-z0-9_]*$/) print "element " t
            delete tok
          }
        }' "$f" ;;
    esac | sed "s|\$| $f|"
  done
}

# the stdlib modules of python3, our own elements (GST_ELEMENT_REGISTER_DEFINE
# in plugins/) and the shell built-ins are not in the table
ours () {
  sed -n 's/.*GST_ELEMENT_REGISTER_DEFINE *([a-z0-9_]*, *"\([a-z0-9_]*\)".*/\1/p' "$top"/plugins/*.c "$top"/plugins/*/*.c
}

self_check () {
  rows | awk '{ print $1 " " $2 }' > "$tmp/known"
  ours | sed 's/^/element /' >> "$tmp/known"
  for c in sh cc; do echo "cmd $c"; done >> "$tmp/known"
  /usr/bin/python3 -c 'import sys; print("\n".join("py " + m for m in sys.stdlib_module_names))' \
    >> "$tmp/known" 2>/dev/null || { echo "check-deps: --self-check needs /usr/bin/python3 (Debian package python3)" >&2; return 1; }
  files=$(find "$top/pipelines" "$top/benchmarks" "$top/tools" "$top/tests" \
            \( -name '*.sh' -o -name '*.py' -o -name meson.build \) -type f \
            ! -path "$top/tools/check-deps.sh" | sort)
  # shellcheck disable=SC2086
  scan $files | sort -u > "$tmp/used"
  # the scanner must see what we know is there, and catch what is not
  printf '%s\n' 'gst-launch-1.0 -q videotestsrc ! \' '#  nosuchelement a=1 ! "video/x-raw" ! fakesink' \
    'command -v nosuchtool >/dev/null' > "$tmp/probe.sh"
  probe_out=$(scan "$tmp/probe.sh" | awk '{ print $1 " " $2 }' | LC_ALL=C sort | tr '\n' ' ')
  if [ "$probe_out" != "cmd nosuchtool element fakesink element nosuchelement element videotestsrc " ]; then
    echo "check-deps: the scanner is broken: it read '$probe_out' from a known sample" >&2
    return 1
  fi
  for must in "element textoverlay" "element videotestsrc" "element nnstage" "py numpy"; do
    grep -q "^$must " "$tmp/used" || { echo "check-deps: the scan found no '$must' in the scripts" >&2; return 1; }
  done
  bad=0
  while read -r kind name file; do
    grep -qx "$kind $name" "$tmp/known" && continue
    echo "check-deps: $kind '$name' (used in ${file#"$top"/}) is not in tools/check-deps.sh's table:" \
      "add it with its Debian package" >&2
    bad=$((bad + 1))
  done < "$tmp/used"
  [ -z "${NNP_CHECK_DEPS_VERBOSE:-}" ] || awk '{ print "check-deps: uses " $1 " " $2 }' "$tmp/used" | sort -u
  [ "$bad" = 0 ] || return 1
  echo "check-deps: self-check: $(wc -l < "$tmp/used" | tr -d ' ') uses in $(echo "$files" | wc -l | tr -d ' ') files, all in the table"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case ${1:-} in
  --packages) rows | awk '$3 != "fetch" { print $3 }' | awk '!seen[$0]++' ;;
  --missing-packages) missing_packages ;;
  --self-check) self_check ;;
  '') check ;;
  *) echo "usage: $0 [--packages|--missing-packages|--self-check|--help]" >&2; exit 2 ;;
esac

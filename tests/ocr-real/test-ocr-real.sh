#!/bin/sh
# Issue 10 acceptance: OCR on real images and on doubled letters.
#
#   test-ocr-real.sh SOURCE_DIR BUILD_DIR
#
# 1. tests/ocr-real/eval.py runs pipelines/ocr-file.sh on every image of
#    tests/data/ocr-real (public photos, pages and screenshots with
#    hand-written ground truth, see SOURCES.md there) and must reach a mean
#    character accuracy >= 0.97 and >= 0.89 of the lines read exactly; its
#    first 20 images (issue 10) >= 0.95 and >= 0.85.  Each step of issue
#    23 (filter, whole-frame, tidy, read-both, region, join, icon) must
#    help on the images it is for (NNP_OCR_OFF turns it off for the
#    comparison; normalize has no such image: plugin-ocr-steps).
# 2. pipelines/ocr.sh must read rendered strings with doubled letters
#    exactly (the recogniser emits one CTC step per 8 input columns: a
#    squeezed crop loses one of two equal letters), upside-down lines must
#    be read the right way up (direction classifier), and 3 frames in give
#    3 frames out.
# A missing model or tool is a failure naming what to install.
set -u
src=${1:-.}
build=${2:-$src/build}
models=${NNP_MODELS_DIR:-$src/.cache/models}
fail=0

for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt \
    ch_ppocr_mobile_v2.0_cls_infer.onnx; do
  [ -f "$models/$f" ] || { echo "FAIL: $models/$f missing: run tools/fetch-models.sh"; exit 1; }
done
for t in gst-launch-1.0 python3; do
  command -v $t >/dev/null || { echo "FAIL: $t missing: run tools/setup.sh"; exit 1; }
done
gst-inspect-1.0 textoverlay >/dev/null 2>&1 ||
  { echo "FAIL: no textoverlay: apt-get install gstreamer1.0-x (tools/setup.sh)"; exit 1; }
export NNP_BUILD_DIR="$build" NNP_MODELS_DIR="$models"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$src/tests/data/ocr-real
ocr="sh $src/pipelines/ocr-file.sh {image} {out}"

# subset DIR IMAGE...: DIR holds links to these images of the set and
# their ground truth
subset () {
  d=$1; shift
  mkdir -p "$d"
  for img in "$@"; do
    ln -s "$data/$img" "$d/" && ln -s "$data/${img%.*}.txt" "$d/" || return 1
  done
}

# the whole set (30 images since issue 23 added harder ones: a slanted
# and two upside-down pages, tight one-line screenshots) and, for issue
# 10's acceptance figures, its first 20 images
if python3 "$src/tests/ocr-real/eval.py" -v --jobs 2 --min-char 0.97 --min-exact 0.89 \
    --cmd "$ocr" "$data"; then
  echo "ok  : real images (>= 0.97 of characters, >= 0.89 of lines)"
else
  echo "FAIL: real images below 0.97 / 0.89 (or the run failed)"; fail=1
fi
subset "$tmp/issue10" scene-01.jpg scene-02.jpg scene-03.jpg scene-04.jpg scene-05.jpg \
  scene-06.jpg word-01.jpg word-02.jpg word-03.jpg word-04.jpg sign-01.jpg sign-02.jpg \
  sign-03.jpg sign-04.jpg sign-05.jpg book-page.png photo-page.png screen-palette-dialog.png \
  screen-paths-menu.png screen-dashboard-menu.png
if python3 "$src/tests/ocr-real/eval.py" --jobs 2 --min-char 0.95 --min-exact 0.85 \
    --cmd "$ocr" "$tmp/issue10"; then
  echo "ok  : issue 10's 20 real images (>= 0.95 / 0.85)"
else
  echo "FAIL: issue 10's 20 real images below 0.95 / 0.85"; fail=1
fi

# read_rendered TEXT FONT WxH ENCODER FILE: TEXT drawn black on white in
# FONT, centred in a WxH frame, encoded into FILE, read by ocr-file.sh into
# $got (lines joined by '|'); fails if the frame could not be made
read_rendered () {
  gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=white ! \
    "video/x-raw,width=${3%x*},height=${3#*x}" ! \
    textoverlay "text=$1" "font-desc=$2" color=0xff000000 \
      draw-shadow=false draw-outline=false valignment=center halignment=center ! \
    videoconvert ! $4 ! filesink "location=$5" || return 1
  got=$(sh "$src/pipelines/ocr-file.sh" "$5" - | cut -f1 | paste -sd'|')
}
# expect_read TEXT WHAT: $got must be TEXT
expect_read () {
  if [ "$got" = "$1" ]; then
    echo "ok  : '$1' ($2)"
  else
    echo "FAIL: '$1' ($2) read '$got'"; fail=1
  fi
}

# issue 23: each step of the reading helps on the real images it is for:
# with it (the default), more lines are read exactly than with it turned
# off (NNP_OCR_OFF of ocr-file.sh), or as many and more characters
figures () {
  NNP_OCR_OFF=${2:-} python3 "$src/tests/ocr-real/eval.py" --jobs 2 --cmd "$ocr" "$1" |
    awk '$1 == "ALL" { print $3, $4 }'
}
step_helps () {
  step=$1; shift
  subset "$tmp/step-$step" "$@" || { echo "FAIL: $step: no such images $*"; fail=1; return; }
  on=$(figures "$tmp/step-$step")
  off=$(figures "$tmp/step-$step" "$step")
  if [ -n "$on" ] && [ -n "$off" ] && awk -v a="$on" -v b="$off" 'BEGIN {
      split(a, x, " "); split(b, y, " ")
      exit !(x[2] > y[2] || (x[2] == y[2] && x[1] > y[1])) }'; then
    echo "ok  : $step helps on $* (characters, lines: $on; without: $off)"
  else
    echo "FAIL: $step does not help on $* (with: '$on', without: '$off')"; fail=1
  fi
}
step_helps filter page-rotated.png
step_helps whole-frame line-formula-min.png line-formula-difference.png
step_helps tidy photo-page-upside-down.png
step_helps read-both screen-paths-menu.png screen-upside-down.png
step_helps region photo-page.png line-title-bar.png
step_helps join sign-02.jpg sign-03.jpg
step_helps icon screen-help-menu.png screen-dashboard-menu.png \
  screen-palette-dialog.png screen-convert-dialog.png
# ... and takes no letter: a capital alone before a word is read
for spec in "Sans 22|W Street" "Sans 22|O Canada" "Serif 22|A new era begins"; do
  font=${spec%%|*}; text=${spec#*|}
  read_rendered "$text" "$font" 420x70 pngenc "$tmp/lead.png" ||
    { echo "FAIL: could not render '$text'"; fail=1; continue; }
  expect_read "$text" "$font: a leading capital is not an icon"
done

for text in nnpipe sneezing 0x04000000 bookkeeper Mississippi "committee 1100" \
    "Hello nnpipe 2026!"; do
  got=$(sh "$src/pipelines/ocr.sh" "$text" "$tmp/o.png" | cut -f1 | paste -sd'|')
  if [ "$got" = "$text" ]; then
    echo "ok  : '$text'"
  else
    echo "FAIL: '$text' read '$got'"; fail=1
  fi
done
# upside down: the direction classifier turns it (NNP_OCR_CLS=0: it is not
# read)
for text in "Upside down 42" "Hello nnpipe 2026!"; do
  got=$(NNP_OCR_TURN=180 sh "$src/pipelines/ocr.sh" "$text" "$tmp/o.png" |
    cut -f1 | paste -sd'|')
  if [ "$got" = "$text" ]; then
    echo "ok  : '$text' upside down"
  else
    echo "FAIL: '$text' upside down read '$got'"; fail=1
  fi
done
# spaces on JPEG-compressed frames: rendered lines with spaces, saved as
# JPEG (quality 85 and 75, jpegenc's default and below), read exactly
# through pipelines/ocr-file.sh (tight crops of compressed text lost the
# spaces: nndbdecode unclip-ratio=2.0, docs/ocr.md)
for spec in "Sans 32|Last frame 789|85" "Serif 28|Fourth line ABC|85" \
    "Sans Bold 24|Second frame here|85" "Sans 32|Hello video 2026|75"; do
  font=${spec%%|*}; rest=${spec#*|}; text=${rest%|*}; q=${rest#*|}
  read_rendered "$text" "$font" 640x480 "jpegenc quality=$q" "$tmp/s.jpg" ||
    { echo "FAIL: could not render '$text' as JPEG"; fail=1; continue; }
  expect_read "$text" "$font, JPEG quality $q"
done
# frames in == frames out through the whole chain, classifier included
n=$(NNP_OCR_FRAMES=3 sh "$src/pipelines/ocr.sh" "Three frames" "$tmp/f.png" |
  grep -c '^Three frames	')
if [ "$n" = 3 ] && [ -s "$tmp/f-00002.png" ] && [ ! -e "$tmp/f-00003.png" ]; then
  echo "ok  : 3 frames in, 3 frames out"
else
  echo "FAIL: 3 frames in, $n lines out"; fail=1
fi
exit $fail

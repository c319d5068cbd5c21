#!/bin/sh
# OCR on any image or video file.
#
#   pipelines/ocr-file.sh [--json FILE.jsonl] FILE [OUTPUT]
#
# Decodes FILE with decodebin (PNG, JPEG, AVI, WebM, MP4 with a decoder...),
# runs PaddleOCR's PP-OCRv4 detector and recogniser through nnpipe on every
# frame and prints one line per text line on stdout.
#
# A still image (gst-typefind-1.0 says image/*): the text, a tab, the
# score, a tab, the box corners "x0,y0 x1,y1 x2,y2 x3,y3" in frame pixels;
# the annotated image goes to OUTPUT (default ocr-file.png).
#
# A video: every frame is read; each line is prefixed with the frame number
# (from 0) and its PTS in seconds: FRAME<TAB>PTS<TAB>TEXT<TAB>SCORE<TAB>CORNERS.
# The annotated video goes to OUTPUT (default ocr-file.webm), in a form
# chosen by its extension: .webm (VP8 in WebM), .mkv (VP8 in Matroska),
# .avi (Motion JPEG in AVI), .png (one PNG per frame: OUTPUT-00000.png,
# OUTPUT-00001.png, ...).  OUTPUT "-" writes no annotated output.  Frames are
# read in parallel: see NNP_OCR_PIPELINE below and docs/ocr.md.
#
# --json FILE.jsonl also writes one JSON object per frame (frame, pts, and
# each line's text, score, box, angle) to FILE ("-": standard output
# instead of the lines above); see docs/results.md.
#
# Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
# .cache/models), NNP_OCR_MAX_SIZE (frames larger than this square are
# scaled down to fit it for the detector, default 960, as PaddleOCR's
# limit_side_len; smaller frames are scaled up by at most
# NNP_OCR_MAX_UPSCALE, default 1.5; the detector input is padded only to
# a multiple of 32; measured on tests/data/ocr-real, docs/ocr.md),
# NNP_OCR_PIPELINE (video only: 1 or parallel, the default, runs
# NNP_OCR_COPIES copies of the whole one-thread chain, each taking frames
# in turn (nnparallel; default: one per core, at most 4), results in frame
# order; stages runs it pipelined instead: the detector and the recogniser
# each split in two one-thread stages, a queue between them; 0 runs the
# chain in one thread, as for an image), NNP_OCR_OFF (steps of the
# reading to turn off, comma-separated, to compare with and without them:
# filter (nncrop's Lanczos filter: bilinear instead), whole-frame
# (nndbdecode whole-frame-size: 0), tidy (nndbdecode tidy: false),
# read-both (nncrop read-both: false), normalize (nnctcdecode
# normalize-latin: false), region (nndbdecode region-threshold: 1), join
# (nnctcdecode join-gap: -1), icon (nncrop skip-icon: false);
# benchmarks/ocr-real.sh --steps runs each).
set -eu

me=ocr-file.sh
. "$(dirname "$0")/common.sh"
nnp_help "$@"
max=${NNP_OCR_MAX_SIZE:-960}
upscale=${NNP_OCR_MAX_UPSCALE:-1.5}

usage () {
  echo "usage: $0 [--json FILE.jsonl] FILE [OUTPUT]" >&2
  exit 2
}

json=""
while [ $# -gt 0 ]; do
  case $1 in
    --json) [ $# -ge 2 ] || usage; json=$2; shift 2 ;;
    --json=*) json=${1#--json=}; shift ;;
    -h|--help)
      sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0 ;;
    --) shift; break ;;
    -*) echo "$me: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
file=$1
if [ ! -f "$file" ]; then
  echo "$me: no such file: $file" >&2
  exit 2
fi
nnp_need_models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx \
  ppocr_keys_v1.txt
cls=0
if [ "${NNP_OCR_CLS:-1}" != 0 ]; then
  nnp_need_models ch_ppocr_mobile_v2.0_cls_infer.onnx
  cls=1
fi
nnp_use_plugin

# still image or video?  (gst-typefind-1.0 prints "FILE - CAPS")
kind=$(gst-typefind-1.0 "$file" 2>/dev/null | sed -n 's/.* - \([a-z]*\)\/.*/\1/p' | head -n 1)
if [ "$kind" = image ]; then
  video=0
  out=${2:-ocr-file.png}
else
  video=1
  out=${2:-ocr-file.webm}
fi

# The gst-launch line is built in "$@", source end first.
set -- -q filesrc "location=$file" ! decodebin ! videoconvert ! video/x-raw,format=RGB !

# On a video, in parallel (NNP_OCR_PIPELINE=1 or parallel, the default):
# the chain from the detector to the text, all one-thread steps, runs as
# NNP_OCR_COPIES copies taking frames in turn (nnparallel, results in
# frame order; the copies share the models' weights): the fastest form on
# two cores by CPU time in benchmarks/ocr-video.sh (docs/ocr.md: 1.64x the
# serial chain against 1.47x pipelined and 1.39x with one queue, measured
# on a loaded machine).
# Pipelined (NNP_OCR_PIPELINE=stages): the detector and the recogniser
# each split in two one-thread stages (nnpipeline), a queue of two frames
# between them: four threads the scheduler balances over the cores.  The
# recogniser's stages re-specialise for every new crop width (cheap: the
# weights are folded and packed once).
mode=${NNP_OCR_PIPELINE:-1}
[ $video = 1 ] || mode=0
case $mode in
  0|1|parallel|stages) ;;
  *) echo "$me: NNP_OCR_PIPELINE must be 1, parallel, stages or 0: $mode" >&2
     exit 2 ;;
esac
copies=${NNP_OCR_COPIES:-$(nproc 2>/dev/null || echo 2)}
case $copies in
  ''|*[!0-9]*) echo "$me: NNP_OCR_COPIES must be a number: $copies" >&2; exit 2 ;;
esac
[ "${NNP_OCR_COPIES:-}" ] || [ "$copies" -le 4 ] || copies=4
if [ "$mode" = stages ]; then
  detector="nnpipeline stages=2 devices=cpu:1,cpu:1 stats-interval=0"
  between="queue max-size-buffers=2 !"
  recogniser="nnpipeline stages=2 devices=cpu:1,cpu:1 stats-interval=0"
else
  detector="nnstage threads=1"
  between=""
  recogniser="nnstage threads=1"
fi
[ "$mode" != 0 ] || { detector="nnstage"; recogniser="nnstage"; }

# the steps NNP_OCR_OFF turns off: their elements' properties
db_opts="" crop_opts="" cls_crop_opts="" ctc_opts=""
for step in $(printf '%s' "${NNP_OCR_OFF:-}" | tr ',' ' '); do
  case $step in
    filter) crop_opts="$crop_opts filter=bilinear"
      cls_crop_opts="$cls_crop_opts filter=bilinear" ;;
    whole-frame) db_opts="$db_opts whole-frame-size=0" ;;
    tidy) db_opts="$db_opts tidy=false" ;;
    read-both) crop_opts="$crop_opts read-both=false" ;;
    normalize) ctc_opts="$ctc_opts normalize-latin=false" ;;
    region) db_opts="$db_opts region-threshold=1" ;;
    join) ctc_opts="$ctc_opts join-gap=-1" ;;
    icon) crop_opts="$crop_opts skip-icon=false"
      cls_crop_opts="$cls_crop_opts skip-icon=false" ;;
    *) echo "$me: NNP_OCR_OFF: unknown step '$step' (filter, whole-frame, tidy, read-both, normalize, region, join, icon)" >&2
       exit 2 ;;
  esac
done

# detector -> boxes -> crops -> recogniser -> text: the chain as one
# gst-launch description, run in place or inside nnparallel; q quotes a
# value for it (and for the shell's eval below: \ " $ ` escaped)
q () { printf '"%s"' "$(printf '%s' "$1" | sed 's/["\\$`]/\\&/g')"; }
chain="$detector model=$(q "$models/ch_PP-OCRv4_det_infer.onnx") ! $between \
  nndbdecode threshold=0.2 unclip-ratio=2.0$db_opts !"
# the text direction classifier (NNP_OCR_CLS=0: left out): regions it
# labels 180 are turned before recognition
if [ "$cls" = 1 ]; then
  cls_stage="nnstage"
  case $mode in 1|parallel) cls_stage="nnstage threads=1" ;; esac
  chain="$chain nncrop channel-order=bgr max-width=480 margin=0.1$cls_crop_opts ! \
    $cls_stage model=$(q "$models/ch_ppocr_mobile_v2.0_cls_infer.onnx") ! \
    nnclassdecode labels=0,180 !"
fi
chain="$chain nncrop channel-order=bgr$crop_opts ! \
  $recogniser model=$(q "$models/ch_PP-OCRv4_rec_infer.onnx") ! \
  nnctcdecode keys=$(q "$models/ppocr_keys_v1.txt")$ctc_opts"
set -- "$@" \
  nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
    width="$max" height="$max" keep-aspect-ratio=true multiple-of=32 \
    max-upscale="$upscale" pad-to-size=false keep-frame=true !
case $mode in
  1|parallel) set -- "$@" nnparallel "copies=$copies" "chain=$(q "$chain")" ;;
  *) eval "set -- \"\$@\" $chain" ;;
esac

# the lines on stdout (unless the JSON goes there)
if [ "$json" != "-" ]; then
  if [ $video = 1 ]; then
    set -- "$@" ! nnmetapublish file-format=text location=-
  else
    set -- "$@" location=-
  fi
fi
[ -z "$json" ] || set -- "$@" ! nnmetapublish file-format=json-lines "location=$json"

# the annotated image or video ("-": none)
if [ "$out" = - ]; then
  set -- "$@" ! fakesink
  exec gst-launch-1.0 "$@"
fi
set -- "$@" ! nnoverlay ! videoconvert
if [ $video = 0 ]; then
  set -- "$@" ! pngenc snapshot=true ! filesink "location=$out"
else
  case $out in
    *.png) set -- "$@" ! pngenc ! multifilesink "location=${out%.png}-%05d.png" ;;
    *.webm) set -- "$@" ! vp8enc deadline=1 ! webmmux ! filesink "location=$out" ;;
    *.mkv) set -- "$@" ! vp8enc deadline=1 ! matroskamux ! filesink "location=$out" ;;
    *.avi) set -- "$@" ! jpegenc ! avimux ! filesink "location=$out" ;;
    *) echo "$me: OUTPUT of a video must end in .webm, .mkv, .avi or .png: $out" >&2
       exit 2 ;;
  esac
fi

exec gst-launch-1.0 "$@"

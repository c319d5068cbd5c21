#!/usr/bin/python3
"""OCR results in a Python program, with plain PyGObject (python3-gi).

    pipelines/ocr-results.py FILE [RESULTS.jsonl]

Runs the OCR chain of pipelines/ocr-file.sh on FILE (any image or video
decodebin reads) and reads its results in the two ways docs/results.md
describes:

1. a pad probe on nnctcdecode's source pad reads each frame's
   GstVideoRegionOfInterestMeta (one per text line, with an "nnpipe/text"
   structure: text, score, points) as the frame passes;
2. nnmetapublish writes the same results as JSON Lines (RESULTS.jsonl, or a
   temporary file), read back with the json module once the stream ends.

Prints one line per frame from the probe, "FRAME<TAB>PTS_NS<TAB>TEXT | TEXT...",
then "frames: N" and exits 1 when the JSON Lines disagree with what the probe
saw (frame numbers, PTS, texts).

Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
.cache/models), as the shell scripts.
"""
import json
import os
import sys
import tempfile
import warnings

import gi

gi.require_version('Gst', '1.0')
gi.require_version('GstVideo', '1.0')
from gi.repository import GLib, Gst, GstVideo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def roi_lines(buf):
    """The text lines on a frame: [(id, text, score, [(x, y) * 4])]."""
    api = GstVideo.VideoRegionOfInterestMeta.get_info().api
    n = buf.get_n_meta(api)
    lines = []
    # PyGObject cannot iterate a buffer's metas by type, but it can look a
    # ROI up by id: nndbdecode numbers the boxes 0, 1, ... in reading order
    # (nnctcdecode drops low-scoring ones, leaving gaps)
    roi_id, found = 0, 0
    while found < n and roi_id < 100000:
        roi = GstVideo.buffer_get_video_region_of_interest_meta_id(buf, roi_id)
        roi_id += 1
        if roi is None:
            continue
        found += 1
        s = roi.get_param('nnpipe/text')
        if GLib.quark_to_string(roi.roi_type) != 'text' or s is None:
            continue
        text = s.get_string('text')
        if text is None:
            continue
        ok, score = s.get_double('score')
        ok, arr = s.get_array('points')
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            xy = [arr.get_nth(i) for i in range(arr.n_values)] if ok else []
        corners = list(zip(xy[0::2], xy[1::2]))
        lines.append((roi.id, text, score, corners))
    return sorted(lines)


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ('-h', '--help'):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = sys.argv[1]
    if not os.path.isfile(path):
        print('ocr-results.py: no such file: %s' % path, file=sys.stderr)
        return 2
    build = os.environ.get('NNP_BUILD_DIR', os.path.join(ROOT, 'build'))
    models = os.environ.get('NNP_MODELS_DIR', os.path.join(ROOT, '.cache', 'models'))
    for f in ('ch_PP-OCRv4_det_infer.onnx', 'ch_PP-OCRv4_rec_infer.onnx', 'ppocr_keys_v1.txt'):
        if not os.path.isfile(os.path.join(models, f)):
            print('ocr-results.py: %s is missing: run tools/fetch-models.sh'
                  % os.path.join(models, f), file=sys.stderr)
            return 2
    os.environ['GST_PLUGIN_PATH'] = os.pathsep.join(
        p for p in (os.path.join(build, 'plugins'), os.environ.get('GST_PLUGIN_PATH')) if p)
    tmp = None
    if len(sys.argv) == 3:
        jsonl = sys.argv[2]
    else:
        tmp = tempfile.NamedTemporaryFile(suffix='.jsonl', delete=False)
        tmp.close()
        jsonl = tmp.name

    Gst.init(None)
    pipeline = Gst.Pipeline.new('ocr')
    # elements made one by one: no quoting of paths in a launch line
    chain = [
        ('filesrc', {'location': path}),
        ('decodebin', {}),
        ('videoconvert', {}),
        ('capsfilter', {'caps': Gst.Caps.from_string('video/x-raw,format=RGB')}),
        ('nnconvert', {'mean': '0.485,0.456,0.406', 'std': '0.229,0.224,0.225',
                       'channel-order': 'bgr', 'width': 960, 'height': 960,
                       'keep-aspect-ratio': True, 'multiple-of': 32, 'keep-frame': True,
                       'max-upscale': 1.5, 'pad-to-size': False}),
        ('nnstage', {'model': os.path.join(models, 'ch_PP-OCRv4_det_infer.onnx')}),
        # as pipelines/ocr-file.sh (docs/ocr.md: why these values)
        ('nndbdecode', {'threshold': 0.2, 'unclip-ratio': 2.0}),
        ('nncrop', {'channel-order': 'bgr'}),
        ('nnstage', {'model': os.path.join(models, 'ch_PP-OCRv4_rec_infer.onnx')}),
        ('nnctcdecode', {'keys': os.path.join(models, 'ppocr_keys_v1.txt')}),
        ('nnmetapublish', {'location': jsonl}),
        ('fakesink', {}),
    ]
    elements = []
    for factory, props in chain:
        e = Gst.ElementFactory.make(factory, None)
        if e is None:
            print('ocr-results.py: no element %s (is NNP_BUILD_DIR right?)' % factory,
                  file=sys.stderr)
            return 1
        for k, v in props.items():
            if k in ('channel-order',):
                Gst.util_set_object_arg(e, k, v)
            else:
                e.set_property(k, v)
        pipeline.add(e)
        elements.append(e)
    decodebin = elements[1]
    for a, b in zip(elements, elements[1:]):
        if a is decodebin:
            continue
        if not a.link(b):
            print('ocr-results.py: cannot link %s to %s' % (a.get_name(), b.get_name()),
                  file=sys.stderr)
            return 1

    def on_pad(dbin, pad):
        sink = elements[2].get_static_pad('sink')
        if not sink.is_linked() and pad.query_caps(None).to_string().startswith('video/'):
            pad.link(sink)
    decodebin.connect('pad-added', on_pad)

    seen = []

    def probe(pad, info):
        buf = info.get_buffer()
        pts = buf.pts if buf.pts != Gst.CLOCK_TIME_NONE else None
        lines = roi_lines(buf)
        seen.append((pts, [text for _, text, _, _ in lines]))
        print('%d\t%s\t%s' % (len(seen) - 1, pts, ' | '.join(t for _, t, _, _ in lines)),
              flush=True)
        return Gst.PadProbeReturn.OK
    ctc = elements[9]
    ctc.get_static_pad('src').add_probe(Gst.PadProbeType.BUFFER, probe)

    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(
        Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        err, dbg = msg.parse_error()
        print('ocr-results.py: %s (%s)' % (err.message, dbg), file=sys.stderr)
        return 1

    # the same results from the JSON Lines
    with open(jsonl, encoding='utf-8') as f:
        objs = [json.loads(line) for line in f]
    if tmp:
        os.unlink(jsonl)
    from_json = [(o['pts'], [ln['text'] for ln in o['lines'] if 'text' in ln]) for o in objs]
    print('frames: %d' % len(seen))
    if [o['frame'] for o in objs] != list(range(len(objs))) or from_json != seen:
        print('ocr-results.py: the JSON Lines (%d frames) differ from the probe (%d frames)'
              % (len(objs), len(seen)), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

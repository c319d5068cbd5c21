#!/usr/bin/python3
"""Many cameras through one nnpipeline, results as JSON (plain PyGObject).

    pipelines/cameras.py [options] URI...

Each URI is a camera: rtsp://HOST:PORT/PATH (read over TCP, with the RTCP
wall-clock times when the server sends them), a video file (a path or
file://...), or test:N (a live test picture, videotestsrc pattern N, 25 fps,
with its running time drawn on it).  All cameras go through one nnpipeline
(one set of stages, the weights loaded once) on request pads sink_N/src_N,
then the chain after it per camera, and every frame's results leave as one
JSON object naming its camera (source_id camN, or --names), its frame
number and its time (docs/results.md), to a file or an MQTT broker.

A camera that fails (an RTSP server gone, a file that cannot be read) or
ends (a file's last frame) is restarted with back-off (1 s doubling to 30 s)
without stopping the others: its source is taken out of the pipeline and a
new one linked to the same nnpipeline pad (docs/pipeline.md, "Cameras come
and go").  On live input nnpipeline drops the frames it cannot keep up with
(drop=auto); nnpipeline-stats counts them per camera.

Options:
  --json FILE        JSON Lines of every camera (default: - = stdout)
  --mqtt HOST:PORT   publish to an MQTT broker instead (nnmetapublish
                     method=mqtt, QoS 1)
  --topic TOPIC      MQTT topic (default nnpipe/cameras)
  --chain CHAIN      ocr (default: detector, boxes, recogniser, text) or
                     boxes (detector and boxes only, the cheapest)
  --size N           frames scaled to fit NxN for the detector (padded to
                     NxN, so every camera's tensors batch; default 640)
  --batch N          nnpipeline batch-size (default 1: frames interleave)
  --names A,B,...    source ids of the cameras (default cam0, cam1, ...)
  --duration S       stop after S seconds (default: until every camera
                     ended for good, or Ctrl-C)
  --no-restart       a camera that fails or ends stays stopped
  --stats FILE       each nnpipeline-stats message as a JSON object (per
                     camera: frames in/out, dropped, fps, latency)
  -h, --help         this text

Environment: NNP_BUILD_DIR (default build), NNP_MODELS_DIR (default
.cache/models), as the shell scripts.  Exit status 0 at the end, 1 on an
error of the pipeline itself (not of a camera), 2 on bad arguments.
"""
import json
import os
import signal
import sys
import warnings

import gi

gi.require_version('Gst', '1.0')
from gi.repository import GLib, Gst  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 30.0


def usage(code):
    print(__doc__.strip(), file=sys.stdout if code == 0 else sys.stderr)
    sys.exit(code)


def parse_args(argv):
    opts = {'json': '-', 'mqtt': None, 'topic': 'nnpipe/cameras', 'chain': 'ocr',
            'size': 640, 'batch': 1, 'names': None, 'duration': None, 'restart': True,
            'stats': None}
    uris = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ('-h', '--help'):
            usage(0)
        if a == '--no-restart':
            opts['restart'] = False
        elif a in ('--json', '--mqtt', '--topic', '--chain', '--size', '--batch', '--names',
                   '--duration', '--stats'):
            if i + 1 >= len(argv):
                usage(2)
            key, val = a[2:], argv[i + 1]
            try:
                if key in ('size', 'batch'):
                    val = int(val)
                elif key == 'duration':
                    val = float(val)
                elif key == 'names':
                    val = val.split(',')
            except ValueError:
                print('cameras.py: %s wants a number: %s' % (a, val), file=sys.stderr)
                sys.exit(2)
            opts[key] = val
            i += 1
        elif a.startswith('-'):
            print('cameras.py: unknown option %s' % a, file=sys.stderr)
            usage(2)
        else:
            uris.append(a)
        i += 1
    if not uris:
        usage(2)
    if opts['chain'] not in ('ocr', 'boxes'):
        print('cameras.py: --chain must be ocr or boxes: %s' % opts['chain'], file=sys.stderr)
        sys.exit(2)
    if opts['names'] and len(opts['names']) != len(uris):
        print('cameras.py: --names has %d names for %d cameras'
              % (len(opts['names']), len(uris)), file=sys.stderr)
        sys.exit(2)
    return opts, uris


def source_desc(uri, size):
    """A bin description of a camera's source, ending in RGB frames."""
    tail = ' ! videoconvert ! videoscale ! capsfilter name=out caps=video/x-raw,format=RGB'
    if uri.startswith('rtsp://') or uri.startswith('rtsps://'):
        return ('rtspsrc location="%s" protocols=tcp latency=200 '
                'add-reference-timestamp-meta=true ! decodebin%s' % (uri, tail))
    if uri.startswith('test:'):
        return ('videotestsrc is-live=true pattern=%d ! '
                'video/x-raw,width=%d,height=%d,framerate=25/1 ! '
                'timeoverlay font-desc="Sans 24"%s'
                % (int(uri[5:] or 0), size, size * 3 // 4, tail))
    if not uri.startswith('file://'):
        uri = Gst.filename_to_uri(uri)
    return 'uridecodebin uri="%s"%s' % (uri, tail)


class Camera:
    """One camera: a source bin (replaced on a restart) into nnconvert and
    the nnpipeline's sink_N; src_N through the chain into the funnel."""

    def __init__(self, app, index, uri, name):
        self.app, self.index, self.uri, self.name = app, index, uri, name
        self.source = None
        self.backoff = BACKOFF_FIRST
        self.restarts = 0
        self.ended = False  # for good (--no-restart)
        self.pending = None  # GLib source id of a scheduled restart
        self.started_at = 0.0

    def build(self, pipe, nnp, funnel):
        """The parts that stay: nnconvert -> sink_N, src_N -> chain -> funnel."""
        o, models = self.app.opts, self.app.models
        self.conv = Gst.parse_bin_from_description(
            'nnconvert name=conv source-id="%s" keep-frame=true mean=0.485,0.456,0.406 '
            'std=0.229,0.224,0.225 channel-order=bgr width=%d height=%d '
            'keep-aspect-ratio=true multiple-of=32 pad-to-size=true' % (self.name, o['size'],
                                                                        o['size']), True)
        chain = 'nndbdecode threshold=0.2 unclip-ratio=2.0'
        if o['chain'] == 'ocr':
            chain += (' ! nncrop channel-order=bgr ! nnstage threads=1 model="%s" ! '
                      'nnctcdecode keys="%s"' % (os.path.join(models, 'ch_PP-OCRv4_rec_infer.onnx'),
                                                 os.path.join(models, 'ppocr_keys_v1.txt')))
        self.chain = Gst.parse_bin_from_description(chain, True)
        pipe.add(self.conv)
        pipe.add(self.chain)
        sink = nnp.request_pad_simple('sink_%d' % self.index)
        self.conv.get_static_pad('src').link(sink)
        nnp.get_static_pad('src_%d' % self.index).link(self.chain.get_static_pad('sink'))
        self.chain.link(funnel)

    def start_source(self):
        """A new source bin linked to nnconvert, brought to the pipeline's
        state; its EOS is held back (a camera that ends is restarted)."""
        self.pending = None
        # only the end is ghosted: decodebin's pads come later, and an
        # automatic ghost pad would take the converter's sink pad
        self.source = Gst.parse_bin_from_description(source_desc(self.uri, self.app.opts['size']),
                                                     False)
        self.source.add_pad(Gst.GhostPad.new('src', self.source.get_by_name('out').get_static_pad('src')))
        # decodebin's preroll stays inside: added to a PLAYING pipeline, it
        # would take the pipeline back to PAUSED, where a live source never
        # gives it the frames it waits for
        self.source.set_property('async-handling', True)
        self.app.pipe.add(self.source)
        src = self.source.get_static_pad('src')
        src.add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, self.on_event)
        src.link(self.conv.get_static_pad('sink'))
        self.started_at = GLib.get_monotonic_time() / 1e6
        if not self.source.sync_state_with_parent():
            # a file that is not there: its error is on the bus too
            GLib.idle_add(self.restart, 'failed to start')
        return False

    def on_event(self, pad, info):
        ev = info.get_event()
        if ev.type == Gst.EventType.EOS and not self.app.stopping and self.app.opts['restart']:
            GLib.idle_add(self.restart, 'ended')
            return Gst.PadProbeReturn.DROP
        return Gst.PadProbeReturn.OK

    def restart(self, why):
        """Take the source out; a new one after the back-off."""
        if self.source is None or self.app.stopping:
            return False
        old, self.source = self.source, None
        old.get_static_pad('src').unlink(self.conv.get_static_pad('sink'))
        old.set_state(Gst.State.NULL)
        self.app.pipe.remove(old)
        if not self.app.opts['restart']:
            self.ended = True
            # its stream ends: nnpipeline's other streams go on
            self.conv.get_static_pad('sink').send_event(Gst.Event.new_eos())
            self.app.log('camera %s (%s) %s: stopped' % (self.name, self.uri, why))
            return False
        # a camera that ran a while starts over from the first back-off
        if GLib.get_monotonic_time() / 1e6 - self.started_at > 10 * BACKOFF_MAX:
            self.backoff = BACKOFF_FIRST
        self.app.log('camera %s (%s) %s: restarting in %.0f s'
                     % (self.name, self.uri, why, self.backoff))
        self.restarts += 1
        self.pending = GLib.timeout_add(int(self.backoff * 1000), self.start_source)
        self.backoff = min(self.backoff * 2, BACKOFF_MAX)
        return False

    def owns(self, obj):
        return self.source is not None and (obj == self.source or obj.has_as_ancestor(self.source))


class App:
    def __init__(self, opts, uris):
        self.opts, self.stopping, self.status = opts, False, 0
        build = os.environ.get('NNP_BUILD_DIR', os.path.join(ROOT, 'build'))
        self.models = os.environ.get('NNP_MODELS_DIR', os.path.join(ROOT, '.cache', 'models'))
        plugins = os.path.join(build, 'plugins')
        os.environ['GST_PLUGIN_PATH'] = plugins + (
            ':' + os.environ['GST_PLUGIN_PATH'] if os.environ.get('GST_PLUGIN_PATH') else '')
        need = ['ch_PP-OCRv4_det_infer.onnx']
        if opts['chain'] == 'ocr':
            need += ['ch_PP-OCRv4_rec_infer.onnx', 'ppocr_keys_v1.txt']
        for f in need:
            if not os.path.isfile(os.path.join(self.models, f)):
                print('cameras.py: %s is missing: run tools/fetch-models.sh'
                      % os.path.join(self.models, f), file=sys.stderr)
                sys.exit(2)
        Gst.init(None)
        self.stats = open(opts['stats'], 'w') if opts['stats'] else None
        self.pipe = Gst.Pipeline.new('cameras')
        self.nnp = Gst.ElementFactory.make('nnpipeline', 'p')
        if self.nnp is None:
            print('cameras.py: no nnpipeline element: build the plugin (NNP_BUILD_DIR)',
                  file=sys.stderr)
            sys.exit(2)
        self.nnp.set_property('model', os.path.join(self.models, 'ch_PP-OCRv4_det_infer.onnx'))
        self.nnp.set_property('batch-size', opts['batch'])
        self.nnp.set_property('stats-interval', 1000 if self.stats else 0)
        funnel = Gst.ElementFactory.make('funnel', None)
        if opts['mqtt']:
            out = Gst.parse_bin_from_description(
                'nnmetapublish method=mqtt address="%s" topic="%s" qos=1 ! '
                'fakesink sync=false async=false'
                % (opts['mqtt'], opts['topic']), True)
        else:
            out = Gst.parse_bin_from_description(
                'nnmetapublish location="%s" ! fakesink sync=false async=false' % opts['json'],
                True)
        for e in (self.nnp, funnel, out):
            self.pipe.add(e)
        funnel.link(out)
        names = opts['names'] or ['cam%d' % i for i in range(len(uris))]
        self.cameras = [Camera(self, i, u, names[i]) for i, u in enumerate(uris)]
        for c in self.cameras:
            c.build(self.pipe, self.nnp, funnel)

    def log(self, text):
        print('cameras.py: ' + text, file=sys.stderr, flush=True)

    def on_message(self, bus, msg):
        t = msg.type
        if t == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            for c in self.cameras:
                if c.owns(msg.src):
                    GLib.idle_add(c.restart, 'failed (%s)' % err.message)
                    return
            self.log('error: %s (%s)' % (err.message, dbg))
            self.status = 1
            self.loop.quit()
        elif t == Gst.MessageType.EOS:
            self.loop.quit()
        elif t == Gst.MessageType.ELEMENT and self.stats:
            s = msg.get_structure()
            if s.get_name() == 'nnpipeline-stats':
                self.stats.write(json.dumps(stats_to_dict(s)) + '\n')
                self.stats.flush()

    def stop(self):
        """EOS into every camera's nnconvert: each stream ends after its
        frames in flight, then the pipeline's EOS."""
        if self.stopping:
            return False
        self.stopping = True
        for c in self.cameras:
            if c.pending:
                GLib.source_remove(c.pending)
                c.pending = None
            if not c.ended:
                c.conv.get_static_pad('sink').send_event(Gst.Event.new_eos())
        GLib.timeout_add_seconds(30, self.loop.quit)
        return False

    def run(self):
        self.loop = GLib.MainLoop()
        bus = self.pipe.get_bus()
        bus.add_signal_watch()
        bus.connect('message', self.on_message)
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, self.stop)
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, self.stop)
        if self.opts['duration']:
            GLib.timeout_add(int(self.opts['duration'] * 1000), self.stop)
        # the shared part first (its sink does not wait for a preroll), then
        # each camera as if it restarted: one that cannot start is retried
        if self.pipe.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            self.log('the pipeline does not start')
            return 1
        for c in self.cameras:
            c.start_source()
        self.loop.run()
        self.pipe.set_state(Gst.State.NULL)
        bus.remove_signal_watch()
        if self.stats:
            self.stats.close()
        for c in self.cameras:
            self.log('camera %s: %d restarts' % (c.name, c.restarts))
        return self.status


def stats_to_dict(s):
    """An nnpipeline-stats structure as plain JSON (streams: per camera)."""
    def fields(st, names):
        d = {}
        for key, kind in names:
            getter = {'b': st.get_boolean, 'd': st.get_double, 'u64': st.get_uint64,
                      'u': st.get_uint, 's': None}[kind]
            if kind == 's':
                v = st.get_string(key)
                if v is not None:
                    d[key] = v
                continue
            ok, v = getter(key)
            if ok:
                d[key] = v
        return d

    d = fields(s, [('final', 'b'), ('elapsed-ms', 'd'), ('frames-in', 'u64'),
                   ('frames-out', 'u64'), ('fps', 'd'), ('dropped', 'u64')])
    d['streams'] = []
    # PyGObject reads a GstValueArray with get_array() (not get_value())
    ok, arr = s.get_array('streams') if s.has_field('streams') else (False, None)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        for i in range(arr.n_values if ok else 0):
            d['streams'].append(fields(arr.get_nth(i), [
                ('index', 'u'), ('source-id', 's'), ('frames-in', 'u64'), ('frames-out', 'u64'),
                ('dropped', 'u64'), ('fps', 'd'), ('latency-ms', 'd'), ('latency-max-ms', 'd')]))
    return d


def main():
    opts, uris = parse_args(sys.argv[1:])
    return App(opts, uris).run()


if __name__ == '__main__':
    sys.exit(main())

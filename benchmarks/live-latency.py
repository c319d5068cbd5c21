#!/usr/bin/python3
"""End-to-end latency of live streams (benchmarks/streams.sh's live part).

    benchmarks/live-latency.py SECONDS DESCRIPTION

Runs a gst-launch DESCRIPTION whose sinks are named sink0, sink1, ...
(live sources) for SECONDS, then sends EOS and waits for it.  At each sink a
pad probe measures every frame's lag: the clock's running time when the
frame arrives less the frame's running time (how far behind the camera the
results are), for the frames arriving after the first 2 s.  Prints one line per sink:

    sink0 frames=N dropped=D p50=S p90=S p99=S max=S

(seconds; dropped: the final nnpipeline-stats' count for that stream, or
the dropped property of an element named st).
"""
import sys
import warnings

import gi

gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402

SETTLE = 2 * Gst.SECOND


def quantile(values, q):
    if not values:
        return float('nan')
    v = sorted(values)
    return v[min(int(q * len(v)), len(v) - 1)]


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    seconds, desc = float(sys.argv[1]), sys.argv[2]
    Gst.init(None)
    pipe = Gst.parse_launch(desc)
    lags = {}

    def probe(pad, info, name):
        buf = info.get_buffer()
        ev = pad.get_sticky_event(Gst.EventType.SEGMENT, 0)
        clock = pipe.get_clock()
        if ev is None or clock is None:
            return Gst.PadProbeReturn.OK
        rt = ev.parse_segment().to_running_time(Gst.Format.TIME, buf.pts)
        now = clock.get_time() - pipe.get_base_time()
        if now >= SETTLE:
            lags[name].append((now - rt) / 1e9)
        return Gst.PadProbeReturn.OK

    k = 0
    while True:
        sink = pipe.get_by_name('sink%d' % k)
        if sink is None:
            break
        lags['sink%d' % k] = []
        sink.get_static_pad('sink').add_probe(Gst.PadProbeType.BUFFER, probe, 'sink%d' % k)
        k += 1
    if k == 0:
        print('live-latency.py: no element named sink0', file=sys.stderr)
        return 2
    bus = pipe.get_bus()
    pipe.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(int(seconds * Gst.SECOND), Gst.MessageType.ERROR)
    if msg:
        print('live-latency.py: %s' % msg.parse_error()[0].message, file=sys.stderr)
        return 1
    pipe.send_event(Gst.Event.new_eos())
    dropped = {}
    while True:
        msg = bus.timed_pop_filtered(120 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR
                                     | Gst.MessageType.ELEMENT)
        if msg is None or msg.type != Gst.MessageType.ELEMENT:
            break
        s = msg.get_structure()
        ok, final = s.get_boolean('final') if s.get_name() == 'nnpipeline-stats' else (False, 0)
        if ok and final and s.has_field('streams'):
            ok, arr = s.get_array('streams')
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', DeprecationWarning)
                for i in range(arr.n_values):
                    st = arr.get_nth(i)
                    dropped['sink%d' % st.get_uint('index')[1]] = st.get_uint64('dropped')[1]
    st = pipe.get_by_name('st')
    if st is not None:
        dropped['sink0'] = st.get_property('dropped')
    pipe.set_state(Gst.State.NULL)
    for name in sorted(lags):
        v = lags[name]
        print('%s frames=%d dropped=%s p50=%.3f p90=%.3f p99=%.3f max=%.3f'
              % (name, len(v), dropped.get(name, '-'), quantile(v, 0.5), quantile(v, 0.9),
                 quantile(v, 0.99), max(v) if v else float('nan')), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())

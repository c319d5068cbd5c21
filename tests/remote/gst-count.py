#!/usr/bin/env python3
"""tests/remote/gst-count.py: run a GStreamer pipeline to EOS and count what
reaches its sink.

usage: gst-count.py [--skip N] [--timeout S] 'PIPELINE ... ! fakesink name=out'

The pipeline (gst-launch syntax) must end in an element named "out" with a
sink pad.  Prints one line of JSON: frames (buffers at "out" by EOS), in_order
(every PTS greater than the one before), pts_unique, sha256 (of every
buffer's bytes in arrival order: two runs that produce the same tensors
bit-exactly, in the same order, have the same digest; in_order is null when
no buffer has a PTS), steady_fps (frames after the first
--skip, default 5, over the time from the first of them to the last
buffer), seconds (the whole run).  Exits 1 with the pipeline's error
message on an error, 2 when EOS does not come within --timeout (default 300) s.
Needs GST_PLUGIN_PATH to hold the nnpipe plugin.
"""
import hashlib
import json
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] in ('-h', '--help'):
    print(__doc__.strip())
    sys.exit(0)

import gi  # noqa: E402

gi.require_version('Gst', '1.0')
from gi.repository import GLib, Gst  # noqa: E402


def main(argv):
    skip, timeout = 5, 300.0
    while argv and argv[0].startswith('--'):
        opt = argv.pop(0)
        if opt == '--skip':
            skip = int(argv.pop(0))
        elif opt == '--timeout':
            timeout = float(argv.pop(0))
        else:
            print(f'gst-count.py: unknown option {opt}', file=sys.stderr)
            return 2
    if len(argv) != 1:
        print('usage: gst-count.py [--skip N] [--timeout S] PIPELINE', file=sys.stderr)
        return 2
    Gst.init(None)
    try:
        pipeline = Gst.parse_launch(argv[0])
    except GLib.Error as e:
        print(f'gst-count.py: bad pipeline: {e.message}', file=sys.stderr)
        return 1
    out = pipeline.get_by_name('out')
    if out is None or out.get_static_pad('sink') is None:
        print('gst-count.py: the pipeline has no element "out" with a sink pad', file=sys.stderr)
        return 2
    digest = hashlib.sha256()
    times, pts = [], []

    def probe(pad, info):
        buf = info.get_buffer()
        times.append(time.monotonic())
        pts.append(buf.pts)
        ok, mi = buf.map(Gst.MapFlags.READ)
        if ok:
            digest.update(mi.data)
            buf.unmap(mi)
        return Gst.PadProbeReturn.OK

    out.get_static_pad('sink').add_probe(Gst.PadProbeType.BUFFER, probe)
    t0 = time.monotonic()
    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    status, error = 2, f'no EOS within {timeout:g} s'
    deadline = t0 + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        msg = bus.timed_pop_filtered(int(left * Gst.SECOND),
                                     Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if msg is None:
            break
        if msg.type == Gst.MessageType.EOS:
            status, error = 0, None
            break
        err, dbg = msg.parse_error()
        status, error = 1, f'{msg.src.get_name()}: {err.message} ({dbg})'
        break
    seconds = time.monotonic() - t0
    pipeline.set_state(Gst.State.NULL)
    n = len(times)
    steady = (n - 1 - skip) / (times[-1] - times[skip]) if n > skip + 1 and \
        times[-1] > times[skip] else None
    valid = [p for p in pts if p != Gst.CLOCK_TIME_NONE]
    res = {
        'frames': n,
        # null without timestamps (filesrc): then only the digest tells the order
        'in_order': (len(valid) == n and all(b > a for a, b in zip(valid, valid[1:])))
        if valid else None,
        'pts_unique': len(set(valid)) == len(valid),
        'sha256': digest.hexdigest(),
        'steady_fps': steady,
        'seconds': round(seconds, 3),
    }
    if error:
        res['error'] = error
        print(f'gst-count.py: {error}', file=sys.stderr)
    print(json.dumps(res), flush=True)
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

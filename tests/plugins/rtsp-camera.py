#!/usr/bin/python3
"""A test RTSP camera (gst-rtsp-server, plain PyGObject).

    rtsp-camera.py PORT [WIDTHxHEIGHT]

Serves rtsp://127.0.0.1:PORT/cam: a live 25 fps test picture (a moving
ball, its running time drawn on it) as JPEG over RTP (RTCP sender reports
give the receiver the wall-clock time), shared by every client.  Prints
"ready" on stdout once it listens; runs until killed.
"""
import sys

import gi

gi.require_version('Gst', '1.0')
gi.require_version('GstRtspServer', '1.0')
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    port = int(sys.argv[1])
    w, h = (int(v) for v in (sys.argv[2] if len(sys.argv) == 3 else '160x120').split('x'))
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address('127.0.0.1')
    server.set_service(str(port))
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch('( videotestsrc is-live=true pattern=ball ! '
                       'video/x-raw,format=I420,width=%d,height=%d,framerate=25/1 ! '
                       'timeoverlay font-desc="Sans 16" ! jpegenc quality=80 ! '
                       'rtpjpegpay name=pay0 pt=26 )' % (w, h))
    factory.set_shared(True)
    server.get_mount_points().add_factory('/cam', factory)
    if server.attach(None) == 0:
        print('rtsp-camera.py: cannot listen on 127.0.0.1:%d' % port, file=sys.stderr)
        return 1
    print('ready', flush=True)
    GLib.MainLoop().run()
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""nnmetapublish method=mqtt against a real broker (issue 22 item 3).

  test-mqtt.py

Each case starts its own `mosquitto` on 127.0.0.1 and a free port (config
and persistence in a temporary folder, stopped at the end) and reads what
arrives with `mosquitto_sub` (a persistent session, QoS 1).

1. Every frame's message arrives (150 live frames at 30 fps, each frame
   number once, its source id), also across a broker restart in the middle
   of the run: the frames keep flowing while the broker is down, the
   element reports the loss and the reconnection (a warning, element
   messages "nnmetapublish-mqtt"), drops nothing and publishes every
   message.
2. A dead broker never stalls the video: the broker killed for good during
   a live run, every frame still reaches the sink, the run ends on time,
   the messages beyond max-queue are counted in messages-dropped.
3. A broker that cannot be reached at the start, a bad address, a topic
   with a wildcard, a missing credentials file: the start fails with one
   error naming it.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


for tool, pkg in (("mosquitto", "mosquitto"), ("mosquitto_sub", "mosquitto-clients")):
    if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
        print("FAIL %s is missing: install the Debian package %s" % (tool, pkg))
        sys.exit(1)
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """mosquitto on 127.0.0.1:port with persistence in folder."""

    def __init__(self, folder, port):
        self.port = port
        # run as root, mosquitto drops to its own user: it must write there
        os.chmod(folder, 0o777)
        self.conf = os.path.join(folder, "mosquitto.conf")
        self.log = os.path.join(folder, "mosquitto.log")
        with open(self.conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\n"
                    "persistence true\npersistence_location %s/\n" % (port, folder))
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf],
                                     stdout=open(self.log, "a"), stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("mosquitto did not listen on %d: %s" % (self.port, open(self.log).read()))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # saves the persistent sessions
            self.proc.wait(10)
        self.proc = None


class Subscriber:
    """mosquitto_sub with a persistent session: what the broker queued for
    it while it was away comes when it is back."""

    def __init__(self, folder, port, topic):
        self.out = os.path.join(folder, "sub.out")
        self.proc = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", topic, "-q", "1",
             "-c", "-i", "nnp-test-sub-%d" % os.getpid()],
            stdout=open(self.out, "w"), stderr=subprocess.STDOUT)

    def lines(self):
        with open(self.out, encoding="utf-8") as f:
            return [l for l in f.read().split("\n") if l]

    def wait_for(self, pred, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pred(self.lines()):
                return True
            time.sleep(0.1)
        return pred(self.lines())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def subscribed(port, topic, sub):
    """Publish probes until the subscriber shows one (it is subscribed)."""
    for i in range(100):
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-t", topic,
                        "-q", "1", "-m", '{"probe":%d}' % i], check=False)
        if sub.wait_for(lambda ls: any('"probe"' in l for l in ls), 0.2):
            return True
    return False


def frames_of(lines):
    import json
    out = []
    for l in lines:
        o = json.loads(l)
        if "frame" in o:
            out.append(o)
    return out


class Run:
    """A live pipeline of n frames into nnmetapublish method=mqtt, counting
    the frames at the sink."""

    def __init__(self, port, topic, n, extra=""):
        desc = ("videotestsrc is-live=true num-buffers=%d ! "
                "video/x-raw,format=RGB,width=64,height=48,framerate=30/1 ! "
                "nnconvert source-id=cam-mqtt ! nnmetapublish name=pub method=mqtt "
                "address=127.0.0.1:%d topic=%s qos=1 reconnect-max=500 %s ! "
                "fakesink name=sink sync=true" % (n, port, topic, extra))
        self.pipe = Gst.parse_launch(desc)
        self.frames = 0
        self.messages = []
        self.warnings = []
        sink = self.pipe.get_by_name("sink").get_static_pad("sink")
        sink.add_probe(Gst.PadProbeType.BUFFER, self.count)
        self.bus = self.pipe.get_bus()

    def count(self, pad, info):
        self.frames += 1
        return Gst.PadProbeReturn.OK

    def poll(self, timeout_s=0.05):
        """Bus messages for timeout_s; returns EOS or ERROR if one came."""
        end = time.time() + timeout_s
        while True:
            m = self.bus.timed_pop(int(max(0.0, end - time.time()) * Gst.SECOND))
            if m is None:
                return None
            if m.type == Gst.MessageType.ELEMENT and m.get_structure().get_name() == "nnmetapublish-mqtt":
                self.messages.append(m.get_structure().get_string("event"))
            elif m.type == Gst.MessageType.WARNING:
                self.warnings.append(m.parse_warning()[0].message)
            elif m.type in (Gst.MessageType.EOS, Gst.MessageType.ERROR):
                return m

    def wait_frames(self, k, timeout):
        deadline = time.time() + timeout
        while self.frames < k and time.time() < deadline:
            m = self.poll()
            if m is not None:
                return m
        return None

    def to_end(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.poll(0.1)
            if m is not None:
                return m
        return None

    def stop(self):
        pub = self.pipe.get_by_name("pub")
        self.pipe.set_state(Gst.State.NULL)
        return pub.get_property("messages-published"), pub.get_property("messages-dropped")


def case_restart(tmp):
    port, topic, n = free_port(), "nnp/test/%d" % os.getpid(), 150
    broker = Broker(tmp, port)
    broker.start()
    sub = Subscriber(tmp, port, topic)
    try:
        check(subscribed(port, topic, sub), "restart: the subscriber is subscribed")
        run = Run(port, topic, n)
        run.pipe.set_state(Gst.State.PLAYING)
        m = run.wait_frames(30, 60)
        check(m is None and run.frames >= 30, "restart: 30 frames out before the broker goes")
        broker.stop()
        at_kill = run.frames
        # the frames go on while the broker is away
        m = run.wait_frames(at_kill + 30, 60)
        check(m is None and run.frames >= at_kill + 30,
              "restart: frames flow with the broker down (%d -> %d)" % (at_kill, run.frames))
        broker.start()
        m = run.to_end(120)
        check(m is not None and m.type == Gst.MessageType.EOS,
              "restart: the run ends (%s)" % (m.type if m else "no EOS"))
        published, dropped = run.stop()
        check(run.frames == n, "restart: %d frames at the sink of %d" % (run.frames, n))
        check(published >= n and dropped == 0,
              "restart: messages-published %d (>= %d), messages-dropped %d" % (published, n, dropped))
        check("disconnected" in run.messages and "connected" in run.messages,
              "restart: the loss and the reconnection on the bus: %s" % run.messages)
        check(any("Lost the MQTT broker" in w for w in run.warnings),
              "restart: a warning names the loss: %s" % run.warnings[:1])
        got = sub.wait_for(lambda ls: len({o["frame"] for o in frames_of(ls)}) >= n, 30)
        objs = frames_of(sub.lines())
        numbers = sorted({o["frame"] for o in objs})
        missing = sorted(set(range(n)) - set(numbers))
        check(got and numbers == list(range(n)),
              "restart: every frame's message arrived (%d distinct of %d, %d messages%s)"
              % (len(numbers), n, len(objs), ", missing %s" % missing if missing else ""))
        if missing:
            print(open(broker.log).read())
        check(all(o.get("source_id") == "cam-mqtt" and "unix_ms" in o for o in objs),
              "restart: each message names its source and time")
    finally:
        sub.stop()
        broker.stop()


def case_dead(tmp):
    port, topic, n = free_port(), "nnp/dead/%d" % os.getpid(), 90
    broker = Broker(tmp, port)
    broker.start()
    try:
        run = Run(port, topic, n, "max-queue=10")
        t0 = time.time()
        run.pipe.set_state(Gst.State.PLAYING)
        m = run.wait_frames(10, 60)
        check(m is None, "dead: the run starts")
        broker.stop()
        m = run.to_end(120)
        took = time.time() - t0
        check(m is not None and m.type == Gst.MessageType.EOS,
              "dead: the run ends with the broker dead (%s, %.1f s for %d frames at 30 fps)"
              % (m.type if m else "no EOS", took, n))
        published, dropped = run.stop()
        check(run.frames == n, "dead: every frame reached the sink (%d of %d)" % (run.frames, n))
        check(dropped > 0 and published + dropped <= n + 64,
              "dead: messages-dropped %d counted (published %d)" % (dropped, published))
        check(any("queue is full" in w for w in run.warnings),
              "dead: a warning says the queue drops: %s" % run.warnings)
    finally:
        broker.stop()


def start_error(desc, want):
    pipe = Gst.parse_launch(desc)
    ret = pipe.set_state(Gst.State.PAUSED)
    m = pipe.get_bus().timed_pop_filtered(10 * Gst.SECOND, Gst.MessageType.ERROR)
    pipe.set_state(Gst.State.NULL)
    text = m.parse_error()[0].message if m else ""
    check(ret == Gst.StateChangeReturn.FAILURE and want in text,
          "refused: %s -> %r" % (desc.split("nnmetapublish", 1)[1].split("!")[0].strip(), text))


def case_errors(tmp):
    port = free_port()  # nobody listens there
    src = "videotestsrc num-buffers=3 ! nnmetapublish method=mqtt "
    start_error(src + "address=127.0.0.1:%d ! fakesink" % port,
                "could not connect to the MQTT broker 127.0.0.1:%d" % port)
    start_error(src + "address=127.0.0.1:x ! fakesink", 'invalid MQTT address "127.0.0.1:x"')
    start_error(src + "address=127.0.0.1:%d topic=a/# ! fakesink" % port,
                'invalid MQTT topic "a/#"')
    start_error(src + "address=127.0.0.1:%d mqtt-credentials=%s/none ! fakesink" % (port, tmp),
                "cannot read the MQTT credentials file")
    start_error(src + "address=127.0.0.1:%d file-format=text ! fakesink" % port,
                "method=mqtt publishes JSON")


def main():
    Gst.init(None)
    cases = (case_restart, case_dead, case_errors)
    if len(sys.argv) > 1:
        cases = [c for c in cases if c.__name__ in sys.argv[1:]]
    for case in cases:
        tmp = tempfile.mkdtemp(prefix="nnp-mqtt-%d-" % os.getpid())
        try:
            case(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

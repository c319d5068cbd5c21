#!/usr/bin/env python3
"""Re-balancing while PLAYING, measured (issue 13 item 3); run by
benchmarks/rebalance.sh.

One nnpipeline stages=2 devices=cpu:1,cpu:1 fed by appsrc (the same input
frame again and again, so nothing else competes for the cores) into a
fakesink whose frames are counted.  Three phases of SECONDS each, in one
run:
  before   balanced split, no slowdown (rebalance=false)
  during   debug-slowdown=0,FACTOR (stage 1's core FACTOR+1 times slower),
           still the old plan (rebalance=false)
  after    rebalance=true: once nnpipeline-rebalance messages stop coming,
           the new plan under the same slowdown
Prints frames/s of each phase (frames at the sink over the phase's wall
time, after WARMUP seconds), the cuts, and each switch's pause.

--streams N (N > 1): N appsrcs into the request pads sink_0..N-1 of the one
nnpipeline (its stages shared, frames interleaved), each src_K into a
fakesink; frames/s is the sum over the N sinks (the shared stages'
throughput), and each stream's own figure is printed too."""
import argparse
import re
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--shape", required=True, help="C,H,W of the float32 input")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--factor", type=float, default=1.0)
    ap.add_argument("--interval", type=int, default=500)
    ap.add_argument("--threshold", type=float, default=1.15,
                    help="rebalance-threshold (the element's default 1.15)")
    ap.add_argument("--streams", type=int, default=1,
                    help="streams through the request pads (1: the plain pads)")
    args = ap.parse_args()
    c, h, w = (int(v) for v in args.shape.split(","))
    n_streams = max(args.streams, 1)
    Gst.init(None)
    appsrc = ("appsrc name=src%%d format=time block=true max-bytes=%d "
              "caps=other/tensors,format=static,num_tensors=1,types=float32,"
              "dimensions=%d:%d:%d:1,framerate=0/1" % (2 * c * h * w * 4, w, h, c))
    nnpipeline = ("nnpipeline name=nnp model=%s stages=2 devices=cpu:1,cpu:1 "
                  "rebalance=false rebalance-interval=%d rebalance-threshold=%g "
                  "stats-interval=0" % (args.model, args.interval, args.threshold))
    if args.streams > 1:
        desc = nnpipeline + "".join(
            " %s ! nnp.sink_%d nnp.src_%d ! fakesink name=sink%d sync=false"
            % (appsrc % k, k, k, k) for k in range(n_streams))
    else:
        desc = "%s ! %s ! fakesink name=sink0 sync=false" % (appsrc % 0, nnpipeline)
    pipe = Gst.parse_launch(desc)
    nnp = pipe.get_by_name("nnp")
    srcs = [pipe.get_by_name("src%d" % k) for k in range(n_streams)]
    # different content per stream (the same frame again within one)
    frames = [bytes(bytearray((i * 37 + 11 * k) % 251 for i in range(c * h * w * 4)))
              for k in range(n_streams)]
    count = [0] * n_streams
    lock = threading.Lock()
    stop = threading.Event()
    msgs = []

    def on_buffer(k):
        def probe(pad, info):
            with lock:
                count[k] += 1
            return Gst.PadProbeReturn.OK
        return probe

    for k in range(n_streams):
        pipe.get_by_name("sink%d" % k).get_static_pad("sink").add_probe(
            Gst.PadProbeType.BUFFER, on_buffer(k))

    def feed(k):
        while not stop.is_set():
            if srcs[k].emit("push-buffer",
                            Gst.Buffer.new_wrapped(frames[k])) != Gst.FlowReturn.OK:
                break
        srcs[k].emit("end-of-stream")

    def bus_poll():
        bus = pipe.get_bus()
        while True:
            m = bus.timed_pop_filtered(100 * Gst.MSECOND, Gst.MessageType.ELEMENT |
                                       Gst.MessageType.ERROR | Gst.MessageType.EOS)
            if m is None:
                if stop.is_set() and msgs and msgs[-1] == "eos":
                    return
                continue
            if m.type == Gst.MessageType.ERROR:
                err, _ = m.parse_error()
                print("error:", err.message, file=sys.stderr)
                msgs.append("eos")
                return
            if m.type == Gst.MessageType.EOS:
                msgs.append("eos")
                return
            s = m.get_structure()
            if s.get_name() in ("nnpipeline-rebalance", "nnpipeline-plan"):
                with lock:
                    msgs.append((time.monotonic(), s))

    def measure(name):
        time.sleep(args.warmup)
        with lock:
            n0 = count[:]
        t0 = time.monotonic()
        time.sleep(args.seconds)
        with lock:
            n1 = count[:]
        dt = time.monotonic() - t0
        fps = (sum(n1) - sum(n0)) / dt
        per = ""
        if n_streams > 1:
            per = "  (streams: %s)" % " / ".join(
                "%.2f" % ((b - a) / dt) for a, b in zip(n0, n1))
        print("%-8s %8.2f frames/s%s" % (name, fps, per), flush=True)
        return fps

    def plan_cuts():
        with lock:
            plans = [s for _, s in msgs[:] if s.get_name() == "nnpipeline-plan"]
        # (PyGObject cannot read a GstValueArray: the text form)
        text = plans[-1].to_string().replace("\\", "")
        firsts = re.findall(r"first-node=\(string\)([^,]+)", text)
        lasts = re.findall(r"last-node=\(string\)([^,]+)", text)
        counts = re.findall(r"nodes=\(int\)(\d+)", text)
        return ", ".join("stage %d: %s..%s (%s nodes)" % (k, f, l, n)
                         for k, (f, l, n) in enumerate(zip(firsts, lasts, counts)))

    poller = threading.Thread(target=bus_poll, daemon=True)
    poller.start()
    pipe.set_state(Gst.State.PLAYING)
    feeders = [threading.Thread(target=feed, args=(k,), daemon=True)
               for k in range(n_streams)]
    for f in feeders:
        f.start()

    before = measure("before")
    print("         plan %s" % plan_cuts())
    nnp.set_property("debug-slowdown", "0,%g" % args.factor)
    during = measure("during")
    nnp.set_property("rebalance", True)
    # wait for the switches to settle: no new message for 4 windows
    last = time.monotonic()
    seen = 0
    deadline = last + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        with lock:
            n = sum(1 for _, s in msgs if s.get_name() == "nnpipeline-rebalance")
        if n != seen:
            seen, last = n, time.monotonic()
        if seen and time.monotonic() - last > 4 * args.interval / 1000.0:
            break
    after = measure("after")
    print("         plan %s" % plan_cuts())
    with lock:
        seen = sum(1 for _, s in msgs if s.get_name() == "nnpipeline-rebalance")
        for _, s in msgs:
            if s.get_name() == "nnpipeline-rebalance":
                text = s.to_string().replace("\\", "")
                measured = re.search(r"measured-ms=\(double\)< ([^>]*) >", text)
                print("switch   cuts %s -> %s: measured %s ms/frame, expected gain x%.2f, "
                      "pause %.1f ms" % (
                          s.get_string("old-cuts"), s.get_string("new-cuts"),
                          ", ".join("%.2f" % float(v) for v in measured.group(1).split(", ")),
                          s.get_double("expected-gain")[1], s.get_double("pause-ms")[1]))
    print("during/before %.2fx, after/during %.2fx, after/before %.2fx, %d switch(es)" % (
        during / before, after / during, after / before, seen))
    stop.set()
    for f in feeders:
        f.join()
    poller.join(timeout=60)
    pipe.set_state(Gst.State.NULL)
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())

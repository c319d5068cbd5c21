#!/usr/bin/env python3
"""Soak of benchmarks/soak.sh: two pipelines in this process for MINUTES,
RSS sampled, frames counted at the source and at the sink of each."""
import argparse
import os
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def slope_mb_per_h(samples):
    """Least-squares slope of (seconds, MB) samples, in MB/h."""
    n = len(samples)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    if var == 0:
        return 0.0
    return sum((t - mt) * (r - mr) for t, r in samples) / var * 3600.0


class Counted:
    """A pipeline with buffer counters on its source's src pad and its sink's sink pad."""

    def __init__(self, name, desc):
        self.name = name
        self.pipeline = Gst.parse_launch(desc)
        self.frames_in = 0
        self.frames_out = 0
        self.error = None
        self.eos = threading.Event()
        self.pipeline.get_by_name("src").get_static_pad("src").add_probe(
            Gst.PadProbeType.BUFFER, self._count_in)
        self.pipeline.get_by_name("out").get_static_pad("sink").add_probe(
            Gst.PadProbeType.BUFFER, self._count_out)
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message", self._on_message)

    def _count_in(self, pad, info):
        self.frames_in += 1
        return Gst.PadProbeReturn.OK

    def _count_out(self, pad, info):
        self.frames_out += 1
        return Gst.PadProbeReturn.OK

    def _on_message(self, bus, msg):
        if msg.type == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            self.error = f"{err.message} ({dbg})"
            self.eos.set()
        elif msg.type == Gst.MessageType.EOS:
            self.eos.set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--models", required=True)
    opts = ap.parse_args()
    fps = int(os.environ.get("SOAK_FPS", "10"))
    sample_s = float(os.environ.get("SOAK_SAMPLE", "10"))
    warmup_s = float(os.environ.get("SOAK_WARMUP", "60"))
    max_slope = float(os.environ.get("SOAK_MAX_SLOPE", "1"))
    csv_path = os.environ.get("SOAK_CSV", "soak-rss.csv")
    texts_path = csv_path + ".texts"
    det = os.path.join(opts.models, "ch_PP-OCRv4_det_infer.onnx")
    rec = os.path.join(opts.models, "ch_PP-OCRv4_rec_infer.onnx")
    keys = os.path.join(opts.models, "ppocr_keys_v1.txt")
    norm = "mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr"

    Gst.init(None)
    # timeoverlay writes the buffer time: the text changes every frame;
    # drop=off: the soak counts every frame in out (the drop policy of live
    # input would drop late frames on a loaded machine, docs/pipeline.md)
    ocr = Counted("ocr", (
        f"videotestsrc name=src is-live=true pattern=white ! "
        f"video/x-raw,width=480,height=160,framerate={fps}/1 ! "
        f"timeoverlay font-desc=\"Sans 28\" color=0xff000000 draw-shadow=false "
        f"draw-outline=false halignment=center valignment=center ! "
        f"videoconvert ! video/x-raw,format=RGB ! "
        f"nnconvert {norm} keep-aspect-ratio=true multiple-of=32 keep-frame=true ! "
        f"nnstage model={det} drop=off ! nndbdecode ! nncrop channel-order=bgr ! "
        f"nnstage model={rec} ! nnctcdecode keys={keys} location={texts_path} ! "
        f"nnoverlay ! fakesink name=out sync=false"))
    pipe = Counted("nnpipeline", (
        f"videotestsrc name=src is-live=true pattern=ball ! "
        f"video/x-raw,width=256,height=256,framerate={fps}/1 ! "
        f"videoconvert ! video/x-raw,format=RGB ! nnconvert {norm} ! "
        f"nnpipeline model={det} stages=2 devices=cpu:1,cpu:1 drop=off ! "
        f"fakesink name=out sync=false"))
    runs = [ocr, pipe]

    loop = GLib.MainLoop()
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    for r in runs:
        if r.pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            print(f"{r.name}: cannot start")
            return 1

    start = time.monotonic()
    end = start + opts.minutes * 60.0
    samples = []
    with open(csv_path, "w") as csv:
        csv.write("seconds,rss_mb,ocr_in,ocr_out,nnpipeline_in,nnpipeline_out\n")
        while True:
            now = time.monotonic()
            t = now - start
            r = rss_mb()
            samples.append((t, r))
            csv.write(f"{t:.1f},{r:.2f},{ocr.frames_in},{ocr.frames_out},"
                      f"{pipe.frames_in},{pipe.frames_out}\n")
            csv.flush()
            if now >= end or any(x.error for x in runs):
                break
            time.sleep(min(sample_s, max(end - now, 0.1)))

    for r in runs:
        r.pipeline.send_event(Gst.Event.new_eos())
    status = 0
    for r in runs:
        if not r.eos.wait(120):
            r.error = r.error or "no EOS within 120 s"
    final_rss = rss_mb()
    for r in runs:
        r.pipeline.set_state(Gst.State.NULL)
    loop.quit()

    texts = []
    try:
        with open(texts_path) as f:
            texts = [line.split("\t")[0] for line in f if line.strip()]
    except OSError:
        pass
    for r in runs:
        ok = r.error is None and r.frames_in == r.frames_out and r.frames_in > 0
        status |= 0 if ok else 1
        print(f"{r.name}: frames in {r.frames_in}, out {r.frames_out}"
              f"{'' if r.frames_in == r.frames_out else '  <- MISMATCH'}"
              f"{'  error: ' + r.error if r.error else ''}")
    print(f"ocr: {len(texts)} text lines read, {len(set(texts))} distinct")
    steady = [(t, r) for t, r in samples if t >= warmup_s] or samples
    slope = slope_mb_per_h(steady)
    print(f"rss: start {samples[0][1]:.1f} MB, after warm-up {steady[0][1]:.1f} MB, "
          f"end {samples[-1][1]:.1f} MB (after EOS {final_rss:.1f} MB), "
          f"max {max(r for _, r in samples):.1f} MB")
    print(f"rss slope: {slope:+.2f} MB/h over {(steady[-1][0] - steady[0][0]) / 60:.1f} min "
          f"({len(steady)} samples after {warmup_s:.0f} s warm-up; limit {max_slope} MB/h)")
    if slope >= max_slope:
        status = 1
    print(f"samples in {csv_path}; soak {'PASSED' if status == 0 else 'FAILED'}")
    return status


if __name__ == "__main__":
    sys.exit(main())

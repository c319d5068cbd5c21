#!/usr/bin/env python3
"""Faces of real photographs panned across a canvas, crossing: the video
and its truth, and the checks of pipelines/faces.sh's tracks on it.

    faces-track.py render DIR            DIR/faces.avi, DIR/truth.json
    faces-track.py check DIR EVERY.jsonl INTERVAL.jsonl [MIN_IOU]
    faces-track.py compare DIR EVERY.jsonl INTERVAL.jsonl [N]

render: three faces cut from photographs of Debian packages (astronaut,
Grace Hopper, a portrait of opencv-doc; tests/data/faces/SOURCES.md) move
over a grey 640x360 canvas for 90 frames at 30 frames/s: A left to right,
B right to left 50 pixels lower, drawn over A where they cross (frames 40
to 50), C down the right side, under both as they pass; the truth is each
face's box in every frame where no photo covers over 30% of it (the
hand-annotated box of tests/data/faces moved and scaled with its photo).

check: in EVERY.jsonl (the detector on every frame) and INTERVAL.jsonl
(inference-interval=3, the tracker predicting between) every face is
found in at least 85% of the frames (a detection whose IoU with its truth
box is at least 0.3), every face keeps one track id through the video, no
two faces share one (no id switch at the crossing); and on every frame
where both runs have a face, the interval run's box has an IoU of at least
MIN_IOU (default 0.5) with the every-frame run's.

compare: prints the IoU of the interval run's boxes (inference-interval N,
default 3) against the every-frame run's (mean, minimum, on the frames the
model skipped and on the others), for benchmarks/faces-interval.sh.
"""
import json
import os
import subprocess
import sys

try:
    from PIL import Image
except ImportError as e:
    sys.exit(f"faces-track: {e}: install python3-pil")

W, H, FRAMES, FPS = 640, 360, 90, 30
SK = "/usr/lib/python3/dist-packages/skimage/data/"
# photo, crop of the photo, the annotated face in the photo
# (tests/data/faces/truth.json), the crop's height on the canvas
SPRITES = {
    "A": ("/usr/lib/python3/dist-packages/skimage/data/astronaut.png",
          (140, 40, 310, 220), (181, 78, 267, 188), 120),
    "B": ("/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg",
          (130, 90, 390, 370), (172, 135, 348, 332), 120),
    "C": ("/usr/share/doc/opencv-doc/opencv4/html/230501201_1.jpg",
          (140, 150, 530, 640), (185, 200, 487, 595), 110),
}


def position(name, f):
    """Top-left corner of the sprite on frame f."""
    if name == "A":
        return -40 + 7 * f, 40
    if name == "B":
        return 600 - 7 * f, 90
    return 500, 10 + 2 * f


def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def render(d):
    sprites = {}
    for name, (path, crop, face, height) in SPRITES.items():
        if not os.path.exists(path):
            sys.exit(f"faces-track: {path} is missing (tools/check-deps.sh names its package)")
        im = Image.open(path).convert("RGB").crop(crop)
        s = height / im.size[1]
        im = im.resize((round(im.size[0] * s), height), Image.BILINEAR)
        fx = [(face[0] - crop[0]) * s, (face[1] - crop[1]) * s,
              (face[2] - crop[0]) * s, (face[3] - crop[1]) * s]
        sprites[name] = (im, fx)
    truth = []
    for f in range(FRAMES):
        canvas = Image.new("RGB", (W, H), (128, 128, 128))
        boxes = {}
        for name in ("C", "A", "B"):  # B is drawn over A
            im, fx = sprites[name]
            x, y = position(name, f)
            canvas.paste(im, (x, y))
            box = [fx[0] + x, fx[1] + y, fx[2] + x, fx[3] + y]
            # wholly on the canvas: the faces the detector must find
            if box[0] >= 0 and box[1] >= 0 and box[2] <= W and box[3] <= H:
                boxes[name] = box
        # a face mostly hidden by a photo drawn over it does not count on
        # that frame
        order = ["C", "A", "B"]
        for i, name in enumerate(order):
            if name not in boxes:
                continue
            a = boxes[name]
            for over in order[i + 1:]:
                ox, oy = position(over, f)
                ow, oh = sprites[over][0].size
                ix = max(0, min(a[2], ox + ow) - max(a[0], ox))
                iy = max(0, min(a[3], oy + oh) - max(a[1], oy))
                if ix * iy > 0.3 * (a[2] - a[0]) * (a[3] - a[1]):
                    del boxes[name]
                    break
        truth.append(boxes)
        canvas.save(os.path.join(d, f"frame-{f:05d}.png"))
    with open(os.path.join(d, "truth.json"), "w") as out:
        json.dump(truth, out)
    r = subprocess.run(["gst-launch-1.0", "-q", "multifilesrc",
                        f"location={d}/frame-%05d.png", "index=0", f"stop-index={FRAMES - 1}",
                        f"caps=image/png,framerate={FPS}/1", "!", "pngdec", "!", "videoconvert",
                        "!", "jpegenc", "quality=95", "!", "avimux", "!", "filesink",
                        f"location={d}/faces.avi"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"faces-track: encoding failed: {r.stderr.strip()}")
    for f in range(FRAMES):
        os.unlink(os.path.join(d, f"frame-{f:05d}.png"))


def load(path):
    with open(path) as f:
        frames = [json.loads(line) for line in f if line.strip()]
    if len(frames) != FRAMES:
        sys.exit(f"faces-track: {path} has {len(frames)} frames, expected {FRAMES}")
    return frames


def assign(frame, truth):
    """name -> (box, track) of the detection matching each truth face."""
    out = {}
    for name, box in truth.items():
        best = max(frame["objects"], key=lambda o: iou(o["box"], box), default=None)
        if best is not None and iou(best["box"], box) >= 0.3:
            out[name] = (best["box"], best.get("track"))
    return out


def check(d, every, interval, min_iou):
    truth = json.load(open(os.path.join(d, "truth.json")))
    ok = True
    runs = {"every frame": load(every), "interval 3": load(interval)}
    for label, frames in runs.items():
        ids = {}
        found = {}
        for f, (fr, tr) in enumerate(zip(frames, truth)):
            if fr["frame"] != f:
                print(f"{label}: frame {f} numbered {fr['frame']}")
                ok = False
            for name, (box, track) in assign(fr, tr).items():
                found[name] = found.get(name, 0) + 1
                ids.setdefault(name, set()).add(track)
        for name in SPRITES:
            seen = sum(1 for tr in truth if name in tr)
            n = found.get(name, 0)
            print(f"{label}: face {name} found on {n} of {seen} frames, track ids "
                  f"{sorted(ids.get(name, []), key=str)}")
            if n < 0.85 * seen:
                ok = False
            if len(ids.get(name, [])) != 1 or None in ids.get(name, []):
                ok = False
        all_ids = [next(iter(v)) for v in ids.values() if len(v) == 1]
        if len(set(all_ids)) != len(all_ids):
            print(f"{label}: two faces share a track id")
            ok = False
    worst, total, n = 1.0, 0.0, 0
    for fa, fb, tr in zip(runs["every frame"], runs["interval 3"], truth):
        a, b = assign(fa, tr), assign(fb, tr)
        for name in a.keys() & b.keys():
            v = iou(a[name][0], b[name][0])
            worst = min(worst, v)
            total += v
            n += 1
    print(f"interval 3 against every frame: {n} boxes, IoU mean {total / max(n, 1):.3f}, "
          f"min {worst:.3f} (at least {min_iou} required)")
    if n == 0 or worst < min_iou:
        ok = False
    print("1 passed, 0 failed, 0 skipped" if ok else "0 passed, 1 failed, 0 skipped")
    return 0 if ok else 1


def compare(d, every, interval, n=3):
    truth = json.load(open(os.path.join(d, "truth.json")))
    skipped, ran = [], []
    for f, (fa, fb, tr) in enumerate(zip(load(every), load(interval), truth)):
        a, b = assign(fa, tr), assign(fb, tr)
        for name in a.keys() & b.keys():
            (ran if f % n == 0 else skipped).append(iou(a[name][0], b[name][0]))
    for label, v in (("frames the model ran on", ran), ("skipped frames", skipped)):
        if v:
            print(f"box IoU interval {n} / every frame, {label}: mean {sum(v) / len(v):.3f}, "
                  f"min {min(v):.3f} ({len(v)} boxes)")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "render":
        render(sys.argv[2])
    elif len(sys.argv) >= 5 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4],
                       float(sys.argv[5]) if len(sys.argv) > 5 else 0.5))
    elif len(sys.argv) >= 5 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4],
                int(sys.argv[5]) if len(sys.argv) > 5 else 3)
    else:
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)


main()

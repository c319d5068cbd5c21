#!/usr/bin/env python3
"""Face detection precision / recall / F1 on hand-annotated photos.

    benchmarks/faces-eval.py [--truth tests/data/faces/truth.json]
        [--iou 0.4] METHOD...

METHOD is one of
  nnpipe[:MODELS]   pipelines/faces.sh --json (NNP_FACES_MODELS=MODELS:
                    back+front, back, front; default the script's own)
  mediapipe:back|front
                    BlazeFace on ONNX Runtime (tests/ort/nnp-ort, its C API)
                    decoded here as MediaPipe does: the image letterboxed
                    (centred, bilinear) into the model input, SSD anchors
                    of face_detection_short_range / back
                    (SsdAnchorsCalculator), sigmoid scores clipped at 100,
                    score >= 0.5, weighted NMS at IoU 0.3, the letterbox
                    removed
  opencv            GStreamer's facedetect (gstreamer1.0-opencv, Haar
                    cascade, its defaults), the faces of its element message

A detection matches a face (greedy, best IoU first) when their IoU is at
least --iou; an unmatched detection whose centre lies in an "ignore"
region of the truth counts neither way.  Prints one line per method:
precision, recall, F1, TP, FP, FN, and the seconds it took.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    from PIL import Image
except ImportError as e:
    sys.exit(f"faces-eval: {e}: install python3-numpy and python3-pil")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0


def score_image(dets, faces, ignore, thr):
    """TP, FP, FN of one image."""
    pairs = sorted(((iou(d, f), i, j) for i, d in enumerate(dets)
                    for j, f in enumerate(faces)), reverse=True)
    used_d, used_f = set(), set()
    for v, i, j in pairs:
        if v < thr:
            break
        if i in used_d or j in used_f:
            continue
        used_d.add(i)
        used_f.add(j)
    fp = 0
    for i, d in enumerate(dets):
        if i in used_d:
            continue
        cx, cy = (d[0] + d[2]) / 2, (d[1] + d[3]) / 2
        if any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in ignore):
            continue
        fp += 1
    return len(used_f), fp, len(faces) - len(used_f)


# ------------------------------------------------------------------ nnpipe
def detect_nnpipe(path, models, tmp):
    out = os.path.join(tmp, "faces.jsonl")
    env = dict(os.environ)
    if models:
        env["NNP_FACES_MODELS"] = models
    r = subprocess.run(["sh", os.path.join(ROOT, "pipelines", "faces.sh"), "--json", out,
                        path, "-"], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"faces.sh failed on {path}: {r.stderr.strip()}")
    with open(out) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [o["box"] for o in lines[0]["objects"] if o["label"] == "face"]


# ------------------------------------------------- MediaPipe's decoding
def anchors(size, strides):
    """SsdAnchorsCalculator with fixed_anchor_size, aspect ratio 1 and the
    interpolated anchor: 2 per layer, layers of equal stride merged."""
    out = []
    i = 0
    while i < len(strides):
        j = i
        while j < len(strides) and strides[j] == strides[i]:
            j += 1
        n = 2 * (j - i)
        fm = (size + strides[i] - 1) // strides[i]
        for y in range(fm):
            for x in range(fm):
                for _ in range(n):
                    out.append(((x + 0.5) / fm, (y + 0.5) / fm))
        i = j
    return np.array(out, np.float32)


def bilinear(img, ow, oh, sx, sy, ox, oy):
    """Sample img (H, W, 3 floats) at ((x + 0.5) / sx - ox - 0.5, ...) for an
    ow x oh output: the affine map of MediaPipe's ImageToTensorCalculator
    (cv::warpAffine, INTER_LINEAR, zero border)."""
    h, w, _ = img.shape
    xs = (np.arange(ow) + 0.5) / sx - ox - 0.5
    ys = (np.arange(oh) + 0.5) / sy - oy - 0.5
    x0 = np.floor(xs).astype(int)
    y0 = np.floor(ys).astype(int)
    fx = (xs - x0)[None, :, None]
    fy = (ys - y0)[:, None, None]
    pad = np.zeros((h + 2, w + 2, 3), np.float32)
    pad[1:-1, 1:-1] = img
    def at(yy, xx):
        return pad[np.clip(yy + 1, 0, h + 1)[:, None], np.clip(xx + 1, 0, w + 1)[None, :]]
    return ((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1))
            + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)))


def weighted_nms(dets, thr):
    """MediaPipe's NonMaxSuppressionCalculator, WEIGHTED, IoU."""
    dets = sorted(dets, key=lambda d: -d[4])
    out = []
    while dets:
        best = dets[0]
        cluster = [d for d in dets if iou(d, best) > thr or d is best]
        rest = [d for d in dets if not (iou(d, best) > thr or d is best)]
        tot = sum(d[4] for d in cluster)
        box = [sum(d[k] * d[4] for d in cluster) / tot for k in range(4)]
        out.append(box + [best[4]])
        dets = rest
    return out


def detect_mediapipe(path, which, tmp, nnp_ort):
    if which == "back":
        size, strides, model = 256, [16, 32, 32, 32], "face_detection_back_256x256_barracuda.onnx"
    else:
        size, strides, model = 128, [8, 16, 16, 16], "face_detection_front_128x128_barracuda.onnx"
    model = os.path.join(os.environ.get("NNP_MODELS_DIR", os.path.join(ROOT, ".cache", "models")), model)
    img = np.asarray(Image.open(path).convert("RGB"), np.float32)
    h, w, _ = img.shape
    # keep the aspect ratio, centre the image, pad with zeros
    s = size / max(w, h)
    cw, ch = w * s, h * s
    ox, oy = (size - cw) / 2 / s, (size - ch) / 2 / s
    t = bilinear(img, size, size, s, s, ox, oy) / 127.5 - 1.0
    raw = os.path.join(tmp, "in.raw")
    t.astype(np.float32).reshape(1, size, size, 3).tofile(raw)
    outdir = os.path.join(tmp, "out")
    r = subprocess.run([nnp_ort, model, "--input", f"input:0={raw}", "--output-dir", outdir],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"nnp-ort failed ({r.returncode}; tools/fetch-models.sh fetches ONNX "
                 f"Runtime): {r.stderr.strip()}")
    def out(name):
        return np.fromfile(os.path.join(outdir, name + ".raw"), np.float32)
    scores = np.concatenate([out("Identity_0"), out("Identity_1_0")])
    boxes = np.concatenate([out("Identity_2_0").reshape(-1, 16),
                            out("Identity_3_0").reshape(-1, 16)])
    anc = anchors(size, strides)
    with np.errstate(over="ignore"):
        sc = 1 / (1 + np.exp(-np.clip(scores, -100, 100)))
    dets = []
    for i in np.nonzero(sc >= 0.5)[0]:
        cx = boxes[i, 0] / size + anc[i, 0]
        cy = boxes[i, 1] / size + anc[i, 1]
        bw, bh = boxes[i, 2] / size, boxes[i, 3] / size
        dets.append([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2, float(sc[i])])
    res = []
    for d in weighted_nms(dets, 0.3):
        # letterbox removal: normalised to the model input -> image pixels
        res.append([d[0] * size / s - ox, d[1] * size / s - oy,
                    d[2] * size / s - ox, d[3] * size / s - oy])
    return res


# ------------------------------------------------------------ facedetect
def detect_opencv(path, tmp):
    r = subprocess.run(["gst-launch-1.0", "-m", "filesrc", f"location={path}", "!", "decodebin",
                        "!", "videoconvert", "!", "facedetect", "display=false", "!",
                        "fakesink"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"facedetect failed on {path} (gstreamer1.0-opencv, opencv-data): "
                 f"{r.stderr.strip()}")
    faces = []
    for line in r.stdout.splitlines():
        if '(element): facedetect,' not in line:
            continue
        line = line.replace("\\", "")
        for m in re.finditer(r"x=\(uint\)(\d+), y=\(uint\)(\d+), "
                             r"width=\(uint\)(\d+), height=\(uint\)(\d+)", line):
            x, y, fw, fh = (int(v) for v in m.groups())
            faces.append([x, y, x + fw, y + fh])
        break
    return faces


def make_group(truth, tmp):
    """A composite 'group photo': each one-face photo of the truth cut
    around its face and scaled so the face is 60 pixels tall, side by side
    on a 2400x1600 canvas (faces 2.5% of the width: far faces).  Returns
    its truth entry."""
    canvas = Image.new("RGB", (2400, 1600), (110, 120, 130))
    faces = []
    x, y, rowh = 40, 40, 0
    for im in truth:
        if len(im["faces"]) != 1:
            continue
        src = Image.open(im["abs"]).convert("RGB")
        f = im["faces"][0]
        s = 60 / (f[3] - f[1])
        cx, cy, fw, fh = (f[0] + f[2]) / 2, (f[1] + f[3]) / 2, f[2] - f[0], f[3] - f[1]
        c = [int(max(0, cx - 1.5 * fw)), int(max(0, cy - 1.2 * fh)),
             int(min(src.size[0], cx + 1.5 * fw)), int(min(src.size[1], cy + 2 * fh))]
        sub = src.crop(c)
        sub = sub.resize((max(1, int(sub.size[0] * s)), max(1, int(sub.size[1] * s))),
                         Image.BILINEAR)
        if x + sub.size[0] > 2400:
            x, y, rowh = 40, y + rowh + 40, 0
        canvas.paste(sub, (x, y))
        faces.append([x + (f[0] - c[0]) * s, y + (f[1] - c[1]) * s,
                      x + (f[2] - c[0]) * s, y + (f[3] - c[1]) * s])
        x, rowh = x + sub.size[0] + 60, max(rowh, sub.size[1])
    path = os.path.join(tmp, "group.jpg")
    canvas.save(path, quality=92)
    return {"abs": path, "faces": faces, "ignore": []}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", default=os.path.join(ROOT, "tests", "data", "faces", "truth.json"))
    ap.add_argument("--iou", type=float, default=0.4)
    ap.add_argument("--nnp-ort", default=os.path.join(ROOT, "build", "tests", "nnp-ort"))
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--group", action="store_true",
                    help="score the composite group photo (make_group) instead")
    ap.add_argument("methods", nargs="+")
    a = ap.parse_args()
    truth = json.load(open(a.truth))["images"]
    for im in truth:
        p = im["path"] if os.path.isabs(im["path"]) else os.path.join(ROOT, im["path"])
        if not os.path.exists(p):
            sys.exit(f"faces-eval: {p} is missing: install {im['package'] or 'the repository'}")
        im["abs"] = p
    with tempfile.TemporaryDirectory(prefix=f"faces-eval-{os.getpid()}-") as tmp:
        if a.group:
            truth = [make_group(truth, tmp)]
        for m in a.methods:
            kind, _, arg = m.partition(":")
            tp = fp = fn = 0
            t0 = time.monotonic()
            for im in truth:
                if kind == "nnpipe":
                    dets = detect_nnpipe(im["abs"], arg, tmp)
                elif kind == "mediapipe":
                    dets = detect_mediapipe(im["abs"], arg or "back", tmp, a.nnp_ort)
                elif kind == "opencv":
                    dets = detect_opencv(im["abs"], tmp)
                else:
                    sys.exit(f"faces-eval: unknown method {m}")
                t, f, n = score_image(dets, im["faces"], im.get("ignore", []), a.iou)
                tp, fp, fn = tp + t, fp + f, fn + n
                if a.verbose:
                    print(f"  {m} {os.path.basename(im['abs'])}: TP {t} FP {f} FN {n} "
                          f"{[[round(v) for v in d] for d in dets]}")
            dt = time.monotonic() - t0
            p = tp / (tp + fp) if tp + fp else 1.0
            r = tp / (tp + fn) if tp + fn else 1.0
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            print(f"{m:22s} precision {p:.3f}  recall {r:.3f}  F1 {f1:.3f}  "
                  f"(TP {tp}, FP {fp}, FN {fn}; {len(truth)} images, {dt:.1f} s)")


main()

#!/usr/bin/env python3
"""nnpipe's NMS against ONNX NonMaxSuppression run by ONNX Runtime.

    nms-vs-ort.py NNP_ORT NMS_DUMP

For several seeded sets of boxes (overlapping clusters, corners given in
either order, 3 classes) and IoU thresholds / box limits, a one-node ONNX
model (NonMaxSuppression, center_point_box=0) is run by ONNX Runtime
(tests/ort/nnp-ort) and the same boxes by nnpipe's NMS (nms-dump); the
selected_indices must be equal, line for line.  Fails (never skips) when
ONNX Runtime is missing (tools/fetch-models.sh) or python3-onnx /
python3-numpy are not installed."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
except ImportError as e:
    sys.exit(f"nms-vs-ort: {e}: install python3-onnx and python3-numpy")


def model(path, n, c, iou, score_thr, max_out):
    boxes = helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, n, 4])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, c, n])
    out = helper.make_tensor_value_info("selected_indices", TensorProto.INT64, None)
    inits = [
        helper.make_tensor("max_out", TensorProto.INT64, [1], [max_out]),
        helper.make_tensor("iou", TensorProto.FLOAT, [1], [iou]),
        helper.make_tensor("score_thr", TensorProto.FLOAT, [1], [score_thr]),
    ]
    node = helper.make_node("NonMaxSuppression",
                            ["boxes", "scores", "max_out", "iou", "score_thr"],
                            ["selected_indices"], center_point_box=0)
    g = helper.make_graph([node], "nms", [boxes, scores], [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 7
    onnx.save(m, path)


def boxes_for(rng, n):
    # clusters of overlapping boxes, so that the threshold matters
    centres = rng.uniform(20, 180, size=(n // 8 + 1, 2))
    b = np.zeros((n, 4), np.float32)
    for i in range(n):
        cy, cx = centres[i % len(centres)] + rng.normal(0, 6, 2)
        h, w = rng.uniform(10, 50, 2)
        y0, x0, y1, x1 = cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2
        if rng.random() < 0.3:
            y0, y1 = y1, y0
        if rng.random() < 0.3:
            x0, x1 = x1, x0
        b[i] = (y0, x0, y1, x1)
    return b


def main():
    nnp_ort, dump = sys.argv[1], sys.argv[2]
    cases = 0
    with tempfile.TemporaryDirectory(prefix=f"nms-vs-ort-{os.getpid()}-") as tmp:
        for seed, n, c, iou, thr, max_out in [
                (1, 64, 3, 0.5, 0.2, 1000),
                (2, 200, 3, 0.3, 0.1, 1000),
                (3, 200, 3, 0.7, 0.3, 1000),
                (4, 120, 2, 0.45, 0.05, 5),
                (5, 300, 3, 0.6, 0.5, 1000),
                (6, 40, 1, 0.0, 0.0, 1000)]:
            rng = np.random.default_rng(seed)
            boxes = boxes_for(rng, n)
            # distinct scores: the order of ties is not specified
            scores = rng.permutation(n * c).astype(np.float32) / (n * c)
            scores = scores.reshape(1, c, n)
            mpath = os.path.join(tmp, "nms.onnx")
            model(mpath, n, c, iou, thr, max_out)
            bpath, spath = os.path.join(tmp, "boxes.raw"), os.path.join(tmp, "scores.raw")
            boxes.tofile(bpath)
            scores.tofile(spath)
            outdir = os.path.join(tmp, "out")
            r = subprocess.run([nnp_ort, mpath, "--input", f"boxes={bpath}",
                                "--input", f"scores={spath}", "--output-dir", outdir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"nnp-ort failed ({r.returncode}; ONNX Runtime comes with "
                         f"tools/fetch-models.sh): {r.stderr.strip()}")
            ref = np.fromfile(os.path.join(outdir, "selected_indices.raw"),
                              np.int64).reshape(-1, 3)
            r = subprocess.run([dump, str(n), str(c), repr(iou), repr(thr), str(max_out),
                                bpath, spath], capture_output=True, text=True, check=True)
            ours = np.array([[int(v) for v in line.split()]
                             for line in r.stdout.splitlines()], np.int64).reshape(-1, 3)
            if ref.shape != ours.shape or not (ref == ours).all():
                print(f"seed {seed}: ONNX Runtime selected {len(ref)}, nnpipe {len(ours)}")
                print("ORT:   ", ref.tolist())
                print("nnpipe:", ours.tolist())
                sys.exit(1)
            print(f"seed {seed}: {n} boxes x {c} classes, IoU {iou}, score > {thr}, "
                  f"max {max_out}: {len(ref)} selected, equal")
            cases += 1
    print(f"{cases} passed, 0 failed, 0 skipped")


main()

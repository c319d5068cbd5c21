"""Build three DAG-shaped test models (residual adds, U-Net style Concat after
Resize, two outputs) and run test-split-models on them and on the working
models (small input sizes).  Usage: split-models.py TEST_BINARY WORKDIR"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def w(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def conv(nodes, inits, x, y, cin, cout, k=3):
    wn = y + "_w"
    inits += [w(wn, cout, cin, k, k), w(y + "_b", cout)]
    nodes.append(helper.make_node("Conv", [x, wn, y + "_b"], [y], pads=[k // 2] * 4))


def save(path, nodes, inits, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    # (no onnx.checker: onnx 1.12 rejects outputs without a declared shape)
    onnx.save(m, path)


def residual(path):
    nodes, inits = [], []
    conv(nodes, inits, "x", "c0", 3, 8)
    prev = "c0"
    for i in range(3):
        conv(nodes, inits, prev, f"r{i}a", 8, 8)
        nodes.append(helper.make_node("Relu", [f"r{i}a"], [f"r{i}b"]))
        conv(nodes, inits, f"r{i}b", f"r{i}c", 8, 8)
        nodes.append(helper.make_node("Add", [f"r{i}c", prev], [f"r{i}s"]))
        nodes.append(helper.make_node("Relu", [f"r{i}s"], [f"r{i}o"]))
        prev = f"r{i}o"
    nodes.append(helper.make_node("GlobalAveragePool", [prev], ["y"]))
    save(path, nodes, inits,
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def unet(path):
    nodes, inits = [], []
    conv(nodes, inits, "x", "e1", 3, 4)
    nodes.append(helper.make_node("Relu", ["e1"], ["e1r"]))
    nodes.append(helper.make_node("MaxPool", ["e1r"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    conv(nodes, inits, "p1", "e2", 4, 8)
    nodes.append(helper.make_node("Relu", ["e2"], ["e2r"]))
    nodes.append(helper.make_node("MaxPool", ["e2r"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]))
    conv(nodes, inits, "p2", "b", 8, 8)
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    nodes.append(helper.make_node("Resize", ["b", "", "scales"], ["u2"], mode="nearest"))
    nodes.append(helper.make_node("Concat", ["u2", "e2r"], ["c2"], axis=1))
    conv(nodes, inits, "c2", "d2", 16, 4)
    nodes.append(helper.make_node("Resize", ["d2", "", "scales"], ["u1"], mode="nearest"))
    nodes.append(helper.make_node("Concat", ["u1", "e1r"], ["c1"], axis=1))
    conv(nodes, inits, "c1", "y", 8, 2)
    save(path, nodes, inits,
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def two_outputs(path):
    nodes, inits = [], []
    conv(nodes, inits, "x", "a", 3, 6)
    nodes.append(helper.make_node("Sigmoid", ["a"], ["early"]))        # output 1, produced early
    conv(nodes, inits, "a", "b", 6, 6)
    nodes.append(helper.make_node("Relu", ["b"], ["br"]))
    conv(nodes, inits, "br", "c", 6, 6)
    nodes.append(helper.make_node("Mul", ["c", "early"], ["m"]))      # early value used late
    conv(nodes, inits, "m", "d", 6, 3)
    nodes.append(helper.make_node("Add", ["d", "x"], ["late"]))       # graph input used late
    save(path, nodes, inits,
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
         [helper.make_tensor_value_info("late", TensorProto.FLOAT, None),
          helper.make_tensor_value_info("early", TensorProto.FLOAT, None)])


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    cases = []
    for name, fn in (("residual", residual), ("unet", unet), ("two-outputs", two_outputs)):
        p = os.path.join(work, name + ".onnx")
        fn(p)
        cases.append([p])
    src = os.environ.get("NNP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    models = os.path.join(src, ".cache", "models")
    for f, shape in (("ch_PP-OCRv4_det_infer.onnx", "x=1,3,64,64"),
                     ("ch_PP-OCRv4_rec_infer.onnx", "x=1,3,48,64"),
                     ("ch_ppocr_mobile_v2.0_cls_infer.onnx", "x=1,3,48,192")):
        p = os.path.join(models, f)
        cases.append([p, shape])
        if not os.path.exists(p):
            print("FAIL: missing model %s: run tools/fetch-models.sh" % p)
    fails = 0
    for c in cases:
        r = subprocess.run([binary] + c)
        fails += r.returncode != 0
    sys.exit(1 if fails else 0)


main()

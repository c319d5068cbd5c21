#!/usr/bin/env python3
"""DAG-shaped ONNX models for the nnpipeline tests (written into OUTDIR).

residual.onnx   x: float32 1x3xHxW -> y: 1x8xHxW; three Conv+Relu blocks
                with residual Adds (a value made early is read late, so it
                crosses several cuts).
unet.onnx       x: float32 1x3xHxW (H, W even) -> y: 1x4xHxW; encoder Conv,
                MaxPool, Conv, nearest Resize x2, Concat with the early
                features (U-Net style skip), Conv.
two-out.onnx    x: float32 1x3xHxW -> early: 1x4xHxW (Sigmoid of the first
                Conv) and late: 1x6x(H/2)x(W/2); the early output is made
                first and must cross every later cut.
Weights live in Constant nodes, as in the PP-OCR models.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(11)


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name + "_const",
                            value=numpy_helper.from_array(array, name))


def conv(nodes, name, x, cin, cout, k=3, stride=1):
    w = (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
    b = (RNG.standard_normal((cout,)) * 0.1).astype(np.float32)
    nodes.append(const(name + "_w", w))
    nodes.append(const(name + "_b", b))
    p = k // 2
    nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name],
                                  name=name, kernel_shape=[k, k], pads=[p, p, p, p],
                                  strides=[stride, stride]))
    return name


def relu(nodes, name, x):
    nodes.append(helper.make_node("Relu", [x], [name], name=name))
    return name


def model(nodes, name, inputs, outputs, opset=11):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(graph, producer_name="nnpipe-tests",
                          opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def vin(name, c, h="h", w="w", n=1):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [n, c, h, w])


def residual():
    n = []
    a = relu(n, "stem_relu", conv(n, "stem", "x", 3, 8))
    b = relu(n, "b1_relu", conv(n, "b1_conv", a, 8, 8))
    b = conv(n, "b1_conv2", b, 8, 8)
    n.append(helper.make_node("Add", [a, b], ["b1_add"], name="b1_add"))
    c = relu(n, "b2_relu", conv(n, "b2_conv", "b1_add", 8, 8))
    n.append(helper.make_node("Add", ["b1_add", c], ["b2_add"], name="b2_add"))
    n.append(helper.make_node("Add", ["b2_add", a], ["b3_add"], name="b3_add"))
    d = conv(n, "head", "b3_add", 8, 8, k=1)
    n.append(helper.make_node("Tanh", [d], ["y"], name="out_tanh"))
    return model(n, "residual", [vin("x", 3)], [vin("y", 8)])


def unet():
    n = []
    e1 = relu(n, "enc1_relu", conv(n, "enc1", "x", 3, 8))
    n.append(helper.make_node("MaxPool", [e1], ["pool"], name="pool",
                              kernel_shape=[2, 2], strides=[2, 2]))
    e2 = relu(n, "enc2_relu", conv(n, "enc2", "pool", 8, 16))
    n.append(const("scales", np.array([1, 1, 2, 2], dtype=np.float32)))
    n.append(const("roi", np.array([], dtype=np.float32)))
    n.append(helper.make_node("Resize", [e2, "roi", "scales"], ["up"], name="up",
                              mode="nearest"))
    n.append(helper.make_node("Concat", ["up", e1], ["cat"], name="cat", axis=1))
    d = relu(n, "dec_relu", conv(n, "dec", "cat", 24, 8))
    conv(n, "y", d, 8, 4, k=1)
    return model(n, "unet", [vin("x", 3)], [vin("y", 4)])


def two_out():
    n = []
    a = conv(n, "c1", "x", 3, 4)
    n.append(helper.make_node("Sigmoid", [a], ["early"], name="early_sigmoid"))
    b = relu(n, "c2_relu", conv(n, "c2", a, 4, 8, stride=2))
    c = relu(n, "c3_relu", conv(n, "c3", b, 8, 8))
    n.append(helper.make_node("Add", [b, c], ["c3_add"], name="c3_add"))
    conv(n, "late", "c3_add", 8, 6, k=1)
    return model(n, "two-out", [vin("x", 3)],
                 [vin("early", 4), vin("late", 6, "h2", "w2")])


def residual_batch():
    """residual with a dynamic batch dim "n" (nnpipeline batch-size)"""
    m = residual()
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "n"
    return m


def mlp_batch():
    """Conv, pooling, Flatten and Gemm (a matrix product whose rows are the
    batch's frames) on a dynamic batch dim, two outputs"""
    n = []
    a = relu(n, "c1_relu", conv(n, "c1", "x", 3, 8))
    n.append(helper.make_node("GlobalAveragePool", [a], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat", axis=1))
    w = (RNG.standard_normal((8, 5)) * 0.5).astype(np.float32)
    b = (RNG.standard_normal((5,)) * 0.1).astype(np.float32)
    n.append(const("fc_w", w))
    n.append(const("fc_b", b))
    n.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc"))
    n.append(helper.make_node("Softmax", ["logits"], ["prob"], name="prob", axis=1))
    return model(n, "mlp-batch", [vin("x", 3, n="n")],
                 [vin("c1_relu", 8, n="n"),
                  helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["n", 5])])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, fn in [("residual", residual), ("unet", unet), ("two-out", two_out),
                     ("residual-batch", residual_batch), ("mlp-batch", mlp_batch)]:
        onnx.save(fn(), os.path.join(out, name + ".onnx"))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

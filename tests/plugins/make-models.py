#!/usr/bin/env python3
"""Tiny ONNX models for the plugin tests (written into OUTDIR).

conv-relu-add.onnx   x: float32 1x3xHxW (H, W dynamic)
                     y = Relu(Conv(x, 4 filters 3x3, pad 1) + b) + 0.25
fixed-h8.onnx        the same with x: float32 1x3x8xW (the height fixed, as a
                     text recogniser's 48)
two-io.onnx          a: float32 1x4, b: float32 1x4 (static)
                     sum = a + b, prod = a * b
add-4x4.onnx         x: float32 1x3xHxW (dynamic), y = x + c (c: 1x3x4x4), so shape
                     inference fails unless H and W are 4 (or 1)
relu.onnx            x: float32 1x1x2x4 (static), y = Relu(x): one node, what the
                     test-only "testmem" backend runs (test-testmem.c)
nonzero.onnx         x: float32 1x3xHxW (dynamic), nz = NonZero(x > 0) (int64
                     4xN: N depends on the data, so the elements refuse it)
corrupt.onnx         conv-relu-add.onnx cut in the middle of its weights
Weights live in Constant nodes, as in the PP-OCR models.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name + "_const",
                            value=numpy_helper.from_array(array, name))


def conv_relu_add(height="h"):
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal((4,)).astype(np.float32) * 0.1
    c = np.full((1, 4, 1, 1), 0.25, dtype=np.float32)
    nodes = [
        const("w", w), const("b", b), const("c", c),
        helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("Add", ["relu", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "conv-relu-add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, height, "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, height, "w"])])
    return helper.make_model(graph, producer_name="nnpipe-tests",
                             opset_imports=[helper.make_opsetid("", 11)])


def two_io():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"], name="add"),
        helper.make_node("Mul", ["a", "b"], ["prod"], name="mul"),
    ]
    graph = helper.make_graph(
        nodes, "two-io",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("prod", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, producer_name="nnpipe-tests",
                             opset_imports=[helper.make_opsetid("", 11)])


def add_4x4():
    c = np.arange(48, dtype=np.float32).reshape(1, 3, 4, 4)
    nodes = [const("c", c), helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    graph = helper.make_graph(
        nodes, "add-4x4",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])])
    return helper.make_model(graph, producer_name="nnpipe-tests",
                             opset_imports=[helper.make_opsetid("", 11)])


def relu():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 4])])
    return helper.make_model(graph, producer_name="nnpipe-tests",
                             opset_imports=[helper.make_opsetid("", 11)])


def nonzero():
    nodes = [const("zero", np.array(0.0, np.float32)),
             helper.make_node("Greater", ["x", "zero"], ["mask"], name="gt"),
             helper.make_node("NonZero", ["mask"], ["nz"], name="nonzero")]
    graph = helper.make_graph(
        nodes, "nonzero",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, [4, "n"])])
    return helper.make_model(graph, producer_name="nnpipe-tests",
                             opset_imports=[helper.make_opsetid("", 13)])


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make-models.py OUTDIR [STAMP]")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, model in (("conv-relu-add", conv_relu_add()), ("two-io", two_io()),
                        ("add-4x4", add_4x4()), ("fixed-h8", conv_relu_add(8)),
                        ("nonzero", nonzero()), ("relu", relu())):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name + ".onnx"))
    data = conv_relu_add().SerializeToString()
    with open(os.path.join(out, "corrupt.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

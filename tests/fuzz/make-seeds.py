#!/usr/bin/env python3
"""Write the seed models of the ONNX fuzzers (tests/fuzz/corpus/onnx-run/).

Small models whose shape operands are constants (so they specialise and run):
one or two ops each, covering the shape-computing ops (Resize, Slice, Range,
ConstantOfShape, Pad, Reshape, Expand) and the common compute ops.

    tests/fuzz/make-seeds.py tests/fuzz/corpus/onnx-run
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def const(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.array(values, dtype), name)


def model(nodes, inits, x_shape=(1, 2, 4, 4), opset=13, out_type=F):
    g = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", F, list(x_shape))],
                          [helper.make_tensor_value_info("y", out_type, None)], initializer=inits)
    return helper.make_model(g, producer_name="nnpipe-fuzz-seeds",
                             opset_imports=[helper.make_opsetid("", opset)])


def seeds():
    n = helper.make_node
    yield "resize-nearest", model(
        [n("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
        [const("scales", [1, 1, 2, 1.5])])
    yield "resize-linear-sizes", model(
        [n("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")],
        [const("sizes", [1, 2, 3, 7], np.int64)])
    # every axis resized, the last one grown 7800x: found by fuzz-onnx-run
    # when the passes grew it first (3 GB of scratch; now shrinking first)
    yield "resize-linear-mixed", model(
        [n("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")],
        [const("sizes", [1, 2, 2, 31239], np.int64)], x_shape=(49, 63, 4, 4))
    yield "resize-crop", model(
        [n("Resize", ["x", "roi", "scales"], ["y"], mode="cubic",
           coordinate_transformation_mode="tf_crop_and_resize")],
        [const("roi", [0, 0, 0.2, 0.1, 1, 1, 0.8, 0.9]), const("scales", [1, 1, 2, 2])])
    yield "slice-reshape", model(
        [n("Slice", ["x", "st", "en", "ax", "sp"], ["s"]),
         n("Reshape", ["s", "shape"], ["y"])],
        [const("st", [1, -1], np.int64), const("en", [4, -5], np.int64),
         const("ax", [2, 3], np.int64), const("sp", [1, -2], np.int64),
         const("shape", [1, -1], np.int64)])
    yield "range-add", model(
        [n("Range", ["a", "b", "d"], ["r"]), n("Add", ["x", "r"], ["y"])],
        [const("a", 0.0), const("b", 4.0), const("d", 1.0)])
    yield "constantofshape-mul", model(
        [n("ConstantOfShape", ["shape"], ["c"], value=const("v", [0.5])),
         n("Mul", ["x", "c"], ["y"])],
        [const("shape", [1, 2, 4, 4], np.int64)])
    yield "pad-conv-relu", model(
        [n("Pad", ["x", "pads", "pv"], ["p"], mode="constant"),
         n("Conv", ["p", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[1, 1]),
         n("Relu", ["c"], ["y"])],
        [const("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64), const("pv", 0.0),
         const("w", np.ones((3, 2, 3, 3)) * 0.1), const("b", [0.1, 0.2, 0.3])])
    yield "expand-flatten", model(
        [n("Expand", ["x", "es"], ["e"]), n("Flatten", ["e"], ["y"], axis=2)],
        [const("es", [2, 2, 4, 4], np.int64)])
    yield "matmul-softmax", model(
        [n("MatMul", ["x", "w"], ["m"]), n("Softmax", ["m"], ["y"], axis=-1)],
        [const("w", np.arange(16).reshape(4, 4) * 0.05)])
    yield "concat-gather-transpose", model(
        [n("Concat", ["x", "x"], ["c"], axis=1), n("Gather", ["c", "idx"], ["g"], axis=3),
         n("Transpose", ["g"], ["y"], perm=[0, 3, 1, 2])],
        [const("idx", [3, 0, 1], np.int64)])
    yield "pool-reduce", model(
        [n("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
         n("ReduceMean", ["p"], ["y"], axes=[2, 3], keepdims=1)], [])
    yield "cast-int", model(
        [n("Mul", ["x", "k"], ["m"]), n("Cast", ["m"], ["i"], to=TensorProto.INT32),
         n("Cast", ["i"], ["y"], to=TensorProto.FLOAT)],
        [const("k", 1e9)])
    yield "bn-sigmoid-split", model(
        [n("BatchNormalization", ["x", "s", "bb", "mu", "var"], ["n"]),
         n("Sigmoid", ["n"], ["sg"]),
         n("Split", ["sg"], ["y", "z"], axis=2)],
        [const("s", [1, 2]), const("bb", [0, 1]), const("mu", [0.5, 0]), const("var", [1, 2])])
    # NaN into Exp / Sigmoid: their range-reduced exp must not convert NaN to int
    yield "nan-exp-sigmoid", model(
        [n("Sqrt", ["k"], ["s"]), n("Add", ["x", "s"], ["a"]), n("Exp", ["a"], ["e"]),
         n("Sigmoid", ["e"], ["y"])],
        [const("k", [-1.0])])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "corpus", "onnx-run")
    os.makedirs(out, exist_ok=True)
    for name, m in seeds():
        onnx.save(m, os.path.join(out, name + ".onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

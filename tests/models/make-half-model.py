#!/usr/bin/python3
"""Write tests/data/half.onnx: a small float16 model (the small-models-vs-ort
case of docs/tensor-caps.md "16-bit floats", also nnstage's float16 pads).

Usage: make-half-model.py OUT.onnx

x: float16 1x3xHxW (H, W dynamic)
  conv = Conv(x, w: float16 4x3x3x3 in raw_data, b: float16 4 in int32_data), pad 1
  relu = Relu(conv); pool = MaxPool(relu, 2x2 stride 2)
  y    = Sigmoid(pool + c), c a float16 Constant node 1x4x1x1   -> y: float16
  z    = Cast(relu, float32)                                    -> z: float32
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    rng = np.random.default_rng(16)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.4).astype(np.float16)
    b = (rng.standard_normal(4) * 0.1).astype(np.float32)
    c = (rng.standard_normal((1, 4, 1, 1)) * 0.5).astype(np.float16)
    nodes = [
        helper.make_node("Constant", [], ["c"], name="c_const",
                         value=numpy_helper.from_array(c, "c")),
        helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Add", ["pool", "c"], ["add"], name="add"),
        helper.make_node("Sigmoid", ["add"], ["y"], name="sigmoid"),
        helper.make_node("Cast", ["relu"], ["z"], name="cast", to=TensorProto.FLOAT),
    ]
    inits = [
        numpy_helper.from_array(w, "w"),  # raw_data
        # int32_data: one float16 bit pattern per int32 (make_tensor's non-raw form)
        helper.make_tensor("b", TensorProto.FLOAT16, [4], b.tolist()),
    ]
    graph = helper.make_graph(
        nodes, "half",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 4, None, None]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, "h", "w"])],
        inits)
    model = helper.make_model(graph, producer_name="nnpipe-tests",
                              opset_imports=[helper.make_opsetid("", 13)])
    assert not model.graph.initializer[1].raw_data and model.graph.initializer[1].int32_data
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One convolution as a model, for kernel benchmarks (`nnpipe run OUT.onnx --profile`).

    make-conv-model.py OUT.onnx CIN COUT KERNEL STRIDE SIZE [GROUP [ACT [LAYOUT]]]

x: float32 1xCINxSIZExSIZE (LAYOUT nchw, the default) or 1xSIZExSIZExCIN
(LAYOUT nhwc: a Transpose to NCHW before the convolution and one back after
it, as tf2onnx exports do).  Conv KERNELxKERNEL, stride STRIDE, "same"
padding (KERNEL // 2 on every side), GROUP groups (CIN for a depthwise
convolution; default 1), with a bias.  ACT: none (default), relu, relu6 (a
Clip(0, 6)) or residual (an Add of the input, CIN = COUT and stride 1).
Weights are seeded (numpy), so every run builds the same model.  Needs
python3-onnx and python3-numpy.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    args = sys.argv[1:]
    if len(args) < 6 or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if args and args[0] in ("-h", "--help") else 2)
    out = args[0]
    cin, cout, k, s, size = (int(a) for a in args[1:6])
    group = int(args[6]) if len(args) > 6 else 1
    act = args[7] if len(args) > 7 else "none"
    layout = args[8] if len(args) > 8 else "nchw"
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k))
    b = rng.standard_normal((cout,)) * 0.1
    inits = [numpy_helper.from_array(w.astype(np.float32), "w"),
             numpy_helper.from_array(b.astype(np.float32), "b")]
    nodes = []
    x = "x"
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]))
        x = "xt"
    p = k // 2
    nodes.append(helper.make_node("Conv", [x, "w", "b"], ["c"], kernel_shape=[k, k],
                                  strides=[s, s], pads=[p, p, p, p], group=group))
    y = "c"
    if act == "relu":
        nodes.append(helper.make_node("Relu", [y], ["a"]))
        y = "a"
    elif act == "relu6":
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", [y, "lo", "hi"], ["a"]))
        y = "a"
    elif act == "residual":
        nodes.append(helper.make_node("Add", [y, x], ["a"]))
        y = "a"
    elif act != "none":
        sys.exit("make-conv-model.py: unknown ACT " + act)
    osize = (size + 2 * p - k) // s + 1
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", [y], ["y"], perm=[0, 2, 3, 1]))
        shape_in, shape_out = [1, size, size, cin], [1, osize, osize, cout]
    else:
        nodes.append(helper.make_node("Identity", [y], ["y"]))
        shape_in, shape_out = [1, cin, size, size], [1, cout, osize, osize]
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_in)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape_out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()

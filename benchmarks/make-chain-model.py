#!/usr/bin/env python3
"""A chain of identical layers, easy to balance (issue 13 item 3).

    make-chain-model.py OUT.onnx [LAYERS [CHANNELS [SIZE]]] [--stamp FILE]

x: float32 1xCHANNELSxSIZExSIZE -> y: the same shape.  LAYERS (default 16)
3x3 Conv + Relu, CHANNELS (16) -> CHANNELS, padding 1: every layer costs the
same, so a 2-stage split is balanced at LAYERS/2 and any slowdown of one
stage shows as a cut that should move.  Weights are seeded (numpy), so every
run builds the same model.  Needs python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if args else 2)
    stamp = None
    if "--stamp" in args:
        i = args.index("--stamp")
        stamp = args[i + 1]
        del args[i:i + 2]
    out = args[0]
    layers = int(args[1]) if len(args) > 1 else 16
    ch = int(args[2]) if len(args) > 2 else 16
    size = int(args[3]) if len(args) > 3 else 32
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    rng = np.random.default_rng(31)
    inits, nodes = [], []
    x = "x"
    for i in range(layers):
        w = (rng.standard_normal((ch, ch, 3, 3)) / np.sqrt(ch * 9)).astype(np.float32)
        b = (rng.standard_normal((ch,)) * 0.05).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        y = "y" if i == layers - 1 else f"r{i}"
        nodes.append(helper.make_node("Relu", [f"c{i}"], [y], name=f"relu{i}"))
        x = y
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ch, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, ch, size, size])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="nnpipe-benchmarks",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, out)
    if stamp:
        with open(stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A model whose bottleneck is one node no split can divide (issue 13 item 2).

    make-bottleneck-model.py OUT.onnx [CHANNELS [SIZE]] [--stamp FILE]

x: float32 1x3xSIZExSIZE -> y: 1x8xSIZExSIZE.  A 3x3 Conv+Relu to CHANNELS
channels, one big 3x3 Conv CHANNELS -> CHANNELS + Relu (about 9/10 of the
FLOPs: the bottleneck), a 1x1 Conv to 8 channels.  Pipeline stages cannot
cut inside the big Conv, so splitting caps at its time; replicas of the
stage holding it (devices=cpu:1*2) do not.  Weights are seeded (numpy), so
every run builds the same model.  Needs python3-onnx and python3-numpy.
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
    ch = int(args[1]) if len(args) > 1 else 96
    size = int(args[2]) if len(args) > 2 else 96
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    rng = np.random.default_rng(13)
    inits, nodes = [], []

    def conv(name, x, cin, cout, k):
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        b = np.zeros((cout,), np.float32)
        inits.append(numpy_helper.from_array(w, name + "_w"))
        inits.append(numpy_helper.from_array(b, name + "_b"))
        p = k // 2
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name,
                                      kernel_shape=[k, k], pads=[p, p, p, p]))
        return name

    def relu(name, x):
        nodes.append(helper.make_node("Relu", [x], [name], name=name))
        return name

    h = relu("stem_relu", conv("stem", "x", 3, ch, 3))
    h = relu("big_relu", conv("big", h, ch, ch, 3))
    conv("head", h, ch, 8, 1)
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "bottleneck",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, size, size])], inits)
    m = helper.make_model(graph, producer_name="nnpipe-benchmarks",
                          opset_imports=[helper.make_opsetid("", 11)])
    onnx.checker.check_model(m)
    onnx.save(m, out)
    if stamp:
        # the build system's stamp (tests/plugins/meson.build)
        with open(stamp, "w") as f:
            f.write(out + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Write a classic CNN's shape as ONNX with random weights, for timing
nnpipe against ONNX Runtime on model families beyond the shipped ones
(benchmarks/bench.sh): the layers, strides, channels and activations of
torchvision's ResNet-18 and MobileNetV2 (BatchNorm folded into the
convolutions, as exporters do), He-initialised weights from a fixed seed,
input 1x3x224x224, the global average pool as output (no classifier).

    benchmarks/make-cnn-model.py resnet18|mobilenetv2 OUT.onnx

Needs python3-onnx and python3-numpy.  Timing only: the outputs mean
nothing."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(1)
        self.inits += [numpy_helper.from_array(np.array(0, np.float32), "zero"),
                       numpy_helper.from_array(np.array(6, np.float32), "six")]

    def name(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def conv(self, x, cin, cout, k, stride=1, group=1, act=None):
        n = self.name("conv")
        fan_in = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)
        b = self.rng.standard_normal(cout) * 0.05
        self.inits += [numpy_helper.from_array(w.astype(np.float32), n + "_w"),
                       numpy_helper.from_array(b.astype(np.float32), n + "_b")]
        self.nodes.append(helper.make_node("Conv", [x, n + "_w", n + "_b"], [n], kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[k // 2] * 4,
                                           group=group))
        return self.act(n, act)

    def act(self, x, act):
        if act is None:
            return x
        y = self.name(act.lower())
        ins = [x, "zero", "six"] if act == "Clip" else [x]
        self.nodes.append(helper.make_node(act, ins, [y]))
        return y

    def add(self, a, b, act=None):
        y = self.name("add")
        self.nodes.append(helper.make_node("Add", [a, b], [y]))
        return self.act(y, act)

    def model(self, x, graph_name):
        y = self.name("gap")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [y]))
        g = helper.make_graph(self.nodes, graph_name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 3, 224, 224])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)],
                              self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def resnet18():
    b = Builder()
    x = b.conv("x", 3, 64, 7, 2, act="Relu")
    b.nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1]))
    x, c = "pool", 64
    for cout, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                         (512, 1)]:
        y = b.conv(x, c, cout, 3, stride, act="Relu")
        y = b.conv(y, cout, cout, 3)
        short = x if stride == 1 and c == cout else b.conv(x, c, cout, 1, stride)
        x, c = b.add(y, short, act="Relu"), cout
    return b.model(x, "resnet18-shaped")


def mobilenetv2():
    b = Builder()
    x, c = b.conv("x", 3, 32, 3, 2, act="Clip"), 32
    for t, cout, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride, hidden = s if i == 0 else 1, c * t
            y = x if t == 1 else b.conv(x, c, hidden, 1, act="Clip")
            y = b.conv(y, hidden, hidden, 3, stride, group=hidden, act="Clip")
            y = b.conv(y, hidden, cout, 1)
            x = b.add(x, y) if stride == 1 and c == cout else y
            c = cout
    x = b.conv(x, c, 1280, 1, act="Clip")
    return b.model(x, "mobilenetv2-shaped")


def main():
    makers = {"resnet18": resnet18, "mobilenetv2": mobilenetv2}
    if len(sys.argv) != 3 or sys.argv[1] not in makers:
        sys.exit(__doc__)
    save(makers[sys.argv[1]](), sys.argv[2])


if __name__ == "__main__":
    main()

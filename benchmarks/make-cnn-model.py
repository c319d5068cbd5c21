#!/usr/bin/python3
"""Write a classic model's shape as ONNX with random weights, for timing
nnpipe against ONNX Runtime on model families beyond the shipped ones
(benchmarks/bench.sh): the layers, strides, channels and activations of
torchvision's ResNet-18, ResNet-50 and MobileNetV2 (BatchNorm folded into the
convolutions, as exporters do; input 1x3x224x224, the global average pool
as output, no classifier), a YOLOv8n-like backbone (3x3 / 1x1 convolutions
with SiLU written out as PyTorch exports it, Sigmoid then Mul, residual
bottlenecks; input 1x3x320x320) and a DeiT-tiny-shaped ViT encoder (12
layers of 197 tokens x 192, 3 heads, LayerNormalization, GELU written out
with Erf, as PyTorch exports it; input 1x197x192); He-initialised weights
from a fixed seed.

    benchmarks/make-cnn-model.py resnet18|resnet50|mobilenetv2|yolo-silu|vit-tiny OUT.onnx

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
        if act == "SiLU":
            self.nodes += [helper.make_node("Sigmoid", [x], [y + "_s"]),
                           helper.make_node("Mul", [x, y + "_s"], [y])]
            return y
        ins = [x, "zero", "six"] if act == "Clip" else [x]
        self.nodes.append(helper.make_node(act, ins, [y]))
        return y

    def add(self, a, b, act=None):
        y = self.name("add")
        self.nodes.append(helper.make_node("Add", [a, b], [y]))
        return self.act(y, act)

    def model(self, x, graph_name, size=224):
        y = self.name("gap")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [y]))
        g = helper.make_graph(self.nodes, graph_name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 3, size, size])],
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


def resnet50():
    """torchvision's ResNet-50: bottlenecks of 1x1, 3x3 (the stride, as v1.5),
    1x1 with the residual Add, a 1x1 projection (with the stride) where the
    shape changes."""
    b = Builder()
    x = b.conv("x", 3, 64, 7, 2, act="Relu")
    b.nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1]))
    x, c = "pool", 64
    for mid, n, s in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(n):
            stride = s if i == 0 else 1
            y = b.conv(x, c, mid, 1, act="Relu")
            y = b.conv(y, mid, mid, 3, stride, act="Relu")
            y = b.conv(y, mid, 4 * mid, 1)
            short = x if i > 0 else b.conv(x, c, 4 * mid, 1, stride)
            x, c = b.add(y, short, act="Relu"), 4 * mid
    return b.model(x, "resnet50-shaped")


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


def yolo_silu():
    b = Builder()
    x = b.conv("x", 3, 16, 3, 2, act="SiLU")
    x, c = b.conv(x, 16, 32, 3, 2, act="SiLU"), 32
    for cout in (64, 128, 256):
        for _ in range(2):
            y = b.conv(b.conv(x, c, c, 1, act="SiLU"), c, c, 3, act="SiLU")
            x = b.add(x, y)
        x, c = b.conv(x, c, cout, 3, 2, act="SiLU"), cout
    x = b.conv(x, c, 128, 1, act="SiLU")
    return b.model(x, "yolo-silu-shaped", size=320)


def vit_tiny(layers=12, t=197, d=192, heads=3):
    b = Builder()
    n, inits = b.nodes, b.inits

    def const(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def weight(name, *shape):
        return const(name, (b.rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def node(op, ins, out, **attrs):
        n.append(helper.make_node(op, ins, [out], **attrs))
        return out

    const("shape_h", np.array([1, t, heads, d // heads], np.int64))
    const("shape_d", np.array([1, t, d], np.int64))
    const("sqrt2", np.float32(np.sqrt(2)))
    const("one", np.float32(1))
    const("half", np.float32(0.5))
    const("scale", np.float32(1 / np.sqrt(d // heads)))
    const("ln_g", np.ones(d, np.float32))
    const("ln_b", np.zeros(d, np.float32))
    x = "x"
    for i in range(layers):
        p = "l%d_" % i
        ln = node("LayerNormalization", [x, "ln_g", "ln_b"], p + "ln1", axis=-1)
        qkv = []
        for k in "qkv":
            a = node("Add", [node("MatMul", [ln, weight(p + k + "w", d, d)], p + k + "m"),
                             weight(p + k + "b", d)], p + k + "a")
            r = node("Reshape", [a, "shape_h"], p + k + "r")
            qkv.append(node("Transpose", [r], p + k + "t",
                            perm=[0, 2, 3, 1] if k == "k" else [0, 2, 1, 3]))
        s = node("Softmax", [node("Mul", [node("MatMul", qkv[:2], p + "s"), "scale"], p + "ss")],
                 p + "sm", axis=-1)
        o = node("Transpose", [node("MatMul", [s, qkv[2]], p + "o")], p + "ot", perm=[0, 2, 1, 3])
        o = node("Reshape", [o, "shape_d"], p + "or")
        o = node("Add", [node("MatMul", [o, weight(p + "pw", d, d)], p + "pm"),
                         weight(p + "pb", d)], p + "pa")
        x = node("Add", [x, o], p + "res1")
        ln = node("LayerNormalization", [x, "ln_g", "ln_b"], p + "ln2", axis=-1)
        h = node("Add", [node("MatMul", [ln, weight(p + "f1", d, 4 * d)], p + "f1m"),
                         weight(p + "f1b", 4 * d)], p + "f1a")
        e = node("Erf", [node("Div", [h, "sqrt2"], p + "gd")], p + "ge")
        g = node("Mul", [node("Mul", [h, node("Add", [e, "one"], p + "gp")], p + "gm"), "half"],
                 p + "g")
        h = node("Add", [node("MatMul", [g, weight(p + "f2", 4 * d, d)], p + "f2m"),
                         weight(p + "f2b", d)], p + "f2a")
        x = node("Add", [x, h], p + "res2")
    g = helper.make_graph(n, "vit-tiny-shaped",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, t, d])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
                          [i for i in inits if i.name not in ("zero", "six")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def main():
    makers = {"resnet18": resnet18, "resnet50": resnet50, "mobilenetv2": mobilenetv2,
              "yolo-silu": yolo_silu, "vit-tiny": vit_tiny}
    if len(sys.argv) != 3 or sys.argv[1] not in makers:
        sys.exit(__doc__)
    save(makers[sys.argv[1]](), sys.argv[2])


if __name__ == "__main__":
    main()

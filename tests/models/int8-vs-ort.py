#!/usr/bin/python3
"""int8-vs-ort: quantised test models, made here with python3-onnx in each
quantised form, run by nnpipe and by ONNX Runtime on the same inputs.

Models (tiny, odd sizes so that every edge of the integer kernels is hit):
  qdq   QuantizeLinear/DequantizeLinear around Conv (per-channel int8 weights,
        int32 bias, Relu), a grouped strided Conv (uint8 weights with a zero
        point), MatMul (per-column int8 weights) and Gemm (transB, bias): the
        quantisation pass turns them into QLinearConv / QLinearMatMul
  qop   QLinearConv (uint8 and int8 activations, per-channel weights, bias,
        groups, stride, dilation) and QLinearMatMul (batched) as written
  dyn   ONNX Runtime's dynamic form: DynamicQuantizeLinear -> ConvInteger /
        MatMulInteger -> Cast -> Mul -> Add (-> Relu), fused by the pass into
        NnpConvIntegerToFloat / NnpMatMulIntegerToFloat
  int   ConvInteger and MatMulInteger with int32 outputs (exact), per-row and
        per-column zero points, padding with the zero point, a batched A
  wide  ConvInteger and an int8 QLinearConv (dilated, padded) on widths that are
        multiples of 16, where the im2col packing reads X in place

A QLinearConv with a zero y_scale must fail with an error naming the node.
Each model runs with every int8 micro-kernel (NNPIPE_CPU_INT8=c, avx2, avxvnni,
avx512vnni: each capped at what this CPU has), with 2 threads, and once with
--no-fusion (the unfused graph).  int32 outputs must be equal; a quantised
output (8-bit, or float after a final DequantizeLinear) may differ from ONNX
Runtime's by at most one quantisation step, on at most 1 % of its elements
(rounding ties of float intermediates); the dynamic model's float outputs
within 1e-4 of the largest value plus one quantisation step of its inputs.

Usage: int8-vs-ort.py WORKDIR   (environment: NNPIPE, NNP_ORT)
"""
import json
import os
import shutil
import subprocess
import sys

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(20)
ISAS = ["c", "avx2", "avxvnni", "avx512vnni"]


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def scalar(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "int8", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def w_s8(shape):
    return RNG.integers(-127, 128, size=shape, dtype=np.int8)


def w_u8(shape):
    return RNG.integers(0, 256, size=shape, dtype=np.uint8)


def qdq_model():
    n, i = [], []
    # x: float [1, 8, 13, 11] -> Q (u8)
    i += [scalar("xs", 0.02, np.float32), scalar("xz", 128, np.uint8)]
    n.append(helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]))
    n.append(helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]))
    # Conv 1: per-channel int8 weights, int32 bias, Relu
    w1s = (RNG.random(16) * 0.01 + 0.002).astype(np.float32)
    i += [const("w1", w_s8((16, 8, 3, 3))), const("w1s", w1s), const("w1z", np.zeros(16, np.int8))]
    i += [const("b1", RNG.integers(-2000, 2000, 16, dtype=np.int32)),
          const("b1s", (np.float32(0.02) * w1s).astype(np.float32)),
          const("b1z", np.zeros(16, np.int32))]
    n.append(helper.make_node("DequantizeLinear", ["w1", "w1s", "w1z"], ["w1d"], axis=0))
    n.append(helper.make_node("DequantizeLinear", ["b1", "b1s", "b1z"], ["b1d"], axis=0))
    n.append(helper.make_node("Conv", ["xd", "w1d", "b1d"], ["c1"], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Relu", ["c1"], ["r1"]))
    i += [scalar("y1s", 0.05, np.float32), scalar("y1z", 3, np.uint8)]
    n.append(helper.make_node("QuantizeLinear", ["r1", "y1s", "y1z"], ["y1q"]))
    n.append(helper.make_node("DequantizeLinear", ["y1q", "y1s", "y1z"], ["y1d"]))
    # Conv 2: grouped, strided, uint8 weights with a zero point, no bias
    i += [const("w2", w_u8((10, 8, 3, 3))), scalar("w2s", 0.004, np.float32),
          scalar("w2z", 131, np.uint8)]
    n.append(helper.make_node("DequantizeLinear", ["w2", "w2s", "w2z"], ["w2d"]))
    n.append(helper.make_node("Conv", ["y1d", "w2d"], ["c2"], group=2, strides=[2, 2],
                              pads=[0, 1, 1, 0]))
    i += [scalar("y2s", 0.03, np.float32), scalar("y2z", -3, np.int8)]
    n.append(helper.make_node("QuantizeLinear", ["c2", "y2s", "y2z"], ["y2q"]))
    n.append(helper.make_node("DequantizeLinear", ["y2q", "y2s", "y2z"], ["y2d"]))
    # [1, 10, 6, 5] -> [10, 30] -> MatMul with per-column int8 B -> Gemm transB + bias
    i += [const("shape2", np.array([10, 30], np.int64))]
    n.append(helper.make_node("Reshape", ["y2d", "shape2"], ["m_in"]))
    # MatMul's A re-quantised per tensor (the DQ of a Q, as quantisers write it)
    i += [scalar("as", 0.03, np.float32), scalar("az", -3, np.int8)]
    n.append(helper.make_node("QuantizeLinear", ["m_in", "as", "az"], ["aq"]))
    n.append(helper.make_node("DequantizeLinear", ["aq", "as", "az"], ["ad"]))
    b3s = (RNG.random(19) * 0.01 + 0.003).astype(np.float32)
    i += [const("b3", w_s8((30, 19))), const("b3s", b3s), const("b3z", np.zeros(19, np.int8))]
    n.append(helper.make_node("DequantizeLinear", ["b3", "b3s", "b3z"], ["b3d"], axis=1))
    n.append(helper.make_node("MatMul", ["ad", "b3d"], ["m3"]))
    i += [scalar("y3s", 0.04, np.float32), scalar("y3z", 120, np.uint8)]
    n.append(helper.make_node("QuantizeLinear", ["m3", "y3s", "y3z"], ["y3q"]))
    n.append(helper.make_node("DequantizeLinear", ["y3q", "y3s", "y3z"], ["y3d"]))
    i += [const("b4", w_u8((7, 19))), scalar("b4s", 0.005, np.float32),
          scalar("b4z", 125, np.uint8),
          const("c4", RNG.integers(-500, 500, 7, dtype=np.int32)),
          scalar("c4s", np.float32(0.04) * np.float32(0.005), np.float32),
          scalar("c4z", 0, np.int32)]
    n.append(helper.make_node("DequantizeLinear", ["b4", "b4s", "b4z"], ["b4d"]))
    n.append(helper.make_node("DequantizeLinear", ["c4", "c4s", "c4z"], ["c4d"]))
    n.append(helper.make_node("Gemm", ["y3d", "b4d", "c4d"], ["g4"], transB=1))
    i += [scalar("y4s", 0.02, np.float32), scalar("y4z", 100, np.uint8)]
    n.append(helper.make_node("QuantizeLinear", ["g4", "y4s", "y4z"], ["y4q"]))
    n.append(helper.make_node("DequantizeLinear", ["y4q", "y4s", "y4z"], ["out"]))
    m = model(n, [vi("x", TensorProto.FLOAT, [1, 8, 13, 11])],
              [vi("out", TensorProto.FLOAT, [10, 7]), vi("y1q", TensorProto.UINT8, None),
               vi("y2q", TensorProto.INT8, None)], i)
    steps = {"out": 0.02, "y1q": 1, "y2q": 1}
    return m, {"x": (RNG.standard_normal((1, 8, 13, 11)) * 1.2).astype(np.float32)}, steps


def qop_model():
    n, i = [], []
    i += [scalar("xs", 0.015, np.float32), scalar("xz", 120, np.uint8)]
    n.append(helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]))
    # QLinearConv u8 x s8 per channel, bias, pads
    i += [const("w1", w_s8((12, 6, 3, 3))),
          const("w1s", (RNG.random(12) * 0.01 + 0.002).astype(np.float32)),
          const("w1z", np.zeros(12, np.int8)), scalar("y1s", 0.04, np.float32),
          scalar("y1z", 128, np.uint8), const("b1", RNG.integers(-3000, 3000, 12, dtype=np.int32))]
    n.append(helper.make_node("QLinearConv", ["xq", "xs", "xz", "w1", "w1s", "w1z", "y1s", "y1z",
                                              "b1"], ["y1"], pads=[1, 1, 1, 1]))
    # grouped, strided, dilated, uint8 weights with a zero point
    i += [const("w2", w_u8((9, 4, 3, 3))), scalar("w2s", 0.003, np.float32),
          scalar("w2z", 118, np.uint8), scalar("y2s", 0.05, np.float32),
          scalar("y2z", 130, np.uint8)]
    n.append(helper.make_node("QLinearConv", ["y1", "y1s", "y1z", "w2", "w2s", "w2z", "y2s",
                                              "y2z"], ["y2"], group=3, strides=[2, 1],
                              dilations=[1, 2], pads=[2, 1, 0, 2]))
    # int8 activations: dequantise, re-quantise to int8, QLinearConv s8 x s8 1x1
    n.append(helper.make_node("DequantizeLinear", ["y2", "y2s", "y2z"], ["y2f"]))
    i += [scalar("ss", 0.05, np.float32), scalar("sz", 2, np.int8)]
    n.append(helper.make_node("QuantizeLinear", ["y2f", "ss", "sz"], ["y2s8"]))
    i += [const("w3", w_s8((5, 9, 1, 1))), scalar("w3s", 0.006, np.float32),
          scalar("w3z", 0, np.int8), scalar("y3s", 0.03, np.float32), scalar("y3z", -5, np.int8)]
    n.append(helper.make_node("QLinearConv", ["y2s8", "ss", "sz", "w3", "w3s", "w3z", "y3s",
                                              "y3z"], ["y3"]))
    # QLinearMatMul, batched A [2, 5, 9, 9] x B [9, 13]
    i += [const("b4", w_s8((9, 13))), scalar("b4s", 0.004, np.float32),
          scalar("b4z", 3, np.int8), scalar("y4s", 0.02, np.float32),
          scalar("y4z", 0, np.int8)]
    n.append(helper.make_node("QLinearMatMul", ["y3", "y3s", "y3z", "b4", "b4s", "b4z", "y4s",
                                                "y4z"], ["y4"]))
    n.append(helper.make_node("DequantizeLinear", ["y4", "y4s", "y4z"], ["out"]))
    m = model(n, [vi("x", TensorProto.FLOAT, [2, 6, 17, 10])],
              [vi("out", TensorProto.FLOAT, None), vi("y1", TensorProto.UINT8, None),
               vi("y2", TensorProto.UINT8, None), vi("y3", TensorProto.INT8, None)], i)
    steps = {"out": 0.02, "y1": 1, "y2": 1, "y3": 1}
    return m, {"x": (RNG.standard_normal((2, 6, 17, 10)) * 0.9).astype(np.float32)}, steps


def dyn_model():
    n, i = [], []
    n.append(helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]))
    i += [const("w1", w_u8((24, 7, 3, 3))), scalar("w1s", 0.0035, np.float32),
          scalar("w1z", 133, np.uint8),
          const("b1", (RNG.standard_normal((1, 24, 1, 1)) * 0.1).astype(np.float32))]
    n.append(helper.make_node("ConvInteger", ["xq", "w1", "xz", "w1z"], ["c1"], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Cast", ["c1"], ["c1f"], to=TensorProto.FLOAT))
    n.append(helper.make_node("Mul", ["xs", "w1s"], ["s1"]))
    n.append(helper.make_node("Mul", ["c1f", "s1"], ["m1"]))
    n.append(helper.make_node("Add", ["m1", "b1"], ["a1"]))
    n.append(helper.make_node("Relu", ["a1"], ["r1"]))
    n.append(helper.make_node("DynamicQuantizeLinear", ["r1"], ["r1q", "r1s", "r1z"]))
    i += [const("w2", w_u8((11, 24, 1, 1))), scalar("w2s", 0.004, np.float32),
          scalar("w2z", 121, np.uint8)]
    n.append(helper.make_node("ConvInteger", ["r1q", "w2", "r1z", "w2z"], ["c2"]))
    n.append(helper.make_node("Cast", ["c2"], ["c2f"], to=TensorProto.FLOAT))
    n.append(helper.make_node("Mul", ["r1s", "w2s"], ["s2"]))
    n.append(helper.make_node("Mul", ["s2", "c2f"], ["m2"]))
    # MatMulInteger over the last dim (W = 15) with int8 B
    n.append(helper.make_node("DynamicQuantizeLinear", ["m2"], ["m2q", "m2s", "m2z"]))
    i += [const("b3", w_s8((15, 21))), scalar("b3s", 0.006, np.float32),
          scalar("b3z", 0, np.int8), const("c3", (RNG.standard_normal(21) * 0.1).astype(np.float32))]
    n.append(helper.make_node("MatMulInteger", ["m2q", "b3", "m2z", "b3z"], ["c3i"]))
    n.append(helper.make_node("Cast", ["c3i"], ["c3f"], to=TensorProto.FLOAT))
    n.append(helper.make_node("Mul", ["m2s", "b3s"], ["s3"]))
    n.append(helper.make_node("Mul", ["c3f", "s3"], ["m3"]))
    n.append(helper.make_node("Add", ["c3", "m3"], ["out"]))
    m = model(n, [vi("x", TensorProto.FLOAT, [1, 7, 19, 15])],
              [vi("out", TensorProto.FLOAT, None), vi("r1", TensorProto.FLOAT, None)], i)
    return m, {"x": RNG.standard_normal((1, 7, 19, 15)).astype(np.float32)}, {}


def int_model():
    n, i = [], []
    i += [const("w1", w_u8((13, 5, 3, 2))), scalar("w1z", 140, np.uint8)]
    n.append(helper.make_node("ConvInteger", ["x", "w1", "xz", "w1z"], ["c1"], strides=[2, 1],
                              dilations=[1, 2], pads=[1, 0, 2, 1]))
    i += [const("b2", w_s8((37, 45))), const("b2z", RNG.integers(-9, 9, 45, dtype=np.int8))]
    n.append(helper.make_node("MatMulInteger", ["a", "b2", "az", "b2z"], ["m2"]))
    i += [const("w3", w_u8((6, 5, 1, 1)))]
    n.append(helper.make_node("ConvInteger", ["x", "w3"], ["c3"]))
    m = model(n, [vi("x", TensorProto.UINT8, [2, 5, 9, 7]), vi("xz", TensorProto.UINT8, []),
                  vi("a", TensorProto.UINT8, [3, 17, 37]), vi("az", TensorProto.UINT8, [])],
              [vi("c1", TensorProto.INT32, None), vi("m2", TensorProto.INT32, None),
               vi("c3", TensorProto.INT32, None)], i)
    feeds = {"x": w_u8((2, 5, 9, 7)), "xz": np.array(97, np.uint8),
             "a": w_u8((3, 17, 37)), "az": np.array(130, np.uint8)}
    return m, feeds, {}


# the quantisation pass: node kinds expected after it, and kinds gone
FUSED = {
    "qdq": ({"QLinearConv": 2, "QLinearMatMul": 2}, ["Conv", "MatMul", "Gemm", "Relu"]),
    "dyn": ({"NnpConvIntegerToFloat": 2, "NnpMatMulIntegerToFloat": 1},
            ["ConvInteger", "MatMulInteger", "Cast", "Add", "Relu"]),
}

def wide_model():
    """Widths that are multiples of 16: the im2col packing reads X in place."""
    n, i = [], []
    i += [const("w1", w_u8((7, 5, 3, 3))), scalar("w1z", 126, np.uint8)]
    n.append(helper.make_node("ConvInteger", ["x", "w1", "xz", "w1z"], ["c1"], strides=[2, 1],
                              pads=[1, 1, 1, 1]))
    i += [scalar("fs", 0.02, np.float32), scalar("fz", -4, np.int8)]
    n.append(helper.make_node("QuantizeLinear", ["f", "fs", "fz"], ["fq"]))
    i += [const("w2", w_s8((6, 3, 3, 3))),
          const("w2s", (RNG.random(6) * 0.01 + 0.002).astype(np.float32)),
          const("w2z", np.zeros(6, np.int8)), scalar("y2s", 0.03, np.float32),
          scalar("y2z", 5, np.int8), const("b2", RNG.integers(-900, 900, 6, dtype=np.int32))]
    n.append(helper.make_node("QLinearConv", ["fq", "fs", "fz", "w2", "w2s", "w2z", "y2s", "y2z",
                                              "b2"], ["y2"], dilations=[2, 2], pads=[2, 2, 2, 2]))
    m = model(n, [vi("x", TensorProto.UINT8, [1, 5, 9, 32]), vi("xz", TensorProto.UINT8, []),
                  vi("f", TensorProto.FLOAT, [1, 3, 5, 48])],
              [vi("c1", TensorProto.INT32, None), vi("y2", TensorProto.INT8, None)], i)
    feeds = {"x": w_u8((1, 5, 9, 32)), "xz": np.array(77, np.uint8),
             "f": RNG.standard_normal((1, 3, 5, 48)).astype(np.float32)}
    return m, feeds, {"y2": 1}


DTYPES = {TensorProto.FLOAT: np.float32, TensorProto.UINT8: np.uint8,
          TensorProto.INT8: np.int8, TensorProto.INT32: np.int32}


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    return p.returncode, p.stdout


def read_outputs(d, m):
    shapes = json.load(open(os.path.join(d, "outputs.json")))
    res = {}
    for o in m.graph.output:
        t = DTYPES[o.type.tensor_type.elem_type]
        a = np.fromfile(os.path.join(d, o.name + ".raw"), dtype=t)
        res[o.name] = a.reshape(shapes[o.name]) if shapes[o.name] else a.reshape(())
    return res


def compare(name, got, ref, steps):
    """Returns a failure message or None, and a line of figures."""
    if got.shape != ref.shape:
        return "shape %s, expected %s" % (got.shape, ref.shape), ""
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    maxd = float(diff.max()) if diff.size else 0.0
    if got.dtype == np.int32:
        return (None if maxd == 0 else "int32 sums differ (max %g)" % maxd), "exact" if maxd == 0 else ""
    if name in steps:
        step = steps[name]
        off = int((diff > step * 1e-3).sum())
        line = "max %g (step %g), %d of %d differ" % (maxd, step, off, diff.size)
        if maxd > step * 1.001 or off > max(1, diff.size // 100):
            return "more than one step apart: " + line, line
        return None, line
    scale = float(np.abs(ref).max()) or 1.0
    line = "max abs err %g, max abs ref %g" % (maxd, scale)
    return (None if maxd <= 1e-4 * scale + 0.02 * scale / 127 else "too far: " + line), line


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/nnp-int8-vs-ort-%d" % os.getpid()
    nnpipe, ort = os.environ.get("NNPIPE"), os.environ.get("NNP_ORT")
    if not nnpipe or not ort:
        print("FAIL: NNPIPE and NNP_ORT must name the nnpipe CLI and nnp-ort")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    passed = failed = 0
    for name, make in (("qdq", qdq_model), ("qop", qop_model), ("dyn", dyn_model),
                       ("int", int_model), ("wide", wide_model)):
        m, feeds, steps = make()
        path = os.path.join(work, name + ".onnx")
        onnx.save(m, path)
        args = []
        for k, v in feeds.items():
            f = os.path.join(work, "%s.%s.raw" % (name, k))
            v.tofile(f)
            args += ["--input", "%s=%s" % (k, f)]
        refdir = os.path.join(work, name, "ort")
        rc, out = run([ort, path, "--output-dir", refdir] + args)
        if rc == 77:
            print("FAIL: ONNX Runtime not available (%s): run tools/fetch-models.sh" % out.strip())
            return 1
        if rc != 0:
            print("FAIL %s: nnp-ort failed:\n%s" % (name, out))
            failed += 1
            continue
        ref = read_outputs(refdir, m)
        # the quantisation pass rewrote what it should: kinds in --profile
        if name in FUSED:
            rc, out = run([nnpipe, "run", path, "--profile"] + args)
            kinds = {}
            for line in out.splitlines():
                f = line.split()
                if len(f) == 5 and f[1].isdigit():
                    kinds[f[0]] = int(f[1])
            want, gone = FUSED[name]
            wrong = [k for k, c in want.items() if kinds.get(k) != c] + \
                [k for k in gone if k in kinds]
            print("%s: node kinds after the quantisation pass: %s" % (
                name, ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
            if rc != 0 or wrong:
                print("FAIL %s: not rewritten as expected (%s)" % (name, ", ".join(wrong) or out))
                failed += 1
        for variant in ISAS + ["no-fusion"]:
            env = dict(os.environ)
            extra = ["--threads", "2"]
            if variant == "no-fusion":
                extra.append("--no-fusion")
            else:
                env["NNPIPE_CPU_INT8"] = variant
            d = os.path.join(work, name, variant)
            rc, out = run([nnpipe, "run", path, "--output-dir", d] + args + extra, env)
            if rc != 0:
                print("FAIL %s [%s]: nnpipe run failed:\n%s" % (name, variant, out))
                failed += 1
                continue
            got = read_outputs(d, m)
            bad = []
            for o in ref:
                err, line = compare(o, got[o], ref[o], steps)
                print("%s [%s] %s: %s" % (name, variant, o, line or err))
                if err:
                    bad.append("%s: %s" % (o, err))
            if bad:
                print("FAIL %s [%s]: %s" % (name, variant, "; ".join(bad)))
                failed += 1
            else:
                passed += 1
    # a zero y_scale: a clear error naming the node, no output
    m, feeds, _ = qop_model()
    for t in m.graph.initializer:
        if t.name == "y1s":
            t.CopyFrom(scalar("y1s", 0.0, np.float32))
    path = os.path.join(work, "bad-scale.onnx")
    onnx.save(m, path)
    np.zeros((2, 6, 17, 10), np.float32).tofile(os.path.join(work, "bad-scale.x.raw"))
    rc, out = run([nnpipe, "run", path, "--input", "x=" + os.path.join(work, "bad-scale.x.raw")])
    print("zero y_scale: exit %d: %s" % (rc, out.strip().splitlines()[-1] if out.strip() else ""))
    if rc != 1 or "QLinearConv" not in out or "scales must be positive and finite" not in out:
        print("FAIL bad-scale: expected exit 1 and an error naming the QLinearConv node")
        failed += 1
    else:
        passed += 1
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

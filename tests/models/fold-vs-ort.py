#!/usr/bin/python3
"""fold-vs-ort: the Transpose-pair folding pass (lib/specialize/transpose-fold.c)
and the Pad-into-Conv fusion (lib/specialize/fuse.c) on small python3-onnx
models, run by nnpipe and by ONNX Runtime on the same inputs.

Each case is an NHWC-style chain: Transpose(perm), layout-agnostic ops,
Transpose(inverse perm).  Every output is compared with ONNX Runtime's (max
abs error <= 1e-5 of the largest reference value), and the number of
Transpose nodes nnpipe executed (`nnpipe run --profile`) must be the
expected one: 0 where the pair folds (elementwise unary ops, Add / Mul with
broadcast constants, a Sub of two equally transposed inputs, Concat with a
constant input and a negative axis, Pad with pads as attribute and as input,
rank-3 perms, a bare Transpose pair), unchanged where it must not fold (a
chain value also read elsewhere or a graph output, a perm that is not the
inverse, a Softmax on an axis in between, a binary op with an operand in
the other layout, a bare pair whose result is a graph output).  Likewise the
number of Pad nodes: 0 where a zero Pad of the spatial dims goes into the
Conv after it (pads as input, added to the Conv's own pads; pads as an
attribute), 1 where it must stay (reflect mode, a non-zero value, a pad of
the channel dim).

Usage: fold-vs-ort.py [--work DIR] [--keep] [--only SUBSTR]
Environment: NNPIPE, NNP_ORT (set by tests/meson.build).
Fails (never skips) when ONNX Runtime is missing (tools/fetch-models.sh) or
python3-onnx / python3-numpy are not installed (tools/check-deps.sh).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"FAIL: fold-vs-ort: {e} (install python3-onnx and python3-numpy; "
          "tools/check-deps.sh)")
    sys.exit(1)

F = TensorProto.FLOAT
RNG = np.random.default_rng(25)
NHWC = [0, 2, 3, 1]
NCHW = [0, 3, 1, 2]


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def T(src, dst, perm):
    return helper.make_node("Transpose", [src], [dst], perm=perm)


# ---------------------------------------------------------------- folding cases
# (model, expected number of Transposes left, or {op: expected number left})

def fold_unary_binary():
    # NCHW -> NHWC, Relu, + per-channel bias (broadcast on the last axis),
    # * a [H,1,C] constant, Clip(0, 6), Sigmoid, back to NCHW
    nodes = [T("x", "t", NHWC), helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("Add", ["r", "bias"], ["a"]),
             helper.make_node("Mul", ["scale", "a"], ["m"]),
             helper.make_node("Clip", ["m", "lo", "hi"], ["c"]),
             helper.make_node("Sigmoid", ["c"], ["s"]), T("s", "y", NCHW)]
    inits = [const("bias", rand(3)), const("scale", rand(5, 1, 3)),
             const("lo", np.array(0.0, np.float32)), const("hi", np.array(0.8, np.float32))]
    return model(nodes, [vi("x", [1, 3, 5, 7])], [vi("y", [1, 3, 5, 7])], inits), 0


def fold_concat_pad():
    # two NHWC views concatenated on the channel axis (-1) with a constant
    # block, padded (pads as input, H and C), scaled, back to NCHW
    nodes = [T("a", "ta", NHWC), T("b", "tb", NHWC),
             helper.make_node("Concat", ["ta", "k", "tb"], ["cat"], axis=-1),
             helper.make_node("Pad", ["cat", "pads", "pv"], ["p"], mode="constant"),
             helper.make_node("Mul", ["p", "w"], ["m"]), T("m", "y", NCHW)]
    inits = [const("k", rand(1, 4, 6, 2)),
             const("pads", np.array([0, 1, 0, 2, 0, 2, 0, 1], np.int64)),
             const("pv", np.array(0.25, np.float32)), const("w", rand(1, 1, 1, 10))]
    return model(nodes, [vi("a", [1, 2, 4, 6]), vi("b", [1, 3, 4, 6])],
                 [vi("y", [1, 10, 7, 6])], inits), 0


def fold_pad_attr():
    # opset 10: Pad with a `pads` attribute, reflect mode, then Tanh
    nodes = [T("x", "t", NHWC),
             helper.make_node("Pad", ["t"], ["p"], mode="reflect", pads=[0, 2, 1, 0, 0, 1, 2, 0]),
             helper.make_node("Tanh", ["p"], ["h"]), T("h", "y", NCHW)]
    return model(nodes, [vi("x", [1, 3, 5, 6])], [vi("y", [1, 3, 8, 9])], opset=10), 0


def fold_two_inputs_rank3():
    # rank 3, perm (0, 2, 1): Sub of two equally transposed inputs, LeakyRelu
    nodes = [T("a", "ta", [0, 2, 1]), T("b", "tb", [0, 2, 1]),
             helper.make_node("Sub", ["ta", "tb"], ["d"]),
             helper.make_node("LeakyRelu", ["d"], ["l"], alpha=0.1), T("l", "y", [0, 2, 1])]
    return model(nodes, [vi("a", [2, 4, 9]), vi("b", [2, 4, 9])], [vi("y", [2, 4, 9])]), 0


def fold_bare_pair():
    # Conv, a Transpose pair with nothing between, Relu: the Relu reads the Conv
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), T("c", "t", NHWC),
             T("t", "u", NCHW), helper.make_node("Relu", ["u"], ["y"])]
    return model(nodes, [vi("x", [1, 2, 6, 6])], [vi("y", [1, 4, 6, 6])],
                 [const("w", rand(4, 2, 3, 3))]), 0


# ---------------------------------------------------------------- cases that must not fold

def keep_value_read_twice():
    # the Relu's output is also a graph output (in the NHWC layout)
    nodes = [T("x", "t", NHWC), helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("Neg", ["r"], ["n"]), T("n", "y", NCHW)]
    return model(nodes, [vi("x", [1, 3, 4, 5])], [vi("y", [1, 3, 4, 5]), vi("r", [1, 4, 5, 3])]), 2


def keep_not_inverse():
    # the second perm is the first one again, not its inverse
    nodes = [T("x", "t", NHWC), helper.make_node("Relu", ["t"], ["r"]), T("r", "y", NHWC)]
    return model(nodes, [vi("x", [1, 3, 4, 5])], [vi("y", [1, 5, 3, 4])]), 2


def keep_softmax_between():
    # Softmax over the last axis depends on the layout
    nodes = [T("x", "t", NHWC), helper.make_node("Softmax", ["t"], ["s"], axis=-1),
             T("s", "y", NCHW)]
    return model(nodes, [vi("x", [1, 3, 4, 5])], [vi("y", [1, 3, 4, 5])]), 2


def keep_operand_other_layout():
    # Add of the NHWC view and an input already in NHWC: no transposed copy of it exists
    nodes = [T("x", "t", NHWC), helper.make_node("Add", ["t", "z"], ["a"]), T("a", "y", NCHW)]
    return model(nodes, [vi("x", [1, 3, 4, 5]), vi("z", [1, 4, 5, 3])],
                 [vi("y", [1, 3, 4, 5])]), 2


def keep_bare_pair_output():
    # a bare pair whose result is the graph output
    nodes = [helper.make_node("Relu", ["x"], ["r"]), T("r", "t", NHWC), T("t", "y", NCHW)]
    return model(nodes, [vi("x", [1, 3, 4, 5])], [vi("y", [1, 3, 4, 5])]), 2


# ---------------------------------------------------------------- Pad into Conv

def conv_after_pad(pad_node, conv_pads, x_shape, y_shape, inits=(), opset=13):
    nodes = [pad_node, helper.make_node("Conv", ["p", "w"], ["y"], strides=[2, 2],
                                        pads=conv_pads)]
    inits = [const("w", rand(4, x_shape[1], 3, 3))] + list(inits)
    return model(nodes, [vi("x", x_shape)], [vi("y", y_shape)], inits, opset=opset)


def fold_pad_input():
    # pads as input (H begin 2, W end 1), added to the Conv's own pads 1
    pad = helper.make_node("Pad", ["x", "pads"], ["p"])
    return conv_after_pad(pad, [1, 1, 1, 1], [1, 3, 9, 10], [1, 4, 6, 6],
                          [const("pads", np.array([0, 0, 2, 0, 0, 0, 0, 1], np.int64))]), \
        {"Pad": 0}


def fold_pad_attr_conv():
    # opset 10: pads as an attribute, explicit value 0
    pad = helper.make_node("Pad", ["x"], ["p"], pads=[0, 0, 1, 1, 0, 0, 0, 0], value=0.0)
    return conv_after_pad(pad, [0, 0, 0, 0], [1, 2, 8, 8], [1, 4, 4, 4], opset=10), {"Pad": 0}


def keep_pad_reflect():
    pad = helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect")
    return conv_after_pad(pad, [0, 0, 0, 0], [1, 3, 8, 8], [1, 4, 4, 4],
                          [const("pads", np.array([0, 0, 1, 1, 0, 0, 0, 0], np.int64))]), \
        {"Pad": 1}


def keep_pad_value():
    pad = helper.make_node("Pad", ["x", "pads", "v"], ["p"])
    return conv_after_pad(pad, [0, 0, 0, 0], [1, 3, 8, 8], [1, 4, 4, 4],
                          [const("pads", np.array([0, 0, 1, 1, 0, 0, 0, 0], np.int64)),
                           const("v", np.array(0.5, np.float32))]), {"Pad": 1}


def keep_pad_channels():
    # a pad of the channel dim changes the Conv's input channels
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Conv", ["p", "w"], ["y"], pads=[1, 1, 1, 1])]
    inits = [const("pads", np.array([0, 1, 0, 0, 0, 0, 0, 0], np.int64)),
             const("w", rand(4, 3, 3, 3))]
    return model(nodes, [vi("x", [1, 2, 5, 5])], [vi("y", [1, 4, 5, 5])], inits), {"Pad": 1}


CASES = [fold_unary_binary, fold_concat_pad, fold_pad_attr, fold_two_inputs_rank3,
         fold_bare_pair, keep_value_read_twice, keep_not_inverse, keep_softmax_between,
         keep_operand_other_layout, keep_bare_pair_output, fold_pad_input, fold_pad_attr_conv,
         keep_pad_reflect, keep_pad_value, keep_pad_channels]


def run(cmd, log):
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode


def nodes_run(log, op):
    """Nodes of that op in nnpipe's --profile table (0 when it has no row)."""
    for line in open(log):
        m = re.match(r"\s*" + op + r"\s+(\d+)\s", line)
        if m:
            return int(m.group(1))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   f"nnp-fold-vs-ort-{os.getpid()}"))
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--only", help="run the cases whose name contains SUBSTR")
    opts = ap.parse_args()
    nnpipe = os.environ.get("NNPIPE")
    ort = os.environ.get("NNP_ORT")
    if not nnpipe or not ort:
        print("FAIL: fold-vs-ort: NNPIPE and NNP_ORT must name the tools "
              "(tests/meson.build)")
        return 1
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    passed = failed = 0
    for make in CASES:
        name = make.__name__
        if opts.only and opts.only not in name:
            continue
        m, want = make()
        if not isinstance(want, dict):
            want = {"Transpose": want}
        path = os.path.join(opts.work, name + ".onnx")
        onnx.save(m, path)
        dirs = {t: os.path.join(opts.work, name, t) for t in ("nnpipe", "ort")}
        for d in dirs.values():
            os.makedirs(d)
        rc_n = run([nnpipe, "run", path, "--profile", "--output-dir", dirs["nnpipe"]],
                   dirs["nnpipe"] + ".log")
        rc_o = run([ort, path, "--output-dir", dirs["ort"]], dirs["ort"] + ".log")
        if rc_o == 77:
            print(f"FAIL: ONNX Runtime not available: run tools/fetch-models.sh "
                  f"({open(dirs['ort'] + '.log').read().strip()})")
            return 1
        ok = rc_n == 0 and rc_o == 0
        if rc_n != 0:
            print(f"FAIL {name}: nnpipe run failed: {open(dirs['nnpipe'] + '.log').read().strip()}")
        if rc_o != 0:
            print(f"FAIL {name}: nnp-ort failed: {open(dirs['ort'] + '.log').read().strip()}")
        for op, count in (want.items() if ok else []):
            got_n = nodes_run(dirs["nnpipe"] + ".log", op)
            good = got_n == count
            print(f"{name}: {got_n} {op} node(s) run, expected {count}{'' if good else '  FAIL'}")
            ok = ok and good
        for out in (m.graph.output if rc_n == 0 and rc_o == 0 else []):
            files = [os.path.join(dirs[t], out.name + ".raw") for t in ("nnpipe", "ort")]
            if not all(os.path.exists(f) for f in files):
                print(f"FAIL {name}: output {out.name} missing")
                ok = False
                continue
            got, ref = (np.fromfile(f, dtype=np.float32) for f in files)
            if got.shape != ref.shape:
                print(f"FAIL {name}: {out.name}: {got.size} elements, ONNX Runtime {ref.size}")
                ok = False
                continue
            err = float(np.max(np.abs(got - ref))) if got.size else 0.0
            mag = float(np.max(np.abs(ref))) if ref.size else 0.0
            good = bool(np.all(np.isfinite(got) == np.isfinite(ref))) and err <= 1e-5 * max(mag, 1e-30)
            print(f"{name} {out.name}: max_abs_err={err:.3g} max_abs_ref={mag:.3g}"
                  f"{'' if good else '  FAIL'}")
            ok = ok and good
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {name}")
    if not opts.keep:
        shutil.rmtree(opts.work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

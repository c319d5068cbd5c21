#!/usr/bin/python3
"""bad-models: `nnpipe run` on damaged and invalid models.

    bad-models.py NNPIPE WORKDIR [--flips N] [--seed S]
    bad-models.py --write-small PATH [--write-small-constants PATH]
                                          (write the small valid models and exit)

Every damaged model must make `nnpipe run` exit with status 1 (never a
signal, never a hang) and print exactly one line on stderr that names the
problem: the file name, the unknown op types (all of them, in one message),
the missing value, the offending node.  Bit flips of a valid model may still
be valid; those may also succeed (exit 0), but must never crash.

Needs the onnx and numpy Python packages (Debian: python3-onnx,
python3-numpy); fails naming them when they are missing.  Prints one line per case and "N passed, N failed, N skipped".
"""
import argparse
import os
import random
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    if __name__ == "__main__":
        print(f"bad-models: FAIL: {e}: install the Debian packages python3-onnx python3-numpy")
        sys.exit(1)
    raise

OPSET = 13


def small_model():
    """A small valid model touching the loader's main paths: initializers,
    a Constant node, symbolic dims, Conv, BatchNormalization, Relu, Reshape,
    Gemm, Softmax.  Input x: N x 3 x 8 x 8 (N symbolic), output y: N x 4."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv_w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "conv_b")
    scale = numpy_helper.from_array(np.ones(4, np.float32), "bn_scale")
    bias = numpy_helper.from_array(np.zeros(4, np.float32), "bn_bias")
    mean = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32) * 0.1, "bn_mean")
    var = numpy_helper.from_array(np.abs(rng.standard_normal(4)).astype(np.float32) + 0.5, "bn_var")
    gemm_w = numpy_helper.from_array(rng.standard_normal((4 * 4 * 4, 4)).astype(np.float32), "fc_w")
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["bn1"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("Constant", [], ["shape_c"], name="shape_const",
                         value=numpy_helper.from_array(np.array([-1, 64], np.int64), "shape_v")),
        helper.make_node("Reshape", ["r1", "shape_c"], ["flat"], name="reshape1"),
        helper.make_node("Gemm", ["flat", "fc_w"], ["logits"], name="fc1"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax1", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        initializer=[w, b, scale, bias, mean, var, gemm_w])
    model = helper.make_model(graph, producer_name="nnpipe-tests",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model


def small_model_constants():
    """Like the working models: weights in Constant nodes, opset 11, dynamic
    H and W, depthwise Conv, HardSwish-style HardSigmoid*Mul, Resize, Concat,
    Slice, ConvTranspose.  Input x: 1 x 4 x H x W, output y: 1 x 2 x H x W."""
    rng = np.random.default_rng(2)

    def const(name, arr):
        return helper.make_node("Constant", [], [name], name=name + "_node",
                                value=numpy_helper.from_array(arr, name + "_value"))

    f32 = np.float32
    nodes = [
        const("dw_w", rng.standard_normal((4, 1, 3, 3)).astype(f32)),
        const("pw_w", rng.standard_normal((8, 4, 1, 1)).astype(f32)),
        const("pw_b", rng.standard_normal(8).astype(f32)),
        const("up_w", rng.standard_normal((8, 2, 2, 2)).astype(f32)),
        const("scales", np.array([1, 1, 2, 2], f32)),
        const("roi", np.array([], f32)),
        const("starts", np.array([0], np.int64)),
        const("ends", np.array([2], np.int64)),
        const("axes", np.array([1], np.int64)),
        helper.make_node("Conv", ["x", "dw_w"], ["dw"], name="dw", group=4,
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("HardSigmoid", ["dw"], ["hs"], name="hs", alpha=1 / 6, beta=0.5),
        helper.make_node("Mul", ["dw", "hs"], ["hsw"], name="hswish"),
        helper.make_node("Conv", ["hsw", "pw_w", "pw_b"], ["pw"], name="pw", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["pw"], ["pr"], name="pr"),
        helper.make_node("Resize", ["pr", "roi", "scales"], ["up"], name="up", mode="nearest"),
        helper.make_node("ConvTranspose", ["pr", "up_w"], ["ct"], name="ct", strides=[2, 2],
                         kernel_shape=[2, 2]),
        helper.make_node("Slice", ["up", "starts", "ends", "axes"], ["sl"], name="sl"),
        helper.make_node("Concat", ["sl", "ct"], ["cat"], name="cat", axis=1),
        helper.make_node("ReduceMean", ["cat"], ["rm"], name="rm", axes=[1], keepdims=1),
        helper.make_node("Add", ["ct", "rm"], ["sum"], name="sum"),
        helper.make_node("Sigmoid", ["sum"], ["y"], name="sig"),
    ]
    graph = helper.make_graph(
        nodes, "small_constants",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, "H2", "W2"])])
    model = helper.make_model(graph, producer_name="nnpipe-tests",
                              opset_imports=[helper.make_opsetid("", 11)])
    onnx.checker.check_model(model)
    return model


def one_node_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, producer_name="nnpipe-tests",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def vi(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


class Runner:
    def __init__(self, nnpipe, workdir):
        self.nnpipe = nnpipe
        self.workdir = workdir
        self.passed = 0
        self.failed = 0
        self.failures = []

    def path(self, name):
        return os.path.join(self.workdir, name)

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def run(self, model_path, shape="x=1,3,8,8"):
        cmd = [self.nnpipe, "run", model_path, "--shape", shape]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        except subprocess.TimeoutExpired:
            return None, "", "timeout"
        return p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace")

    def check(self, case, model_path, keywords, shape="x=1,3,8,8", may_succeed=False,
              quiet=False, any_of=None):
        """Run nnpipe on model_path; require exit 1 and one stderr line with all
        keywords, and (when given) at least one of any_of."""
        rc, _out, err = self.run(model_path, shape)
        lines = [l for l in err.splitlines() if l.strip()]
        problem = None
        if rc is None:
            problem = "timed out after 60 s"
        elif rc < 0:
            problem = f"killed by signal {-rc}"
        elif rc == 0 and may_succeed:
            problem = None
        elif rc != 1:
            problem = f"exit status {rc}, expected 1"
        elif len(lines) != 1:
            problem = f"{len(lines)} lines on stderr, expected 1"
        else:
            missing = [k for k in keywords if k.lower() not in lines[0].lower()]
            if missing:
                problem = "message does not name " + ", ".join(repr(k) for k in missing)
            elif any_of and not any(k.lower() in lines[0].lower() for k in any_of):
                problem = "message names none of " + ", ".join(repr(k) for k in any_of)
        if problem is None:
            self.passed += 1
            if not quiet:
                print(f"PASS {case}: {lines[0] if lines else '(loaded and ran)'}")
        else:
            self.failed += 1
            self.failures.append(case)
            print(f"FAIL {case}: {problem}")
            for l in err.splitlines()[:20]:
                print(f"    stderr: {l}")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description="nnpipe run on damaged models")
    ap.add_argument("nnpipe", nargs="?")
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--flips", type=int, default=150, help="bit-flip cases (default 150)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--write-small", metavar="PATH", help="write the small valid model and exit")
    ap.add_argument("--write-small-constants", metavar="PATH",
                    help="write the small model with Constant-node weights and exit")
    opts = ap.parse_args()

    if opts.write_small or opts.write_small_constants:
        if opts.write_small:
            onnx.save(small_model(), opts.write_small)
        if opts.write_small_constants:
            onnx.save(small_model_constants(), opts.write_small_constants)
        return 0
    if not opts.nnpipe or not opts.workdir:
        ap.error("NNPIPE and WORKDIR are required")

    os.makedirs(opts.workdir, exist_ok=True)
    r = Runner(os.path.abspath(opts.nnpipe), opts.workdir)
    rnd = random.Random(opts.seed)

    good = small_model().SerializeToString()
    good_path = r.write("small.onnx", good)

    # The valid model must run, or every check below means nothing.
    rc, out, err = r.run(good_path)
    if rc != 0:
        print(f"FAIL valid-model: nnpipe run on the valid small model failed (status {rc}):")
        for l in err.splitlines()[:20]:
            print(f"    stderr: {l}")
        r.failed += 1
        r.failures.append("valid-model")
    else:
        r.passed += 1
        print("PASS valid-model: runs")

    # Missing and empty files.
    missing = r.path("no-such-model.onnx")
    if os.path.exists(missing):
        os.unlink(missing)
    r.check("nonexistent-path", missing, ["no-such-model.onnx"])
    r.check("empty-file", r.write("empty.onnx", b""), ["empty.onnx"])

    # Truncations at several points (always inside the serialized graph).
    for frac in (0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
        n = max(1, int(len(good) * frac))
        name = f"truncated-{int(frac * 100)}.onnx"
        r.check(f"truncated-{int(frac * 100)}%", r.write(name, good[:n]), [name])
    r.check("truncated-1-byte-short", r.write("truncated-last.onnx", good[:-1]),
            ["truncated-last.onnx"])

    # Random bytes.
    for i, size in enumerate((1, 7, 64, 1000, 20000)):
        name = f"random-{size}.onnx"
        data = bytes(rnd.getrandbits(8) for _ in range(size))
        r.check(f"random-bytes-{size}", r.write(name, data), [name])
    # Protobuf-looking garbage: a valid tag with an absurd length.
    r.check("huge-length-field", r.write("huge-length.onnx", b"\x3a\xff\xff\xff\xff\x0f" + good[:50]),
            ["huge-length.onnx"])

    # Bit flips: may load (a flipped weight bit is still a valid model) but never crash.
    flipped_passed = 0
    for i in range(opts.flips):
        data = bytearray(good)
        for _ in range(1 + rnd.randrange(3)):
            pos = rnd.randrange(len(data))
            data[pos] ^= 1 << rnd.randrange(8)
        name = f"bitflip-{i:03d}.onnx"
        before = r.failed
        # A flip that still parses fails later (shape inference): the message
        # then names the node or value instead of the file.
        r.check(f"bit-flip-{i:03d}", r.write(name, bytes(data)), [], may_succeed=True,
                quiet=True, any_of=[name, "node '", "input '", "tensor '", "value '"])
        if r.failed == before:
            flipped_passed += 1
            os.unlink(r.path(name))
    print(f"bit flips: {flipped_passed}/{opts.flips} handled (exit 0, or exit 1 with one line)")

    # Two different unknown ops: both named in the one message.
    m = one_node_model(
        [helper.make_node("FrobnicateTensor", ["x"], ["t"], name="frob"),
         helper.make_node("Relu", ["t"], ["u"], name="relu"),
         helper.make_node("WibbleOp", ["u"], ["y"], name="wibble")],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 3, 8, 8])])
    r.check("unknown-ops", r.write("unknown-ops.onnx", m.SerializeToString()),
            ["unknown-ops.onnx", "FrobnicateTensor", "WibbleOp"])

    # A node input nothing produces (a missing weight).
    m = one_node_model(
        [helper.make_node("Conv", ["x", "w_missing"], ["y"], name="conv_nw", kernel_shape=[3, 3])],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])])
    r.check("missing-weight", r.write("missing-weight.onnx", m.SerializeToString()),
            ["missing-weight.onnx", "w_missing"])

    # Inconsistent shapes: Add of 1x3 and 1x4.
    m = one_node_model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add_bad")],
        [vi("a", [1, 3]), vi("b", [1, 4])], [vi("y", [1, 4])])
    r.check("add-1x3-1x4", r.write("add-mismatch.onnx", m.SerializeToString()),
            ["add_bad"], shape="a=1,3")

    # Conv whose weight has rank 3.
    w3 = numpy_helper.from_array(np.ones((4, 3, 3), np.float32), "w3")
    m = one_node_model(
        [helper.make_node("Conv", ["x", "w3"], ["y"], name="conv_bad")],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w3])
    r.check("conv-weight-rank-3", r.write("conv-rank.onnx", m.SerializeToString()),
            ["conv_bad"])

    # Conv whose weight channels do not match the input.
    w5 = numpy_helper.from_array(np.ones((4, 5, 3, 3), np.float32), "w5")
    m = one_node_model(
        [helper.make_node("Conv", ["x", "w5"], ["y"], name="conv_chan", kernel_shape=[3, 3])],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w5])
    r.check("conv-channel-mismatch", r.write("conv-chan.onnx", m.SerializeToString()),
            ["conv_chan"])

    # External data.
    ext = TensorProto()
    ext.name = "w_ext"
    ext.data_type = TensorProto.FLOAT
    ext.dims.extend([4, 3, 3, 3])
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", str(4 * 27 * 4))):
        e = ext.external_data.add()
        e.key = k
        e.value = v
    m = one_node_model(
        [helper.make_node("Conv", ["x", "w_ext"], ["y"], name="conv_ext", kernel_shape=[3, 3])],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [ext])
    r.check("external-data", r.write("external.onnx", m.SerializeToString()),
            ["external.onnx", "external"])

    # A graph with a cycle.
    m = one_node_model(
        [helper.make_node("Add", ["x", "b"], ["a"], name="cyc_a"),
         helper.make_node("Relu", ["a"], ["b"], name="cyc_b"),
         helper.make_node("Relu", ["a"], ["y"], name="out")],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 3, 8, 8])])
    r.check("cycle", r.write("cycle.onnx", m.SerializeToString()), ["cycle.onnx", "cyc_"])

    # Resize with scales no output dim can hold (issue 14, F2): the error names
    # the Resize and its scale, not the next node, and nothing converts an
    # infinite or huge double to an integer (the asan build has UBSan's
    # float-cast-overflow).  The Slice after it is the model.
    roi = numpy_helper.from_array(np.zeros((0,), np.float32), "roi")
    starts = numpy_helper.from_array(np.array([0], np.int64), "starts")
    ends = numpy_helper.from_array(np.array([4], np.int64), "ends")
    axes = numpy_helper.from_array(np.array([3], np.int64), "axes")
    for label, scale, words in (("inf", np.inf, ["scales[2] = inf"]),
                                ("minus-inf", -np.inf, ["scales[2] = -inf"]),
                                ("nan", np.nan, ["scales[2]", "nan"]),
                                ("1e30", 1e30, ["scales[2] = 1e+30"]),
                                ("1e10", 1e10, ["scales[2] = 1e+10", "dim 2 of the output"]),
                                ("zero", 0.0, ["scales[2] = 0"])):
        sc = numpy_helper.from_array(np.array([1, 1, scale, 1], np.float32), "scales")
        m = one_node_model(
            [helper.make_node("Resize", ["x", "roi", "scales"], ["up"], name="up_resize",
                              mode="nearest"),
             helper.make_node("Slice", ["up", "starts", "ends", "axes"], ["y"], name="sl")],
            [vi("x", [1, 3, 8, 8])], [vi("y", None)], [roi, sc, starts, ends, axes])
        r.check(f"resize-scale-{label}", r.write(f"resize-{label}.onnx", m.SerializeToString()),
                ["'up_resize'", "Resize"] + words)
    # sizes: beyond int32 is an error; an empty output with a huge other dim
    # runs (no per-axis tables for it: found by tests/fuzz/ fuzz-onnx-run)
    for label, sizes, words in (("sizes-2^40", [1, 3, 2 ** 40, 8], ["sizes[2] = 1099511627776"]),
                                ("empty-huge", [1, 0, 2 ** 31 - 1, 8], None)):
        sz = numpy_helper.from_array(np.array(sizes, np.int64), "sz")
        m = one_node_model(
            [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="sized", mode="linear")],
            [vi("x", [1, 3, 8, 8])], [vi("y", None)], [sz])
        r.check(f"resize-{label}", r.write(f"resize-{label}.onnx", m.SerializeToString()),
                ["'sized'"] + (words or []), may_succeed=words is None)
    # tf_crop_and_resize with an infinite roi: the coordinates would become indices
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    roi_inf = numpy_helper.from_array(np.array([0, 0, 0, 0, 1, 1, np.inf, 1], np.float32), "roi")
    m = one_node_model(
        [helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="crop_resize",
                          mode="linear", coordinate_transformation_mode="tf_crop_and_resize")],
        [vi("x", [1, 3, 8, 8])], [vi("y", None)], [roi_inf, sc])
    r.check("resize-roi-inf", r.write("resize-roi-inf.onnx", m.SerializeToString()),
            ["'crop_resize'", "roi[6] = inf"])
    # Conv with a stride or dilation no shape arithmetic can take (found by
    # tests/fuzz/ fuzz-onnx-run: int64 overflow choosing the algorithm)
    wc = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "wc")
    for label, attrs in (("stride-2^58", {"strides": [1, 2 ** 58]}),
                         ("dilation-2^40", {"dilations": [2 ** 40, 1]})):
        m = one_node_model(
            [helper.make_node("Conv", ["x", "wc"], ["y"], name="conv_huge", **attrs)],
            [vi("x", [1, 3, 8, 8])], [vi("y", None)], [wc])
        r.check(f"conv-{label}", r.write(f"conv-{label}.onnx", m.SerializeToString()),
                ["'conv_huge'", "at most 2147483647"])
    # a required input given as "" (found by fuzz-onnx-run: Resize read it as NULL)
    sz = numpy_helper.from_array(np.array([1, 3, 4, 4], np.int64), "sz")
    m = one_node_model([helper.make_node("Resize", ["", "x", "", "sz"], ["y"], name="no_x")],
                       [vi("x", [1, 3, 8, 8])], [vi("y", None)], [sz])
    r.check("required-input-omitted", r.write("omitted.onnx", m.SerializeToString()),
            ["'no_x'", "input 0 is required but omitted"])
    # a control character in an attribute string stays out of the one-line message
    # (the loader already refuses one in a name)
    m = one_node_model([helper.make_node("Resize", ["x", "", "sz"], ["y"], name="nl_attr",
                                         coordinate_transformation_mode="bad\nmode")],
                       [vi("x", [1, 3, 8, 8])], [vi("y", None)],
                       [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sz")])
    r.check("newline-in-attribute", r.write("newline-attr.onnx", m.SerializeToString()),
            ["'nl_attr'", "bad?mode"])
    # Pad whose pads overflow int64 with the dim (found by fuzz-onnx-run)
    pads = numpy_helper.from_array(np.array([0, 0, 0, 2 ** 62, 0, 0, 0, 2 ** 62], np.int64), "pads")
    m = one_node_model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_huge")],
                       [vi("x", [1, 3, 8, 8])], [vi("y", None)], [pads])
    r.check("pad-2^62", r.write("pad-huge.onnx", m.SerializeToString()),
            ["'pad_huge'", "larger than 2147483647"])
    # Pad (opset 2) of an int32 tensor with a value no int32 holds
    pad_model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["xi"], name="to_int", to=TensorProto.INT32),
         helper.make_node("Pad", ["xi"], ["y"], name="pad_big", pads=[0, 0, 1, 1, 0, 0, 1, 1],
                          value=1e20)],
        "bad", [vi("x", [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)]),
        producer_name="nnpipe-tests", opset_imports=[helper.make_opsetid("", 10)])
    r.check("pad-value-1e20-int32", r.write("pad-big.onnx", pad_model.SerializeToString()),
            ["'pad_big'", "value 1e+20", "int32"])

    # A --shape that does not fit the model's static dims.
    r.check("wrong-input-shape", good_path, ["x"], shape="x=1,3,8")

    if r.failures:
        print("Failed: " + " ".join(r.failures))
    print(f"{r.passed} passed, {r.failed} failed, 0 skipped")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""ops-vs-ort: small models of the ops the ONNX node cases cover thinly, run by
nnpipe and by ONNX Runtime on the same inputs.

Each model is written with python3-onnx into WORKDIR, run with `nnpipe run` and
`nnp-ort` (the same deterministic input pattern, seed = input index) and every
output compared: floats by max abs error / max abs reference <= 1e-4 (as
compare-raw), integers and booleans exactly.  Covered: LSTM (bidirectional,
sequence lengths, peepholes, initial states), GRU (reverse,
linear_before_reset, clip, HardSigmoid), RNN (Relu), a ViT-style block
(LayerNormalization, Gelu, Softmax), super-resolution (DepthToSpace CRD),
style-transfer ops (InstanceNormalization, reflect Pad, Upsample 9), opset 7
Upsample and BatchNormalization spatial=0, window functions and DFT,
reductions with axes inputs (opset 18), TopK/CumSum/GatherElements/ScatterND,
the losses, GridSample (every mode and padding), RoiAlign (avg and max), Einsum
(attention, implicit output, ellipsis diagonal), Det, and control flow: a Loop with
a carried value, scan outputs and a body slicing by the iteration number, a Loop
ending on a condition computed from data, a Scan with reversed outputs and an If
on data, every subgraph reading outer values.  Shapes that depend on data (a
data-dependent tail run at run time): a detection head ending in
NonMaxSuppression and a Gather of the selected boxes, NonZero of a computed mask
and GatherND, TopK with K from a computed shape, Range with a computed limit,
and a Loop whose carried value grows, which must still be refused with an error
naming the node (ONNX Runtime runs it).

Usage: ops-vs-ort.py [--work DIR] [--keep] [--only SUBSTR]
Environment: NNPIPE, NNP_ORT (set by tests/meson.build).
Fails (never skips) when ONNX Runtime is missing (tools/fetch-models.sh) or
python3-onnx / python3-numpy are not installed (tools/check-deps.sh).
"""
import argparse
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"FAIL: ops-vs-ort: {e} (install python3-onnx and python3-numpy; "
          "tools/check-deps.sh)")
    sys.exit(1)

F = TensorProto.FLOAT
I64 = TensorProto.INT64
RNG = np.random.default_rng(20)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if opset <= 17:  # python3-onnx 1.12 knows opsets up to 17
        onnx.checker.check_model(m)
    return m


def rand(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------- cases

def lstm_bidi():
    s, b, i, h = 6, 3, 5, 8
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B", "lens", "h0", "c0", "P"],
                              ["Y", "Y_h", "Y_c"], hidden_size=h, direction="bidirectional")]
    inits = [const("W", rand(2, 4 * h, i)), const("R", rand(2, 4 * h, h)),
             const("B", rand(2, 8 * h)), const("lens", np.array([6, 3, 1], np.int32)),
             const("h0", rand(2, b, h)), const("c0", rand(2, b, h)), const("P", rand(2, 3 * h))]
    return model(nodes, [vi("x", F, [s, b, i])],
                 [vi("Y", F, [s, 2, b, h]), vi("Y_h", F, [2, b, h]), vi("Y_c", F, [2, b, h])],
                 inits, opset=14), {"x": [s, b, i]}


def gru_reverse():
    # layout 1 is checked by the node cases (ONNX Runtime refuses it)
    s, b, i, h = 5, 2, 4, 6
    nodes = [helper.make_node("GRU", ["x", "W", "R", "B"], ["Y", "Y_h"], hidden_size=h,
                              direction="reverse", linear_before_reset=1, clip=2.5,
                              activations=["HardSigmoid", "Tanh"], activation_alpha=[0.3],
                              activation_beta=[0.4])]
    inits = [const("W", rand(1, 3 * h, i)), const("R", rand(1, 3 * h, h)),
             const("B", rand(1, 6 * h))]
    return model(nodes, [vi("x", F, [s, b, i])],
                 [vi("Y", F, [s, 1, b, h]), vi("Y_h", F, [1, b, h])], inits, opset=14), \
        {"x": [s, b, i]}


def gru_default():
    s, b, i, h = 4, 2, 3, 5
    nodes = [helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["Y", "Y_h"],
                              hidden_size=h, direction="bidirectional")]
    inits = [const("W", rand(2, 3 * h, i)), const("R", rand(2, 3 * h, h)),
             const("B", rand(2, 6 * h)), const("h0", rand(2, b, h))]
    return model(nodes, [vi("x", F, [s, b, i])],
                 [vi("Y", F, [s, 2, b, h]), vi("Y_h", F, [2, b, h])], inits), {"x": [s, b, i]}


def rnn_relu():
    s, b, i, h = 4, 2, 3, 5
    nodes = [helper.make_node("RNN", ["x", "W", "R", "B"], ["Y", "Y_h"], hidden_size=h,
                              activations=["Relu"])]
    inits = [const("W", rand(1, h, i)), const("R", rand(1, h, h)), const("B", rand(1, 2 * h))]
    return model(nodes, [vi("x", F, [s, b, i])],
                 [vi("Y", F, [s, 1, b, h]), vi("Y_h", F, [1, b, h])], inits), {"x": [s, b, i]}


def vit_block():
    t, d = 7, 16
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], epsilon=1e-6),
        helper.make_node("MatMul", ["n", "wq"], ["q"]),
        helper.make_node("MatMul", ["n", "wk"], ["k"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["a"]),
        helper.make_node("Softmax", ["a"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "n"], ["v"]),
        helper.make_node("Gelu", ["v"], ["y0"]),
        helper.make_node("Gelu", ["v"], ["y1"], approximate="tanh"),
        helper.make_node("Add", ["y0", "y1"], ["y"]),
    ]
    inits = [const("g", rand(d) + 1), const("b", rand(d)), const("wq", rand(d, d)),
             const("wk", rand(d, d))]
    return model(nodes, [vi("x", F, [1, t, d])], [vi("y", F, [1, t, d])], inits, opset=20), \
        {"x": [1, t, d]}


def super_res():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("DepthToSpace", ["c"], ["y"], blocksize=2, mode="CRD"),
             helper.make_node("SpaceToDepth", ["y"], ["z"], blocksize=2)]
    return model(nodes, [vi("x", F, [1, 3, 6, 5])],
                 [vi("y", F, [1, 2, 12, 10]), vi("z", F, [1, 8, 6, 5])],
                 [const("w", rand(8, 3, 3, 3))]), {"x": [1, 3, 6, 5]}


def style():
    nodes = [helper.make_node("Pad", ["x"], ["p"], mode="reflect", pads=[0, 0, 2, 1, 0, 0, 2, 1]),
             helper.make_node("InstanceNormalization", ["p", "s", "b"], ["n"], epsilon=1e-3),
             helper.make_node("Upsample", ["n", "scales"], ["y"], mode="nearest")]
    inits = [const("s", rand(3) + 1), const("b", rand(3)),
             const("scales", np.array([1, 1, 2, 2], np.float32))]
    return model(nodes, [vi("x", F, [1, 3, 5, 6])], [vi("y", F, [1, 3, 18, 16])], inits,
                 opset=9), {"x": [1, 3, 5, 6]}


def opset7():
    nodes = [helper.make_node("Upsample", ["x"], ["u"], mode="linear", scales=[1.0, 1.0, 2.0, 3.0]),
             helper.make_node("BatchNormalization", ["u", "s", "b", "m", "v"], ["y"], spatial=0)]
    shape = [3, 4, 6]
    inits = [const("s", rand(*shape) + 1), const("b", rand(*shape)), const("m", rand(*shape)),
             const("v", np.abs(rand(*shape)) + 0.5)]
    return model(nodes, [vi("x", F, [2, 3, 2, 2])], [vi("y", F, [2, 3, 4, 6])], inits,
                 opset=7), {"x": [2, 3, 2, 2]}


def signal():
    n = 16
    nodes = [helper.make_node("HannWindow", ["size"], ["w"]),
             helper.make_node("HammingWindow", ["size"], ["w2"], periodic=0),
             helper.make_node("BlackmanWindow", ["size"], ["w3"]),
             helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("Unsqueeze", ["xw", "ax"], ["xs"]),
             helper.make_node("DFT", ["xs"], ["y"], axis=1, onesided=1),
             helper.make_node("DFT", ["xs"], ["yi"], axis=1, inverse=1)]
    inits = [const("size", np.array(n, np.int64)), const("ax", np.array([-1], np.int64))]
    return model(nodes, [vi("x", F, [2, n])],
                 [vi("y", F, [2, n // 2 + 1, 2]), vi("yi", F, [2, n, 2]), vi("w2", F, [n]),
                  vi("w3", F, [n])], inits), {"x": [2, n]}


def reductions():
    nodes = [helper.make_node("ReduceLogSumExp", ["x", "a"], ["y1"], keepdims=0),
             helper.make_node("ReduceL2", ["x", "a"], ["y2"]),
             helper.make_node("ReduceL1", ["x"], ["y3"], keepdims=0),
             helper.make_node("ReduceSumSquare", ["x", "a2"], ["y4"]),
             helper.make_node("ReduceProd", ["x", "a2"], ["y5"], keepdims=0),
             helper.make_node("ArgMin", ["x"], ["y6"], axis=-1, select_last_index=1)]
    inits = [const("a", np.array([1, -1], np.int64)), const("a2", np.array([0], np.int64))]
    return model(nodes, [vi("x", F, [3, 4, 5])],
                 [vi("y1", F, [3]), vi("y2", F, [3, 1, 1]), vi("y3", F, []),
                  vi("y4", F, [1, 4, 5]), vi("y5", F, [4, 5]), vi("y6", I64, [3, 4, 1])],
                 inits, opset=18), {"x": [3, 4, 5]}


def indexing():
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0),
             helper.make_node("CumSum", ["x", "ax"], ["c"], exclusive=1, reverse=1),
             helper.make_node("GatherElements", ["x", "gi"], ["g"], axis=-1),
             helper.make_node("ScatterND", ["x", "si", "su"], ["s"], reduction="add"),
             helper.make_node("Trilu", ["x", "tk"], ["t"], upper=0),
             helper.make_node("Hardmax", ["x"], ["h"], axis=1),
             helper.make_node("Mod", ["x", "d"], ["m"], fmod=1),
             helper.make_node("Elu", ["x"], ["e"], alpha=0.7),
             helper.make_node("Selu", ["x"], ["se"]),
             helper.make_node("Atan", ["x"], ["at"]),
             helper.make_node("PRelu", ["x", "slope"], ["pr"])]
    inits = [const("k", np.array([3], np.int64)), const("ax", np.array(1, np.int64)),
             const("gi", np.array([[[0, 4, 2]] * 5] * 4, np.int64)),
             const("si", np.array([[1, 2], [3, 0], [1, 2]], np.int64)),
             const("su", rand(3, 6)), const("tk", np.array(1, np.int64)),
             const("d", np.array([0.7], np.float32)), const("slope", rand(1, 6))]
    return model(nodes, [vi("x", F, [4, 5, 6])],
                 [vi("v", F, [4, 3, 6]), vi("i", I64, [4, 3, 6]), vi("c", F, [4, 5, 6]),
                  vi("g", F, [4, 5, 3]), vi("s", F, [4, 5, 6]), vi("t", F, [4, 5, 6]),
                  vi("h", F, [4, 5, 6]), vi("m", F, [4, 5, 6]), vi("e", F, [4, 5, 6]),
                  vi("se", F, [4, 5, 6]), vi("at", F, [4, 5, 6]), vi("pr", F, [4, 5, 6])],
                 inits), {"x": [4, 5, 6]}


def losses():
    nodes = [helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["l", "lp"],
                              ignore_index=2),
             helper.make_node("NegativeLogLikelihoodLoss", ["lp", "t"], ["n"], reduction="sum")]
    inits = [const("t", np.array([[0, 2, 3], [1, 1, 4]], np.int64)), const("w", rand(5) + 1)]
    return model(nodes, [vi("x", F, [2, 5, 3])],
                 [vi("l", F, []), vi("lp", F, [2, 5, 3]), vi("n", F, [])], inits, opset=13), \
        {"x": [2, 5, 3]}


def sampling():
    # grid values reach past [-1, 1] so that every padding mode matters
    grid = (RNG.uniform(-1.3, 1.3, (2, 4, 5, 2))).astype(np.float32)
    rois = np.array([[0.5, 0.7, 4.2, 3.9], [1.0, 0.0, 5.5, 4.5], [-0.5, 1.5, 2.0, 6.0]],
                    np.float32)
    nodes = [helper.make_node("GridSample", ["x", "grid"], ["g1"], mode="bilinear",
                              padding_mode="reflection"),
             helper.make_node("GridSample", ["x", "grid"], ["g2"], mode="nearest",
                              padding_mode="border", align_corners=1),
             helper.make_node("GridSample", ["x", "grid"], ["g3"], mode="bicubic"),
             helper.make_node("RoiAlign", ["x", "rois", "bi"], ["r1"], output_height=3,
                              output_width=2, sampling_ratio=2, spatial_scale=0.9),
             helper.make_node("RoiAlign", ["x", "rois", "bi"], ["r2"], mode="max",
                              output_height=2, output_width=2,
                              coordinate_transformation_mode="output_half_pixel")]
    inits = [const("grid", grid), const("rois", rois),
             const("bi", np.array([1, 0, 1], np.int64))]
    return model(nodes, [vi("x", F, [2, 3, 6, 7])],
                 [vi("g1", F, [2, 3, 4, 5]), vi("g2", F, [2, 3, 4, 5]), vi("g3", F, [2, 3, 4, 5]),
                  vi("r1", F, [3, 3, 3, 2]), vi("r2", F, [3, 3, 2, 2])], inits, opset=16), \
        {"x": [2, 3, 6, 7]}


def einsum():
    nodes = [helper.make_node("Einsum", ["q", "k"], ["a"], equation="bhqd,bhkd->bhqk"),
             helper.make_node("Einsum", ["a", "k"], ["b"], equation="...qk,...kd"),
             helper.make_node("Einsum", ["m"], ["d"], equation="...ii->...i"),
             helper.make_node("Det", ["m"], ["det"])]
    inits = [const("k", rand(2, 3, 5, 4)), const("m", rand(3, 4, 4))]
    return model(nodes, [vi("q", F, [2, 3, 6, 4])],
                 [vi("a", F, [2, 3, 6, 5]), vi("b", F, [2, 3, 6, 4]), vi("d", F, [3, 4]),
                  vi("det", F, [3])], inits, opset=12), {"q": [2, 3, 6, 4]}


def control_flow():
    B = TensorProto.BOOL
    # Loop: carried sum and product, a scan output per iteration, trip count 4;
    # the body reads the outer weight 'w' and slices x by the iteration number
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["i", "zero"], ["i1"]),
         helper.make_node("Add", ["i1", "one"], ["i2"]),
         helper.make_node("Slice", ["x", "i1", "i2", "zero"], ["row"]),
         helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
         helper.make_node("Mul", ["acc_out", "w"], ["scan"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F, [1, 5])],
        [vi("c_out", B, []), vi("acc_out", F, [1, 5]), vi("scan", F, [1, 5])],
        initializer=[const("zero", np.array([0], np.int64)), const("one", np.array([1], np.int64))])
    # Loop that ends on a condition computed from data (no scan outputs)
    body2 = helper.make_graph(
        [helper.make_node("Mul", ["v_in", "two"], ["v_out"]),
         helper.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["c_out"])],
        "body2", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [4, 5])],
        [vi("c_out", B, []), vi("v_out", F, [4, 5])],
        initializer=[const("two", np.array(1.5, np.float32)), const("limit", np.array(40.0, np.float32))])
    # Scan: an RNN-like state over the rows of x, outputs reversed
    sbody = helper.make_graph(
        [helper.make_node("MatMul", ["h", "w2"], ["hw"]),
         helper.make_node("Add", ["hw", "xt"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["y_t"])],
        "sbody", [vi("h", F, [5]), vi("xt", F, [5])], [vi("h_out", F, [5]), vi("y_t", F, [5])])
    # If on data, both branches reading outer values
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t"])], "then", [],
                               [vi("t", F, [4, 5])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"])], "else", [],
                               [vi("e", F, [4, 5])])
    nodes = [helper.make_node("Loop", ["M", "", "acc0"], ["acc", "scans"], body=body),
             helper.make_node("Abs", ["x"], ["ax"]),
             helper.make_node("Loop", ["", "true", "ax"], ["grown"], body=body2),
             helper.make_node("Scan", ["h0", "x"], ["h_last", "ys"], body=sbody,
                              num_scan_inputs=1, scan_output_directions=[1]),
             helper.make_node("ReduceSum", ["x"], ["xs"], keepdims=0),
             helper.make_node("Greater", ["xs", "zf"], ["pos"]),
             helper.make_node("If", ["pos"], ["branch"], then_branch=then_g, else_branch=else_g)]
    inits = [const("M", np.array(4, np.int64)), const("acc0", np.zeros((1, 5), np.float32)),
             const("w", rand(1, 5)), const("true", np.array(True)), const("w2", rand(5, 5)),
             const("h0", rand(5)), const("zf", np.array(0.0, np.float32))]
    return model(nodes, [vi("x", F, [4, 5])],
                 [vi("acc", F, [1, 5]), vi("scans", F, [4, 1, 5]), vi("grown", F, [4, 5]),
                  vi("h_last", F, [5]), vi("ys", F, [4, 5]), vi("branch", F, [4, 5])],
                 inits, opset=13), {"x": [4, 5]}


# ------------------------------------------- shapes that depend on data
# (a data-dependent tail run at run time: docs/conformance.md)

def detect_nms(batch=1, center=0):
    """Conv -> boxes + scores -> NonMaxSuppression -> the selected boxes by
    Gather, beside a static output of the head."""
    n = 16
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["y"]),
             helper.make_node("Reshape", ["y", "s3"], ["y3"]),
             helper.make_node("Transpose", ["y3"], ["yt"], perm=[0, 2, 1]),
             helper.make_node("Slice", ["yt", "b0", "b1", "ax2"], ["boxes"]),
             helper.make_node("Slice", ["yt", "b1", "b2", "ax2"], ["logits"]),
             helper.make_node("Sigmoid", ["logits"], ["sc"]),
             helper.make_node("Transpose", ["sc"], ["scores"], perm=[0, 2, 1]),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "maxo", "iou", "thr"],
                              ["selected"], name="nms", center_point_box=center),
             helper.make_node("Gather", ["selected", "col2"], ["box_idx"], axis=1),
             helper.make_node("Gather", ["boxes", "zero_i"], ["boxes2"], axis=0),
             helper.make_node("Gather", ["boxes2", "box_idx"], ["sel_boxes"], axis=0),
             helper.make_node("ReduceMean", ["y"], ["y_mean"], keepdims=0)]
    inits = [const("W", rand(7, 4, 1, 1, scale=1.0)), const("B", rand(7)),
             const("s3", np.array([batch, 7, n], np.int64)), const("b0", np.array([0], np.int64)),
             const("b1", np.array([4], np.int64)), const("b2", np.array([7], np.int64)),
             const("ax2", np.array([2], np.int64)), const("zero_i", np.array(0, np.int64)),
             const("maxo", np.array([6], np.int64)), const("iou", np.array([0.3], np.float32)),
             const("thr", np.array([0.4], np.float32)), const("col2", np.array(2, np.int64))]
    return model(nodes, [vi("x", F, [batch, 4, 4, 4])],
                 [vi("selected", I64, ["n", 3]), vi("sel_boxes", F, ["n", 4]),
                  vi("y_mean", F, [])], inits, opset=13), {"x": [batch, 4, 4, 4]}


def detect_nms_batch2_center():
    """The same over two images, boxes as centre + size: rows batch by batch,
    class by class (the selected boxes gathered from image 0's list by index,
    as a model that ignores the batch column would)."""
    return detect_nms(batch=2, center=1)


def nonzero_gathernd():
    """NonZero of a computed mask, then GatherND of the values it selects."""
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("Greater", ["xw", "t"], ["mask"]),
             helper.make_node("NonZero", ["mask"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["xw", "idx"], ["vals"]),
             helper.make_node("Relu", ["vals"], ["vals_relu"])]
    inits = [const("w", rand(3, 5, scale=1.0)), const("t", np.array(0.1, np.float32))]
    return model(nodes, [vi("x", F, [3, 5])],
                 [vi("nz", I64, [2, "n"]), vi("vals_relu", F, ["n"])], inits, opset=13), \
        {"x": [3, 5]}


def topk_range_computed():
    """TopK whose K is a computed shape (the length of a NonZero), Range whose
    limit is a count of the data."""
    nodes = [helper.make_node("Greater", ["x", "t"], ["mask"]),
             helper.make_node("NonZero", ["mask"], ["nz"]),
             helper.make_node("Shape", ["nz"], ["nzs"]),
             helper.make_node("Slice", ["nzs", "one", "two"], ["k"]),
             helper.make_node("Reshape", ["x", "flat"], ["xf"]),
             helper.make_node("TopK", ["xf", "k"], ["top_v", "top_i"], axis=0),
             helper.make_node("Cast", ["mask"], ["mi"], to=I64),
             helper.make_node("ReduceSum", ["mi"], ["cnt"], keepdims=0),
             helper.make_node("Range", ["zero", "cnt", "two_s"], ["rng"]),
             helper.make_node("Cast", ["rng"], ["rngf"], to=F),
             helper.make_node("Mul", ["rngf", "half"], ["rng_half"])]
    inits = [const("t", np.array(0.2, np.float32)), const("one", np.array([1], np.int64)),
             const("two", np.array([2], np.int64)), const("flat", np.array([-1], np.int64)),
             const("zero", np.array(0, np.int64)), const("two_s", np.array(2, np.int64)),
             const("half", np.array(0.5, np.float32))]
    return model(nodes, [vi("x", F, [4, 6])],
                 [vi("top_v", F, ["k"]), vi("top_i", I64, ["k"]), vi("rng", I64, ["r"]),
                  vi("rng_half", F, ["r"])], inits, opset=13), {"x": [4, 6]}


def loop_growing():
    """A Loop whose carried value doubles every iteration: its shape is known
    only by running it, which run-time specialisation still cannot do."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Concat", ["v_in", "v_in"], ["v_out"], axis=0)],
        "body", [vi("i", I64, []), vi("c_in", TensorProto.BOOL, []), vi("v_in", F, ["n"])],
        [vi("c_out", TensorProto.BOOL, []), vi("v_out", F, ["m"])])
    nodes = [helper.make_node("Relu", ["x"], ["xr"]),
             helper.make_node("Loop", ["M", "true", "xr"], ["grown"], body=body, name="loop")]
    inits = [const("M", np.array(3, np.int64)), const("true", np.array(True))]
    return model(nodes, [vi("x", F, [2])], [vi("grown", F, ["g"])], inits, opset=13), \
        {"x": [2]}


def conv_cases(convs, shapes):
    """A model of constant-weight Convs, each (name, input, cin, cout, (kh,
    kw), attributes, activation) reading the first cin channels of its input
    (a Slice when fewer than it has) into output `name`, with its activation:
    None, Relu, HardSwish, Clip (0..6) or "residual" (an Add of the Conv's
    input, then Relu and a Mul: residual_relu_square)."""
    nodes, inits, outputs = [], [], []
    for name, src, cin, cout, (kh, kw), attrs, act in convs:
        batch = shapes[src][0]
        if cin < shapes[src][1]:
            nodes.append(helper.make_node("Slice", [src, "s0", name + "_end", "s1"],
                                          [name + "_x"]))
            inits.append(const(name + "_end", np.array([cin], np.int64)))
            src = name + "_x"
        g = attrs.get("group", 1)
        inits += [const(name + "_w", rand(cout, cin // g, kh, kw, scale=0.2)),
                  const(name + "_b", rand(cout))]
        out = name if act is None else name + "_c"
        nodes.append(helper.make_node("Conv", [src, name + "_w", name + "_b"], [out],
                                      kernel_shape=[kh, kw], **attrs))
        if act in ("Relu", "HardSwish"):
            nodes.append(helper.make_node(act, [out], [name]))
        elif act == "Clip":
            nodes.append(helper.make_node("Clip", [out, "zero", "six"], [name]))
        elif act == "residual":
            nodes += residual_relu_square(out, src, name)
        outputs.append(vi(name, F, [batch, cout, None, None]))
    inits += [const("s0", np.array([0], np.int64)), const("s1", np.array([1], np.int64)),
              const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32))]
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outputs, inits)


def conv_kernels():
    """Dense convolutions with constant weights through every CPU kernel path:
    the blocked-channel kernel (channel blocks of 16 with a part block, panels
    of 32 output channels with a part panel, dilation, asymmetric pads, 1xK
    and 5x5 kernels, two groups, a batch of 2, rows that end inside a tile,
    fused Relu / Clip), the ones it leaves to the indirect GEMM (stride 2
    with a fused Clip, applied in the AVX-512 tile store,
    3 input channels, a 1x1 of stride 2 whose rows it takes as one) and
    depthwise rows that end in a part vector."""
    n, c, h, w = 2, 32, 13, 17
    convs = [  # name, cin (first channels of x), cout, kernel, attributes, activation
        ("c1", 24, 60, (3, 3), dict(pads=[1, 1, 1, 1]), "Relu"),
        ("c2", 24, 30, (3, 3), dict(pads=[2, 1, 2, 3], dilations=[2, 2]), "Clip"),
        ("c3", 32, 62, (5, 5), dict(pads=[2, 2, 2, 2], group=2), None),
        ("c4", 32, 16, (1, 7), dict(pads=[0, 3, 0, 3]), None),
        ("c5", 32, 64, (3, 3), dict(pads=[0, 0, 0, 0]), "Relu"),
        ("c6", 32, 24, (3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), "Clip"),
        ("c7", 3, 32, (3, 3), dict(pads=[1, 1, 1, 1]), "Relu"),
        # depthwise: rows of 9 and 17 outputs (the last 8-wide block overlaps)
        ("c8", 32, 32, (3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2], group=32), None),
        ("c9", 32, 32, (5, 5), dict(pads=[2, 2, 2, 2], group=32), "Relu"),
        # 1x1 stride 2: 7 rows of 9 outputs without padding between them,
        # one run of 63 columns for the indirect GEMM
        ("c10", 32, 48, (1, 1), dict(strides=[2, 2]), "Relu"),
    ]
    shapes = {"x": [n, c, h, w]}
    return conv_cases([(name, "x", *rest) for name, *rest in convs], shapes), shapes


def depthwise_node(nodes, inits, name, c, k, pads, act, stride, dilation=1):
    """A depthwise Conv of input NAME_x into NAME, with its activation
    (Clip: 0..6, from the inits "zero" and "six")."""
    inits += [const(name + "_w", rand(c, 1, k, k, scale=0.3)), const(name + "_b", rand(c))]
    out = name if act is None else name + "_c"
    nodes.append(helper.make_node("Conv", [name + "_x", name + "_w", name + "_b"], [out],
                                  kernel_shape=[k, k], pads=pads, group=c,
                                  dilations=[dilation, dilation], strides=[stride, stride]))
    if act == "Clip":
        nodes.append(helper.make_node("Clip", [out, "zero", "six"], [name]))
    elif act is not None:
        nodes.append(helper.make_node(act, [out], [name]))


def depthwise_rows():
    """Depthwise convolutions at stride 1 through the AVX-512 row kernel:
    rows of 83 outputs (a 64-wide step, a 16-wide one, the last 16-wide
    step overlapping), 3x3 and 5x5, asymmetric pads (rows with and without
    every tap), fused Clip and HardSwish (an activation applied on vector
    halves), and rows of 15 (a plane of 135 outputs: dw_small_planes, see
    depthwise_small); at stride 2 (each input row split into its even and
    odd padded columns, with AVX-512; the AVX2 rows taking even columns by
    shuffles without), odd input widths with an odd and an even left pad:
    rows of 42 and of 100, 3x3 and 5x5, an even width without a left
    pad (TensorFlow's "same": rows of 32), rows of 56 (the row's four
    vectors computed together, the last one overlapping), and rows of 14
    (masked) and 16 (one vector), four rows together where they have every
    tap (19 input rows: rows with and without every tap, groups of four, of
    two and single rows)."""
    n, c = 1, 8
    convs = [  # name, width, kernel, pads, activation, stride[, height: 9]
        ("d1", 83, 3, [1, 1, 1, 1], "Clip", 1),
        ("d2", 83, 5, [2, 2, 2, 2], "HardSwish", 1),
        ("d3", 83, 3, [0, 2, 2, 0], None, 1),
        ("d4", 15, 3, [1, 1, 1, 1], "Relu", 1),
        ("d5", 83, 3, [1, 1, 1, 1], "Relu", 2),
        ("d6", 199, 5, [1, 2, 2, 2], "Clip", 2),
        ("d7", 64, 3, [0, 0, 1, 1], "Relu", 2),
        ("d8", 111, 5, [2, 2, 2, 2], "HardSwish", 2),
        ("d9", 27, 3, [1, 1, 1, 1], "Relu", 2, 19),
        ("d10", 32, 5, [1, 2, 2, 2], "Clip", 2, 19),
    ]
    nodes, inits, inputs, outputs = [], [], [], []
    for name, w, k, pads, act, stride, *h in convs:
        depthwise_node(nodes, inits, name, c, k, pads, act, stride)
        inputs.append(vi(name + "_x", F, [n, c, (h or [9])[0], w]))
        outputs.append(vi(name, F, [n, c, None, None]))
    inits += [const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32))]
    return model(nodes, inputs, outputs, inits), {
        i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in inputs}


def depthwise_small():
    """Depthwise convolutions on planes of at most 256 outputs whose rows
    are narrower than a vector (MobileNet's 7x7 and 14x14): the plane as
    one run of 16-output vectors, each tap a masked load (stride 1, as many
    input as output columns: 3x3 and 5x5, dilation 2) or a masked gather
    (stride 2 with TensorFlow's asymmetric pads, a 5x5 with pads of 1 that
    leave fewer output columns than input ones); 49 and 135 outputs (a
    part vector), a batch of 2, channels 40 and 9, fused Clip and HardSwish
    (applied after the plane); and a plane of 300 outputs left to the row
    kernels."""
    n = 2
    convs = [  # name, channels, h, w, kernel, pads, dilation, stride, activation
        ("s1", 40, 7, 7, 3, [1, 1, 1, 1], 1, 1, "Clip"),
        ("s2", 9, 14, 14, 3, [1, 1, 1, 1], 1, 1, None),
        ("s3", 9, 9, 15, 5, [2, 2, 2, 2], 1, 1, "HardSwish"),
        ("s4", 9, 7, 7, 3, [2, 2, 2, 2], 2, 1, "Relu"),
        ("s5", 40, 14, 14, 3, [0, 0, 1, 1], 1, 2, "Clip"),
        ("s6", 9, 9, 9, 5, [1, 1, 1, 1], 1, 1, None),
        # 300 outputs: the row kernels (rows of 15 on the AVX2 one)
        ("s7", 9, 20, 15, 3, [1, 1, 1, 1], 1, 1, "Relu"),
    ]
    nodes, inits, inputs, outputs, shapes = [], [], [], [], {}
    for name, c, h, w, k, pads, d, stride, act in convs:
        depthwise_node(nodes, inits, name, c, k, pads, act, stride, d)
        inputs.append(vi(name + "_x", F, [n, c, h, w]))
        outputs.append(vi(name, F, [n, c, None, None]))
        shapes[name + "_x"] = [n, c, h, w]
    inits += [const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32))]
    return model(nodes, inputs, outputs, inits), shapes


def residual_relu_square(conv, r, out):
    """Add(conv, r) -> Relu -> Mul by itself into `out`: a residual Add the
    CPU executor fuses into `conv` (the Mul keeps the Add's output internal,
    as the fusion asks)."""
    return [helper.make_node("Add", [conv, r], [conv + "_r"]),
            helper.make_node("Relu", [conv + "_r"], [conv + "_a"]),
            helper.make_node("Mul", [conv + "_a", conv + "_a"], [out])]


def stems():
    """Convolutions of few products per output (K = channels x kernel at
    most 64: network stems), computed with output pixels along the vector
    lanes: 3 -> 16 3x3 stride 2 (rows of 35: a masked third vector; a last
    panel of 4 channels) with Clip, 3 -> 32 stride 2 (rows of 65: a last
    tile of one pixel), 2 -> 8 5x5 with SiLU written out (applied after the
    store), a grouped 4 -> 8 (two groups of K 18) with HardSigmoid, 2 -> 5
    without a bias or padding, then Sigmoid; a 3x3 of 8 channels (K 72)
    stays on the indirect GEMM."""
    nodes, inits = [], []

    def conv(name, src, cin, cout, k, stride=1, group=1, pad=None, bias=True):
        inits.append(const(name + "_w", rand(cout, cin // group, k, k, scale=0.3)))
        ins = [src, name + "_w"]
        if bias:
            inits.append(const(name + "_b", rand(cout)))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name], kernel_shape=[k, k],
                                      pads=[k // 2 if pad is None else pad] * 4,
                                      strides=[stride, stride], group=group))

    inits += [const("zero", np.float32(0)), const("six", np.float32(6))]
    conv("a", "x", 3, 16, 3, stride=2)
    nodes.append(helper.make_node("Clip", ["a", "zero", "six"], ["y1"]))
    conv("b", "x2", 3, 32, 3, stride=2)
    nodes.append(helper.make_node("Relu", ["b"], ["y2"]))
    conv("c", "x3", 2, 8, 5)
    nodes += [helper.make_node("Sigmoid", ["c"], ["cs"]),
              helper.make_node("Mul", ["c", "cs"], ["y3"])]
    conv("d", "x4", 4, 8, 3, group=2)
    nodes.append(helper.make_node("HardSigmoid", ["d"], ["y4"]))
    conv("e", "x5", 2, 5, 3, pad=0, bias=False)
    nodes.append(helper.make_node("Sigmoid", ["e"], ["y5"]))
    conv("f", "x6", 8, 12, 3)
    nodes.append(helper.make_node("Relu", ["f"], ["y6"]))
    shapes = {"x": [1, 3, 50, 70], "x2": [1, 3, 20, 130], "x3": [2, 2, 9, 40],
              "x4": [1, 4, 6, 33], "x5": [1, 2, 7, 50], "x6": [1, 8, 5, 40]}
    outs = [vi("y1", F, [1, 16, 25, 35]), vi("y2", F, [1, 32, 10, 65]),
            vi("y3", F, [2, 8, 9, 40]), vi("y4", F, [1, 8, 6, 33]), vi("y5", F, [1, 5, 5, 48]),
            vi("y6", F, [1, 12, 5, 40])]
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outs, inits), shapes


def pointwise_lanes():
    """1x1 convolutions of at most 256 input channels and at least 64
    output channels, computed with pixels along the lanes in chunks of the
    plane: 20 -> 64 on 13x17 (one chunk of 221, masked), HardSwish after the
    store; 100 -> 70 on 30x30, chunks of 64 (a last one of 4 pixels), Relu on
    the registers; grouped 128 -> 128 in two groups, batch 2, no bias; 256 ->
    96 with LeakyRelu; 48 -> 32 stays on the indirect GEMM; 64 -> 128 with a
    residual Add computed in it (Relu before and after it; none), and with
    HardSwish before the Add (on the GEMM: not on the registers)."""
    nodes, inits = [], []

    def conv(name, src, cin, cout, group=1, bias=True):
        inits.append(const(name + "_w", rand(cout, cin // group, 1, 1, scale=0.2)))
        if bias:
            inits.append(const(name + "_b", rand(cout)))
        nodes.append(helper.make_node("Conv", [src, name + "_w"] + ([name + "_b"] if bias else []),
                                      [name], group=group))

    conv("a", "x1", 20, 64)
    nodes.append(helper.make_node("HardSwish", ["a"], ["y1"]))
    conv("b", "x2", 100, 70)
    nodes.append(helper.make_node("Relu", ["b"], ["y2"]))
    conv("c", "x3", 128, 128, group=2, bias=False)
    nodes.append(helper.make_node("Relu", ["c"], ["y3"]))
    conv("d", "x4", 256, 96)
    nodes.append(helper.make_node("LeakyRelu", ["d"], ["y4"], alpha=0.1))
    conv("e", "x5", 48, 32)
    nodes.append(helper.make_node("Relu", ["e"], ["y5"]))
    # residual Adds the executor computes in the convolution (outputs internal)
    nodes.append(helper.make_node("Relu", ["x7"], ["r"]))
    conv("f", "x6", 64, 128)
    nodes += [helper.make_node("Relu", ["f"], ["f1"]), helper.make_node("Add", ["f1", "r"], ["f2"]),
              helper.make_node("Relu", ["f2"], ["f3"]), helper.make_node("Neg", ["f3"], ["y6"])]
    conv("g", "x6", 64, 128)
    nodes += [helper.make_node("Add", ["r", "g"], ["g2"]), helper.make_node("Neg", ["g2"], ["y7"])]
    conv("h", "x6", 64, 128)
    nodes += [helper.make_node("HardSwish", ["h"], ["h1"]),
              helper.make_node("Add", ["h1", "r"], ["h2"]), helper.make_node("Neg", ["h2"], ["y8"])]
    shapes = {"x1": [1, 20, 13, 17], "x2": [1, 100, 30, 30], "x3": [2, 128, 9, 9],
              "x4": [1, 256, 8, 8], "x5": [1, 48, 8, 8], "x6": [1, 64, 10, 12],
              "x7": [1, 128, 10, 12]}
    outs = [vi("y1", F, [1, 64, 13, 17]), vi("y2", F, [1, 70, 30, 30]),
            vi("y3", F, [2, 128, 9, 9]), vi("y4", F, [1, 96, 8, 8]), vi("y5", F, [1, 32, 8, 8]),
            vi("y6", F, [1, 128, 10, 12]), vi("y7", F, [1, 128, 10, 12]),
            vi("y8", F, [1, 128, 10, 12])]
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outs, inits, opset=14), shapes


def small_planes():
    """Convolutions whose few output columns give two threads (THREADS) one
    column task: the indirect GEMM cuts the output channels into parts of
    12-row blocks instead.  A 1x1 at 7x7 (49 columns) of 44 channels with a
    fused residual Add added after each part's tiles, one of 40 channels (a
    part ending in a 4-row panel), a 1x1 at 8x8 (64 columns: the residual in
    the AVX-512 tiles' store) and a 3x3 of stride 2 onto 7x7 through the
    linear rows, 40 channels from 8.  (Output channels that fill panels of
    32 with at most 1/9 padding take the blocked kernel instead:
    blocked_tiles.)"""
    nodes, inits = [], []

    def conv(name, src, cin, cout, k, stride=1):
        inits.extend([const(name + "_w", rand(cout, cin, k, k, scale=0.2)),
                      const(name + "_b", rand(cout))])
        nodes.append(helper.make_node("Conv", [src, name + "_w", name + "_b"], [name],
                                      kernel_shape=[k, k], pads=[k // 2] * 4,
                                      strides=[stride, stride]))

    conv("a", "x", 32, 44, 1)
    nodes.append(helper.make_node("Relu", ["a"], ["a1"]))
    conv("b", "a1", 44, 44, 1)
    nodes += residual_relu_square("b", "a1", "y1")
    conv("c", "a1", 44, 40, 1)
    nodes.append(helper.make_node("Relu", ["c"], ["y2"]))
    conv("d", "x8", 48, 48, 1)
    nodes += residual_relu_square("d", "x8", "y3")
    conv("e", "x14", 8, 40, 3, stride=2)
    nodes.append(helper.make_node("Relu", ["e"], ["y4"]))
    ins = [vi("x", F, [1, 32, 7, 7]), vi("x8", F, [1, 48, 8, 8]), vi("x14", F, [1, 8, 14, 14])]
    outs = [vi("y1", F, [1, 44, 7, 7]), vi("y2", F, [1, 40, 7, 7]), vi("y3", F, [1, 48, 8, 8]),
            vi("y4", F, [1, 40, 7, 7])]
    return model(nodes, ins, outs, inits), {"x": [1, 32, 7, 7], "x8": [1, 48, 8, 8],
                                           "x14": [1, 8, 14, 14]}


def blocked_tiles():
    """The blocked kernel's row tiles (at most 12 pixels, a row cut evenly),
    batch 2, two threads: 3x3 of stride 2 (rows of 9, one tile; a dilated
    one with asymmetric pads and a part channel block; two groups; strides
    2 x 1), 1x1 read in place where the GEMM's 32-column tiles would waste
    more than this kernel's stores cost (a 7x7 plane of 96 input channels:
    with a fused residual Add, into 5 panels; of stride 2 from 14x14), 5x5
    on rows of 17 (9 + 8) and 3x3 on a 7x7 plane (tiles of 7), with fused
    Relu / Clip / HardSwish; and fewer than 16 input channels (with at least
    128 products per output), from a padded copy in X's own layout: a 3x3
    of stride 2 from 15 channels, a 7x7 stem from 3 into 64, a dilated 5x5
    of stride 1 from 8 with asymmetric pads, a 5x5 of stride 2 in two groups
    of 8 channels."""
    n = 2
    convs = [  # name, input, cin, cout, kernel, attributes, activation
        ("t1", "x", 32, 64, (3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), "Relu"),
        ("t2", "x", 24, 30, (3, 3),
         dict(pads=[2, 1, 2, 3], dilations=[2, 2], strides=[2, 2]), "Clip"),
        ("t3", "x14", 96, 64, (1, 1), dict(strides=[2, 2]), "HardSwish"),
        ("t4", "x7", 96, 64, (1, 1), dict(), "Relu"),
        ("t5", "x7", 96, 96, (1, 1), dict(), "residual"),
        ("t6", "x", 32, 32, (5, 5), dict(pads=[2, 2, 2, 2]), None),
        ("t7", "x7", 64, 96, (3, 3), dict(pads=[1, 1, 1, 1]), "Clip"),
        ("t8", "x7", 96, 160, (1, 1), dict(), "Clip"),
        ("t9", "x", 32, 64, (3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2], group=2), None),
        ("t10", "x", 32, 32, (3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 1]), "Relu"),
        ("t11", "x", 15, 32, (3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), "Relu"),
        ("t12", "x3", 3, 64, (7, 7), dict(pads=[3, 3, 3, 3], strides=[2, 2]), None),
        ("t13", "x", 8, 32, (5, 5), dict(pads=[4, 3, 2, 5], dilations=[2, 2]), "Clip"),
        ("t14", "x", 16, 64, (5, 5), dict(pads=[2, 2, 2, 2], strides=[2, 2], group=2),
         "HardSwish"),
    ]
    shapes = {"x": [n, 32, 13, 17], "x7": [n, 96, 7, 7], "x14": [n, 96, 14, 14],
              "x3": [n, 3, 23, 29]}
    return conv_cases(convs, shapes), shapes


def gelu_isqrt2(h, out):
    """GELU of h written out with 1 / sqrt 2 as a Mul and the last Mul's
    operands swapped (constants isqrt2, one, half)."""
    return [helper.make_node("Mul", [h, "isqrt2"], [h + "d"]),
            helper.make_node("Erf", [h + "d"], [h + "e"]),
            helper.make_node("Add", [h + "e", "one"], [h + "e1"]),
            helper.make_node("Mul", [h + "e1", h], [h + "g"]),
            helper.make_node("Mul", ["half", h + "g"], [out])]


def transformer_elementwise():
    """The elementwise ops of transformer exports on their vector paths:
    GELU written out as PyTorch exports it (x / sqrt 2 -> Erf -> + 1 -> x *
    . -> * 0.5), fused as act GELU into the Mul before it, on values from
    -7 to 7 with every lane case (|x| < 1, >= 1, clamped; rows of 37: a
    scalar tail), and into a MatMul's bias Add (with 1 / sqrt 2 as a Mul
    and the last Mul's operands swapped); Erf alone; LayerNormalization
    with a bias and without, rows of 37 and 200 (statistics in double, a
    scalar tail), and with a scale that broadcasts (the general loop).
    KINDS: one Erf (the lone one) and no Div run."""
    nodes = [helper.make_node("Mul", ["xin", "seven"], ["x"]),  # inputs in [-1, 1)
             helper.make_node("Mul", ["xin", "seven"], ["xg"]),
             helper.make_node("Div", ["xg", "sqrt2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]),
             helper.make_node("Mul", ["xg", "e1"], ["g0"]),
             helper.make_node("Mul", ["g0", "half"], ["y1"]),
             helper.make_node("Erf", ["x"], ["y2"]),
             helper.make_node("LayerNormalization", ["x", "s37", "b37"], ["y3"], epsilon=1e-5),
             helper.make_node("LayerNormalization", ["w", "s200"], ["y4"]),
             helper.make_node("LayerNormalization", ["w3", "s1"], ["y5"], axis=-2),
             helper.make_node("MatMul", ["w", "mw"], ["mm"]),
             helper.make_node("Add", ["mw_b", "mm"], ["h"])] + gelu_isqrt2("h", "y6")
    inits = [const("seven", np.float32(7)), const("sqrt2", np.float32(np.sqrt(2))),
             const("one", np.float32(1)),
             const("half", np.float32(0.5)), const("s37", rand(37)), const("b37", rand(37)),
             const("s200", rand(200)), const("s1", rand(1, 20)),
             const("mw", rand(200, 48, scale=0.3)), const("mw_b", rand(48)),
             const("isqrt2", np.float32(1 / np.sqrt(2)))]
    shapes = {"xin": [5, 37], "w": [3, 200], "w3": [2, 10, 20]}
    outs = [vi("y1", F, [5, 37]), vi("y2", F, [5, 37]), vi("y3", F, [5, 37]),
            vi("y4", F, [3, 200]), vi("y5", F, [2, 10, 20]), vi("y6", F, [3, 48])]
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outs, inits), shapes


def matmul_bias():
    """The bias Add after a MatMul, which the CPU executor computes in the
    GEMM's tile store with the Add's activation (the Add's output internal:
    each read by a Neg): a [24] bias then Relu (24 columns: the AVX2 edge
    kernel), a [1, 1, 40] one then GELU written out (K 600: the bias and
    GELU on the last of three K blocks), a bias after a batched MatMul of two
    computed tensors, a single row; and what must stay an Add: a bias per
    row ([5, 1]), a whole [5, 24] matrix, a MatMul read by a second node
    too, an Add that is a graph output."""
    nodes = [helper.make_node("MatMul", ["x", "w24"], ["m1"]),
             helper.make_node("Add", ["m1", "b24"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MatMul", ["k", "w40"], ["m2"]),
             helper.make_node("Add", ["b40", "m2"], ["h"])] + gelu_isqrt2("h", "r2") + [
             helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "xt"], ["m3"]),
             helper.make_node("Add", ["m3", "b5"], ["r3"]),
             helper.make_node("MatMul", ["r", "w24"], ["m4"]),
             helper.make_node("Add", ["m4", "b24"], ["r4"]),
             helper.make_node("MatMul", ["x", "w24"], ["m5"]),
             helper.make_node("Add", ["m5", "b51"], ["r5"]),
             helper.make_node("MatMul", ["x", "w24"], ["m6"]),
             helper.make_node("Add", ["m6", "b524"], ["r6"]),
             helper.make_node("MatMul", ["x", "w24"], ["m7"]),
             helper.make_node("Add", ["m7", "b24"], ["r7"]),
             helper.make_node("Sigmoid", ["m7"], ["y8"]),
             helper.make_node("MatMul", ["x", "w24"], ["m9"]),
             helper.make_node("Add", ["m9", "b24"], ["y9"])]
    nodes += [helper.make_node("Neg", [f"r{i}"], [f"y{i}"]) for i in range(1, 8)]
    inits = [const("w24", rand(40, 24)), const("b24", rand(24)),
             const("w40", rand(600, 40, scale=0.1)), const("b40", rand(1, 1, 40)),
             const("b5", rand(5)), const("b51", rand(5, 1)), const("b524", rand(5, 24)),
             const("one", np.float32(1)), const("half", np.float32(0.5)),
             const("isqrt2", np.float32(1 / np.sqrt(2)))]
    shapes = {"x": [2, 5, 40], "k": [3, 7, 600], "r": [1, 40]}
    outs = [vi("y1", F, [2, 5, 24]), vi("y2", F, [3, 7, 40]), vi("y3", F, [2, 5, 5]),
            vi("y4", F, [1, 24]), vi("y5", F, [2, 5, 24]), vi("y6", F, [2, 5, 24]),
            vi("y7", F, [2, 5, 24]), vi("y8", F, [2, 5, 24]), vi("y9", F, [2, 5, 24])]
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outs, inits), shapes


def softmax_rows():
    """Softmax and LogSoftmax along rows of 7, 16, 37 and 197 (a masked
    last vector alone, one whole vector, full vectors and a tail, the
    two-chain maximum), LogSoftmax of values near 1000 (the log of the sum
    kept apart from the maximum), a row of equal values."""
    nodes, outs, inits, shapes = [], [], [const("big", np.float32(1000))], {}
    for n in (7, 16, 37, 197):
        shapes[f"x{n}"] = [3, n]
        nodes += [helper.make_node("Softmax", [f"x{n}"], [f"s{n}"], axis=-1),
                  helper.make_node("Add", [f"x{n}", "big"], [f"b{n}"]),
                  helper.make_node("LogSoftmax", [f"b{n}"], [f"l{n}"], axis=-1)]
        outs += [vi(f"s{n}", F, [3, n]), vi(f"l{n}", F, [3, n])]
    nodes.append(helper.make_node("Softmax", ["eq"], ["se"], axis=-1))
    inits.append(const("eq", np.full((2, 37), 3.0, np.float32)))
    outs.append(vi("se", F, [2, 37]))
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outs, inits), shapes


def silu_fusion():
    """SiLU written out as PyTorch exports it (Sigmoid, then a Mul of the
    tensor and its sigmoid: YOLO's and EfficientNet's activation), fused
    into its producer as act SILU: after a 3x3 Conv, a 1x1 one with the Mul's
    operands swapped, a depthwise Conv and a MatMul; after convolutions whose
    residual Add the CPU executor computes in them (SiLU, then the Add) on
    the GEMM and blocked paths (a last one, whose Add writes a graph output,
    stays a step of its own).  Left alone: a Sigmoid whose
    output is also a graph output, a tensor also read by a third node (a
    Relu), a Mul of a tensor and that one's sigmoid (KINDS: 2 Sigmoids, 3
    Muls run)."""
    nodes, inits = [], []

    def conv(name, src, cin, cout, k, group=1):
        inits.extend([const(name + "_w", rand(cout, cin // group, k, k, scale=0.3)),
                      const(name + "_b", rand(cout))])
        nodes.append(helper.make_node("Conv", [src, name + "_w", name + "_b"], [name],
                                      kernel_shape=[k, k], pads=[k // 2] * 4, group=group))

    def silu(t, out, swap=False):
        nodes.append(helper.make_node("Sigmoid", [t], [t + "_s"]))
        nodes.append(helper.make_node("Mul", [t + "_s", t] if swap else [t, t + "_s"], [out]))

    conv("a", "x", 16, 32, 3)
    silu("a", "y1")
    conv("b", "y1", 32, 32, 1)
    silu("b", "b1", swap=True)
    nodes.append(helper.make_node("Add", ["b1", "y1"], ["r1"]))       # GEMM 1x1 + residual
    conv("c", "r1", 32, 32, 3)
    silu("c", "c1")
    nodes.append(helper.make_node("Add", ["r1", "c1"], ["r2"]))       # 3x3 + residual
    conv("d", "r2", 32, 32, 5)
    silu("d", "d1")
    nodes.append(helper.make_node("Add", ["d1", "r2"], ["y2"]))       # 5x5 blocked + residual
    conv("e", "y1", 32, 32, 3, group=32)
    silu("e", "y3")                                                    # depthwise
    inits.append(const("mw", rand(40, 48, scale=0.2)))
    nodes.append(helper.make_node("MatMul", ["xm", "mw"], ["m"]))
    silu("m", "y4")                                                    # MatMul
    conv("f", "x", 16, 32, 1)
    silu("f", "y5")                                                    # kept: f_s is an output
    conv("g", "x", 16, 16, 1)
    silu("g", "y6")
    nodes.append(helper.make_node("Relu", ["g"], ["y7"]))             # kept: g read thrice
    conv("h", "x", 16, 16, 1)
    nodes.append(helper.make_node("Mul", ["h", "g_s"], ["y8"]))       # kept: another's sigmoid
    outs = [vi("y2", F, [1, 32, 12, 20]),
            vi("y3", F, [1, 32, 12, 20]), vi("y4", F, [1, 24, 48]), vi("y5", F, [1, 32, 12, 20]),
            vi("f_s", F, [1, 32, 12, 20]), vi("y6", F, [1, 16, 12, 20]),
            vi("y7", F, [1, 16, 12, 20]), vi("y8", F, [1, 16, 12, 20])]
    shapes = {"x": [1, 16, 12, 20], "xm": [1, 24, 40]}
    return model(nodes, [vi(k, F, v) for k, v in shapes.items()], outs, inits), shapes


def residual_fusion():
    """Residual Adds the CPU executor computes inside their Conv (the 1x1
    indirect GEMM, the blocked kernel, the indirect GEMM's linear rows, a
    depthwise convolution's whole-output pass; the Add's activation after
    it; a batch of 2; a 1x1 convolution of 24 output channels, whose 240
    pixels go in chunks of 64 with the residual added in the AVX-512 tiles'
    store, and a last chunk of 48 added after them) and ones it must leave
    alone (the other operand computed
    after the Conv, the Conv's output also a graph output, a broadcast Add)."""
    n, c, h, w = 2, 32, 12, 20

    def conv(name, src, cout, k, cin=c, group=1, **attrs):
        inits.append(const(name + "_w", rand(cout, cin // group, k, k, scale=0.2)))
        inits.append(const(name + "_b", rand(cout)))
        nodes.append(helper.make_node("Conv", [src, name + "_w", name + "_b"], [name],
                                      kernel_shape=[k, k], pads=[k // 2] * 4, group=group,
                                      **attrs))

    nodes, inits = [], []
    conv("a", "x", c, 1)
    nodes += [helper.make_node("Add", ["a", "x"], ["a1"]),
              helper.make_node("Relu", ["a1"], ["y1"])]             # r: a stage input
    conv("b", "y1", c, 3)
    nodes.append(helper.make_node("Add", ["y1", "b"], ["y2"]))      # blocked, operands swapped
    conv("d", "y2", c, 3, cin=c, group=c)
    nodes += [helper.make_node("Add", ["d", "y2"], ["d1"]),
              helper.make_node("Clip", ["d1", "zero", "six"], ["y3"])]  # depthwise
    conv("m", "y3", 24, 1)
    conv("l", "y3", 24, 3)
    nodes += [helper.make_node("Add", ["l", "m"], ["y4"]),         # linear rows, r computed
              helper.make_node("Mul", ["y4", "y4"], ["y4r"])]
    conv("p", "y4", 24, 1, cin=24)
    # 1x1, 24 rows: the residual in the AVX-512 tiles' store
    nodes += residual_relu_square("p", "y4", "y6")
    conv("e", "y3", c, 1)
    nodes += [helper.make_node("Sigmoid", ["y3"], ["s"]),
              helper.make_node("Add", ["e", "s"], ["y5"])]          # r computed after: kept
    conv("g", "y5", c, 1)
    nodes.append(helper.make_node("Add", ["g", "y5"], ["y"]))       # g also an output: kept
    conv("q", "y5", c, 1)
    nodes.append(helper.make_node("Add", ["q", "cb"], ["z"]))       # broadcast: kept
    inits += [const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32)),
              const("cb", rand(1, c, 1, 1))]
    outs = [vi("y", F, [n, c, h, w]), vi("g", F, [n, c, h, w]), vi("z", F, [n, c, h, w]),
            vi("y4r", F, [n, 24, h, w]), vi("y6", F, [n, 24, h, w])]
    return model(nodes, [vi("x", F, [n, c, h, w])], outs, inits), {"x": [n, c, h, w]}


def winograd():
    """3x3 stride-1 convolutions through Winograd F(4x4, 3x3), on two threads
    (THREADS): outputs whose sides are not multiples of 4 (part tiles at the
    right and bottom), asymmetric pads and none, 20 input channels (a part
    channel block), 96 output channels (three panels) and 60 (a part panel),
    no bias, fused Clip and HardSwish, a residual Add with Relu, a batch of
    2, 50 tiles a plane (on two threads: 24 tiles, then 26 in chunks of 24
    and 2), dilations 2 x 3 (6 phases of tiles whose pixels are 2 rows and 3
    columns apart, some tiles partly or wholly past the output) with a
    residual Add, two groups of 32 channels; and a residual Add on the
    blocked kernel's 5x5 convolution, which Winograd leaves to it."""
    n, c, h, w = 2, 20, 19, 39
    nodes, inits = [], [const("zero", np.array(0, np.float32)), const("six", np.array(6, np.float32))]

    def conv(name, src, cin, cout, bias=True, **attrs):
        inits.append(const(name + "_w", rand(cout, cin, 3, 3, scale=0.2)))
        ins = [src, name + "_w"]
        if bias:
            inits.append(const(name + "_b", rand(cout)))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name + "_c"], kernel_shape=[3, 3], **attrs))

    conv("w1", "x", c, 64, pads=[1, 0, 1, 2])                       # 19 x 39: 5 x 10 tiles
    nodes.append(helper.make_node("Clip", ["w1_c", "zero", "six"], ["w1"]))
    conv("w2", "w1", 64, 96, bias=False, pads=[0, 0, 0, 0])         # 17 x 37, three panels
    nodes.append(helper.make_node("HardSwish", ["w2_c"], ["w2"]))
    conv("w3", "w2", 96, 60, pads=[1, 1, 1, 1])                     # a part panel
    conv("w4", "w2", 96, 96, pads=[1, 1, 1, 1])
    # residual Adds (computed in the Conv: their outputs internal)
    nodes += [helper.make_node("Add", ["w4_c", "w2"], ["w4a"]),
              helper.make_node("Relu", ["w4a"], ["w4r"]),
              helper.make_node("Neg", ["w4r"], ["y"])]
    inits.append(const("g1_w", rand(64, 32, 3, 3, scale=0.2)))     # two groups of 32 -> 32
    nodes.append(helper.make_node("Conv", ["w1", "g1_w"], ["g1"], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1], group=2))
    conv("d1", "w1", 64, 64, pads=[2, 3, 2, 3], dilations=[2, 3])   # phases of 10 x 13
    nodes += [helper.make_node("Add", ["w1", "d1_c"], ["d1a"]),
              helper.make_node("Neg", ["d1a"], ["d"])]
    inits.append(const("b1_w", rand(64, 64, 5, 5, scale=0.1)))      # blocked kernel
    nodes += [helper.make_node("Conv", ["w1", "b1_w"], ["b1_c"], kernel_shape=[5, 5],
                               pads=[2, 2, 2, 2]),
              helper.make_node("Add", ["w1", "b1_c"], ["b1a"]),
              helper.make_node("Neg", ["b1a"], ["b"])]
    outs = [vi("w3_c", F, [n, 60, 17, 37]), vi("y", F, [n, 96, 17, 37]), vi("d", F, [n, 64, h, w]),
            vi("b", F, [n, 64, h, w]), vi("g1", F, [n, 64, h, w])]
    return model(nodes, [vi("x", F, [n, c, h, w])], outs, inits), {"x": [n, c, h, w]}


def pools_s2():
    """Max and average pools of stride 2 along W through the AVX2 rows
    (8 outputs a step, the taps' even columns): ResNet's 3x3 max pool with
    pads of 1, 2x2 (its own two-row path; with a padded last row and
    column) and 5x3 windows, average pools counting the pads and
    not, rows of 113 and 57 inputs (the last steps left to the scalar loop
    where a step's loads would pass the row's end)."""
    shape = [1, 6, 29, 113]
    nodes = [helper.make_node("MaxPool", ["x"], ["m3"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["x"], ["m2"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxPool", ["x"], ["m2p"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[0, 0, 1, 1]),
             helper.make_node("MaxPool", ["x"], ["m53"], kernel_shape=[5, 3], strides=[1, 2],
                              pads=[2, 0, 2, 1]),
             helper.make_node("AveragePool", ["x"], ["a3"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], count_include_pad=1),
             helper.make_node("AveragePool", ["x"], ["a3n"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Slice", ["x", "s0", "e57", "a3i"], ["x57"]),
             helper.make_node("MaxPool", ["x57"], ["m57"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    inits = [const("s0", np.array([0], np.int64)), const("e57", np.array([57], np.int64)),
             const("a3i", np.array([3], np.int64))]
    outs = [vi(n, F, [1, 6, None, None]) for n in ("m3", "m2", "m2p", "m53", "a3", "a3n", "m57")]
    return model(nodes, [vi("x", F, shape)], outs, inits), {"x": shape}


def concat_chunks():
    """Concat copied in 256 KiB chunks of the output on two threads (THREADS):
    chunks that start and end inside a part's row, parts of odd byte
    lengths, an empty part, along axis 1 (one output row of 1.9 MiB) and
    axis 2 (many short rows)."""
    a, b, e, d = [1, 5, 301, 163], [1, 3, 301, 163], [1, 0, 301, 163], [1, 2, 301, 163]
    nodes = [helper.make_node("Concat", ["a", "b", "e", "d"], ["y1"], axis=1),
             helper.make_node("Concat", ["a", "a"], ["y2"], axis=2)]
    ins = [vi("a", F, a), vi("b", F, b), vi("e", F, e), vi("d", F, d)]
    return (model(nodes, ins, [vi("y1", F, [1, 10, 301, 163]), vi("y2", F, [1, 5, 602, 163])]),
            {"a": a, "b": b, "e": e, "d": d})


# cases run with more than one intra-op thread: case -> threads
THREADS = {concat_chunks: 2, winograd: 2, small_planes: 2, blocked_tiles: 2, stems: 2,
           pointwise_lanes: 2, matmul_bias: 2}

def cpu_has_avx512():
    """Whether nnpipe's AVX-512 kernels run here (F and DQ, as cpu-gemm.c asks)."""
    if os.environ.get("NNPIPE_CPU_NO_AVX512") or os.environ.get("NNPIPE_CPU_GENERIC"):
        return False
    try:
        flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx512f" in flags and "avx512dq" in flags


# the kernels a case must have run (`--profile` rows: kind -> nodes), on a
# CPU with AVX-512 (elsewhere these convolutions take the direct kernels)
KINDS = {"winograd": {"Conv 3x3 s1 winograd": 6, "Conv 5x5 s1 blocked": 1},
         "blocked_tiles": {"Conv 3x3 s2 blocked": 4, "Conv 3x3 s1 blocked": 2,
                           "Conv 1x1 s2 blocked": 1, "Conv 1x1 s1 blocked": 3,
                           "Conv 5x5 s1 blocked": 2, "Conv 5x5 s2 blocked": 1,
                           "Conv 7x7 s2 blocked": 1},
         "small_planes": {"Conv 1x1 s1 gemm": 4, "Conv 3x3 s2 direct": 1},
         "silu_fusion": {"Sigmoid": 2, "Mul": 3},
         "transformer_elementwise": {"Erf": 1, "Div": 0}}

# what must still be refused: case -> strings nnpipe's error names
REFUSED = {loop_growing: ["data-dependent tail from node 'loop' (Loop)",
                          "loop-carried value 0 changes its type or shape"]}


CASES = [conv_kernels, depthwise_rows, depthwise_small, stems, pointwise_lanes, small_planes, blocked_tiles, winograd, pools_s2, concat_chunks, transformer_elementwise, matmul_bias, softmax_rows, silu_fusion, residual_fusion, lstm_bidi, gru_reverse, gru_default, rnn_relu, vit_block, super_res, style, opset7,
         signal, reductions, indexing, losses, sampling, einsum, control_flow, detect_nms,
         detect_nms_batch2_center, nonzero_gathernd, topk_range_computed, loop_growing]

NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.INT64: np.int64,
         TensorProto.INT32: np.int32, TensorProto.BOOL: np.bool_}


def run(cmd, log):
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   f"nnp-ops-vs-ort-{os.getpid()}"))
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--only", help="run the cases whose name contains SUBSTR")
    opts = ap.parse_args()
    nnpipe = os.environ.get("NNPIPE")
    ort = os.environ.get("NNP_ORT")
    if not nnpipe or not ort:
        print("FAIL: ops-vs-ort: NNPIPE and NNP_ORT must name the tools (tests/meson.build)")
        return 1
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    passed = failed = 0
    for make in CASES:
        name = make.__name__
        if opts.only and opts.only not in name:
            continue
        m, shapes = make()
        path = os.path.join(opts.work, name + ".onnx")
        onnx.save(m, path)
        shape_args = [f"--shape={k}={','.join(map(str, v))}" for k, v in shapes.items()]
        dirs = {t: os.path.join(opts.work, name, t) for t in ("nnpipe", "ort")}
        for d in dirs.values():
            os.makedirs(d)
        kinds = KINDS.get(name) if cpu_has_avx512() else None
        rc_n = run([nnpipe, "run", path, *shape_args, "--output-dir", dirs["nnpipe"],
                    "--threads", str(THREADS.get(make, 1))] + (["--profile"] if kinds else []),
                   dirs["nnpipe"] + ".log")
        rc_o = run([ort, path, *shape_args, "--output-dir", dirs["ort"]], dirs["ort"] + ".log")
        if rc_o == 77:
            print(f"FAIL: ONNX Runtime not available: run tools/fetch-models.sh "
                  f"({open(dirs['ort'] + '.log').read().strip()})")
            return 1
        if make in REFUSED:
            log = open(dirs["nnpipe"] + ".log").read().strip()
            lacks = [w for w in REFUSED[make] if w not in log]
            good = rc_n != 0 and rc_o == 0 and not lacks
            print(f"{name}: refused: {log}" if good else
                  f"FAIL {name}: expected a refusal naming {lacks or REFUSED[make]} "
                  f"(nnpipe rc={rc_n}, nnp-ort rc={rc_o}): {log}")
            passed, failed = passed + good, failed + (not good)
            continue
        ok = rc_n == 0 and rc_o == 0
        for kind, want in (kinds or {}).items() if rc_n == 0 else ():
            got_n = next((int(ln[len(kind):].split()[0]) for ln in open(dirs["nnpipe"] + ".log")
                          if ln.startswith(kind + " ")), 0)
            print(f"{name}: {got_n} node(s) of {kind}{'' if got_n == want else f'  FAIL: expected {want}'}")
            ok = ok and got_n == want
        if rc_n != 0:
            print(f"FAIL {name}: nnpipe run failed: {open(dirs['nnpipe'] + '.log').read().strip()}")
        if rc_o != 0:
            print(f"FAIL {name}: nnp-ort failed: {open(dirs['ort'] + '.log').read().strip()}")
        for out in (m.graph.output if ok else []):
            dt = NP_OF[out.type.tensor_type.elem_type]
            files = [os.path.join(dirs[t], out.name + ".raw") for t in ("nnpipe", "ort")]
            if not all(os.path.exists(f) for f in files):
                print(f"FAIL {name}: output {out.name} missing")
                ok = False
                continue
            got, ref = (np.fromfile(f, dtype=dt) for f in files)
            if got.shape != ref.shape:
                print(f"FAIL {name}: {out.name}: {got.size} elements, ONNX Runtime {ref.size}")
                ok = False
            elif dt == np.float32:
                err = float(np.max(np.abs(got - ref))) if got.size else 0.0
                mag = float(np.max(np.abs(ref))) if ref.size else 0.0
                good = np.all(np.isfinite(got) == np.isfinite(ref)) and err <= 1e-4 * max(mag, 1e-30)
                print(f"{name} {out.name}: max_abs_err={err:.3g} max_abs_ref={mag:.3g}"
                      f"{'' if good else '  FAIL'}")
                ok = ok and bool(good)
            else:
                good = np.array_equal(got, ref)
                print(f"{name} {out.name}: {'equal' if good else 'DIFFERENT  FAIL'}")
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

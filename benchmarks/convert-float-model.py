#!/usr/bin/python3
"""Write a copy of an ONNX model with its floats in another precision: the
benchmarks' "ISNet float32 (converted)" beside the float16 model as shipped,
and the float16 form of a float32 model that tests/models/compare-vision.sh
checks against ONNX Runtime.

Usage: convert-float-model.py --to float32|float16 IN.onnx OUT.onnx

--to float32: float16 initializers and Constant / ConstantOfShape values
    become float32, Casts to float16 become Casts to float32 (identities),
    float16 inputs, outputs and value_infos become float32: the same graph
    computed in float32 throughout.
--to float16: the reverse for a float32 model, inputs and outputs included
    (as onnxconverter-common's float16 conversion without keep_io_types),
    except the tensors ONNX requires in float32 (Resize's scales, Upsample's
    scales); value_infos are dropped (ONNX Runtime infers them again).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper


def main():
    args = sys.argv[1:]
    if len(args) != 4 or args[0] != "--to" or args[1] not in ("float32", "float16"):
        print(__doc__.strip())
        sys.exit(0 if args and args[0] in ("-h", "--help") else 2)
    to16 = args[1] == "float16"
    src, dst = (TensorProto.FLOAT, TensorProto.FLOAT16) if to16 else \
        (TensorProto.FLOAT16, TensorProto.FLOAT)
    np_dst = np.float16 if to16 else np.float32
    model = onnx.load(args[2])
    g = model.graph
    keep = set()  # float32 by the operator's definition
    for node in g.node:
        if node.op_type in ("Resize", "Upsample"):
            k = 2 if node.op_type == "Resize" else 1
            if len(node.input) > k:
                keep.add(node.input[k])

    def convert(t):
        if t.data_type != src or t.name in keep:
            return None
        return numpy_helper.from_array(numpy_helper.to_array(t).astype(np_dst), t.name)

    for i, t in enumerate(g.initializer):
        c = convert(t)
        if c is not None:
            g.initializer[i].CopyFrom(c)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and not set(node.output) & keep:
                c = convert(a.t)
                if c is not None:
                    a.t.CopyFrom(c)
            if node.op_type == "Cast" and a.name == "to" and a.i == src:
                a.i = dst
    for vi in list(g.input) + list(g.output):
        if vi.type.tensor_type.elem_type == src:
            vi.type.tensor_type.elem_type = dst
    if to16:
        del g.value_info[:]
    else:
        for vi in g.value_info:
            if vi.type.tensor_type.elem_type == src:
                vi.type.tensor_type.elem_type = dst
    onnx.save(model, args[3])


if __name__ == "__main__":
    main()

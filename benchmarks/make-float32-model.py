#!/usr/bin/python3
"""Write a float32 copy of a float16 ONNX model (the benchmarks' "ISNet float32
(converted)" beside the float16 model as shipped).

Usage: make-float32-model.py IN.onnx OUT.onnx

float16 initializers and Constant / ConstantOfShape values become float32,
Casts to float16 become Casts to float32 (identities), and every float16
input, output and value_info becomes float32: the same graph computed in
float32 throughout, without the float16 rounding at the model's Casts.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper


def widen(t):
    """A float32 TensorProto for a float16 one (else None)."""
    if t.data_type != TensorProto.FLOAT16:
        return None
    w = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)
    return w


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    model = onnx.load(sys.argv[1])
    g = model.graph
    for i, t in enumerate(g.initializer):
        w = widen(t)
        if w is not None:
            g.initializer[i].CopyFrom(w)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                w = widen(a.t)
                if w is not None:
                    a.t.CopyFrom(w)
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT16:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write a float32 copy of a float16 ONNX model (python3-onnx).

    tools/onnx-fp32.py IN.onnx OUT.onnx

Every float16 tensor becomes float32: initializers, Constant and
ConstantOfShape values, Cast nodes to float16 (they cast to float32
instead), the types of the graph's inputs, outputs and value_info.  The
computation is the same at float32 precision.  Until libnnpipe runs
float16 graphs this is how pipelines/background.sh runs ISNet
(isnet_fp16.onnx)."""
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper
except ImportError as e:
    sys.exit(f"onnx-fp32: {e}: install python3-onnx and python3-numpy")


def tensor32(t):
    if t.data_type != TensorProto.FLOAT16:
        return t
    a = numpy_helper.to_array(t).astype(np.float32)
    return numpy_helper.from_array(a, t.name)


def graph32(g):
    n = 0
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT16:
            g.initializer[i].CopyFrom(tensor32(t))
            n += 1
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16:
                a.t.CopyFrom(tensor32(a.t))
                n += 1
            elif a.type == onnx.AttributeProto.GRAPH:
                n += graph32(a.g)
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
                n += 1
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT16:
            tt.elem_type = TensorProto.FLOAT
            n += 1
    return n


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    m = onnx.load(sys.argv[1])
    n = graph32(m.graph)
    onnx.save(m, sys.argv[2])
    print(f"{sys.argv[2]}: {n} float16 tensors, casts and types made float32")


main()

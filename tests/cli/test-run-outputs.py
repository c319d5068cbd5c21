#!/usr/bin/python3
"""`nnpipe run --output-dir` writes every graph output, in graph order, as
NAME.raw plus outputs.json, including an output that specialisation folded
into a constant, and the --input file is used as given.

    test-run-outputs.py NNPIPE WORKDIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

nnpipe, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

# y = Relu(x) (computed), "k/sum" = c + c (folded to a constant at specialisation)
c = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.float32), "c")
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Add", ["c", "c"], ["k/sum"])],
    "outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2]),
     helper.make_tensor_value_info("k/sum", TensorProto.FLOAT, [3])], [c])
model = os.path.join(work, "outputs.onnx")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)

x = np.array([[-1.5, 2.0], [0.25, -3.0]], dtype=np.float32)
x_path = os.path.join(work, "x.raw")
x.tofile(x_path)
out = os.path.join(work, "out")
subprocess.run([nnpipe, "run", model, "--input", "x=" + x_path, "--output-dir", out], check=True,
               stdout=subprocess.DEVNULL)

failures = 0
shapes = json.load(open(os.path.join(out, "outputs.json")))
if list(shapes.items()) != [("y", [2, 2]), ("k/sum", [3])]:
    print("FAIL: outputs.json is", shapes)
    failures += 1
y = np.fromfile(os.path.join(out, "y.raw"), dtype=np.float32)
if not np.array_equal(y, np.maximum(x, 0).ravel()):
    print("FAIL: y.raw is", y)
    failures += 1
k_path = os.path.join(out, "k_sum.raw")   # '/' is replaced by '_'
k = np.fromfile(k_path, dtype=np.float32) if os.path.exists(k_path) else None
if k is None or not np.array_equal(k, [2, 4, 6]):
    print("FAIL: k_sum.raw is", k)
    failures += 1
print("%d passed, %d failed" % (3 - failures, failures))
sys.exit(1 if failures else 0)

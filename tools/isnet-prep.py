#!/usr/bin/python3
"""isnet-prep.py: inputs of the ISNet test and benchmark (docs/int8.md).

  tools/isnet-prep.py photo OUT.raw [SIZE]
      a real photo (scikit-image's "astronaut", NASA, public domain, 512x512
      RGB) scaled to SIZE x SIZE (default 1024, nearest neighbour), written
      as a float32 NCHW tensor [1, 3, SIZE, SIZE] with values in about
      [-0.5, 0.5]: (pixel - 128) / 256
  tools/isnet-prep.py fp32 IN.onnx OUT.onnx
      the float16 ISNet ("medium", isnet_fp16.onnx) as a float32 model:
      float16 initializers, Constant tensors and Cast targets become float32
      (python3-onnx), for the float32 rows of benchmarks/int8.sh
"""
import sys


def photo(out, size):
    import numpy as np
    from skimage import data

    img = data.astronaut().astype(np.float32)  # 512 x 512 x 3, uint8 values
    idx = (np.arange(size) * img.shape[0]) // size
    img = img[idx][:, idx]
    t = ((img - 128.0) / 256.0).transpose(2, 0, 1)[None]
    np.ascontiguousarray(t, dtype=np.float32).tofile(out)


def fp32(src, dst):
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    m = onnx.load(src)
    for t in m.graph.initializer:
        if t.data_type == TensorProto.FLOAT16:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    for n in m.graph.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    onnx.save(m, dst)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    if argv[1] == "photo" and len(argv) in (3, 4):
        photo(argv[2], int(argv[3]) if len(argv) == 4 else 1024)
    elif argv[1] == "fp32" and len(argv) == 4:
        fp32(argv[2], argv[3])
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/python3
"""Write the ONNX project's operator conformance cases into OUTDIR.

    generate.py OUTDIR [OP_TYPE]

Uses the onnx Python package (Debian: python3-onnx, 1.12) and nothing from
the network.  Used by tests/meson.build when Debian's libonnx-testdata is not
installed.  Output: OUTDIR/node/<case>/model.onnx + test_data_set_N/*.pb,
OUTDIR/simple/..., and a stamp file OUTDIR/.complete written last.
"""
import argparse
import os
import sys


def restore_numpy_aliases():
    # onnx 1.12's case scripts use aliases numpy 1.24 removed.
    import numpy
    for alias, real in (("float", float), ("int", int), ("bool", bool),
                        ("object", object), ("complex", complex), ("str", str)):
        if alias not in numpy.__dict__:
            setattr(numpy, alias, real)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("op_type", nargs="?", default=None)
    parser.add_argument("--stamp", help="file to touch when done (build systems)")
    opts = parser.parse_args()

    try:
        restore_numpy_aliases()
        from onnx.backend.test.cmd_tools import generate_data
    except ImportError as e:
        # Not fatal for a build: the conformance tests then find no cases and
        # report themselves skipped.
        print(f"generate.py: cannot generate cases, the onnx Python package is missing ({e})",
              file=sys.stderr)
        if opts.stamp:
            with open(opts.stamp, "w") as f:
                f.write("no onnx\n")
        return 0

    args = argparse.Namespace(output=opts.outdir,
                              op_type=opts.op_type)
    os.makedirs(opts.outdir, exist_ok=True)
    generate_data(args)
    with open(os.path.join(opts.outdir, ".complete"), "w") as f:
        f.write("ok\n")
    if opts.stamp:
        with open(opts.stamp, "w") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

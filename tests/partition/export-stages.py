"""nnpipe split --export: each exported stage is a valid ONNX model
(onnx.checker with shape inference, and our own loader via `nnpipe inspect`)
that ONNX Runtime runs to nnpipe's stage outputs (max abs err / max abs ref
<= 1e-4, tests/models/compare-raw), on test models built here (fused
Clip / HardSwish / HardSigmoid / LeakyRelu / SiLU / GELU / BatchNormalization, a graph input
read late, two outputs) and on the PaddleOCR detector and recognizer.  Then
the bad inputs: an export directory that cannot be created, a plan made for
another model.
Usage: export-stages.py NNPIPE NNP_ORT COMPARE_RAW STAGE_IO WORKDIR"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NNPIPE, NNP_ORT, COMPARE_RAW, STAGE_IO, WORK = sys.argv[1:6]
SRC = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(SRC, ".cache", "models")
rng = np.random.default_rng(11)
failures = []


def w(name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def fused_model(path, opset):
    """Every activation the fusion pass folds into a Conv, BN folding, a graph
    input read by the last node and two graph outputs (one produced early)."""
    n, inits = [], []
    c = 6

    def conv(x, y, cin):
        inits.extend([w(y + "_w", c, cin, 3, 3), w(y + "_b", c)])
        n.append(helper.make_node("Conv", [x, y + "_w", y + "_b"], [y], pads=[1] * 4))

    conv("x", "c0", 3)
    inits += [numpy_helper.from_array(np.float32(v), k) for k, v in (("lo", 0.0), ("hi", 6.0))]
    n.append(helper.make_node("Clip", ["c0", "lo", "hi"], ["a0"]))
    conv("a0", "c1", c)
    inits += [numpy_helper.from_array(a.astype(np.float32), k) for k, a in
              (("bn_s", rng.uniform(0.5, 1.5, c)), ("bn_b", rng.standard_normal(c)),
               ("bn_m", rng.standard_normal(c) * 0.1), ("bn_v", rng.uniform(0.5, 1.5, c)))]
    n.append(helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["b1"]))
    if opset >= 14:
        n.append(helper.make_node("HardSwish", ["b1"], ["a1"]))
    else:  # written out as Paddle does: x * Clip(x + 3, 0, 6) / 6
        inits += [numpy_helper.from_array(np.float32(v), k) for k, v in (("three", 3.0),
                                                                        ("six", 6.0))]
        n.append(helper.make_node("Add", ["b1", "three"], ["hs_a"]))
        n.append(helper.make_node("Clip", ["hs_a", "lo", "hi"], ["hs_c"]))
        n.append(helper.make_node("Mul", ["b1", "hs_c"], ["hs_m"]))
        n.append(helper.make_node("Div", ["hs_m", "six"], ["a1"]))
    n.append(helper.make_node("Sigmoid", ["a1"], ["early"]))
    conv("a1", "c2", c)
    n.append(helper.make_node("LeakyRelu", ["c2"], ["a2"], alpha=0.1))
    conv("a2", "c3", c)
    n.append(helper.make_node("HardSigmoid", ["c3"], ["a3"], alpha=0.2, beta=0.4))
    conv("a3", "c4", c)
    n.append(helper.make_node("Relu", ["c4"], ["a4"]))
    conv("a4", "c5", c)  # SiLU as PyTorch writes it: Sigmoid, Mul
    n.append(helper.make_node("Sigmoid", ["c5"], ["c5_s"]))
    n.append(helper.make_node("Mul", ["c5", "c5_s"], ["a5"]))
    conv("a5", "c6", c)  # GELU as PyTorch writes it: / sqrt 2, Erf, + 1, * x, * 0.5
    inits += [numpy_helper.from_array(np.float32(v), k) for k, v in (("sqrt2", np.sqrt(2)),
                                                                    ("g_one", 1.0),
                                                                    ("g_half", 0.5))]
    n.append(helper.make_node("Div", ["c6", "sqrt2"], ["g_d"]))
    n.append(helper.make_node("Erf", ["g_d"], ["g_e"]))
    n.append(helper.make_node("Add", ["g_e", "g_one"], ["g_e1"]))
    n.append(helper.make_node("Mul", ["c6", "g_e1"], ["g_m"]))
    n.append(helper.make_node("Mul", ["g_m", "g_half"], ["a6"]))
    n.append(helper.make_node("Mul", ["a6", "early"], ["m"]))
    inits.extend([w("p_w", 3, c, 1, 1), w("p_b", 3)])
    n.append(helper.make_node("Conv", ["m", "p_w", "p_b"], ["p"]))
    n.append(helper.make_node("Add", ["p", "x"], ["late"]))
    g = helper.make_graph(n, "fused%d" % opset,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                          [helper.make_tensor_value_info("late", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("early", TensorProto.FLOAT, None)],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if (p.returncode == 0) != expect_ok:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def check_case(tag, model, shape, stages):
    d = os.path.join(WORK, tag)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    plan_path, exp, io = (os.path.join(d, x) for x in ("plan.json", "export", "io"))
    run([NNPIPE, "split", model, "--shape", shape, "--stages", str(stages), "--estimate",
         "-o", plan_path, "--export", exp])
    run([STAGE_IO, model, plan_path, io])
    plan = json.load(open(plan_path))
    assert len(plan["stages"]) == stages, "%s: %d stages planned" % (tag, len(plan["stages"]))
    files = sorted(os.listdir(exp))
    assert files == ["stage-%d.onnx" % k for k in range(stages)], files
    for k, st in enumerate(plan["stages"]):
        f = os.path.join(exp, "stage-%d.onnx" % k)
        m = onnx.load(f)
        onnx.checker.check_model(m, full_check=True)
        ins = [v.name for v in m.graph.input]
        outs = [v.name for v in m.graph.output]
        assert ins == st["inputs"] and outs == st["outputs"], \
            "%s stage %d: file %s -> %s, plan %s -> %s" % (tag, k, ins, outs, st["inputs"], st["outputs"])
        insp = run([NNPIPE, "inspect", f]).stdout
        assert "opset %d" % m.opset_import[0].version in insp, insp
        lines = [l.split() for l in open(os.path.join(io, "stage-%d" % k, "io.txt"))]
        ort_dir = os.path.join(d, "ort-%d" % k)
        os.makedirs(ort_dir)
        cmd = [NNP_ORT, f, "--output-dir", ort_dir]
        for kind, i, name, dtype, dims in lines:
            if kind == "in":
                cmd += ["--shape", "%s=%s" % (name, dims),
                        "--input", "%s=%s" % (name, os.path.join(io, "stage-%d" % k, "in-%s.raw" % i))]
        run(cmd)
        # the same file run by nnpipe itself (our loader, fusing again)
        nnp_dir = os.path.join(d, "nnpipe-%d" % k)
        run([NNPIPE, "run", f, "--output-dir", nnp_dir] + cmd[4:])
        for kind, i, name, dtype, dims in lines:
            if kind != "out":
                continue
            ref = os.path.join(io, "stage-%d" % k, "out-%s.raw" % i)
            for who, out_dir in (("ORT", ort_dir), ("nnpipe on the file", nnp_dir)):
                got = os.path.join(out_dir, sanitize(name) + ".raw")
                if open(got, "rb").read() == open(ref, "rb").read():
                    ok, note = True, "bit-exact"
                elif dtype == "float32":
                    p = subprocess.run([COMPARE_RAW, got, ref], capture_output=True, text=True)
                    ok, note = p.returncode == 0, p.stdout.strip()
                else:
                    ok, note = False, "bytes differ"
                print("%s stage %d output %s (%s %s): %s vs nnpipe's stage: %s%s" %
                      (tag, k, name, dtype, dims, who, note, "" if ok else "  FAIL"))
                if not ok:
                    failures.append("%s stage %d output %s (%s)" % (tag, k, name, who))
        print("%s stage %d: %d nodes in the plan, %d ONNX nodes, %d initializers, checker ok" %
              (tag, k, len(st["nodes"]), len(m.graph.node), len(m.graph.initializer)))
    return plan_path


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for opset in (13, 14):
        path = os.path.join(WORK, "fused%d.onnx" % opset)
        fused_model(path, opset)
        for stages in (2, 3):
            check_case("fused%d-%d" % (opset, stages), path, "x=1,3,12,12", stages)
    # a hand-edited plan listing a stage's nodes out of order: the file is still sorted
    plan = json.load(open(os.path.join(WORK, "fused14-2", "plan.json")))
    plan["stages"][1]["nodes"].reverse()
    plan["model"] = os.path.join(WORK, "fused14.onnx")
    rev = os.path.join(WORK, "reversed.json")
    json.dump(plan, open(rev, "w"))
    run([NNPIPE, "split", plan["model"], "--plan", rev, "--export", os.path.join(WORK, "rev")])
    onnx.checker.check_model(onnx.load(os.path.join(WORK, "rev", "stage-1.onnx")), full_check=True)
    small_plan = check_case("small", os.path.join(SRC, "tests", "data", "small.onnx"),
                            "x=1,3,8,8", 2)
    det = os.path.join(MODELS, "ch_PP-OCRv4_det_infer.onnx")
    rec = os.path.join(MODELS, "ch_PP-OCRv4_rec_infer.onnx")
    for m in (det, rec):
        if not os.path.exists(m):
            raise SystemExit("missing %s: run tools/setup.sh (it fetches the PaddleOCR models)" % m)
    check_case("det", det, "x=1,3,640,640", 3)
    check_case("rec", rec, "x=1,3,48,320", 2)

    # bad input: the export directory cannot be created (a regular file is in the way)
    blocker = os.path.join(WORK, "not-a-dir")
    open(blocker, "w").close()
    p = run([NNPIPE, "split", os.path.join(SRC, "tests", "data", "small.onnx"), "--shape",
             "x=1,3,8,8", "--stages", "2", "--estimate", "--export", os.path.join(blocker, "sub")],
            expect_ok=False)
    assert "cannot create export directory" in p.stderr and "sub" in p.stderr, p.stderr
    print("unwritable export directory:", p.stderr.strip())
    # bad input: a stage file that cannot be written (a directory has its name; tests run
    # as root in CI, so a chmod'ed directory would not stop the write)
    blocked = os.path.join(WORK, "blocked")
    os.makedirs(os.path.join(blocked, "stage-0.onnx"))
    p = run([NNPIPE, "split", os.path.join(SRC, "tests", "data", "small.onnx"), "--plan",
             small_plan, "--export", blocked], expect_ok=False)
    assert "cannot write stage 0" in p.stderr and "stage-0.onnx" in p.stderr, p.stderr
    print("unwritable stage file:", p.stderr.strip())
    # bad input: a plan made for another model
    p = run([NNPIPE, "split", det, "--plan", small_plan, "--export", os.path.join(WORK, "x")],
            expect_ok=False)
    assert "made for another model" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(WORK, "x")), "exported despite the wrong plan"
    print("plan for another model:", p.stderr.strip())
    # --plan alone is a usage error (it only says what to export)
    p = run([NNPIPE, "split", det, "--plan", small_plan], expect_ok=False)
    assert p.returncode == 2 and "--plan needs --export" in p.stderr, p.stderr
    # the same plan with its own model exports
    run([NNPIPE, "split", os.path.join(SRC, "tests", "data", "small.onnx"), "--plan", small_plan,
         "--export", os.path.join(WORK, "again")])
    assert sorted(os.listdir(os.path.join(WORK, "again"))) == ["stage-0.onnx", "stage-1.onnx"]

    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all exported stages match nnpipe in ONNX Runtime")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Trace and pictures (issue 13 item 4).

  test-trace.py NNPIPE_CLI MODELS_DIR WORK_DIR

1. nnpipeline stages=2 trace=FILE on N frames: every stage has N spans,
   frames 0..N-1 in order, begin < end, no overlap within a stage, stage 1
   starts frame i only after stage 0 finished it; the queue's level goes
   up and back to 0; no frame lost (output bytes = N frames).
2. `nnpipe timeline` draws it: valid XML, one bar per stage per frame, the
   bottleneck named.
3. NNP_TRACE=FILE for a lone nnstage; `nnpipe run --plan` under NNP_TRACE.
4. `nnpipe split --svg`: valid XML, one box per node of the plan, one label
   per tensor crossing a cut.
5. Errors: an unwritable trace path fails at start naming it; a trace that
   is not JSON, no -o: clear errors.
"""
import array
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
N = 12
H = W = 48

cli, models, work = sys.argv[1], sys.argv[2], sys.argv[3]
model = os.path.join(models, "unet.onnx")
os.makedirs(work, exist_ok=True)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, env=None, expect=0):
    e = dict(os.environ)
    e.pop("NNP_TRACE", None)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
    if expect is not None and p.returncode != expect:
        print("command:", " ".join(cmd), "\nstdout:", p.stdout, "\nstderr:", p.stderr)
        sys.exit("FAIL: exit status %d, expected %d" % (p.returncode, expect))
    return p


def path(name):
    return os.path.join(work, name)


# N frames of 1x3xHxW float32
frame_bytes = 3 * H * W * 4
data = array.array("f", [((i * 37) % 101) / 101.0 for i in range(3 * H * W * N)])
with open(path("in.f32"), "wb") as f:
    data.tofile(f)
caps = ("other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:3:1,"
        "framerate=0/1" % (W, H))
out_bytes = 4 * H * W * 4   # y: 1x4xHxW float32


def launch(element, out, env=None, expect=0):
    for f in (out,):
        if os.path.exists(f):
            os.unlink(f)
    return run(["gst-launch-1.0", "-q", "filesrc", "location=" + path("in.f32"),
                "blocksize=%d" % frame_bytes, "!", caps, "!"] + element
               + ["!", "filesink", "location=" + out], env, expect)


def spans(trace):
    names, out = {}, {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e["ph"] == "X":
            out.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], e["args"]["frame"]))
    return {names.get(t, str(t)): s for t, s in out.items()}


# 1. nnpipeline, 2 stages
trace_path = path("pipeline.json")
launch(["nnpipeline", "model=" + model, "stages=2", "devices=cpu:1,cpu:1",
        "trace=" + trace_path], path("out.bin"))
check(os.path.getsize(path("out.bin")) == N * out_bytes, "nnpipeline: %d frames out" % N)
trace = json.load(open(trace_path))
st = spans(trace)
check(sorted(st) == ["stage0 (cpu)", "stage1 (cpu)"], "two stage tracks: %s" % sorted(st))
for name, s in sorted(st.items()):
    s_by_begin = sorted(s)
    check(len(s) == N, "%s: %d spans (want %d)" % (name, len(s), N))
    check([f for _, _, f in s_by_begin] == list(range(N)), "%s: frames 0..%d in order" % (name, N - 1))
    check(all(b < e for b, e, _ in s), "%s: begin < end" % name)
    check(all(s_by_begin[i][1] <= s_by_begin[i + 1][0] for i in range(len(s) - 1)),
          "%s: spans do not overlap" % name)
if len(st) == 2:
    s0 = {f: (b, e) for b, e, f in st["stage0 (cpu)"]}
    s1 = {f: (b, e) for b, e, f in st["stage1 (cpu)"]}
    check(all(s1[f][0] >= s0[f][1] for f in s0 if f in s1),
          "stage1 starts each frame after stage0 finished it")
levels = [e["args"]["buffers"] for e in trace["traceEvents"]
          if e["ph"] == "C" and e["name"] == "queue0"]
check(len(levels) == 2 * N and min(levels) >= 0 and max(levels) >= 1 and levels[-1] == 0,
      "queue0: %d level samples, in 0..%s, ending at 0" % (len(levels), max(levels or [0])))
check(trace["otherData"]["dropped_events"] == 0, "no dropped events")

# 2. the timeline
svg_path = path("timeline.svg")
p = run([cli, "timeline", trace_path, "-o", svg_path])
root = ET.parse(svg_path).getroot()
check(root.tag == SVG + "svg", "timeline.svg is SVG")
bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
per_track = {}
for r in bars:
    per_track.setdefault(r.get("data-track"), []).append(int(r.get("data-frame")))
check(sorted(per_track) == ["0", "1"] and all(sorted(v) == list(range(N)) for v in per_track.values()),
      "timeline: one bar per stage per frame (%d bars)" % len(bars))
texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
check("bottleneck" in texts and "busy" in texts and "ms" in texts,
      "timeline: bottleneck, busy % and ms axis")

# 3. NNP_TRACE for a lone nnstage and for nnpipe run --plan
env_trace = path("env.json")
launch(["nnstage", "model=" + model], path("out1.bin"), {"NNP_TRACE": env_trace})
st = spans(json.load(open(env_trace)))
check(len(st) == 1 and [f for _, _, f in sorted(list(st.values())[0])] == list(range(N)),
      "NNP_TRACE with one nnstage: %d spans" % sum(len(v) for v in st.values()))
plan_path = path("plan.json")
run([cli, "split", model, "--shape", "x=1,3,%d,%d" % (H, W), "--stages", "2", "--estimate",
     "-o", plan_path, "--svg", path("plan.svg")])
run_trace = path("run.json")
run([cli, "run", model, "--plan", plan_path, "--repeat", "3"], {"NNP_TRACE": run_trace})
st = spans(json.load(open(run_trace)))
check(len(st) == 2 and all(len(v) == 4 for v in st.values()),
      "nnpipe run --plan under NNP_TRACE: 2 stages x 4 runs")

# 4. the plan picture (two-out: a graph output made in stage 0 crosses the cut)
def check_plan_svg(plan_path, svg_path):
    plan = json.load(open(plan_path))
    root = ET.parse(svg_path).getroot()
    name = os.path.basename(svg_path)
    boxes = [g for g in root.iter(SVG + "g") if g.get("class") == "node"]
    n_nodes = sum(len(s["nodes"]) for s in plan["stages"])
    check(len(boxes) == n_nodes, "%s: %d boxes for %d nodes" % (name, len(boxes), n_nodes))
    for k, s in enumerate(plan["stages"]):
        check(sum(1 for g in boxes if g.get("data-stage") == str(k)) == len(s["nodes"]),
              "%s: stage %d has its %d nodes" % (name, k, len(s["nodes"])))
    cut = [t.text for t in root.iter(SVG + "text") if t.get("class") == "cut-label"]
    labels = sorted(t.split(":")[0] for t in cut)
    crossing = sorted(set(v for s in plan["stages"][:-1] for v in s["outputs"])
                      - set(plan["shapes"]))
    check(labels == crossing and len(labels) > 0,
          "%s: cut labels %s = %s" % (name, labels, crossing))
    check(all(t.split(":")[1].split()[1] in ("B", "KiB", "MiB") for t in cut),
          "%s: cut labels give bytes" % name)


check_plan_svg(plan_path, path("plan.svg"))
for m, stages in (("two-out", "3"), ("residual", "3")):
    run([cli, "split", os.path.join(models, m + ".onnx"), "--shape", "x=1,3,16,16",
         "--stages", stages, "--estimate", "-o", path(m + ".json"), "--svg", path(m + ".svg")])
    check_plan_svg(path(m + ".json"), path(m + ".svg"))

# 5. errors
p = launch(["nnpipeline", "model=" + model, "stages=2", "trace=" + path("no/such/dir/t.json")],
           path("out2.bin"), expect=None)
check(p.returncode != 0 and "cannot write trace" in p.stderr + p.stdout,
      "unwritable trace path fails at start, naming it")
with open(path("bad.json"), "w") as f:
    f.write("{ not json")
p = run([cli, "timeline", path("bad.json"), "-o", path("bad.svg")], expect=1)
check("not JSON" in p.stderr, "timeline of a non-JSON file: %s" % p.stderr.strip())
p = run([cli, "timeline", trace_path], expect=2)
check("-o" in p.stderr, "timeline without -o: %s" % p.stderr.strip())
with open(path("empty.json"), "w") as f:
    f.write('{"traceEvents": []}')
p = run([cli, "timeline", path("empty.json"), "-o", path("e.svg")], expect=1)
check("nothing to draw" in p.stderr, "timeline of an empty trace: %s" % p.stderr.strip())

if failures:
    sys.exit("%d check(s) failed" % len(failures))
print("all trace checks passed")

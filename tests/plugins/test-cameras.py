#!/usr/bin/env python3
"""Real cameras: pipelines/cameras.py against RTSP servers made here
(issue 22 items 5 and 6).

  test-cameras.py SOURCE_DIR

1. Four RTSP cameras (tests/plugins/rtsp-camera.py: gst-rtsp-server, a
   live 25 fps picture as JPEG over RTP, 127.0.0.1, a free port each) into
   one nnpipeline (batch-size=4) through cameras.py, the detector and its
   boxes, JSON Lines out.  Camera 2's server is killed (-9) once every
   camera gave results and started again 3 s later:
   - the other three lose nothing: their results kept coming while it was
     down (results timed inside the outage), their source frame numbers
     only grow, and every number missing is a frame the final statistics
     count as dropped (frames out + dropped = frames in at nnconvert);
   - camera 2 is restarted (cameras.py says so) and resumes: results
     timed after its server came back, its numbers going on.
2. A file camera that ends is restarted (its frames come again) and a
   camera that cannot be opened is retried with back-off, while a live
   test camera runs on; --no-restart stops the one that ended.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

src = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PY = "/usr/bin/python3"
CAMERAS = os.path.join(src, "pipelines", "cameras.py")
SERVER = os.path.join(src, "tests", "plugins", "rtsp-camera.py")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port, log):
    p = subprocess.Popen([PY, SERVER, str(port)], stdout=subprocess.PIPE,
                         stderr=open(log, "a"), text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError("rtsp-camera.py on %d: %r %s" % (port, line, open(log).read()))
    return p


def read_json(path):
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.endswith("\n"):
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def final_stats(path):
    final = None
    for line in open(path, encoding="utf-8"):
        d = json.loads(line)
        if d.get("final"):
            final = d
    return final


def wait(pred, timeout, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def case_rtsp(tmp):
    ports = [free_port() for _ in range(4)]
    logs = [os.path.join(tmp, "server%d.log" % i) for i in range(4)]
    servers = [start_server(p, l) for p, l in zip(ports, logs)]
    out, stats, err = (os.path.join(tmp, n) for n in ("cams.jsonl", "stats.jsonl", "cams.err"))
    app = subprocess.Popen([PY, CAMERAS, "--chain", "boxes", "--size", "64", "--batch", "4",
                            "--duration", "40", "--json", out, "--stats", stats]
                           + ["rtsp://127.0.0.1:%d/cam" % p for p in ports],
                           stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    try:
        names = ["cam%d" % i for i in range(4)]
        ok = wait(lambda: {o["source_id"] for o in read_json(out)} >= set(names), 60)
        check(ok, "rtsp: all 4 cameras give results")
        servers[2].send_signal(signal.SIGKILL)
        servers[2].wait()
        t_kill = time.time() * 1000
        time.sleep(3)
        t_back = time.time() * 1000
        servers[2] = start_server(ports[2], logs[2])
        # camera 2 resumes: results taken after its server came back
        ok = wait(lambda: any(o["source_id"] == "cam2" and o["unix_ms"] > t_back
                              for o in read_json(out)), 45)
        check(ok, "rtsp: camera 2 resumes after its server came back")
        # and the others go on a little after it
        time.sleep(2)
        app.send_signal(signal.SIGINT)
        app.wait(60)
        check(app.returncode == 0, "rtsp: cameras.py ends cleanly (status %s)" % app.returncode)
        log = open(err).read()
        check("camera cam2 (rtsp://127.0.0.1:%d/cam) failed" % ports[2] in log
              and "restarting" in log, "rtsp: cameras.py restarted camera 2")
        objs = read_json(out)
        final = final_stats(stats)
        check(final is not None and len(final["streams"]) == 4,
              "rtsp: final statistics of 4 streams")
        per = {s["source-id"]: s for s in final["streams"]} if final else {}
        for name in names:
            mine = [o for o in objs if o["source_id"] == name]
            frames = [o["frame"] for o in mine]
            st = per.get(name, {})
            check(frames == sorted(set(frames)),
                  "%s: source frame numbers only grow (%d results)" % (name, len(frames)))
            check(st.get("frames-out") == len(frames),
                  "%s: frames-out %s = %d results" % (name, st.get("frames-out"), len(frames)))
            # every number missing was counted as dropped (the frames of the
            # stream nnconvert numbered: from its first result's number on)
            if frames:
                missing = frames[-1] + 1 - frames[0] - len(frames)
                check(missing <= st.get("dropped", -1),
                      "%s: %d numbers missing, %s counted as dropped"
                      % (name, missing, st.get("dropped")))
            if name != "cam2":
                during = [o for o in mine if t_kill + 500 < o["unix_ms"] < t_back]
                check(len(during) > 0, "%s: %d results while camera 2 was down" % (name, len(during)))
            else:
                after = [o for o in mine if o["unix_ms"] > t_back]
                check(len(after) > 0 and after[0]["frame"] > frames[0],
                      "cam2: %d results after the restart, numbers going on" % len(after))
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        for s in servers:
            s.kill()
            s.wait()


def case_files(tmp):
    video = os.path.join(tmp, "short.mkv")
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=10", "!",
                    "video/x-raw,width=64,height=48,framerate=25/1", "!", "jpegenc", "!",
                    "matroskamux", "!", "filesink", "location=" + video], check=True)
    out, err = os.path.join(tmp, "files.jsonl"), os.path.join(tmp, "files.err")
    app = subprocess.run([PY, CAMERAS, "--chain", "boxes", "--size", "64", "--duration", "6",
                          "--json", out, video, os.path.join(tmp, "nosuchfile.mkv"), "test:0"],
                         stdout=subprocess.DEVNULL, stderr=open(err, "w"), timeout=120)
    log = open(err).read()
    objs = read_json(out)
    cam0 = [o for o in objs if o["source_id"] == "cam0"]
    check(app.returncode == 0, "files: cameras.py ends cleanly (status %d)" % app.returncode)
    check(len(cam0) > 10 and "camera cam0 (%s) ended: restarting" % video in log,
          "files: the file camera ended and was restarted (%d results of a 10-frame file)"
          % len(cam0))
    check(log.count("camera cam1") >= 2 and "failed" in log,
          "files: the missing file is retried with back-off")
    check(len([o for o in objs if o["source_id"] == "cam2"]) > 20,
          "files: the live test camera ran on")
    out2, err2 = os.path.join(tmp, "once.jsonl"), os.path.join(tmp, "once.err")
    app = subprocess.run([PY, CAMERAS, "--chain", "boxes", "--size", "64", "--no-restart",
                          "--json", out2, video], stdout=subprocess.DEVNULL,
                         stderr=open(err2, "w"), timeout=120)
    objs = read_json(out2)
    check(app.returncode == 0 and len(objs) == 10 and [o["frame"] for o in objs] == list(range(10)),
          "files: --no-restart: the 10 frames once, then the end (%d results)" % len(objs))


def main():
    for case in (case_rtsp, case_files):
        tmp = tempfile.mkdtemp(prefix="nnp-cameras-%d-" % os.getpid())
        try:
            case(tmp)
        finally:
            if not os.environ.get("NNP_KEEP_TMP"):
                subprocess.run(["rm", "-rf", tmp])
            else:
                print("kept " + tmp)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

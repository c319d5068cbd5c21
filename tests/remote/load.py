#!/usr/bin/env python3
"""Issue 19 load: `nnpipe serve` holding IDLE idle clients (HELLO accepted,
then silent; from 127.0.0.2.. so that no address passes the default
--max-per-address 64) while one thread opens and closes CYCLES connections
(HELLO, PING, close) and a good client streams FRAMES frames: every result
must arrive, in order, equal to the whole model's; the server must stay
alive and its RSS flat: during the cycles the second half adds at most
SLACK_KB to the first, and after each of ROUNDS rounds (everything closed)
the RSS is within SLACK_KB of the first round's (the first round leaves
malloc's per-thread arenas behind; they are reused, not added to).
Prints the figures (docs/remote.md, "Load").

usage: load.py NNPIPE_CLI SOURCE_ROOT [--cycles N] [--idle N] [--frames N]
                                     [--rounds N] [--slack-kb KB]
  (CI, test plugin-remote-load: 200 / 100 / 48; benchmarks/remote-load.sh:
  1000 / 500 / 240)"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnwire as w  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
ap.add_argument('cli')
ap.add_argument('root')
ap.add_argument('--cycles', type=int, default=200)
ap.add_argument('--idle', type=int, default=100)
ap.add_argument('--frames', type=int, default=48)
ap.add_argument('--rounds', type=int, default=2)
ap.add_argument('--slack-kb', type=int, default=16 * 1024)
args = ap.parse_args()

model = os.path.join(os.environ.get('NNP_MODELS_DIR', os.path.join(args.root, '.cache', 'models')),
                     'ch_ppocr_mobile_v2.0_cls_infer.onnx')
try:
    import numpy as np
except ImportError:
    print('FAIL: numpy missing (Debian package python3-numpy)')
    sys.exit(1)
if shutil.which('gst-launch-1.0') is None:
    print('FAIL: gst-launch-1.0 missing (Debian package gstreamer1.0-tools)')
    sys.exit(1)
if not os.path.exists(model):
    print('FAIL: %s missing (tools/fetch-models.sh)' % model)
    sys.exit(1)

# each idle client is a socket here: the open-file limit must hold them
import resource  # noqa: E402
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
need = args.idle + 256
if soft < need:
    if hard != resource.RLIM_INFINITY and hard < need:
        print('FAIL: the open-file limit (ulimit -Hn %d) is below the %d sockets of the test'
              % (hard, need))
        sys.exit(1)
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))

tmp = tempfile.mkdtemp(prefix='nnp-load-%d-' % os.getpid())
failed = []


def ok(cond, what, detail=''):
    print(('ok  : ' if cond else 'FAIL: ') + what + ('' if cond else ' ' + detail))
    sys.stdout.flush()
    if not cond:
        failed.append(what)


n = args.frames
rng = np.random.default_rng(7)
arr = rng.uniform(-1, 1, (n, 3, 48, 192)).astype('<f4')
arr.tofile(os.path.join(tmp, 'in.raw'))
r = subprocess.run(['gst-launch-1.0', '-q', 'filesrc', 'location=%s/in.raw' % tmp,
                    'blocksize=%d' % (3 * 48 * 192 * 4), '!'] + w.CAPS.split() +
                   ['!', 'nnstage', 'model=' + model, '!', 'filesink',
                    'location=%s/whole.raw' % tmp], capture_output=True, text=True, timeout=300)
if r.returncode != 0:
    print('FAIL: the whole model locally:\n' + r.stderr)
    sys.exit(1)
whole = open(os.path.join(tmp, 'whole.raw'), 'rb').read()
out = len(whole) // n
reference = [whole[i * out:(i + 1) * out] for i in range(n)]
frames = [f.tobytes() for f in arr]
digest = w.digest_of(model)

srv = w.Server(args.cli, model, os.path.join(tmp, 'server.log'),
               '--max-connections', str(args.idle + 64))
hello = w.msg(w.HELLO, 0, w.hello_payload(digest))
try:
    # warm up: the stage built, threads made once
    w.GoodClient(srv.port, digest, frames[:4], reference[:4]).run()
    rss_before = w.rss_kb(srv.p.pid)
    threads_before = w.threads(srv.p.pid)

    rss_rounds = []
    for rnd in range(args.rounds):
        print('round %d of %d' % (rnd + 1, args.rounds))
        idle = []
        t0 = time.monotonic()
        for i in range(args.idle):
            c = socket.socket()
            c.bind(('127.0.0.%d' % (2 + i // 50), 0))
            c.settimeout(60)
            c.connect(('127.0.0.1', srv.port))
            c.sendall(hello)
            a = w.answer(c, 60)
            if a[0] != 'HELLO_OK':
                ok(False, 'idle client %d' % i, repr(a))
                break
            idle.append(c)
        t_idle = time.monotonic() - t0
        ok(len(idle) == args.idle, '%d idle clients connected in %.1f s' % (len(idle), t_idle))

        cyc = {'done': 0, 'err': None, 'rss_half': 0, 'rss_end': 0}

        def cycles():
            try:
                for k in range(args.cycles):
                    c = w.connect(srv.port)
                    c.sendall(hello)
                    a = w.answer(c, 60)
                    if a[0] != 'HELLO_OK':
                        raise RuntimeError('cycle %d: %r' % (k, a))
                    c.sendall(w.msg(w.PING, 1, b''))
                    a = w.answer(c, 60)
                    if a[0] != w.PONG:
                        raise RuntimeError('cycle %d: PING answered %r' % (k, a))
                    c.close()
                    cyc['done'] += 1
                    if k + 1 == args.cycles // 2:
                        cyc['rss_half'] = w.rss_kb(srv.p.pid)
                cyc['rss_end'] = w.rss_kb(srv.p.pid)
            except Exception as e:  # noqa: BLE001
                cyc['err'] = str(e)

        th = threading.Thread(target=cycles)
        t0 = time.monotonic()
        th.start()
        good = {'got': 0, 'err': None}
        try:
            good['got'] = w.GoodClient(srv.port, digest, frames, reference).run()
        except Exception as e:  # noqa: BLE001
            good['err'] = str(e)
        t_good = time.monotonic() - t0
        th.join()
        t_cyc = time.monotonic() - t0
        rss_peak = w.rss_kb(srv.p.pid)
        threads_peak = w.threads(srv.p.pid)
        ok(good['err'] is None and good['got'] == n,
           'good client beside %d idle clients and the cycles: %d frames in order, exact, %.1f frames/s'
           % (len(idle), good['got'], good['got'] / max(t_good, 1e-6)), str(good['err']))
        ok(cyc['err'] is None and cyc['done'] == args.cycles,
           '%d open/close cycles (HELLO, PING, close) in %.1f s: %.0f cycles/s'
           % (cyc['done'], t_cyc, cyc['done'] / max(t_cyc, 1e-6)), str(cyc['err']))
        grow = cyc['rss_end'] - cyc['rss_half']
        ok(grow < args.slack_kb, 'RSS during the cycles flat: %d kB at half, %d kB at the end (%+d kB)'
           % (cyc['rss_half'], cyc['rss_end'], grow))
        for c in idle:
            c.close()
        # the server counts them gone once their threads ended
        for _ in range(200):
            if w.threads(srv.p.pid) <= threads_before + 4:
                break
            time.sleep(0.05)
        time.sleep(0.5)
        w.GoodClient(srv.port, digest, frames[:4], reference[:4]).run()
        rss_after = w.rss_kb(srv.p.pid)
        rss_rounds.append(rss_after)
        ok(srv.alive() and rss_after - rss_rounds[0] < args.slack_kb,
           'server alive; RSS %d kB before, %d kB with %d idle clients (%d threads), %d kB after '
           '(%+d kB; first round after: %d kB)' % (rss_before, rss_peak, len(idle), threads_peak,
                                                  rss_after, rss_after - rss_before,
                                                  rss_rounds[0]))
finally:
    rc = srv.stop()
    if rc not in (0, -15):
        ok(False, 'server exit status %s' % rc, srv.text()[-2000:])
    if failed:
        print(srv.text()[-2000:])
    shutil.rmtree(tmp, ignore_errors=True)
print('PASS' if not failed else 'FAILED: %d' % len(failed))
sys.exit(1 if failed else 0)

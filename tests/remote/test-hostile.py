#!/usr/bin/env python3
"""Issue 19: `nnpipe serve` under hostile clients (docs/remote.md, "Running a
server exposed to a network").  Each attack goes to a real server through
tests/remote/nnwire.py (a small client of the wire format); after each one a
good client streams frames and every result must equal the whole model's
(run locally with gst-launch), in order, and the server must be alive:

  D1  FRAME caps the stage cannot take (framerate=0-1, -1/1, (int)5, a caps
      feature, ranges, two structures, caps that do not describe the tensor,
      8 KiB of caps) get an ERROR naming the problem; harmless variants
      (an extra field, the singular other/tensor form) are rebuilt as
      canonical caps and answered; the same on a part started on demand,
      whose next client (nnremote) gets all its frames (no "part mismatch")
  D2  no HELLO within --handshake-timeout, a silent client past
      --idle-timeout: an ERROR naming the timeout; --max-per-address and
      --max-connections (clients from 127.0.0.1, .2, .3); 300 idle
      connections held while the good client streams, then closed at once,
      3 times (the GIO accept crash)
  D3  parts naming nodes the model does not have are refused naming them
      and start nothing; a part left by its last client is stopped after
      --part-grace and leaves /parts; --parts none and --parts LIST
  D4  50 half-sent HELLOs of 1 MiB hold no memory to speak of (RSS); a
      HELLO over 1 MiB is refused from its header
  D5  a bad header after HELLO gets an ERROR
  D6  --listen 0.0.0.0 without a token or TLS is refused (and allowed with
      --insecure, with a warning); --token-file and $NNPIPE_TOKEN
  D7  wrong-token HELLOs in a row: the server answers a few, then refuses
      the address for a growing back-off, and takes the right token after it
  D8  a plain client meeting a TLS server is told so; nnremote names the
      TLS reason (untrusted certificate, a plain server); mutual TLS: a
      client certificate signed by --tls-client-ca is needed
  and /metrics, /healthz, /readyz, /parts read with curl; the server's RSS
  over the whole run stays bounded.

usage: test-hostile.py NNPIPE_CLI SOURCE_ROOT
A missing dependency or model is a failure naming its package or
tools/fetch-models.sh (tests/README.md)."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnwire as w  # noqa: E402

cli, root = sys.argv[1], sys.argv[2]
model = os.path.join(os.environ.get('NNP_MODELS_DIR', os.path.join(root, '.cache', 'models')),
                     'ch_ppocr_mobile_v2.0_cls_infer.onnx')
failed = []


def ok(cond, what, detail=''):
    if cond:
        print('ok  : ' + what)
    else:
        print('FAIL: %s %s' % (what, detail))
        failed.append(what)
    sys.stdout.flush()
    return cond


for tool, pkg in (('gst-launch-1.0', 'gstreamer1.0-tools'), ('curl', 'curl'),
                  ('openssl', 'openssl')):
    if shutil.which(tool) is None:
        print('FAIL: %s missing (Debian package %s)' % (tool, pkg))
        sys.exit(1)
try:
    import numpy as np
except ImportError:
    print('FAIL: numpy missing (Debian package python3-numpy)')
    sys.exit(1)
if not os.path.exists(model):
    print('FAIL: %s missing (tools/fetch-models.sh)' % model)
    sys.exit(1)

tmp = tempfile.mkdtemp(prefix='nnp-hostile-%d-' % os.getpid())
servers = []
N = 24
rng = np.random.default_rng(19)
frames_arr = rng.uniform(-1, 1, (N, 3, 48, 192)).astype('<f4')
frames_arr.tofile(os.path.join(tmp, 'in.raw'))
frames = [f.tobytes() for f in frames_arr]
src = ('filesrc location=%s/in.raw blocksize=%d ! %s' % (tmp, 3 * 48 * 192 * 4, w.CAPS)).split()


def launch(args, timeout=180):
    return subprocess.run(['gst-launch-1.0', '-q'] + args, capture_output=True, text=True,
                          timeout=timeout)


r = launch(src + ['!', 'nnstage', 'model=' + model, '!', 'filesink',
                  'location=%s/whole.raw' % tmp])
if r.returncode != 0:
    print('FAIL: the whole model locally:\n' + r.stderr)
    sys.exit(1)
whole = open(os.path.join(tmp, 'whole.raw'), 'rb').read()
out = len(whole) // N
reference = [whole[i * out:(i + 1) * out] for i in range(N)]
digest = w.digest_of(model)


def server(name, *args, env=None):
    srv = w.Server(cli, model, os.path.join(tmp, name + '.log'), *args, env=env)
    servers.append(srv)
    return srv


def good(srv, what, token='', n=N):
    try:
        got = w.GoodClient(srv.port, digest, frames[:n], reference[:n], token=token).run()
        return ok(got == n and srv.alive(), what + ': good client gets %d frames, exact' % n)
    except Exception as e:  # noqa: BLE001 (the reason is the failure)
        return ok(False, what + ': good client', str(e))


def attack(srv, payloads, hello=None, timeout=30, source=None):
    """Connect, say HELLO (default: whole model), send payloads; what the
    server answers."""
    c = socket.socket()
    if source:
        c.bind((source, 0))
    c.settimeout(timeout)
    c.connect(('127.0.0.1', srv.port))
    c.sendall(w.msg(w.HELLO, 0, hello or w.hello_payload(digest)))
    a = w.answer(c, timeout)
    if a[0] == 'HELLO_OK':
        for p in payloads:
            c.sendall(p)
        a = w.answer(c, timeout)
    c.close()
    return a


def frame(caps, data=frames[0], dims=(1, 3, 48, 192)):
    return w.msg(w.FRAME, 1, w.frame_payload(caps, data, dims))


def curl(port, path):
    r = subprocess.run(['curl', '-s', '-w', '\n%{http_code}', 'http://127.0.0.1:%d%s' % (port, path)],
                       capture_output=True, text=True, timeout=30)
    body, _, code = r.stdout.rpartition('\n')
    return int(code or 0), body.strip()


def metric(text, name, labels=''):
    m = re.search(r'^%s%s (\S+)$' % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def nnremote(port, out_name, *props, nodes=None):
    pre = ['!', 'nnstage', 'model=' + model, 'nodes=0..39'] if nodes else []
    part = ['nodes=' + nodes] if nodes else []
    r = launch(src + pre + ['!', 'nnremote', 'model=' + model, 'port=%d' % port] + part +
               list(props) + ['!', 'filesink', 'location=%s/%s' % (tmp, out_name)])
    data = open(os.path.join(tmp, out_name), 'rb').read() if r.returncode == 0 else b''
    return r, data


try:
    # ---------------------------------------------------------------- D1
    s1 = server('s1', '--http', '127.0.0.1:0', '--handshake-timeout', '1500',
                '--idle-timeout', '3', '--part-grace', '2', '--max-per-address', '400')
    good(s1, 'baseline')
    rss0 = w.rss_kb(s1.p.pid)
    base = 'other/tensors,format=static,num_tensors=1,types=float32,dimensions=192:48:3:1'
    bad_caps = [
        ('framerate=0-1', base + ',framerate=0-1', 'framerate'),
        ('framerate=-1/1', base + ',framerate=-1/1', 'framerate'),
        ('framerate=(int)5', base + ',framerate=(int)5', 'framerate'),
        ('a caps feature', base.replace('other/tensors,', 'other/tensors(memory:GLMemory),') +
         ',framerate=0/1', 'caps feature'),
        ('a framerate range', base + ',framerate=[0/1,30/1]', 'not fixed'),
        ('two structures', base + ';' + base, 'not fixed'),
        ('video caps', 'video/x-raw,format=RGB,width=192,height=48,framerate=0/1', ''),
        ('caps not describing the tensor', base.replace('192:48', '96:48'), 'do not describe'),
        ('8 KiB of caps', base + ',x=(string)' + 'a' * 8200, 'at most 8192'),
    ]
    for name, caps, want in bad_caps:
        a = attack(s1, [frame(caps)])
        ok(a[0] == 'ERROR' and want in a[1] and s1.alive(),
           'D1 %s: ERROR "%s"' % (name, a[1][:110] if a[0] == 'ERROR' else a), '(%r)' % (a,))
    a = attack(s1, [frame(base.replace('192:48:3', '192:48:1'), frames[0][:48 * 192 * 4],
                          (1, 1, 48, 192))])
    ok(a[0] == 'ERROR' and 'do not fit the served part' in a[1],
       'D1 one channel for three: ERROR "%s"' % (a[1][:100] if a[0] == 'ERROR' else a))
    for name, caps in (('an extra field', base + ',framerate=0/1,foo=(string)bar'),
                       ('the singular form', 'other/tensor,type=float32,dimension=192:48:3:1,'
                                             'framerate=0/1')):
        a = attack(s1, [frame(caps)])
        ok(a[0] == 'RESULT' and w.result_data(a[2]) == reference[0],
           'D1 %s: rebuilt as canonical caps, exact result' % name, '(%r)' % (a[:2],))
    good(s1, 'after the caps attacks')
    # the same at a part started on demand
    a = attack(s1, [frame(base + ',framerate=-1/1')],
               hello=w.hello_payload(digest, w.NODES, '40..83'))
    ok(a[0] == 'ERROR' and 'framerate' in a[1], 'D1 on an on-demand part: ERROR')
    r, data = nnremote(s1.port, 'part.raw', nodes='40..83')
    ok(r.returncode == 0 and data == whole,
       'D1 the on-demand part serves its next client: %d frames, exact' % (len(data) // out),
       r.stderr[-400:])
    ok('part mismatch' not in s1.text() and not re.search(r'stopped: (?!no client)', s1.text()),
       'D1 no part refused or stopped by an error after the attacks')

    # ---------------------------------------------------------------- D5
    a = attack(s1, [b'XXXX' + b'\0' * 20])
    ok(a[0] == 'ERROR' and 'bad magic' in a[1], 'D5 a bad header after HELLO: ERROR "%s"' %
       (a[1][:80] if a[0] == 'ERROR' else a))

    # ---------------------------------------------------------------- D3
    a = attack(s1, [], hello=w.hello_payload(digest, w.NODES, 'bogus0..bogus1'))
    ok(a[0] == 'ERROR' and "unknown nodes 'bogus0', 'bogus1'" in a[1],
       'D3 unknown nodes refused naming them: "%s"' % (a[1][:120] if a[0] == 'ERROR' else a))
    for i in range(20):
        attack(s1, [], hello=w.hello_payload(digest, w.NODES, 'bogus%d' % i))
    code, parts = curl(s1.http, '/parts')
    ok(code == 200 and parts.count('"part"') <= 2 and 'bogus' not in parts
       and not re.search(r'part bogus', s1.text()),
       'D3 20 bogus parts started nothing (/parts: %d parts)' % parts.count('"part"'))
    # the on-demand part of the nnremote run above has no client now: it goes
    gone = False
    for _ in range(100):
        if re.search(r'part 40\.\.83 stopped: no client for 2 s', s1.text()):
            gone = True
            break
        time.sleep(0.1)
    code, parts = curl(s1.http, '/parts')
    ok(gone and '40..83' not in parts, 'D3 a part without clients stopped after --part-grace',
       parts + s1.text()[-500:])
    r, data = nnremote(s1.port, 'part2.raw', nodes='40..83')
    ok(r.returncode == 0 and data == whole, 'D3 the part starts again for its next client')

    # ---------------------------------------------------------------- D2
    c = w.connect(s1.port)
    c.sendall(b'NNPR')
    t0 = time.monotonic()
    a = w.answer(c, 30)
    c.close()
    ok(a[0] == 'ERROR' and 'no HELLO within 1500 ms' in a[1],
       'D2 4 bytes and silence: "%s" after %.1f s' % (a[1] if a[0] == 'ERROR' else a,
                                                      time.monotonic() - t0))
    # an idle client is closed without an ERROR: nnremote reconnects then
    c = w.connect(s1.port)
    c.sendall(w.msg(w.HELLO, 0, w.hello_payload(digest)))
    a1 = w.answer(c, 30)
    a = w.answer(c, 60)
    c.close()
    ok(a1[0] == 'HELLO_OK' and a[0] == 'CLOSED'
       and re.search(r'127\.0\.0\.1:\d+ left: idle for 3 s \(idle timeout\)', s1.text()),
       'D2 a silent client closed after --idle-timeout 3 (logged why)', repr(a))
    r = launch(['filesrc', 'location=%s/in.raw' % tmp, 'blocksize=%d' % (3 * 48 * 192 * 4),
                'num-buffers=2', '!'] + w.CAPS.split() +
               ['!', 'identity', 'sleep-time=3600000', '!', 'nnremote', 'model=' + model,
                'port=%d' % s1.port, '!', 'filesink', 'location=%s/idle.raw' % tmp])
    data = open(os.path.join(tmp, 'idle.raw'), 'rb').read() if r.returncode == 0 else b''
    ok(data == b''.join(reference[:2]),
       'D2 nnremote silent for 3.6 s between frames (idle timeout 3 s): both frames, exact',
       r.stderr[-300:])

    def hold(srv, n, first=b'NNPR', source=None):
        socks = []
        for _ in range(n):
            c = socket.socket()
            if source:
                c.bind((source, 0))
            c.connect(('127.0.0.1', srv.port))
            c.sendall(first)
            socks.append(c)
        return socks

    for k in range(3):
        socks = hold(s1, 300)
        good(s1, 'D2 round %d, 300 idle connections held' % (k + 1), n=8)
        for c in socks:
            c.close()
        time.sleep(0.3)
        ok(s1.alive(), 'D2 round %d: 300 connections closed at once, server alive' % (k + 1))
    good(s1, 'D2 after the rounds')

    # ---------------------------------------------------------------- D4
    before = w.rss_kb(s1.p.pid)
    socks = []
    for _ in range(50):
        c = w.connect(s1.port)
        c.sendall(w.header(w.HELLO, 0, 1 << 20) + b'\0' * 1000)
        socks.append(c)
    time.sleep(0.5)
    during = w.rss_kb(s1.p.pid)
    for c in socks:
        c.close()
    ok(during - before < 8 * 1024,
       'D4 50 half-sent 1 MiB HELLOs: server RSS %+d kB' % (during - before))
    c = w.connect(s1.port)
    c.sendall(w.header(w.HELLO, 0, 4 << 20))
    a = w.answer(c, 10)
    c.close()
    ok(a[0] == 'ERROR' and 'over the limit of 1048576' in a[1],
       'D4 a 4 MiB HELLO refused from its header')
    good(s1, 'after D4')

    # ---------------------------------------------------------------- metrics
    code, text = curl(s1.http, '/metrics')
    names = ['nnpipe_server_connections_total', 'nnpipe_server_connections',
             'nnpipe_server_clients', 'nnpipe_server_handshake_timeouts_total',
             'nnpipe_server_idle_timeouts_total', 'nnpipe_server_auth_failures_total',
             'nnpipe_part_busy_seconds_total', 'nnpipe_part_queue_depth']
    ok(code == 200 and all('# TYPE %s ' % n in text for n in names)
       and metric(text, 'nnpipe_server_connections_total') >= 900
       and metric(text, 'nnpipe_server_handshake_timeouts_total') >= 1
       and metric(text, 'nnpipe_server_errors_total', '{kind="caps"}') >= 9
       and metric(text, 'nnpipe_part_frames_total', '{part="(whole model)"}') >= 5 * N
       and metric(text, 'nnpipe_part_busy_seconds_total', '{part="(whole model)"}') > 0,
       'metrics: curl /metrics (%d families)' % text.count('# TYPE'), text[:3000])
    ok(curl(s1.http, '/healthz') == (200, 'ok') and curl(s1.http, '/readyz') == (200, 'ready'),
       'health: /healthz ok, /readyz ready')
    ok(curl(s1.http, '/nothing')[0] == 404, 'http: an unknown path is 404')

    # limits per address and in all (clients from 127.0.0.1, .2 and .3)
    s4 = server('s4', '--max-connections', '20', '--max-per-address', '10',
                '--handshake-timeout', '20000', '--http', '127.0.0.1:0')

    def wait_conns(srv, n):
        """until the server counts n open connections (they are admitted
        by threads of their own, in any order)"""
        for _ in range(200):
            if metric(curl(srv.http, '/metrics')[1], 'nnpipe_server_connections') == n:
                return True
            time.sleep(0.05)
        return False

    socks = hold(s4, 10, source='127.0.0.2')
    wait_conns(s4, 10)
    a = attack(s4, [], source='127.0.0.2', timeout=10)
    ok(a[0] == 'ERROR' and 'too many connections from 127.0.0.2' in a[1],
       'D2 --max-per-address 10: the 11th from one address refused')
    socks += hold(s4, 10, source='127.0.0.3')
    wait_conns(s4, 20)
    a = attack(s4, [], source='127.0.0.4', timeout=10)
    ok(a[0] == 'ERROR' and 'server full' in a[1], 'D2 --max-connections 20: the 21st refused')
    for c in socks:
        c.close()
    time.sleep(0.5)
    good(s4, 'D2 after the limits')

    # ---------------------------------------------------------------- D7, D6
    with open(os.path.join(tmp, 'token'), 'w') as f:
        f.write('s3cret-token\n')
    s2 = server('s2', '--token-file', os.path.join(tmp, 'token'), '--http', '127.0.0.1:0')
    answers = [attack(s2, [], hello=w.hello_payload(digest, token='guess%d' % i), timeout=10)
               for i in range(30)]
    auth = sum(1 for a in answers if a[0] == 'ERROR' and 'authentication failed' in a[1])
    backoff = [a for a in answers if a[0] == 'ERROR' and 'too many failed authentications' in a[1]]
    ok(1 <= auth <= 8 and auth + len(backoff) == 30,
       'D7 30 wrong tokens in a row: %d checked, %d refused for the back-off' % (auth, len(backoff)),
       str(answers[:3]))
    if backoff:
        ms = int(re.search(r'retry in (\d+) ms', backoff[-1][1]).group(1))
        time.sleep(ms / 1000 + 0.3)
    good(s2, 'D6 --token-file, after the back-off', token='s3cret-token')
    code, text = curl(s2.http, '/metrics')
    ok(metric(text, 'nnpipe_server_auth_failures_total') == auth
       and metric(text, 'nnpipe_server_connections_rejected_total',
                  '{reason="auth_backoff"}') == len(backoff),
       'metrics: auth failures and back-off refusals counted')
    s3 = server('s3', env={'NNPIPE_TOKEN': 'from-env'})
    a = attack(s3, [], hello=w.hello_payload(digest, token=''))
    ok(a[0] == 'ERROR' and 'authentication failed' in a[1] and 'from-env' not in s3.text(),
       'D6 $NNPIPE_TOKEN: no token refused')
    time.sleep(0.3)  # its back-off    good(s3, 'D6 $NNPIPE_TOKEN', token='from-env')
    r = subprocess.run([cli, 'serve', model, '--listen', '0.0.0.0:0'], capture_output=True,
                       text=True, timeout=60)
    ok(r.returncode == 2 and 'reachable from other machines' in r.stderr,
       'D6 --listen 0.0.0.0 without token or TLS refused', r.stderr)
    p = subprocess.Popen([cli, 'serve', model, '--listen', '0.0.0.0:0', '--insecure'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    p.terminate()
    err = p.stderr.read()
    p.wait(20)
    ok(line.startswith('listening on 0.0.0.0:') and 'warning: --insecure' in err,
       'D6 --insecure: starts, with a warning')

    # ---------------------------------------------------------------- D8
    def openssl(*args):
        subprocess.run(['openssl'] + list(args), check=True, capture_output=True, cwd=tmp)

    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=test CA',
            '-keyout', 'ca.key', '-out', 'ca.pem')
    for name, ext in (('server', 'subjectAltName=IP:127.0.0.1'), ('client', 'subjectAltName=DNS:c')):
        openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout',
                name + '.key', '-out', name + '.csr')
        with open(os.path.join(tmp, name + '.ext'), 'w') as f:
            f.write(ext + '\n')
        openssl('x509', '-req', '-in', name + '.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
                '-CAcreateserial', '-days', '1', '-extfile', name + '.ext', '-out', name + '.pem')
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=other',
            '-keyout', 'other.key', '-out', 'other.pem')
    t = lambda f: os.path.join(tmp, f)  # noqa: E731
    s5 = server('s5', '--tls-cert', t('server.pem'), '--tls-key', t('server.key'),
                '--tls-client-ca', t('ca.pem'))
    a = attack(s5, [])
    ok(a[0] == 'ERROR' and 'this server talks TLS' in a[1],
       'D8 a plain client at a TLS server is told: "%s"' % (a[1] if a[0] == 'ERROR' else a))
    r, data = nnremote(s5.port, 'tls.raw', 'tls=true', 'tls-ca-file=' + t('ca.pem'),
                       'tls-certificate=' + t('client.pem'), 'tls-key=' + t('client.key'))
    ok(r.returncode == 0 and data == whole, 'D8 mutual TLS with a client certificate: exact',
       r.stderr[-500:])
    r, _ = nnremote(s5.port, 'x.raw', 'tls=true', 'tls-ca-file=' + t('ca.pem'))
    ok(r.returncode != 0 and 'TLS with server 127.0.0.1:%d failed' % s5.port in r.stderr,
       'D8 mutual TLS without a client certificate: "%s"' %
       (re.search(r'ERROR: .*', r.stderr).group(0)[:150] if 'ERROR' in r.stderr else r.stderr))
    r, _ = nnremote(s5.port, 'x.raw', 'tls=true', 'tls-ca-file=' + t('other.pem'),
                    'tls-certificate=' + t('client.pem'), 'tls-key=' + t('client.key'))
    first = re.search(r'ERROR: from element \S*nnremote\S*: (.*)', r.stderr)
    ok(r.returncode != 0 and first and 'certificate is refused: it is not signed by a CA'
       in first.group(1), 'D8 an untrusted server certificate, the main message: "%s"' %
       (first.group(1)[:160] if first else r.stderr))
    r, _ = nnremote(s5.port, 'x.raw', 'tls=true', 'tls-ca-file=' + t('ca.pem'),
                    'tls-certificate=' + t('other.pem'), 'tls-key=' + t('other.key'),
                    'timeout=2000')
    ok(r.returncode != 0 and "refuse this client's certificate" in r.stderr
       and re.search(r"client's certificate is refused: it is not signed by a CA", s5.text()),
       'D8 a client certificate of another CA refused, the server says why', r.stderr[-400:])
    ok(re.search(r'client \d+ 127\.0\.0\.1:\d+ refused: TLS handshake failed', s5.text()),
       'D8 the server logs TLS failures with the peer address')
    r, _ = nnremote(s1.port, 'x.raw', 'tls=true', 'tls-ca-file=' + t('ca.pem'))
    first = re.search(r'ERROR: from element \S*nnremote\S*: (.*)', r.stderr)
    ok(r.returncode != 0 and first and 'does not talk TLS' in first.group(1),
       'D8 nnremote tls=true at a plain server: "%s"' % (first.group(1)[:120] if first else r.stderr))
    ok(re.search(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z client \d+ 127\.0\.0\.1:\d+ ', s1.text()),
       'logs: UTC time, client, peer address on every client line')

    rss1 = w.rss_kb(s1.p.pid)
    ok(s1.alive() and rss1 - rss0 < 48 * 1024,
       'server alive after every attack, RSS %d -> %d kB (%+d kB)' % (rss0, rss1, rss1 - rss0))
finally:
    for srv in servers:
        rc = srv.stop()
        if rc not in (0, -15, None):
            print('FAIL: server %s exited %d:\n%s' % (srv.log, rc, srv.text()[-2000:]))
            failed.append(srv.log)
    if failed:
        for srv in servers:
            print('---- %s (tail)\n%s' % (srv.log, srv.text()[-1500:]))
    shutil.rmtree(tmp, ignore_errors=True)

print('PASS' if not failed else 'FAILED: %d' % len(failed))
sys.exit(1 if failed else 0)

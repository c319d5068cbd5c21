#!/usr/bin/env python3
"""tests/remote/test-delay-proxy.py: the delaying proxy adds the delay it is
told, keeps order, and does not throttle a stream.

usage: test-delay-proxy.py SOURCE_DIR PROXY

Runs PROXY (tests/remote/delay-proxy.c, built) on localhost in front of an echo server and
measures: (1) round trips of small messages, direct and through the proxy
with --up 15 --down 25: the added round trip must be 40 ms (-1 / +80 ms);
(2) 400 numbered messages sent 1 ms apart through --delay 30: each comes
back in order, once, >= 60 ms after it was sent (median <= 210), the last
ones no later than the first ones + 100 ms (a proxy that delayed chunk
after chunk would be up to 24 s late: no head-of-line throttling).  The
lower bounds are strict (never early); the upper ones are loose because a
machine loaded by parallel builds wakes the proxy tens of ms late;
(3) 32 MiB streamed through --delay 20 arrive intact and in order, at a
rate close to the direct one; (4) a half-close is forwarded after the data;
(5) a refused target closes the client's connection with a message;
(6) the proxy's CPU time for 64 MiB moved (32 each way, delayed): a bound
far above what the kernel's copies cost and below a copy loop paid per
small chunk.
"""
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

src = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('-') else \
    os.environ.get('NNP_SOURCE_DIR', os.path.join(os.path.dirname(__file__), '..', '..'))
if len(sys.argv) > 1 and sys.argv[1] in ('-h', '--help'):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 3:
    raise SystemExit('usage: test-delay-proxy.py SOURCE_DIR PROXY')
proxy_bin = sys.argv[2]
failures = []


def check(cond, what):
    print(('ok  : ' if cond else 'FAIL: ') + what, flush=True)
    if not cond:
        failures.append(what)


def echo_server():
    """A threaded echo server on localhost; returns its port."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', 0))
    s.listen(16)

    def serve(c):
        # no Nagle: its wait for the ACK of the previous reply (which the
        # proxy, a receiver with nothing to send, delays) would add ~40 ms
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with c:
            while True:
                b = c.recv(1 << 16)
                if not b:
                    c.shutdown(socket.SHUT_WR)
                    return
                c.sendall(b)

    def accept():
        while True:
            c, _ = s.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return s.getsockname()[1]


class Proxy:
    def __init__(self, target_port, *opts):
        self.p = subprocess.Popen([proxy_bin, '--listen', '127.0.0.1:0',
                                   '--target', f'127.0.0.1:{target_port}', *opts],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if 'listening on' not in line:
            raise SystemExit(f'FAIL: the proxy did not start: {line!r} {self.p.stderr.read()}')
        self.port = int(line.split()[3].rsplit(':', 1)[1])

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise SystemExit('FAIL: the proxy did not stop on SIGTERM')
        return self.p.stderr.read()


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            raise EOFError(f'connection closed after {len(buf)} of {n} bytes')
        buf += b
    return bytes(buf)


def rtt_ms(port, n=20):
    s = socket.create_connection(('127.0.0.1', port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = []
    for i in range(n):
        t0 = time.monotonic()
        s.sendall(b'%08d' % i)
        assert recv_exact(s, 8) == b'%08d' % i
        t.append((time.monotonic() - t0) * 1000)
    s.close()
    return statistics.median(t)


echo = echo_server()

# (1) added round trip = up + down
direct = rtt_ms(echo)
p = Proxy(echo, '--up', '15', '--down', '25')
proxied = rtt_ms(p.port)
p.stop()
added = proxied - direct
check(39.0 <= added <= 120.0, f'round trip +{added:.1f} ms through --up 15 --down 25 (want 40)')

# (2) a paced stream: every message delayed by the same 60 ms, in order
p = Proxy(echo, '--delay', '30')
s = socket.create_connection(('127.0.0.1', p.port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
N = 400
sent = {}
got = []


def reader():
    buf = b''
    while len(got) < N:
        b = s.recv(1 << 16)
        if not b:
            return
        now = time.monotonic()
        buf += b
        while len(buf) >= 8:
            got.append((int(buf[:8]), now))
            buf = buf[8:]


th = threading.Thread(target=reader)
th.start()
t0 = time.monotonic()
for i in range(N):
    pause = t0 + i * 0.001 - time.monotonic()
    if pause > 0:
        time.sleep(pause)
    sent[i] = time.monotonic()
    s.sendall(b'%08d' % i)
th.join(30)
s.close()
p.stop()
check([i for i, _ in got] == list(range(N)), f'{len(got)} of {N} messages back, once each, in order')
if len(got) == N:
    lat = [(t - sent[i]) * 1000 for i, t in got]
    first, last = statistics.median(lat[:50]), statistics.median(lat[-50:])
    check(59.0 <= min(lat) and statistics.median(lat) <= 210.0,
          f'per-message delay min {min(lat):.1f} / median {statistics.median(lat):.1f} / '
          f'max {max(lat):.1f} ms (want 60)')
    check(last <= first + 100.0, f'no build-up: first 50 {first:.1f} ms, last 50 {last:.1f} ms')

# (3) a bulk stream keeps its content and (mostly) its rate
data = os.urandom(1 << 20) * 32


def stream(port):
    s = socket.create_connection(('127.0.0.1', port))
    out = bytearray()

    def rd():
        while True:
            b = s.recv(1 << 20)
            if not b:
                return
            out.extend(b)

    th = threading.Thread(target=rd)
    th.start()
    t0 = time.monotonic()
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)   # (4) the half-close travels after the data
    th.join(60)
    dt = time.monotonic() - t0
    s.close()
    return bytes(out), dt


def cpu_s(pid):
    f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')


_, t_direct = stream(echo)
p = Proxy(echo, '--delay', '20')
c0 = cpu_s(p.p.pid)
out, t_proxy = stream(p.port)
cpu = cpu_s(p.p.pid) - c0
p.stop()
check(out == data, f'32 MiB echoed through the proxy intact and in order ({len(out)} bytes), '
      'the half-close after them')
# the proxy adds 40 ms to the stream's end and copies each byte twice more:
# allow it 4x the direct time + 0.5 s, far below what a delay paid per
# chunk costs (128 chunks x 40 ms = 5 s)
check(t_proxy <= 4 * t_direct + 0.5,
      f'32 MiB in {t_proxy * 1000:.0f} ms through --delay 20 (direct {t_direct * 1000:.0f} ms)')
# (6) 64 MiB through it cost ~0.05-0.1 s of CPU here (kernel copies); 1 s
# means a copy loop in user space paying per chunk
check(cpu <= 1.0, f'proxy CPU for 64 MiB moved: {cpu:.2f} s (<= 1 s)')

# (5) a refused target: the client's connection is closed, the proxy says why
dead = socket.socket()
dead.bind(('127.0.0.1', 0))
dead_port = dead.getsockname()[1]
dead.close()
p = Proxy(dead_port)
s = socket.create_connection(('127.0.0.1', p.port))
s.settimeout(10)
try:
    closed = s.recv(1) == b''
except ConnectionError:
    closed = True
s.close()
err = p.stop()
check(closed and 'cannot connect' in err, f'refused target: client closed, proxy says {err.strip()!r}')

sys.exit(1 if failures else 0)

"""A small client of the nnpipe remote wire format (docs/remote.md, "Wire
format"), for the hostile-client tests and the server load benchmark: a good
client that streams frames and checks the results, and the pieces attackers
are made of (raw headers, HELLOs, FRAMEs with any caps string)."""
import hashlib
import os
import socket
import struct
import subprocess
import time

HELLO, HELLO_OK, ERROR, FRAME, RESULT, PING, PONG, COST, COST_REPLY = range(1, 10)
WHOLE, NODES, PLAN = 0, 1, 2
ALIGN = 64
CAPS = ('other/tensors,format=static,num_tensors=1,types=float32,'
        'dimensions=192:48:3:1,framerate=0/1')


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack('<I', len(b)) + b


def header(t, seq, n, version=1, magic=b'NNPR'):
    return struct.pack('<4sHBBQII', magic, version, t, 0, seq, n, 0)


def msg(t, seq, payload):
    return header(t, seq, len(payload)) + payload


def hello_payload(digest, kind=WHOLE, part='', stage=0, token=''):
    return struct.pack('<I', 1) + s(digest) + bytes([kind]) + s(part) + \
        struct.pack('<I', stage) + s(token)


def frame_payload(caps, data, dims, shapes='', dtype=1):
    """One tensor of dtype (ONNX: 1 float32) and dims (ONNX order)."""
    head = s(caps) + s(shapes) + struct.pack('<I', 1)
    desc_len = 4 + len(dims) * 8 + 16
    offset = (len(head) + desc_len + ALIGN - 1) // ALIGN * ALIGN
    desc = bytes([dtype, len(dims), 0, 0]) + b''.join(struct.pack('<Q', d) for d in dims) + \
        struct.pack('<QQ', offset, len(data))
    body = head + desc
    return body + b'\0' * (offset - len(body)) + data


def digest_of(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


class Closed(Exception):
    pass


def read_exact(c, n):
    b = b''
    while len(b) < n:
        try:
            chunk = c.recv(n - len(b))
        except (ConnectionResetError, BrokenPipeError):
            chunk = b''
        if not chunk:
            raise Closed('closed after %d of %d bytes' % (len(b), n))
        b += chunk
    return b


def recv(c):
    """(type, seq, payload) of the next message."""
    h = read_exact(c, 24)
    if h[:4] != b'NNPR':
        raise ValueError('not an nnpipe message: %r' % h[:8])
    t, seq, n = h[6], struct.unpack('<Q', h[8:16])[0], struct.unpack('<I', h[16:20])[0]
    return t, seq, read_exact(c, n)


def error_text(payload):
    n = struct.unpack('<I', payload[:4])[0]
    return payload[4:4 + n].decode(errors='replace')


def answer(c, timeout=30):
    """What the server says next, skipping keepalive PONGs: ('ERROR', text),
    ('RESULT', seq, payload), ('HELLO_OK', device), ('PONG', seq), or
    ('CLOSED', why) when it closes without a message."""
    c.settimeout(timeout)
    try:
        while True:
            t, seq, p = recv(c)
            if t == PONG and seq == 0:
                continue
            if t == ERROR:
                return ('ERROR', error_text(p))
            if t == RESULT:
                return ('RESULT', seq, p)
            if t == HELLO_OK:
                return ('HELLO_OK', error_text(p))
            return (t, seq)
    except (Closed, ConnectionResetError, socket.timeout, ValueError) as e:
        return ('CLOSED', str(e))


def result_data(p):
    """The first tensor's bytes of a RESULT payload."""
    pos = 0
    for _ in range(2):
        n = struct.unpack('<I', p[pos:pos + 4])[0]
        pos += 4 + n
    pos += 4
    rank = p[pos + 1]
    pos += 4 + 8 * rank
    off, nbytes = struct.unpack('<QQ', p[pos:pos + 16])
    return p[off:off + nbytes]


def connect(port, host='127.0.0.1', timeout=30):
    c = socket.create_connection((host, port), timeout=timeout)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


class GoodClient:
    """Streams the frames of a whole-model server and checks every result
    against the reference, in order."""

    def __init__(self, port, digest, frames, reference, token='', caps=CAPS,
                 dims=(1, 3, 48, 192), kind=WHOLE, part='', in_flight=4):
        self.port, self.digest, self.token = port, digest, token
        self.frames, self.reference = frames, reference
        self.caps, self.dims, self.kind, self.part = caps, dims, kind, part
        self.in_flight = in_flight

    def run(self, pace=0.0):
        """Every frame once; returns the number of results that were right,
        in order; raises with the reason otherwise."""
        c = connect(self.port)
        c.sendall(msg(HELLO, 0, hello_payload(self.digest, self.kind, self.part,
                                             token=self.token)))
        a = answer(c)
        if a[0] != 'HELLO_OK':
            c.close()
            raise RuntimeError('good client refused: %r' % (a,))
        sent = got = 0
        n = len(self.frames)
        while got < n:
            while sent < n and sent - got < self.in_flight:
                c.sendall(msg(FRAME, sent + 1, frame_payload(self.caps, self.frames[sent],
                                                             self.dims)))
                sent += 1
                if pace:
                    time.sleep(pace)
            a = answer(c, timeout=120)
            if a[0] != 'RESULT':
                c.close()
                raise RuntimeError('good client: frame %d: %r' % (got + 1, a))
            if a[1] != got + 1:
                c.close()
                raise RuntimeError('good client: result %d came for frame %d' % (a[1], got + 1))
            if result_data(a[2]) != self.reference[got]:
                c.close()
                raise RuntimeError('good client: result %d differs' % (got + 1))
            got += 1
        c.close()
        return got


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def threads(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('Threads:'):
                return int(line.split()[1])
    return 0


class Server:
    """`nnpipe serve MODEL ARGS` on a free port; log in a file."""

    def __init__(self, cli, model, log, *args, env=None):
        self.log = log
        e = dict(os.environ)
        e.update(env or {})
        self.out = open(log, 'w')
        self.p = subprocess.Popen([cli, 'serve', model, '--listen', '127.0.0.1:0'] + list(args),
                                  stdout=self.out, stderr=subprocess.STDOUT, env=e)
        self.port = self.http = None
        for _ in range(300):
            text = open(log).read()
            for line in text.splitlines():
                if line.startswith('listening on 127.0.0.1:'):
                    self.port = int(line.split(':')[1].split(',')[0].split()[0])
                if line.startswith('http on '):
                    self.http = int(line.split(':')[1].split()[0])
            if self.port and ('--http' not in args or self.http):
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError('server did not start:\n' + open(log).read())

    def alive(self):
        return self.p.poll() is None

    def text(self):
        return open(self.log).read()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.out.close()
        return self.p.returncode

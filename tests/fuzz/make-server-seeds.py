#!/usr/bin/env python3
"""Write the seeds of the server fuzzer (tests/fuzz/corpus/server/, see
tests/fuzz/fuzz-server.c): the first byte chooses what the rest is
(0: a FRAME payload for the whole model, 1: a FRAME payload for nodes 0..2,
2: a HELLO payload, 3: raw messages after a HELLO), the model being
tests/data/small.onnx (x: 1x3x8x8).  The FRAMEs carry the caps that once
ended `nnpipe serve` (issue 19 D1) and their harmless cousins.

    tests/fuzz/make-server-seeds.py tests/fuzz/corpus/server
"""
import hashlib
import os
import struct
import sys

HELLO, FRAME, PING, COST = 1, 4, 6, 8
BASE = 'other/tensors,format=static,num_tensors=1,types=float32,dimensions=8:8:3:1'


def s(text):
    b = text.encode()
    return struct.pack('<I', len(b)) + b


def msg(t, seq, payload):
    return struct.pack('<4sHBBQII', b'NNPR', 1, t, 0, seq, len(payload), 0) + payload


def frame(caps, dims=(1, 3, 8, 8), shapes=''):
    n = 4
    for d in dims:
        n *= d
    head = s(caps) + s(shapes) + struct.pack('<I', 1)
    off = (len(head) + 4 + 8 * len(dims) + 16 + 63) // 64 * 64
    desc = bytes([1, len(dims), 0, 0]) + b''.join(struct.pack('<Q', d) for d in dims) + \
        struct.pack('<QQ', off, n)
    body = head + desc
    return body + b'\0' * (off - len(body)) + b'\0' * n


MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'small.onnx')
with open(MODEL, 'rb') as f:
    DIGEST = hashlib.sha256(f.read()).hexdigest()


def hello(kind=0, part='', stage=0, token='', digest=DIGEST):
    return struct.pack('<I', 1) + s(digest) + bytes([kind]) + s(part) + \
        struct.pack('<I', stage) + s(token)


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
seeds = {
    'frame-good': b'\0' + frame(BASE + ',framerate=0/1'),
    'frame-rate-dash': b'\0' + frame(BASE + ',framerate=0-1'),
    'frame-rate-negative': b'\0' + frame(BASE + ',framerate=-1/1'),
    'frame-rate-int': b'\0' + frame(BASE + ',framerate=(int)5'),
    'frame-feature': b'\0' + frame(BASE.replace('tensors,', 'tensors(memory:GLMemory),')),
    'frame-range': b'\0' + frame(BASE + ',framerate=[0/1,30/1]'),
    'frame-two': b'\0' + frame(BASE + ';' + BASE),
    'frame-singular': b'\0' + frame('other/tensor,type=float32,dimension=8:8:3:1,framerate=0/1'),
    'frame-extra': b'\0' + frame(BASE + ',framerate=0/1,foo=(string)bar'),
    'frame-batch2': b'\0' + frame(BASE.replace('8:8:3:1', '8:8:3:2'), (2, 3, 8, 8)),
    'frame-shapes': b'\0' + frame(BASE, shapes='1x3x8x8'),
    'frame-part': b'\1' + frame(BASE + ',framerate=0/1'),
    'hello-whole': b'\2' + hello(),
    'hello-nodes': b'\2' + hello(1, '0..2'),
    'hello-bogus': b'\2' + hello(1, 'bogus0..bogus1'),
    'hello-plan': b'\2' + hello(2, '{"version":1,"stages":[{"nodes":["a"]}]}', 0),
    'stream': b'\3' + msg(PING, 1, b'') + msg(FRAME, 1, frame(BASE)) +
    msg(COST, 2, b'\0' + s('') + struct.pack('<I', 0) + s('x=1,3,8,8')),
    'stream-bad-header': b'\3' + b'XXXX' + b'\0' * 20,
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
print('%d seeds in %s' % (len(seeds), out))

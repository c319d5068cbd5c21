#!/usr/bin/env python3
"""Write the seeds of the remote wire-format fuzzer (tests/fuzz/corpus/remote-frame/):
well-formed messages of every type (docs/remote.md, "Wire format"), a stream
of several, and an address.

    tests/fuzz/make-remote-seeds.py tests/fuzz/corpus/remote-frame
"""
import os
import struct
import sys

HELLO, HELLO_OK, ERROR, FRAME, RESULT, PING, PONG, COST, COST_REPLY = range(1, 10)


def msg(t, seq, payload):
    return struct.pack('<4sHBBQII', b'NNPR', 1, t, 0, seq, len(payload), 0) + payload


def s(text):
    b = text.encode()
    return struct.pack('<I', len(b)) + b


def frame(caps, shapes, tensors):
    """tensors: (dtype, dims, element size)"""
    head = s(caps) + s(shapes) + struct.pack('<I', len(tensors))
    descr_len = sum(4 + 8 * len(d) + 16 for _, d, _ in tensors)
    pos = len(head) + descr_len
    descr, datas = b'', []
    for dtype, dims, esize in tensors:
        pos = (pos + 63) // 64 * 64
        n = esize
        for d in dims:
            n *= d
        descr += struct.pack('<BBxx', dtype, len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        descr += struct.pack('<QQ', pos, n)
        datas.append((pos, bytes((i * 7) & 0xff for i in range(n))))
        pos += n
    out = bytearray(head + descr)
    for off, data in datas:
        out += b'\0' * (off - len(out)) + data
    return bytes(out)


def seeds():
    digest = '4918' * 16
    hello = struct.pack('<I', 1) + s(digest) + b'\x01' + s('40..83') + struct.pack('<I', 0) + s('')
    yield 'hello', msg(HELLO, 0, hello)
    plan = '{"version":1,"stages":[{"device":"cpu","nodes":["a"]},{"device":"cpu","nodes":["b"]}]}'
    yield 'hello-plan', msg(HELLO, 0, struct.pack('<I', 1) + s(digest) + b'\x02' + s(plan) +
                            struct.pack('<I', 1) + s('token'))
    f1 = frame('other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:2:1',
               '1x3x8x8', [(1, [1, 2, 4], 4)])
    yield 'frame', msg(FRAME, 3, f1)
    f2 = frame('other/tensors,format=static,num_tensors=2,types="uint8,int64",'
               'dimensions="3:1,2"', '', [(2, [1, 3], 1), (7, [2], 8)])
    yield 'result-2', msg(RESULT, 4, f2)
    yield 'cost', msg(COST, 5, b'\x00' + s('') + struct.pack('<I', 0) + s('x=1,3,8,8'))
    yield 'cost-reply', msg(COST_REPLY, 5, s('cpu:1') + struct.pack('<I', 2) + s('conv') +
                            struct.pack('<d', 0.25) + s('relu') + struct.pack('<d', 0.01))
    yield 'ping', msg(PING, 1, b'\0' * 32)
    yield 'error', msg(ERROR, 0, s('model digest mismatch'))
    yield 'stream', msg(HELLO, 0, hello) + msg(FRAME, 0, f1) + msg(FRAME, 1, f2) + msg(PING, 2, b'')
    yield 'address', b'[::1]:7000'


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()

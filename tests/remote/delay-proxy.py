#!/usr/bin/env python3
"""tests/remote/delay-proxy.py: a TCP proxy that adds latency.

usage: delay-proxy.py --listen [HOST:]PORT --target HOST:PORT [--delay MS]
                      [--up MS] [--down MS] [--max-queued BYTES]

Accepts connections on --listen and forwards each one to --target.  Every
chunk read from one side is written to the other side MS milliseconds after
it arrived: --up delays client -> target, --down target -> client, --delay
sets both (default 10: 20 ms added to a round trip).  Order is kept and the
delay does not throttle: chunks are queued with their due time and written
when due, so a stream keeps its rate and only arrives later (a link with
latency, not a slower one).  Up to --max-queued bytes (default 64 MiB) wait
per direction; past that the proxy stops reading that side (backpressure).
A half-close is forwarded after the data before it; a reset closes both.

Prints "delay-proxy: listening on HOST:PORT" on stdout when ready (PORT 0
picks a free port and prints it).  The kernel here has no netem: this is
how the remote tests and benchmarks/remote.sh add latency.  Stop it with
SIGTERM or SIGINT.
"""
import argparse
import asyncio
import signal
import sys

CHUNK = 1 << 20
# stream buffers: big enough that a read returns what the socket holds and a
# write does not wait for drain at every chunk
BUFFER = 4 << 20


def hostport(text, default_host=None):
    host, sep, port = text.rpartition(':')
    if not sep:
        host = default_host
    if not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"'{text}' is not HOST:PORT")
    return host.strip('[]'), int(port)


def milliseconds(text):
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a delay in ms (a number >= 0)")
    return v


class Direction:
    """One way of one connection: read chunks, deliver each `delay` s after
    its arrival, in order."""

    def __init__(self, reader, writer, delay, max_queued):
        self.reader, self.writer = reader, writer
        self.delay, self.max_queued = delay, max_queued
        self.queue = asyncio.Queue()
        self.queued = 0
        self.room = asyncio.Event()
        self.room.set()

    async def read(self):
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self.room.wait()
                data = await self.reader.read(CHUNK)
                due = loop.time() + self.delay
                if not data:
                    self.queue.put_nowait((due, None))
                    return
                self.queued += len(data)
                if self.queued >= self.max_queued:
                    self.room.clear()
                self.queue.put_nowait((due, data))
        except (ConnectionError, OSError):
            self.queue.put_nowait((loop.time(), ConnectionResetError))

    async def write(self):
        loop = asyncio.get_running_loop()
        while True:
            due, data = await self.queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is ConnectionResetError:
                raise ConnectionResetError
            if data is None:
                if self.writer.can_write_eof():
                    self.writer.write_eof()
                return
            self.writer.write(data)
            await self.writer.drain()
            self.queued -= len(data)
            if self.queued < self.max_queued:
                self.room.set()


async def serve_one(client_r, client_w, args):
    peer = client_w.get_extra_info('peername')
    try:
        target_r, target_w = await asyncio.open_connection(*args.target, limit=BUFFER)
    except OSError as e:
        print(f"delay-proxy: {peer}: cannot connect to {args.target[0]}:{args.target[1]}: {e}",
              file=sys.stderr, flush=True)
        client_w.close()
        return
    for w in (client_w, target_w):
        w.transport.set_write_buffer_limits(high=BUFFER)
    up = Direction(client_r, target_w, args.up / 1000.0, args.max_queued)
    down = Direction(target_r, client_w, args.down / 1000.0, args.max_queued)
    tasks = [asyncio.ensure_future(t) for t in (up.read(), up.write(), down.read(), down.write())]
    try:
        # the writers end on a forwarded EOF (both ways: done) or an error (abort)
        await asyncio.gather(tasks[1], tasks[3])
    except (ConnectionError, OSError):
        for w in (client_w, target_w):
            if w.get_extra_info('socket') is not None:
                w.transport.abort()
    finally:
        for t in tasks:
            t.cancel()
        for w in (client_w, target_w):
            w.close()


async def main(args):
    server = await asyncio.start_server(lambda r, w: serve_one(r, w, args), *args.listen,
                                        limit=BUFFER)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"delay-proxy: listening on {host}:{port} -> {args.target[0]}:{args.target[1]}, "
          f"+{args.up:g} ms up, +{args.down:g} ms down", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def parse(argv):
    ap = argparse.ArgumentParser(prog='tests/remote/delay-proxy.py',
                                 description='TCP proxy adding latency (see the header).')
    ap.add_argument('--listen', required=True, type=lambda t: hostport(t, '127.0.0.1'),
                    help='[HOST:]PORT to listen on (host default 127.0.0.1, port 0 = any)')
    ap.add_argument('--target', required=True, type=hostport, help='HOST:PORT to forward to')
    ap.add_argument('--delay', type=milliseconds, default=10.0,
                    help='ms added each way (default 10)')
    ap.add_argument('--up', type=milliseconds, help='ms added client -> target')
    ap.add_argument('--down', type=milliseconds, help='ms added target -> client')
    ap.add_argument('--max-queued', type=int, default=64 << 20,
                    help='bytes queued per direction before reading stops')
    args = ap.parse_args(argv)
    if args.up is None:
        args.up = args.delay
    if args.down is None:
        args.down = args.delay
    if args.max_queued < CHUNK:
        ap.error(f'--max-queued must be >= {CHUNK}')
    return args


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        sys.exit(0)
    try:
        asyncio.run(main(parse(sys.argv[1:])))
    except OSError as e:
        print(f'delay-proxy: {e}', file=sys.stderr)
        sys.exit(1)

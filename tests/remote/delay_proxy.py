#!/usr/bin/env python3
"""A TCP forwarder on 127.0.0.1 that adds network latency: the benchmarks' stand-in for
``tc netem delay`` where the kernel has no sch_netem (this project's machines do not).

Every byte read from one side is written to the other ``--delay-ms`` later, in order, as it
arrives (a stream, not whole HTTP messages), so a request/answer round trip costs twice the
delay and a transfer is not serialized behind its own last byte. A new connection's first
bytes wait one round trip more, for the TCP handshake a real network would cost. Nothing is
changed: HTTP and SigV4 pass through as they are. There is no flow control: what is read is
queued until its time, however slowly the other side reads (the benchmarks' clients read what
they asked for at once).

Why not tests/remote/fault_proxy.py's ``--latency-ms``: that proxy parses HTTP and holds each
answer whole before it forwards it (it must, to damage bodies), so an answer's first byte also
waits for its last; a network streams. Both are cheap (about 1 ms of CPU per MB forwarded,
measured); the difference shows in the time to the first batch (docs/benchmarks.md).

It counts connections, bytes each way and HTTP/1.1 requests (request lines seen in the
client's stream: `` HTTP/1.1\r\n`` ends each one), so a benchmark can report a client's requests;
a ``stats`` line on its stdin answers them as one JSON line.

Used as a module (``DelayProxy`` runs it in a child process) or as a program:
``delay_proxy.py --upstream HOST:PORT --delay-ms 10`` prints ``{"url": "http://127.0.0.1:PORT"}``
on one line and serves until stdin closes. Standard library only.
"""
import argparse
import asyncio
import collections
import json
import sys

import fault_proxy  # ChildServer: the same directory

REQUEST_LINE_END = b" HTTP/1.1\r\n"
COUNTS = {"connections": 0, "requests": 0, "bytes_up": 0, "bytes_down": 0}


class _Direction:
    """One direction of one connection: bytes wait in `queue` until their time, then go out on
    `out` (or wait for it to be connected). `closing` is set when the source ended: the sink
    is closed once the queue has drained."""

    def __init__(self, loop, delay_s, extra_first_s=0.0):
        self.loop, self.delay_s = loop, delay_s
        self.queue = collections.deque()  # (due, bytes); due is None for the end of stream
        self.timer = None
        self.out = None
        self.extra_s = extra_first_s
        self.ended = False  # the source's end is queued

    def push(self, data):
        due = self.loop.time() + self.delay_s + self.extra_s
        self.extra_s = 0.0
        self.queue.append((due, data))
        self._arm()

    def end(self):
        if self.ended:
            return
        self.ended = True
        self.queue.append((self.loop.time() + self.delay_s, None))
        self._arm()

    def connected(self, transport):
        self.out = transport
        self._arm()

    def _arm(self):
        if self.timer is None and self.queue and self.out is not None:
            self.timer = self.loop.call_at(self.queue[0][0], self._flush)

    def _flush(self):
        self.timer = None
        now = self.loop.time()
        while self.queue and self.queue[0][0] <= now:
            _, data = self.queue.popleft()
            if self.out.is_closing():
                self.queue.clear()
                return
            if data is None:
                self.out.close()
                return
            self.out.write(data)
        self._arm()


class _Side(asyncio.Protocol):
    """A socket's reads, pushed into the direction that leaves through the other socket."""

    def __init__(self, direction: _Direction, on_connect=None, from_client=False):
        self.direction, self.on_connect, self.from_client = direction, on_connect, from_client
        self.tail = b""  # the end of the last read, for a request line split between reads

    def connection_made(self, transport):
        if self.on_connect:
            self.on_connect(transport)

    def data_received(self, data):
        if self.from_client:
            COUNTS["bytes_up"] += len(data)
            seen = self.tail + data
            COUNTS["requests"] += seen.count(REQUEST_LINE_END)
            # Kept: what could begin a request line's end (not one already counted).
            self.tail = seen[-(len(REQUEST_LINE_END) - 1):]
        else:
            COUNTS["bytes_down"] += len(data)
        self.direction.push(data)

    def eof_received(self):
        self.direction.end()
        return False

    def connection_lost(self, exc):
        self.direction.end()


async def serve(upstream_host, upstream_port, delay_s, ready):
    loop = asyncio.get_running_loop()
    dialing = set()  # the tasks connecting upstream, referenced until they end

    def client_side():
        # Client -> server: its first bytes also wait for the handshake's round trip.
        up = _Direction(loop, delay_s, extra_first_s=2 * delay_s)
        down = _Direction(loop, delay_s)

        def accepted(transport):
            COUNTS["connections"] += 1
            down.connected(transport)
            task = loop.create_task(dial(up, down))
            dialing.add(task)
            task.add_done_callback(dialing.discard)

        return _Side(up, on_connect=accepted, from_client=True)

    async def dial(up, down):
        try:
            await loop.create_connection(lambda: _Side(down, on_connect=up.connected),
                                         upstream_host, upstream_port)
        except OSError:
            down.out.close()

    server = await loop.create_server(client_side, "127.0.0.1", 0)
    ready(server.sockets[0].getsockname()[1])
    async with server:
        while await loop.run_in_executor(None, sys.stdin.readline):  # until stdin closes
            print(json.dumps(COUNTS), flush=True)  # a "stats" line


class DelayProxy(fault_proxy.ChildServer):
    """The forwarder in a child process; `url` is its http://127.0.0.1:PORT."""

    def __init__(self, upstream: str, delay_ms: float, python: str = sys.executable):
        super().__init__([python, __file__, "--upstream", upstream, "--delay-ms", str(delay_ms)])

    def stats(self) -> dict:
        """Connections, HTTP/1.1 requests and bytes each way (up: to the server) so far."""
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT or http://HOST:PORT")
    parser.add_argument("--delay-ms", type=float, required=True, help="added each way")
    args = parser.parse_args()
    hostport = args.upstream.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        parser.error("the upstream must be on 127.0.0.1")

    def ready(port_number):
        print(json.dumps({"url": f"http://127.0.0.1:{port_number}"}), flush=True)

    asyncio.run(serve(host, int(port), args.delay_ms / 1000.0, ready))
    return 0


if __name__ == "__main__":
    sys.exit(main())

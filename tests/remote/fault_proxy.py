#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for docfeed's remote-dataset tests and benchmark, on 127.0.0.1.

It sits between docfeed and a real server (SeaweedFS's S3 endpoint or nginx, from servers.py),
forwards every request unchanged (the Host header too, so SigV4 signatures made for the proxy's
address still verify upstream) and damages some answers on purpose:

* ``slowdown``: HTTP 503 with S3's ``SlowDown`` error document;
* ``reset``: the status, the headers and half the body, then a TCP reset (SO_LINGER 0);
* ``truncate``: the full Content-Length announced, half the body sent, then the connection closed;
* ``flip``: the whole body, with one byte flipped (XOR 0x20) in its middle;
* on uploads (PUT, POST, DELETE: ``docfeed pack -o s3://``), ``slowdown`` answers 503 without
  forwarding; ``reset`` and ``truncate`` forward the request and then reset the connection
  before any answer when the server's answer has no body (a part stored whose ETag never
  arrives: the retry must be harmless), else damage the answer's body as for a GET;
* ``latency``: every request waits ``--latency-ms`` before it is forwarded and again before its
  answer is sent (so 10 ms each way adds 20 ms to a round trip).
* ``--max-concurrent K``: a server's capacity, as S3 throttles a client that sends more than a
  prefix serves: a request arriving while K others are being served is answered 503 SlowDown
  (after the round trip's latency) instead of being forwarded; the stats count them
  (``throttled``) and the most requests served at once (``peak_concurrent``). It combines with
  any fault.

A fault hits every ``--every``-th request that it applies to (ranged GETs only with
``--ranged-only``, which keeps the manifest and index reads intact; ranges of at least
``--min-range`` bytes only, which also spares the small reads of metadata; requests whose
method and path match the regular expression ``--match`` only, e.g. ``PUT .*partNumber=2&`` for
the second part of every multipart upload, or ``docfeed[.]json`` for a dataset's manifest). With ``--every`` above 1
the faults are transient: the next request for the same URL and range after a damaged one is
always served intact (as a retry usually is), and so is every later ranged request holding the
middle of a damaged range (a cache refetches whole blocks around damaged bytes), so a test's outcome does not depend on how
concurrent requests interleave. ``--every 1`` is a persistent fault: every request is hit. ``GET /__faultproxy__/stats`` answers the counts as JSON (requests forwarded,
faults injected), so a test can check that its faults really happened.

Used as a module (``FaultProxy`` in a thread, or ``start_proxy`` in a subprocess) or as a
program: ``fault_proxy.py --upstream URL --fault flip --every 3`` prints ``{"url": ...}`` on one
line and serves until stdin closes. Standard library only, so any venv runs it.
"""
import argparse
import http.client
import http.server
import json
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

FAULTS = ("none", "slowdown", "reset", "truncate", "flip")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
              "trailer", "upgrade"}
SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy = None  # the FaultProxy, set per server class

    def log_message(self, *args):  # quiet
        pass

    def _upstream(self) -> http.client.HTTPConnection:
        local = self.proxy.local
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.proxy.upstream_host, self.proxy.upstream_port,
                                              timeout=60)
            local.conn = conn
        return conn

    def _forward(self, flip_upload=False):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if flip_upload and body:  # the upload damaged on its way to the server
            damaged = bytearray(body)
            damaged[len(damaged) // 2] ^= 0x20
            body = bytes(damaged)
        for attempt in range(2):  # a kept-alive upstream connection may have been closed
            conn = self._upstream()
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                return resp.status, resp.getheaders(), data
            except (http.client.HTTPException, OSError):
                conn.close()
                self.proxy.local.conn = None
                if attempt == 1:
                    raise

    def _send(self, status, headers, body, head):
        self.send_response(status)
        length = str(len(body))
        for k, v in headers:
            if k.lower() == "content-length" and head:
                length = v  # a HEAD answer's length is the object's, its body is empty
            elif k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", length)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _handle(self, head: bool):
        p = self.proxy
        if self.path == "/__faultproxy__/stats":
            body = json.dumps(p.stats()).encode()
            self._send(200, [("Content-Type", "application/json")], body, head)
            return
        if not p.max_concurrent:
            self._serve(head)
            return
        with p._lock:  # a server's capacity: the requests past it are throttled
            admitted = p._active < p.max_concurrent
            if admitted:
                p._active += 1
                p._counts["peak_concurrent"] = max(p._counts["peak_concurrent"], p._active)
            else:
                p._counts["throttled"] += 1
        if not admitted:
            time.sleep(p.latency_s)  # the way in; _slow_down waits the way out
            self._slow_down(head)
            return
        try:
            self._serve(head)
        finally:
            with p._lock:
                p._active -= 1

    def _slow_down(self, head: bool):
        """503 SlowDown, sent after the way back's latency."""
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # an upload's body, unread upstream: the connection stays usable
        if self.proxy.latency_s:
            time.sleep(self.proxy.latency_s)
        self._send(503, [("Content-Type", "application/xml")], SLOWDOWN, head)

    def _serve(self, head: bool):
        p = self.proxy
        if p.latency_s:
            time.sleep(p.latency_s)
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        ranged = rng is not None and int(rng.group(2)) - int(rng.group(1)) + 1 >= p.min_range
        key = (self.command, self.path, self.headers.get("Range"))
        matched = p.match is None or p.match.search(f"{self.command} {self.path}") is not None
        fault = p.next_fault(ranged and not head, key) if matched else p.next_fault(None, key)
        if fault == "slowdown":
            self._slow_down(head)
            return
        uploading = int(self.headers.get("Content-Length") or 0) > 0
        status, headers, body = self._forward(flip_upload=fault == "flip" and uploading)
        if fault == "flip" and uploading:
            self._send(status, headers, body, head)  # the answer as the server gave it
            return
        if p.latency_s:
            time.sleep(p.latency_s)
        if fault in ("reset", "truncate") and not body and self.command in ("PUT", "POST",
                                                                           "DELETE"):
            self._reset()
            return
        if head or fault == "none" or not body:
            self._send(status, headers, body, head)
            return
        if fault == "flip":
            damaged = bytearray(body)
            damaged[len(damaged) // 2] ^= 0x20
            self._send(status, headers, bytes(damaged), head)
            return
        # reset / truncate: announce everything, send half, then cut the connection.
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        self.close_connection = True
        if fault == "reset":
            self._reset()

    def _reset(self):
        # Closed with SO_LINGER 0 and no FIN first (_Server.shutdown_request): a reset.
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with self.proxy._lock:
            self.proxy.reset_sockets.add(self.connection.fileno())

    def do_GET(self):
        self._handle(False)

    def do_HEAD(self):
        self._handle(True)

    def do_PUT(self):
        self._handle(False)

    def do_POST(self):
        self._handle(False)

    def do_DELETE(self):
        self._handle(False)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    proxy = None

    def shutdown_request(self, request):
        with self.proxy._lock:
            reset = request.fileno() in self.proxy.reset_sockets
            self.proxy.reset_sockets.discard(request.fileno())
        if reset:
            self.close_request(request)  # no shutdown(SHUT_WR): RST, not FIN
        else:
            super().shutdown_request(request)


def _byte_range(key):
    """(first, last) of a request key's Range header, or None."""
    m = re.fullmatch(r"bytes=(\d+)-(\d+)", key[2] or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _retries(damaged, key) -> bool:
    """Whether request `key` asks again for what damaged request `damaged` spoiled: the same
    method and path, and the same Range header, or a range holding the middle of the damaged
    one (where a flip lands and a cut starts). A cache refetching damaged bytes asks for whole
    blocks around them, not always the range that came damaged, and its neighbours' requests
    may hold them too."""
    if damaged[:2] != key[:2]:
        return False
    if damaged[2] == key[2]:
        return True
    a, b = _byte_range(damaged), _byte_range(key)
    if a is None or b is None:
        return False
    middle = a[0] + (a[1] - a[0] + 1) // 2
    return b[0] <= middle <= b[1]


class FaultProxy:
    """The proxy, serving in a daemon thread of this process until close()."""

    def __init__(self, upstream: str, fault: str = "none", every: int = 0,
                 latency_ms: float = 0, ranged_only: bool = False, min_range: int = 0,
                 match: "str | None" = None, max_concurrent: int = 0):
        self.min_range = min_range
        self.max_concurrent = max_concurrent
        self._active = 0
        self.match = re.compile(match) if match else None
        if fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}")
        u = urllib.parse.urlsplit(upstream)
        self.upstream_host, self.upstream_port = u.hostname, u.port or 80
        self.fault, self.every, self.ranged_only = fault, every, ranged_only
        self.latency_s = latency_ms / 1000.0
        self.local = threading.local()
        self._lock = threading.Lock()
        self._eligible = 0
        self._damaged = []  # (method, path, Range header) of damaged requests not retried yet
        self._counts = {"requests": 0, "faults": 0, "throttled": 0, "peak_concurrent": 0}
        self.reset_sockets = set()
        handler = type("Handler", (_Handler,), {"proxy": self})
        server = type("Server", (_Server,), {"proxy": self})
        self.server = server(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def next_fault(self, ranged_get, key) -> str:
        """The fault for one request; `ranged_get` None: a request --match excludes."""
        with self._lock:
            self._counts["requests"] += 1
            if (self.fault == "none" or self.every <= 0 or ranged_get is None
                    or (self.ranged_only and not ranged_get)):
                return "none"
            # The retry of a damaged request (transient faults): intact. Ranged requests keep
            # their damaged bytes spared for good, so that every retry of them passes.
            retried = [d for d in self._damaged if _retries(d, key)]
            if retried:
                if _byte_range(retried[0]) is None:
                    self._damaged.remove(retried[0])
                return "none"
            self._eligible += 1
            if self._eligible % self.every != 0:
                return "none"
            self._counts["faults"] += 1
            if self.every > 1:
                self._damaged.append(key)
            return self.fault

    def stats(self) -> dict:
        with self._lock:
            return dict(self._counts, fault=self.fault, every=self.every)

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ChildServer:
    """A test server program (this one, tests/remote/delay_proxy.py) in a child process: its own
    GIL, so a Python test that drives docfeed in the same process never starves it. The program
    prints ``{"url": ...}`` on its first line and serves until its stdin closes; close() closes
    it."""

    def __init__(self, args: list):
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise RuntimeError(f"{args[1]} did not start:\n{self.proc.stderr.read()}")
        self.url = json.loads(line)["url"]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ProxyProcess(ChildServer):
    """This proxy in a child process."""

    def __init__(self, upstream: str, fault: str = "none", every: int = 0,
                 latency_ms: float = 0, ranged_only: bool = False, min_range: int = 0,
                 match: "str | None" = None, python: str = sys.executable,
                 max_concurrent: int = 0):
        args = [python, __file__, "--upstream", upstream, "--fault", fault, "--every", str(every),
                "--latency-ms", str(latency_ms), "--min-range", str(min_range),
                "--max-concurrent", str(max_concurrent)]
        args += ["--match", match] if match else []
        args += ["--ranged-only"] if ranged_only else []
        super().__init__(args)

    def stats(self) -> dict:
        with urllib.request.urlopen(self.url + "/__faultproxy__/stats", timeout=10) as r:
            return json.loads(r.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="http://HOST:PORT of the real server")
    parser.add_argument("--fault", choices=FAULTS, default="none")
    parser.add_argument("--every", type=int, default=0,
                        help="the fault hits every N-th eligible request (1: all; 0: none)")
    parser.add_argument("--latency-ms", type=float, default=0, help="added each way")
    parser.add_argument("--ranged-only", action="store_true",
                        help="faults only on ranged GETs (the samples' reads)")
    parser.add_argument("--min-range", type=int, default=0,
                        help="with --ranged-only: ranges of at least this many bytes only")
    parser.add_argument("--match", default=None,
                        help="faults only on requests whose 'METHOD PATH' this regex matches")
    parser.add_argument("--max-concurrent", type=int, default=0,
                        help="answer 503 SlowDown to requests past this many at once (0: none)")
    args = parser.parse_args()
    proxy = FaultProxy(args.upstream, args.fault, args.every, args.latency_ms, args.ranged_only,
                       args.min_range, args.match, args.max_concurrent)
    print(json.dumps({"url": proxy.url}), flush=True)
    sys.stdin.read()
    proxy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

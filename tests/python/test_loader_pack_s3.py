"""`docfeed pack SRC -o s3://...` and `docfeed merge PARTS -o s3://...` against SeaweedFS: the
objects are the local pack's files byte for byte (read back with boto3, the independent
client), `verify` and `inspect` pass, and docfeed.Loader gives the local pack's batches for the
same seed. Failures (missing bucket, wrong secret, a prefix already used, a server that keeps
failing one part or the manifest, through tests/remote/fault_proxy.py) end in an error naming
the URL and leave nothing that opens as a dataset, and no multipart upload in progress;
transient faults are retried. Runs in the front venvs (.venv/train, .venv/hf5); the servers
come from the `remote_servers` fixture (conftest.py)."""
import json
import os
import pathlib
import subprocess
import sys
import uuid

import numpy as np
import pytest

import docfeed
from conftest import REPO, docfeed_bin

sys.path.insert(0, str(REPO / "tests" / "remote"))
from fault_proxy import ProxyProcess  # noqa: E402

SRC = REPO / "tests" / "data" / "sample-docs"
OPTIONS = dict(batch_size=4, image_size=(96, 64), shuffle=True, seed=7, dtype="uint8",
               num_threads=2, drop_last=False)
# boto3 lives in the project's .venv (the servers' Python), not in the front venvs.
BOTO_SCRIPT = """
import hashlib, json, sys, boto3
endpoint, key, secret, bucket, prefix = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                  aws_secret_access_key=secret, region_name="us-east-1")
objects = {}
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
    for o in page.get("Contents", []):
        body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
        objects[o["Key"][len(prefix) + 1:]] = hashlib.sha256(body).hexdigest()
uploads = s3.list_multipart_uploads(Bucket=bucket, Prefix=prefix + "/").get("Uploads", [])
print(json.dumps({"objects": objects, "uploads": [u["Key"] for u in uploads]}))
"""


def s3_state(servers, prefix):
    """What boto3 sees under s3://BUCKET/PREFIX/: {relative key: sha256} and the keys of
    multipart uploads still in progress."""
    out = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", BOTO_SCRIPT,
         servers["DOCFEED_TEST_S3_ENDPOINT"], servers["DOCFEED_TEST_S3_ACCESS_KEY"],
         servers["DOCFEED_TEST_S3_SECRET_KEY"], servers["DOCFEED_TEST_S3_BUCKET"], prefix],
        capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def local_state(directory: pathlib.Path):
    import hashlib
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def s3(remote_servers, monkeypatch, tmp_path):
    """The AWS variables for SeaweedFS, in this process (the Loader) and for the CLI; parts of
    5 MiB, so the sample documents' 8.4 MB data file goes up as a two-part multipart upload."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    settings = dict(AWS_ACCESS_KEY_ID=remote_servers["DOCFEED_TEST_S3_ACCESS_KEY"],
                    AWS_SECRET_ACCESS_KEY=remote_servers["DOCFEED_TEST_S3_SECRET_KEY"],
                    AWS_ENDPOINT_URL=remote_servers["DOCFEED_TEST_S3_ENDPOINT"],
                    AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent",
                    DOCFEED_REMOTE_BASE_DELAY_MS="5", DOCFEED_UPLOAD_PART_MB="5",
                    DOCFEED_STAGING_DIR=str(tmp_path))
    for k, v in settings.items():
        monkeypatch.setenv(k, v)
    return remote_servers


def run(*args, **env):
    return subprocess.run([str(docfeed_bin()), *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **env))


def fresh_url(servers, tag):
    prefix = f"{tag}-{uuid.uuid4().hex[:8]}"
    return prefix, f"s3://{servers['DOCFEED_TEST_S3_BUCKET']}/{prefix}"


def epoch(path):
    loader = docfeed.Loader(path, **OPTIONS)
    try:
        return [{k: np.asarray(v).copy() for k, v in b.items()} for b in loader]
    finally:
        loader.close()


def assert_same_batches(got, want):
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for key in w:
            assert g[key].dtype == w[key].dtype and g[key].shape == w[key].shape
            assert g[key].tobytes() == w[key].tobytes(), key


@pytest.fixture(scope="module")
def local_pack(tmp_path_factory):
    out = tmp_path_factory.mktemp("pack-s3") / "local"
    proc = subprocess.run([str(docfeed_bin()), "pack", str(SRC), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def test_pack_to_s3_is_the_local_pack(s3, local_pack, tmp_path):
    prefix, url = fresh_url(s3, "pack")
    proc = run("pack", str(SRC), "-o", url)
    assert proc.returncode == 0, proc.stderr
    assert "uploaded   5 object(s)" in proc.stdout, proc.stdout
    state = s3_state(s3, prefix)
    assert state["objects"] == local_state(local_pack)  # every file, byte for byte
    assert state["uploads"] == []
    assert list(tmp_path.iterdir()) == []  # the staging directory is gone
    verified = run("verify", url)
    assert verified.returncode == 0 and verified.stdout.startswith(f"{url}: OK (20 samples"), \
        verified.stdout + verified.stderr
    remote = run("inspect", url, "--json")
    assert remote.returncode == 0, remote.stderr
    local = json.loads(run("inspect", str(local_pack), "--json").stdout)
    assert json.loads(remote.stdout.replace(url, str(local_pack))) == local
    assert_same_batches(epoch(url), epoch(str(local_pack)))


def test_merge_to_s3_is_the_local_merge(s3, tmp_path):
    parts = tmp_path / "parts"
    for i in range(2):
        proc = run("pack", str(SRC), "--part", f"{i}/2", "-o", str(parts / str(i)))
        assert proc.returncode == 0, proc.stderr
    local = tmp_path / "merged"
    assert run("merge", str(parts / "0"), str(parts / "1"), "-o", str(local)).returncode == 0
    prefix, url = fresh_url(s3, "merge")
    proc = run("merge", str(parts / "0"), str(parts / "1"), "-o", url)
    assert proc.returncode == 0, proc.stderr
    assert "uploaded" in proc.stdout, proc.stdout
    assert s3_state(s3, prefix)["objects"] == local_state(local)
    assert run("verify", url).returncode == 0
    assert_same_batches(epoch(url), epoch(str(local)))
    # Refused, not half-done: the prefix now holds a dataset.
    again = run("merge", str(parts / "0"), str(parts / "1"), "-o", url)
    assert again.returncode != 0 and f"{url} already holds" in again.stderr, again.stderr


def test_refusals_name_the_url_and_write_nothing(s3, local_pack):
    missing = "s3://no-such-bucket-docfeed/ds"
    proc = run("pack", str(SRC), "-o", missing)
    assert proc.returncode != 0
    assert missing in proc.stderr and "NoSuchBucket" in proc.stderr, proc.stderr
    prefix, url = fresh_url(s3, "denied")
    proc = run("pack", str(SRC), "-o", url, AWS_SECRET_ACCESS_KEY="wrong")
    assert proc.returncode != 0
    assert url in proc.stderr and "access denied" in proc.stderr, proc.stderr
    assert "wrong" not in proc.stderr  # no secret in messages
    assert s3_state(s3, prefix) == {"objects": {}, "uploads": []}
    # Parts are local (merged to S3 afterwards).
    proc = run("pack", str(SRC), "--part", "0/2", "-o", url)
    assert proc.returncode != 0 and "merge them with -o s3://" in proc.stderr, proc.stderr
    # An http(s):// output is refused (HTTP servers are read-only).
    proc = run("pack", str(SRC), "-o", s3["DOCFEED_TEST_HTTP_URL"] + "/out")
    assert proc.returncode != 0 and "s3:// only" in proc.stderr, proc.stderr


@pytest.mark.parametrize("fault", ["slowdown", "reset"])
def test_transient_faults_are_retried(s3, local_pack, fault):
    """Every second request fails (503 SlowDown; a reset after the server stored a part, so the
    part is sent again): the upload retries and the dataset is the local one."""
    prefix, url = fresh_url(s3, fault)
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], fault=fault, every=2) as proxy:
        proc = run("pack", str(SRC), "-o", url, AWS_ENDPOINT_URL=proxy.url)
        assert proxy.stats()["faults"] > 0
    assert proc.returncode == 0, proc.stderr
    assert " 0 retried" not in proc.stdout, proc.stdout
    state = s3_state(s3, prefix)
    assert state["objects"] == local_state(local_pack) and state["uploads"] == []


def test_a_part_that_keeps_failing_leaves_nothing(s3):
    """The second part of the data file answers 503 every time: the retries give up, the error
    names the URL and the part, the multipart upload is aborted and no object is left."""
    prefix, url = fresh_url(s3, "part")
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], fault="slowdown", every=1,
                      match=r"^PUT .*partNumber=2&") as proxy:
        proc = run("pack", str(SRC), "-o", url, AWS_ENDPOINT_URL=proxy.url,
                   DOCFEED_REMOTE_MAX_ATTEMPTS="3")
        assert proxy.stats()["faults"] == 3
    assert proc.returncode != 0
    assert f"uploading to {url}" in proc.stderr and "(part 2)" in proc.stderr, proc.stderr
    assert "SlowDown" in proc.stderr and "gave up after 3 attempt(s)" in proc.stderr
    assert s3_state(s3, prefix) == {"objects": {}, "uploads": []}
    assert run("verify", url).returncode != 0


def test_a_manifest_that_cannot_be_written_leaves_no_dataset(s3, local_pack):
    """Everything but docfeed.json is stored: the prefix does not open (verify, Loader), a new
    pack there is refused, and --overwrite replaces the leftovers with the complete dataset."""
    prefix, url = fresh_url(s3, "manifest")
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], fault="slowdown", every=1,
                      match=r"^PUT .*/docfeed\.json") as proxy:
        proc = run("pack", str(SRC), "-o", url, AWS_ENDPOINT_URL=proxy.url,
                   DOCFEED_REMOTE_MAX_ATTEMPTS="2")
        assert proxy.stats()["faults"] == 2
    assert proc.returncode != 0 and f"{url}/docfeed.json" in proc.stderr, proc.stderr
    left = s3_state(s3, prefix)["objects"]
    assert "docfeed.json" not in left and "data-00000-of-00001.arrow" in left
    assert run("verify", url).returncode != 0
    with pytest.raises(docfeed.errors.Error):
        docfeed.Loader(url, **OPTIONS)
    again = run("pack", str(SRC), "-o", url)
    assert again.returncode != 0 and "--overwrite" in again.stderr, again.stderr
    replaced = run("pack", str(SRC), "-o", url, "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert s3_state(s3, prefix)["objects"] == local_state(local_pack)
    assert_same_batches(epoch(url), epoch(str(local_pack)))

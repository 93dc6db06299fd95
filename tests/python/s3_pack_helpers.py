"""Helpers of the `pack -o s3://` tests (test_pack_s3_cli.py in .venv, test_loader_pack_s3.py in
the front venvs): the AWS settings for the test SeaweedFS, what boto3 sees under a prefix, a
fresh prefix per test, the local pack to compare with."""
import hashlib
import json
import os
import pathlib
import subprocess
import uuid

import pytest

from conftest import REPO, docfeed_bin

SRC = REPO / "tests" / "data" / "sample-docs"
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
    multipart uploads still in progress. In this process where boto3 is installed (.venv),
    else in .venv's Python."""
    args = [servers["DOCFEED_TEST_S3_ENDPOINT"], servers["DOCFEED_TEST_S3_ACCESS_KEY"],
            servers["DOCFEED_TEST_S3_SECRET_KEY"], servers["DOCFEED_TEST_S3_BUCKET"], prefix]
    try:
        import boto3  # noqa: F401
    except ImportError:
        out = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c", BOTO_SCRIPT, *args],
                             capture_output=True, text=True, timeout=120, check=True)
        return json.loads(out.stdout)
    import contextlib
    import io
    import sys
    printed = io.StringIO()
    argv = sys.argv
    try:
        sys.argv = ["s3_state", *args]
        with contextlib.redirect_stdout(printed):
            exec(BOTO_SCRIPT, {})
    finally:
        sys.argv = argv
    return json.loads(printed.getvalue())


def local_state(directory: pathlib.Path):
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


@pytest.fixture(scope="module")
def local_pack(tmp_path_factory):
    out = tmp_path_factory.mktemp("pack-s3") / "local"
    proc = subprocess.run([str(docfeed_bin()), "pack", str(SRC), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out



"""Parts of a split pack on S3 (SeaweedFS, started by the `remote_servers` fixture), CLI only (the
project's .venv, which has boto3): `docfeed pack SRC --part I/N -o s3://...` uploads the part
that a local `--part I/N` writes, byte for byte (boto3 reads it back); a rerun keeps a part that
is complete and verifies at the URL and refuses one that is another part or damaged, naming the
URL; what an interrupted upload left (objects without a manifest) is packed again.

`docfeed merge s3://.../0 s3://.../1 -o s3://...` merges inside the store: the output's objects
are a local merge's files byte for byte (its data objects copied by the server, CopyObject, none
sent by docfeed; one above the copy limit is read and sent by docfeed), and, downloaded, the same rows, ids and image bytes as a
single-process pack (pyarrow and datasets, test_pack_parts.assert_same_dataset). A missing or
incomplete part is refused naming its URL; a merge cut before its manifest (its PUT failing, or
the process killed) leaves nothing that opens, and its rerun completes it."""
import os
import pathlib
import re
import subprocess
import sys
import time

import boto3
import pytest

from conftest import REPO, docfeed_bin
from s3_pack_helpers import (SRC, fresh_url, local_pack, local_state, run, s3,  # noqa: F401
                             s3_state)
from test_pack_parts import assert_same_dataset

sys.path.insert(0, str(REPO / "tests" / "remote"))
from fault_proxy import ProxyProcess  # noqa: E402


@pytest.fixture(scope="module")
def local_parts(tmp_path_factory):
    """SRC packed locally in two parts: the reference of the uploaded ones."""
    root = tmp_path_factory.mktemp("local-parts")
    for i in range(2):
        proc = run("pack", str(SRC), "--part", f"{i}/2", "-o", str(root / str(i)))
        assert proc.returncode == 0, proc.stderr
    return root


def client(servers):
    return boto3.client("s3", endpoint_url=servers["DOCFEED_TEST_S3_ENDPOINT"],
                        aws_access_key_id=servers["DOCFEED_TEST_S3_ACCESS_KEY"],
                        aws_secret_access_key=servers["DOCFEED_TEST_S3_SECRET_KEY"],
                        region_name="us-east-1")


def upload_parts(servers, tag):
    prefix, url = fresh_url(servers, tag)
    for i in range(2):
        proc = run("pack", str(SRC), "--part", f"{i}/2", "-o", f"{url}/{i}")
        assert proc.returncode == 0, proc.stderr
        assert "uploaded" in proc.stdout, proc.stdout
    return prefix, url


def test_parts_to_s3_are_the_local_parts(s3, local_parts):
    prefix, url = upload_parts(s3, "parts")
    for i in range(2):
        state = s3_state(s3, f"{prefix}/{i}")
        assert state == {"objects": local_state(local_parts / str(i)), "uploads": []}
        verified = run("verify", f"{url}/{i}")
        assert verified.returncode == 0, verified.stdout + verified.stderr
    # A rerun keeps the complete, verified part: nothing packed or uploaded.
    again = run("pack", str(SRC), "--part", "0/2", "-o", f"{url}/0")
    assert again.returncode == 0, again.stderr
    assert f"{url}/0 already holds part 0/2" in again.stdout, again.stdout
    assert "uploaded" not in again.stdout
    assert s3_state(s3, f"{prefix}/0")["objects"] == local_state(local_parts / "0")
    # Another part at the URL: refused, naming it and what differs.
    other = run("pack", str(SRC), "--part", "1/2", "-o", f"{url}/0")
    assert other.returncode != 0, other.stdout
    assert f"{url}/0 already exists and holds another part" in other.stderr, other.stderr
    assert "--overwrite" in other.stderr
    other = run("pack", str(SRC), "--part", "0/3", "-o", f"{url}/0")
    assert other.returncode != 0 and "count (2 vs 3)" in other.stderr, other.stderr


def test_a_damaged_part_on_s3_is_refused_and_replaced_with_overwrite(s3, local_parts):
    prefix, url = upload_parts(s3, "damaged")
    bucket = s3["DOCFEED_TEST_S3_BUCKET"]
    key = f"{prefix}/1/data-00000-of-00001.arrow"
    body = bytearray(client(s3).get_object(Bucket=bucket, Key=key)["Body"].read())
    body[len(body) // 2] ^= 0xFF
    client(s3).put_object(Bucket=bucket, Key=key, Body=bytes(body))
    again = run("pack", str(SRC), "--part", "1/2", "-o", f"{url}/1")
    assert again.returncode != 0, again.stdout
    assert f"{url}/1 holds part 1/2 but fails verification" in again.stderr, again.stderr
    assert "--overwrite" in again.stderr
    replaced = run("pack", str(SRC), "--part", "1/2", "-o", f"{url}/1", "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert s3_state(s3, f"{prefix}/1")["objects"] == local_state(local_parts / "1")


def test_an_interrupted_part_upload_is_packed_again(s3, local_parts):
    """A part whose manifest never arrived (the upload was cut before it): no part is there, so
    the rerun packs it again and replaces the leftovers."""
    prefix, url = upload_parts(s3, "interrupted")
    client(s3).delete_object(Bucket=s3["DOCFEED_TEST_S3_BUCKET"], Key=f"{prefix}/0/docfeed.json")
    assert run("verify", f"{url}/0").returncode != 0
    again = run("pack", str(SRC), "--part", "0/2", "-o", f"{url}/0")
    assert again.returncode == 0, again.stderr
    assert "uploaded" in again.stdout and "already holds" not in again.stdout, again.stdout
    assert s3_state(s3, f"{prefix}/0") == {"objects": local_state(local_parts / "0"),
                                           "uploads": []}


def download(servers, prefix, to: pathlib.Path):
    c = client(servers)
    bucket = servers["DOCFEED_TEST_S3_BUCKET"]
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            path = to / o["Key"][len(prefix) + 1:]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(c.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
    return to


def test_merge_of_parts_on_s3_is_made_inside_the_store(s3, local_parts, local_pack, tmp_path):
    prefix, url = upload_parts(s3, "merge-parts")
    merged_local = tmp_path / "merged"
    assert run("merge", str(local_parts / "0"), str(local_parts / "1"), "-o",
               str(merged_local)).returncode == 0
    out_prefix, out = fresh_url(s3, "merged")
    proc = run("merge", f"{url}/1", f"{url}/0", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "2 data file(s): 0 linked, 0 copied, 2 copied inside the store" in proc.stdout, \
        proc.stdout
    # What docfeed itself sent: the index, dataset_info.json, state.json and the manifest, not
    # the 8 MB of data objects.
    sent = re.search(r"uploaded +\d+ object\(s\), .* sent \((\d+) bytes\)", proc.stdout)
    assert sent and int(sent.group(1)) < 100_000, proc.stdout
    assert s3_state(s3, out_prefix) == {"objects": local_state(merged_local), "uploads": []}
    verified = run("verify", out)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert_same_dataset(local_pack, download(s3, out_prefix, tmp_path / "downloaded"))
    # A rerun keeps the complete merge; another set of parts there is refused.
    again = run("merge", f"{url}/0", f"{url}/1", "-o", out)
    assert again.returncode == 0 and "already" in again.stdout, again.stdout + again.stderr
    assert s3_state(s3, out_prefix)["objects"] == local_state(merged_local)


def test_missing_or_incomplete_parts_on_s3_are_refused(s3):
    prefix, url = upload_parts(s3, "bad-parts")
    out_prefix, out = fresh_url(s3, "bad-merged")
    proc = run("merge", f"{url}/0", "-o", out)
    assert proc.returncode != 0 and "part 1/2 is missing" in proc.stderr, proc.stderr
    proc = run("merge", f"{url}/0", f"{url}/9", "-o", out)
    assert proc.returncode != 0 and f"part {url}/9 has no docfeed.json" in proc.stderr, \
        proc.stderr
    # Part 1's upload cut before its manifest: not a part.
    client(s3).delete_object(Bucket=s3["DOCFEED_TEST_S3_BUCKET"], Key=f"{prefix}/1/docfeed.json")
    proc = run("merge", f"{url}/0", f"{url}/1", "-o", out)
    assert proc.returncode != 0 and f"part {url}/1 has no docfeed.json" in proc.stderr, \
        proc.stderr
    # Local and s3:// parts are not mixed, and s3:// parts merge to s3:// only.
    proc = run("merge", f"{url}/0", "/tmp/nowhere/1", "-o", out)
    assert proc.returncode != 0 and "all local or all s3://" in proc.stderr, proc.stderr
    proc = run("merge", f"{url}/0", f"{url}/1", "-o", "/tmp/nowhere-merged")
    assert proc.returncode != 0 and "writes to an s3:// output" in proc.stderr, proc.stderr
    assert s3_state(s3, out_prefix) == {"objects": {}, "uploads": []}


def assert_rerun_completes_the_merge(s3, url, out, out_prefix, local_parts, tmp_path):
    """After an interrupted merge of parts url/0 and url/1 into out: the rerun succeeds and the
    objects at out are those of a local merge of the same parts."""
    again = run("merge", f"{url}/0", f"{url}/1", "-o", out)
    assert again.returncode == 0, again.stderr
    merged_local = tmp_path / "merged"
    assert run("merge", str(local_parts / "0"), str(local_parts / "1"), "-o",
               str(merged_local)).returncode == 0
    assert s3_state(s3, out_prefix) == {"objects": local_state(merged_local), "uploads": []}


def test_a_merge_cut_before_its_manifest_leaves_nothing_that_opens(s3, local_parts, tmp_path):
    """docfeed.json's PUT keeps failing: the data objects are copied but nothing opens; the
    rerun replaces them and completes the merge (its objects: the local merge's)."""
    prefix, url = upload_parts(s3, "cut-parts")
    out_prefix, out = fresh_url(s3, "cut-merged")
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], fault="slowdown", every=1,
                      match=r"^PUT .*/docfeed\.json") as proxy:
        proc = run("merge", f"{url}/0", f"{url}/1", "-o", out, AWS_ENDPOINT_URL=proxy.url,
                   DOCFEED_REMOTE_MAX_ATTEMPTS="2")
        assert proxy.stats()["faults"] == 2
    assert proc.returncode != 0 and f"{out}/docfeed.json" in proc.stderr, proc.stderr
    left = s3_state(s3, out_prefix)["objects"]
    assert "docfeed.json" not in left and "data-00000-of-00002.arrow" in left, left
    assert run("verify", out).returncode != 0
    assert_rerun_completes_the_merge(s3, url, out, out_prefix, local_parts, tmp_path)


def test_a_data_object_over_the_copy_limit_goes_through_docfeed(s3, local_pack, tmp_path):
    """An object above the largest server-side copy (lowered to 5 MiB for the 8.4 MB data file
    of a single part) is copied through docfeed: ranged GETs sent as a multipart upload."""
    prefix, url = fresh_url(s3, "one-part")
    assert run("pack", str(SRC), "--part", "0/1", "-o", f"{url}/0").returncode == 0
    out_prefix, out = fresh_url(s3, "one-merged")
    proc = run("merge", f"{url}/0", "-o", out, DOCFEED_COPY_PART_MB="5")
    assert proc.returncode == 0, proc.stderr
    assert "1 data file(s): 0 linked, 1 copied\n" in proc.stdout, proc.stdout
    source = s3_state(s3, f"{prefix}/0")["objects"]
    merged = s3_state(s3, out_prefix)
    assert merged["uploads"] == []
    assert merged["objects"]["data-00000-of-00001.arrow"] == source["data-00000-of-00001.arrow"]
    assert run("verify", out).returncode == 0
    assert_same_dataset(local_pack, download(s3, out_prefix, tmp_path / "downloaded"))


def test_a_merge_killed_midway_leaves_nothing_that_opens(s3, local_parts, tmp_path):
    """merge killed (SIGKILL) once its first data object is copied (100 ms added each way by the
    proxy): the prefix holds no manifest and does not verify; the rerun completes the merge."""
    prefix, url = upload_parts(s3, "killed-parts")
    out_prefix, out = fresh_url(s3, "killed-merged")
    bucket = s3["DOCFEED_TEST_S3_BUCKET"]
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], latency_ms=100) as proxy:
        proc = subprocess.Popen([str(docfeed_bin()), "merge", f"{url}/0", f"{url}/1", "-o", out],
                                env=dict(os.environ, AWS_ENDPOINT_URL=proxy.url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not client(s3).list_objects_v2(Bucket=bucket, Prefix=out_prefix + "/").get(
                "KeyCount"):
            assert proc.poll() is None and time.monotonic() < deadline, "no object was copied"
            time.sleep(0.02)
        proc.kill()
        proc.wait()
    left = s3_state(s3, out_prefix)["objects"]
    assert left and "docfeed.json" not in left, left
    assert run("verify", out).returncode != 0
    assert_rerun_completes_the_merge(s3, url, out, out_prefix, local_parts, tmp_path)

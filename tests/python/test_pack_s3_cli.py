"""`docfeed pack -o s3://...` failures against SeaweedFS, CLI only (the project's .venv): a
missing bucket (also for a part), a wrong secret, a prefix already used, an http(s) output are
refused naming the URL before anything is written; transient faults (tests/remote/
fault_proxy.py: 503 SlowDown, resets, damaged upload bodies) are retried into the local pack's
objects; a part or the manifest that keeps failing ends in an error naming the URL and leaves
nothing that opens as a dataset and no multipart upload in progress. The data files go up while
the pack runs (the staging directory, watched, never holds more than two), and an --overwrite
that fails keeps the old dataset whole."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO, docfeed_bin
from s3_pack_helpers import (SRC, fresh_url, local_pack, local_state, run, s3,  # noqa: F401
                             s3_state)

sys.path.insert(0, str(REPO / "tests" / "remote"))
from fault_proxy import ProxyProcess  # noqa: E402


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
    # A part is refused as a whole dataset is (its URL's bucket and credentials checked first).
    proc = run("pack", str(SRC), "--part", "0/2", "-o", missing)
    assert proc.returncode != 0
    assert missing in proc.stderr and "NoSuchBucket" in proc.stderr, proc.stderr
    # An http(s):// output is refused (HTTP servers are read-only).
    proc = run("pack", str(SRC), "-o", s3["DOCFEED_TEST_HTTP_URL"] + "/out")
    assert proc.returncode != 0 and "s3:// only" in proc.stderr, proc.stderr


@pytest.mark.parametrize("fault,match", [("slowdown", None), ("reset", None), ("flip", "^PUT")])
def test_transient_faults_are_retried(s3, local_pack, fault, match):
    """Every second request fails (503 SlowDown; a reset after the server stored a part, so the
    part is sent again; a PUT's body damaged on the way, which the server refuses by its
    Content-MD5): the upload retries and the dataset is the local one. (A damaged
    CompleteMultipartUpload document is refused by SeaweedFS as MalformedXML, a final error.)"""
    prefix, url = fresh_url(s3, fault)
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], fault=fault, every=2,
                      match=match) as proxy:
        proc = run("pack", str(SRC), "-o", url, AWS_ENDPOINT_URL=proxy.url)
        assert proxy.stats()["faults"] > 0
    assert proc.returncode == 0, proc.stderr
    assert " 0 retried" not in proc.stdout, proc.stdout
    state = s3_state(s3, prefix)
    assert state["objects"] == local_state(local_pack) and state["uploads"] == []


@pytest.mark.parametrize("fault,code", [("slowdown", "SlowDown"), ("flip", "BadDigest")])
def test_a_part_that_keeps_failing_leaves_nothing(s3, fault, code):
    """The second part of the data file fails every time (503; or its body arrives damaged and
    the server refuses it by its Content-MD5): the retries give up, the error names the URL and
    the part, the multipart upload is aborted and no object is left."""
    prefix, url = fresh_url(s3, "part")
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], fault=fault, every=1,
                      match=r"^PUT .*partNumber=2&") as proxy:
        proc = run("pack", str(SRC), "-o", url, AWS_ENDPOINT_URL=proxy.url,
                   DOCFEED_REMOTE_MAX_ATTEMPTS="3")
        assert proxy.stats()["faults"] == 3
    assert proc.returncode != 0
    assert f"uploading to {url}" in proc.stderr and "(part 2)" in proc.stderr, proc.stderr
    assert code in proc.stderr and "gave up after 3 attempt(s)" in proc.stderr, proc.stderr
    assert s3_state(s3, prefix) == {"objects": {}, "uploads": []}
    assert run("verify", url).returncode != 0


def test_a_manifest_that_cannot_be_written_leaves_no_dataset(s3, local_pack):
    """Everything but docfeed.json is stored: the prefix does not open (verify, inspect), a new
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
    assert run("inspect", url).returncode != 0
    again = run("pack", str(SRC), "-o", url)
    assert again.returncode != 0 and "--overwrite" in again.stderr, again.stderr
    replaced = run("pack", str(SRC), "-o", url, "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert s3_state(s3, prefix)["objects"] == local_state(local_pack)
    assert run("verify", url).returncode == 0


def test_a_dataset_dict_goes_up_split_by_split(s3, tmp_path):
    """A saved DatasetDict (written by the real `datasets`): the objects are the local pack's,
    dataset_dict.json and each split's docfeed.json included, and each split verifies."""
    datasets = pytest.importorskip("datasets")
    docs = ["sroie/000.jpg", "invoices/simple-invoice.png", "sroie/016.jpg",
            "receipts/demo_kie.jpeg"]
    features = datasets.Features({"image": datasets.Image(), "name": datasets.Value("string")})

    def split(names):
        return datasets.Dataset.from_dict(
            {"image": [{"bytes": (SRC / n).read_bytes(), "path": None} for n in names],
             "name": names}, features=features)

    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": split(docs[:3]), "test": split(docs[3:])}).save_to_disk(
        str(saved))
    local = tmp_path / "local"
    assert run("pack", str(saved), "-o", str(local)).returncode == 0
    prefix, url = fresh_url(s3, "dict")
    proc = run("pack", str(saved), "-o", url)
    assert proc.returncode == 0, proc.stderr
    objects = s3_state(s3, prefix)["objects"]
    assert objects == local_state(local)
    assert {"dataset_dict.json", "train/docfeed.json", "test/docfeed.json"} <= objects.keys()
    for name in ("train", "test"):
        verified = run("verify", f"{url}/{name}")
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_killed_upload_leaves_nothing_that_opens(s3, local_pack):
    """pack killed (SIGKILL) while its data file's parts are in flight (100 ms added each way by
    the proxy): no object opens as a dataset, only an invisible multipart upload is left, and
    `pack --overwrite` aborts it and writes the complete dataset."""
    import boto3
    client = boto3.client("s3", endpoint_url=s3["DOCFEED_TEST_S3_ENDPOINT"],
                          aws_access_key_id=s3["DOCFEED_TEST_S3_ACCESS_KEY"],
                          aws_secret_access_key=s3["DOCFEED_TEST_S3_SECRET_KEY"],
                          region_name="us-east-1")
    bucket = s3["DOCFEED_TEST_S3_BUCKET"]
    prefix, url = fresh_url(s3, "killed")
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], latency_ms=100) as proxy:
        proc = subprocess.Popen([str(docfeed_bin()), "pack", str(SRC), "-o", url],
                                env=dict(os.environ, AWS_ENDPOINT_URL=proxy.url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not client.list_multipart_uploads(Bucket=bucket, Prefix=prefix + "/").get(
                "Uploads"):
            assert proc.poll() is None and time.monotonic() < deadline, "no upload began"
            time.sleep(0.02)
        proc.kill()
        proc.wait()
    state = s3_state(s3, prefix)
    # The data file goes up while the pack runs, under this run's own key (pack/remote_output.h).
    assert len(state["uploads"]) == 1, state
    assert re.fullmatch(rf"{prefix}/docfeed-upload-{proc.pid}-0/data-00000\.arrow",
                        state["uploads"][0]), state
    assert "docfeed.json" not in state["objects"], state
    assert run("verify", url).returncode != 0
    replaced = run("pack", str(SRC), "-o", url, "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert s3_state(s3, prefix) == {"objects": local_state(local_pack), "uploads": []}


def staged_data_bytes(staging):
    """The bytes of the data files under `staging` now. The pack removes each file, and its
    per-upload directory, once sent, so either may vanish mid-walk: os.walk skips a directory it
    can no longer list (pathlib's rglob raised FileNotFoundError there) and a file gone before its
    stat counts nothing."""
    held = 0
    for folder, _, names in os.walk(staging):
        for name in names:
            if name.startswith("data-"):
                try:
                    held += os.stat(os.path.join(folder, name)).st_size
                except FileNotFoundError:  # removed once sent
                    pass
    return held


def test_data_files_go_up_while_the_pack_runs(s3, tmp_path):
    """With 1 MB data files (--max-file-mb 1: 5 of them, 8.4 MB in all) and 50 ms added each way by the proxy,
    the staging directory, watched while the pack runs, never holds more than two data files
    (the one going up and the one being written), and pack says how many it sent and the most it
    held; the objects are the local pack's, with no upload key or multipart upload left."""
    local = tmp_path / "local"
    assert run("pack", str(SRC), "-o", str(local), "--max-file-mb", "1").returncode == 0
    data_files = sorted(p.stat().st_size for p in local.glob("data-*.arrow"))
    assert len(data_files) >= 5, data_files
    staging = tmp_path / "staging"
    staging.mkdir()
    prefix, url = fresh_url(s3, "streamed")
    most = 0
    with ProxyProcess(s3["DOCFEED_TEST_S3_ENDPOINT"], latency_ms=50) as proxy:
        proc = subprocess.Popen(
            [str(docfeed_bin()), "pack", str(SRC), "-o", url, "--max-file-mb", "1"],
            env=dict(os.environ, AWS_ENDPOINT_URL=proxy.url, DOCFEED_STAGING_DIR=str(staging)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        while proc.poll() is None:
            assert time.monotonic() < deadline, "pack did not finish"
            most = max(most, staged_data_bytes(staging))
            time.sleep(0.005)
        out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert 0 < most <= data_files[-1] + data_files[-2], (most, data_files)
    m = re.search(r"streamed\s+(\d+) data file\(s\) sent while packing; staging held at most "
                  r".* \((\d+) bytes\)", out)
    assert m, out
    assert int(m.group(1)) == len(data_files)
    assert data_files[-1] <= int(m.group(2)) <= data_files[-1] + data_files[-2], (m.group(2),
                                                                                   data_files)
    assert s3_state(s3, prefix) == {"objects": local_state(local), "uploads": []}
    assert list(staging.iterdir()) == []


def test_a_failed_overwrite_keeps_the_old_dataset(s3, local_pack, tmp_path):
    """`pack --overwrite` of a source whose last sample is not an image fails after its first
    data files went up: the error names the file, the old dataset is still there whole (it is
    replaced only once the new one is written) and verifies, and nothing of the failed run is
    left (no upload key, no multipart upload)."""
    prefix, url = fresh_url(s3, "keep-old")
    assert run("pack", str(SRC), "-o", url).returncode == 0
    source = tmp_path / "source"
    shutil.copytree(SRC, source)
    (source / "zz").mkdir()
    (source / "zz" / "bad.jpg").write_bytes(b"not a jpeg at all" * 100)
    with (source / "metadata.jsonl").open("a") as f:
        f.write(json.dumps({"file_name": "zz/bad.jpg", "ground_truth": "{}", "source": "x"}) +
                "\n")
    proc = run("pack", str(source), "-o", url, "--overwrite", "--max-file-mb", "1")
    assert proc.returncode != 0
    assert "zz/bad.jpg" in proc.stderr, proc.stderr
    assert s3_state(s3, prefix) == {"objects": local_state(local_pack), "uploads": []}
    verified = run("verify", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr

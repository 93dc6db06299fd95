"""docfeed.Loader on a dataset in S3 (SeaweedFS, SigV4) and over HTTP (nginx): the same batches,
byte for byte, as the local copy for the same seed and options; errors name the URL. Runs in the
front venvs (.venv/train, .venv/hf5); the servers come from the `remote_servers` fixture
(conftest.py), which runs them in .venv. Also `docfeed doctor` on a dataset at a URL."""
import json
import os
import pathlib

import numpy as np
import pytest

import docfeed
from conftest import SAMPLE_DOCS, assert_same_batches, run_docfeed

OPTIONS = dict(batch_size=4, image_size=(96, 64), shuffle=True, seed=3, dtype="uint8",
               num_threads=2, drop_last=False)


def batch_copy(b):
    return {k: np.asarray(v).copy() for k, v in b.items()}


def epochs(path, n, **options):
    loader = docfeed.Loader(path, **(OPTIONS | options))
    try:
        return [batch_copy(b) for _ in range(n) for b in loader]
    finally:
        loader.close()


def epoch(path, **options):
    return epochs(path, 1, **options)


@pytest.fixture
def s3_settings(remote_servers, monkeypatch):
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", remote_servers["DOCFEED_TEST_S3_ACCESS_KEY"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", remote_servers["DOCFEED_TEST_S3_SECRET_KEY"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", remote_servers["DOCFEED_TEST_S3_ENDPOINT"])
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    return remote_servers


def test_s3_batches_equal_local(s3_settings):
    want = epoch(s3_settings["DOCFEED_TEST_DATASET"])
    before = docfeed.remote_stats()
    got = epoch(f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds")
    assert_same_batches(got, want)
    after = docfeed.remote_stats()
    # The manifest, the index, a HEAD per data file, the schema, then the samples by byte ranges
    # read ahead (neighbours in the file coalesced: at most one request per sample).
    samples = sum(len(b["pixel_values"]) for b in want)
    assert 4 <= after["requests"] - before["requests"] <= samples + 8
    assert after["bytes"] > before["bytes"]
    assert after["errors"] == before["errors"]
    # Connections are kept alive and reused: about one per thread that sends requests (the
    # range prefetcher's 8 fetch threads, the workers for the samples it did not plan, the
    # opening reads), not one per request.
    assert after["connections"] - before["connections"] <= 8 + OPTIONS["num_threads"] + 2


def test_s3_batches_through_an_assumed_role_equal_local(remote_servers, monkeypatch, tmp_path):
    """AWS_PROFILE names a profile with role_arn and source_profile (~/.aws/config): the loader
    assumes the role at SeaweedFS's STS with the source's keys, which may read nothing themselves
    (tests/remote/servers.py), and reads with the role's temporary credentials."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    (tmp_path / "credentials").write_text(
        f"[source]\naws_access_key_id = {remote_servers['DOCFEED_TEST_S3_ROLE_SOURCE_KEY']}\n"
        f"aws_secret_access_key = {remote_servers['DOCFEED_TEST_S3_ROLE_SOURCE_SECRET']}\n")
    (tmp_path / "config").write_text(
        f"[profile reader]\nrole_arn = {remote_servers['DOCFEED_TEST_S3_ROLE_ARN']}\n"
        "source_profile = source\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", remote_servers["DOCFEED_TEST_S3_ENDPOINT"])
    monkeypatch.setenv("AWS_PROFILE", "reader")
    want = epoch(remote_servers["DOCFEED_TEST_DATASET"], seed=5)
    assert_same_batches(epoch(f"s3://{remote_servers['DOCFEED_TEST_S3_BUCKET']}/ds", seed=5),
                        want)


def test_http_batches_equal_local(remote_servers):
    want = epoch(remote_servers["DOCFEED_TEST_DATASET"], seed=11, pad="center")
    got = epoch(remote_servers["DOCFEED_TEST_HTTP_URL"] + "/ds", seed=11, pad="center")
    assert_same_batches(got, want)


def test_https_batches_equal_local_with_the_test_ca(remote_servers, monkeypatch):
    """nginx over TLS with a certificate signed by a CA made for the run: trusted through
    SSL_CERT_FILE (or CURL_CA_BUNDLE), the batches are the local ones; with the system's store
    only, the certificate is refused with an error naming the URL, not retried into a hang."""
    url = remote_servers["DOCFEED_TEST_HTTPS_URL"] + "/ds"
    for name in ("SSL_CERT_FILE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(docfeed.errors.StorageError) as e:
        docfeed.Loader(url, **OPTIONS)
    assert f"{url}/docfeed.json" in str(e.value) and "certificate" in str(e.value), e.value
    assert "SSL_CERT_FILE" in str(e.value), e.value
    want = epoch(remote_servers["DOCFEED_TEST_DATASET"], seed=5)
    monkeypatch.setenv("SSL_CERT_FILE", remote_servers["DOCFEED_TEST_CA_FILE"])
    assert_same_batches(epoch(url, seed=5), want)
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("CURL_CA_BUNDLE", remote_servers["DOCFEED_TEST_CA_FILE"])
    assert_same_batches(epoch(url, seed=5), want)


def test_wrong_secret_names_the_url(s3_settings, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    with pytest.raises(docfeed.errors.StorageError) as e:
        docfeed.Loader(url, **OPTIONS)
    assert f"{url}/docfeed.json" in str(e.value) and "access denied" in str(e.value)


def test_missing_dataset_is_not_found(s3_settings):
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/absent"
    with pytest.raises(FileNotFoundError) as e:
        docfeed.Loader(url, **OPTIONS)
    assert url in str(e.value)


def cached_files(cache, suffix):
    return sorted((pathlib.Path(cache) / "docfeed-cache-v1").glob("*" + suffix))


def cache_usage(cache):
    return sum(p.stat().st_blocks * 512 for p in (pathlib.Path(cache) / "docfeed-cache-v1").iterdir())


def test_cache_serves_later_epochs_and_loaders_from_disk(s3_settings, tmp_path):
    """cache_dir: the first epoch stores what it reads; the second epoch and a new loader (a new
    run) fetch no sample bytes, only the manifest and the index; the batches are the local
    ones throughout."""
    local = pathlib.Path(s3_settings["DOCFEED_TEST_DATASET"])
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    cache = tmp_path / "cache"
    want = epochs(local, 2)
    loader = docfeed.Loader(url, cache_dir=cache, **OPTIONS)
    try:
        got = [batch_copy(b) for b in loader]
        between = docfeed.remote_stats()
        got += [batch_copy(b) for b in loader]
        after = docfeed.remote_stats()
        stats = loader.stats()["remote"]
    finally:
        loader.close()
    assert_same_batches(got, want)
    assert after["bytes"] == between["bytes"], (between, after)  # epoch 2: all from the cache
    data_bytes = sum(p.stat().st_size for p in local.glob("data-*.arrow"))
    assert stats["cached"] and stats["cache_stored_bytes"] == stats["cache_fetched_bytes"]
    # Whole blocks under what was read (neighbouring requests in flight at once may both fetch
    # the block they share).
    assert 0 < stats["cache_stored_bytes"] <= data_bytes + 16 * 65536, stats
    assert stats["cache_hit_bytes"] > 0 and stats["cache_bad_blocks"] == 0, stats
    assert cached_files(cache, ".data")

    before = docfeed.remote_stats()
    loader = docfeed.Loader(url, cache_dir=str(cache), **OPTIONS)
    try:
        again = [batch_copy(b) for b in loader]
        stats = loader.stats()["remote"]
    finally:
        loader.close()
    after = docfeed.remote_stats()
    assert_same_batches(again, want[:len(again)])
    others = sum(p.stat().st_size for p in local.iterdir()
                 if p.is_file() and not p.name.startswith("data-"))
    assert after["bytes"] - before["bytes"] <= others, (before, after, others)
    assert stats["cache_fetched_bytes"] == 0 and stats["cache_hit_bytes"] > 0, stats


def test_cache_copies_damaged_on_disk_are_fetched_again(s3_settings, tmp_path):
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    cache = tmp_path / "cache"
    want = epoch(s3_settings["DOCFEED_TEST_DATASET"])
    assert_same_batches(epoch(url, cache_dir=cache), want)
    for path in cached_files(cache, ".data"):
        with open(path, "r+b") as f:  # one byte flipped every 64 KiB: every block damaged
            size = path.stat().st_size
            for at in range(100, size, 65536):
                f.seek(at)
                byte = f.read(1)
                f.seek(at)
                f.write(bytes([byte[0] ^ 0xFF]))
    loader = docfeed.Loader(url, cache_dir=cache, **OPTIONS)
    try:
        got = [batch_copy(b) for b in loader]
        stats = loader.stats()["remote"]
    finally:
        loader.close()
    assert_same_batches(got, want)
    assert stats["cache_bad_blocks"] > 0 and stats["cache_fetched_bytes"] > 0, stats
    assert stats["refetches"] == 0 and stats["rereads"] == 0, stats  # caught below the samples


_CHILD = """
import hashlib, sys
import numpy as np
import docfeed
options = dict(batch_size=4, image_size=(96, 64), shuffle=True, seed=3, dtype="uint8",
               num_threads=2, drop_last=False)
loader = docfeed.Loader(sys.argv[1], cache_dir=sys.argv[2], cache_limit=sys.argv[3], **options)
digest = hashlib.sha256()
for _ in range(2):
    for b in loader:
        digest.update(np.asarray(b["pixel_values"]).tobytes())
print(digest.hexdigest(), loader.stats()["remote"]["cache_evicted_bytes"])
"""


def test_cache_shared_by_processes_at_once_and_within_its_limit(s3_settings, tmp_path):
    """Three processes reading the dataset at once through one cache directory, as the ranks
    of a node would: each gets the local batches. With a limit below the dataset's size, the
    cache stays within it (what does not fit is read remotely) and the batches are the same."""
    import hashlib
    import subprocess
    import sys

    local = pathlib.Path(s3_settings["DOCFEED_TEST_DATASET"])
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    digest = hashlib.sha256()
    for b in epochs(local, 2):
        digest.update(b["pixel_values"].tobytes())
    data_bytes = sum(p.stat().st_size for p in local.glob("data-*.arrow"))
    for limit in (0, data_bytes // 2):
        cache = tmp_path / f"cache-{limit}"
        procs = [subprocess.Popen([sys.executable, "-c", _CHILD, url, str(cache), str(limit)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        for p in procs:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, err
            assert out.split()[0] == digest.hexdigest()
        if limit:
            # Filled, and within the limit but for one fetched run per process storing at the
            # same moment (a coalesced request, at most 1 MiB, widened to whole 64 KiB blocks).
            usage = cache_usage(cache)
            assert limit // 2 <= usage <= limit + 3 * ((1 << 20) + 2 * 65536), (usage, limit)
        else:
            assert cache_usage(cache) >= data_bytes


def test_cache_dir_that_cannot_be_made_is_named(s3_settings, tmp_path):
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(docfeed.errors.Error) as e:
        docfeed.Loader(url, cache_dir=blocker / "cache", **OPTIONS)
    assert str(blocker / "cache") in str(e.value), e.value
    with pytest.raises(docfeed.InvalidArgumentError):
        docfeed.Loader(url, cache_dir=tmp_path, cache_limit="lots", **OPTIONS)


def run_doctor_on(url, tmp_path, capsys):
    """`docfeed doctor URL` in process; returns (its JSON report, its printed text)."""
    from docfeed import doctor

    out = tmp_path / "doctor.json"
    rc = doctor.main([url, "--json", str(out), "--max-seconds", "10", "--workers", "2",
                      "--batch-size", "4"])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    return json.loads(out.read_text()), printed.out


def test_doctor_reads_a_dataset_at_a_url(s3_settings, tmp_path, capsys):
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    local = pathlib.Path(s3_settings["DOCFEED_TEST_DATASET"])
    manifest = json.loads((local / "docfeed.json").read_text())
    r, text = run_doctor_on(url, tmp_path, capsys)
    assert r["path"] == url and r["kind"] == "docfeed" and r["split"] is None
    assert r["samples"] == manifest["num_samples"]
    # The bytes of the files the manifest lists, as the server holds them (the same files as
    # the local copy that was uploaded).
    data = sum((local / f["name"]).stat().st_size for f in manifest["data_files"])
    on_disk = sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
    assert data < r["bytes_on_disk"] <= on_disk
    assert r["disk"]["bytes"] == 0  # no local disk to measure
    (pipe,) = r["pipelines"]
    assert pipe["name"].startswith("docfeed.Loader") and pipe["batch_s"] > 0
    bench = pipe["bench"]
    assert bench["dataset"] == url and bench["pages"] > 0
    assert bench["http"]["requests"] > 0 and bench["http"]["bytes"] > 0
    assert bench["stats"]["remote"]["prefetching"] and bench["stats"]["remote"]["requests"] > 0
    notes = [n for n in r["notes"] if n.startswith("remote reads:")]
    assert len(notes) == 1 and f"{bench['http']['requests']:,} HTTP requests" in notes[0]
    assert "disk: none (read over the network" in text and "remote reads:" in text


def test_doctor_on_a_dataset_dict_at_a_url(s3_settings, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    files = sorted((SAMPLE_DOCS / "sroie").glob("*.jpg"))[:10]
    features = datasets.Features({"image": datasets.Image()})

    def split(paths):
        return datasets.Dataset.from_dict(
            {"image": [{"bytes": p.read_bytes(), "path": None} for p in paths]}, features=features)

    datasets.DatasetDict({"train": split(files[:8]), "test": split(files[8:])}).save_to_disk(
        str(tmp_path / "src"))
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/doctor-dict"
    run_docfeed("pack", tmp_path / "src", "-o", url, "--overwrite")
    r, _ = run_doctor_on(url, tmp_path, capsys)
    assert r["split"] == "train" and sorted(r["splits"]) == ["test", "train"]
    assert r["samples"] == 8  # two batches of 4: the second is timed
    assert r["pipelines"], r["notes"]
    assert r["pipelines"][0]["bench"]["dataset"] == url + "/train"


def test_doctor_names_a_url_that_is_no_docfeed_dataset(remote_servers, tmp_path, capsys):
    from docfeed import doctor

    url = remote_servers["DOCFEED_TEST_HTTP_URL"] + "/no-such-dataset"
    assert doctor.main([url, "--max-seconds", "5"]) == 1
    err = capsys.readouterr().err
    assert url in err and "docfeed dataset" in err and "local copy" in err


def test_doctor_passes_on_a_urls_own_error(s3_settings, monkeypatch, capsys):
    """Access denied is not "no dataset here": doctor prints docfeed's error as it is."""
    from docfeed import doctor

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    url = f"s3://{s3_settings['DOCFEED_TEST_S3_BUCKET']}/ds"
    assert doctor.main([url, "--max-seconds", "5"]) == 1
    err = capsys.readouterr().err
    assert f"{url}/docfeed.json" in err and "access denied" in err and "local copy" not in err

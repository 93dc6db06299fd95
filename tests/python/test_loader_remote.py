"""docfeed.Loader on a dataset in S3 (SeaweedFS, SigV4) and over HTTP (nginx): the same batches,
byte for byte, as the local copy for the same seed and options; errors name the URL. Runs in the
front venvs (.venv/train, .venv/hf5); the servers come from the `remote_servers` fixture
(conftest.py), which runs them in .venv."""
import os

import numpy as np
import pytest

import docfeed
from conftest import assert_same_batches

OPTIONS = dict(batch_size=4, image_size=(96, 64), shuffle=True, seed=3, dtype="uint8",
               num_threads=2, drop_last=False)


def epoch(path, **options):
    loader = docfeed.Loader(path, **(OPTIONS | options))
    try:
        return [{k: np.asarray(v).copy() for k, v in b.items()} for b in loader]
    finally:
        loader.close()


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

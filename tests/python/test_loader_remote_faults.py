"""docfeed.Loader reading a remote dataset by byte ranges (the range prefetcher) through a proxy
that damages the traffic on purpose (tests/remote/fault_proxy.py, between docfeed and
SeaweedFS or nginx on 127.0.0.1): 503 SlowDown, connection resets mid-body, truncated bodies,
flipped bytes and added latency. Every transient fault must end in the local dataset's exact
batches for the same seed; a persistent one in a clear error naming the URL; never a wrong
sample, a hang or a crash. Each case checks that its faults really happened (the proxy's
counts) and how the loader recovered (its stats). Runs in the front venvs; the servers come from
the `remote_servers` fixture (conftest.py)."""
import faulthandler
import http.client
import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.parse

import numpy as np
import pytest

import docfeed
from conftest import assert_same_batches, docfeed_bin

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "remote"))
import delay_proxy  # noqa: E402
import fault_proxy  # noqa: E402

OPTIONS = dict(batch_size=4, image_size=(96, 64), shuffle=True, seed=5, dtype="uint8",
               num_threads=2, drop_last=False, pad="center")
# A hang is a failure: dump every thread's stack and exit rather than stall the test run.
HANG_S = 240


@pytest.fixture(autouse=True)
def no_hang():
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def epochs(path, n=2, **options):
    loader = docfeed.Loader(path, **(OPTIONS | options))
    try:
        out = []
        for _ in range(n):
            out += [dict({k: np.asarray(v).copy() for k, v in b.items()},
                         sample_ids=np.asarray(b.sample_ids).copy()) for b in loader]
        return out, loader.stats()
    finally:
        loader.close()


@pytest.fixture
def s3_via(remote_servers, monkeypatch):
    """Points the S3 settings at `endpoint` (the proxy); returns the dataset's s3:// URL."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", remote_servers["DOCFEED_TEST_S3_ACCESS_KEY"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", remote_servers["DOCFEED_TEST_S3_SECRET_KEY"])
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")

    def via(endpoint):
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        return f"s3://{remote_servers['DOCFEED_TEST_S3_BUCKET']}/ds"
    return via


@pytest.fixture(scope="module")
def local_batches(remote_servers):
    return epochs(remote_servers["DOCFEED_TEST_DATASET"])[0]


# Transient faults: every 4th sample read (ranged GET) is hit, so retries and refetches win.
@pytest.mark.parametrize("fault", ["slowdown", "reset", "truncate", "flip"])
def test_s3_transient_faults_give_the_local_batches(remote_servers, s3_via, local_batches, fault):
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_S3_ENDPOINT"], fault, every=4,
                                  latency_ms=1, ranged_only=True) as proxy:
        start = time.monotonic()
        got, stats = epochs(s3_via(proxy.url))
        elapsed = time.monotonic() - start
        counts = proxy.stats()
    assert counts["faults"] >= 2, counts  # the faults really happened
    assert_same_batches(got, local_batches)
    remote = stats["remote"]
    # Only the look-ahead's batches past the first (the scheduler starts up to `prefetch` = 4
    # of the next epoch's, the plan holds one) are read directly, at most twice (two epochs).
    assert remote["prefetching"] and remote["direct_reads"] <= 2 * 3 * OPTIONS["batch_size"]
    if fault == "flip":
        # A damaged range fails its checksum on arrival and is fetched once more; a damaged
        # small read of a batch's metadata is redone from the whole checked batch.
        assert remote["refetches"] + remote["rereads"] >= 1, remote
    else:
        assert remote["retries"] >= 1, remote  # the HTTP client's retries
    assert elapsed < 120, elapsed


def test_latency_is_hidden_and_counted(remote_servers, s3_via, local_batches):
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_S3_ENDPOINT"],
                                  latency_ms=10) as proxy:
        got, stats = epochs(s3_via(proxy.url))
    assert_same_batches(got, local_batches)
    r = stats["remote"]
    assert r["requests"] > 0 and r["refetches"] == 0 and r["retries"] == 0
    # At most one request per sample (neighbours may share one: range_prefetch_test.cc checks
    # the coalescing), and what is fetched is what the workers read, up to the next epoch's
    # first batch planned ahead.
    assert r["requests"] <= stats["samples"]
    assert r["bytes_fetched"] <= 1.05 * stats["stored_bytes"] + 4 * OPTIONS["batch_size"] * max(
        1, stats["stored_bytes"] // max(1, stats["samples"])) * 4


def test_delay_proxy_delays_each_way_and_changes_nothing(remote_servers, s3_via, local_batches):
    """tests/remote/delay_proxy.py, the benchmarks' latency (bench/remote/remote_bench.py): a
    round trip on an open connection costs twice its delay, a new connection one round trip
    more (the handshake), the bytes arrive as the server sent them, and S3 requests signed for
    the proxy's address verify upstream (the loader's batches are the local ones)."""
    delay_s = 0.05
    name = next(p.name for p in pathlib.Path(remote_servers["DOCFEED_TEST_DATASET"]).iterdir()
                if p.suffix == ".arrow")
    local = (pathlib.Path(remote_servers["DOCFEED_TEST_DATASET"]) / name).read_bytes()
    with delay_proxy.DelayProxy(remote_servers["DOCFEED_TEST_HTTP_URL"], delay_s * 1000) as proxy:
        address = urllib.parse.urlsplit(proxy.url)
        conn = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
        elapsed = []
        for _ in range(2):
            start = time.monotonic()
            conn.request("GET", f"/ds/{name}")
            body = conn.getresponse().read()
            elapsed.append(time.monotonic() - start)
            assert body == local
        conn.close()
        counts = proxy.stats()
        got, _ = epochs(proxy.url + "/ds")
    assert elapsed[0] >= 4 * delay_s, elapsed  # handshake, request, answer
    assert 2 * delay_s <= elapsed[1] < 10, elapsed
    assert counts["connections"] == 1 and counts["requests"] == 2, counts
    assert counts["bytes_down"] > 2 * len(local), counts
    assert_same_batches(got, local_batches)
    with delay_proxy.DelayProxy(remote_servers["DOCFEED_TEST_S3_ENDPOINT"], 5) as proxy:
        got, stats = epochs(s3_via(proxy.url))
    assert_same_batches(got, local_batches)
    assert stats["remote"]["retries"] == 0 and stats["remote"]["refetches"] == 0


def test_a_throttling_server_gets_fewer_requests_at_once(remote_servers, s3_via, local_batches):
    """S3 answers 503 SlowDown to a client sending more than a prefix serves. The proxy serves one
    request at a time and throttles the others, while the loader keeps several range requests in
    flight. The HTTP client lowers its concurrency to that server
    (src/remote/concurrency_limiter.h): the batches are the local ones, attempts wait for a slot, and the limit reaches the server's
    capacity. `docfeed bench` over the same proxy with DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY=0 is
    throttled too but never limits. (How many fewer throttles adapting gives is measured where
    the load is heavier: tests/remote/concurrency_limiter_test.cc against a simulated server,
    and bench/remote/remote_bench.py.)"""
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_S3_ENDPOINT"], latency_ms=5,
                                  max_concurrent=1) as proxy:
        url = s3_via(proxy.url)
        before = docfeed.remote_stats()
        got, stats = epochs(url, n=3, prefetch_requests=8)
        after = docfeed.remote_stats()
        counts = proxy.stats()
        http = {}
        # Without adapting, 8 requests in flight against a server that serves one keep being
        # throttled, and a request can use up the default 5 attempts (what adapting is for: a
        # fresh make test saw it once); that run gets 20, since it is there to show only that it
        # is throttled and never limits. The adapting run keeps the defaults.
        attempts = {"1": "5", "0": "20"}
        for adaptive in ("1", "0"):
            proc = subprocess.run(
                [str(docfeed_bin()), "bench", url, "--json", "--epochs", "4", "--batch-size", "4",
                 "--threads", "2", "--size", "96x64", "--dtype", "uint8",
                 "--prefetch-requests", "8"],
                env=dict(os.environ, DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY=adaptive,
                         DOCFEED_REMOTE_MAX_ATTEMPTS=attempts[adaptive]),
                capture_output=True, text=True, timeout=HANG_S / 2)
            assert proc.returncode == 0, (f"DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY={adaptive}",
                                          proc.stderr)
            http[adaptive] = json.loads(proc.stdout.strip().splitlines()[-1])["http"]
    assert_same_batches(got[:len(local_batches)], local_batches)
    assert counts["throttled"] > 0 and counts["peak_concurrent"] == 1, counts
    assert stats["remote"]["throttled"] > 0, stats["remote"]
    assert after["throttled"] - before["throttled"] >= stats["remote"]["throttled"]
    assert after["throttle_waits"] > before["throttle_waits"] and after["min_concurrency"] >= 1
    assert stats["remote"]["throttle_waits"] > 0, stats["remote"]
    # Lowered to the server's capacity; without adapting, throttled alike but never limited.
    assert http["1"]["throttled"] > 0 and http["1"]["min_concurrency"] == 1, http
    assert http["1"]["throttle_waits"] > 0 and http["1"]["errors"] == 0, http
    assert http["0"]["throttled"] > 0 and http["0"]["errors"] == 0, http
    assert http["0"]["min_concurrency"] == 0 and http["0"]["throttle_waits"] == 0, http


def test_http_flipped_bytes_give_the_local_batches(remote_servers, local_batches):
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_HTTP_URL"], "flip", every=3,
                                  ranged_only=True) as proxy:
        got, stats = epochs(proxy.url + "/ds")
        counts = proxy.stats()
    assert counts["faults"] >= 2, counts
    assert_same_batches(got, local_batches)


def test_bytes_flipped_on_the_way_never_stay_in_the_cache(remote_servers, s3_via, local_batches,
                                                          tmp_path):
    """With cache_dir, a range damaged on the way is stored as it came (its block hashes are of
    the damaged bytes) until the sample's checksum fails above the cache: its blocks are then
    dropped and fetched again. A second loader through the same proxy finds every block good."""
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_S3_ENDPOINT"], "flip", every=3,
                                  ranged_only=True) as proxy:
        url = s3_via(proxy.url)
        got, stats = epochs(url, cache_dir=tmp_path)
        faults = proxy.stats()["faults"]
        again, second = epochs(url, cache_dir=tmp_path)
        assert proxy.stats()["faults"] == faults  # nothing fetched, nothing damaged
    assert faults >= 2
    assert_same_batches(got, local_batches)
    assert_same_batches(again, local_batches)
    first = stats["remote"]
    assert first["cache_invalidated"] >= 1 and first["refetches"] + first["rereads"] >= 1, first
    r = second["remote"]
    assert r["cache_fetched_bytes"] == 0 and r["cache_invalidated"] == 0, r
    assert r["refetches"] == 0 and r["rereads"] == 0, r


# Persistent faults: every sample read is hit (ranges of 4 KiB and more: the small reads of the
# schema and batch metadata pass, so the loader opens and the samples fail). The loader must stop
# with an error naming the URL (and the sample), within the retry budget, not hang or hand out
# a batch.
@pytest.mark.parametrize("fault,error,words", [
    ("slowdown", docfeed.errors.StorageError, ["SlowDown", "gave up"]),
    ("reset", docfeed.errors.StorageError, ["gave up"]),
    ("truncate", docfeed.errors.StorageError, ["gave up"]),
    ("flip", docfeed.errors.DataError, ["checksum", "sample"]),
])
def test_s3_persistent_faults_are_clear_errors(remote_servers, s3_via, fault, error, words):
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_S3_ENDPOINT"], fault, every=1,
                                  ranged_only=True, min_range=4096) as proxy:
        url = s3_via(proxy.url)
        start = time.monotonic()
        with pytest.raises(error) as e:
            epochs(url, n=1)
        elapsed = time.monotonic() - start
    message = str(e.value)
    assert url in message, message
    for word in words:
        assert word in message, message
    assert elapsed < 120, elapsed


def by_sample(batches):
    """{sample id: its pixels} (centred padding: a sample's pixels do not depend on its slot)."""
    return {int(i): p.tobytes() for b in batches for i, p in zip(b["sample_ids"], b["pixel_values"])}


def test_persistent_flips_under_skip_replace_only_damaged_samples(remote_servers, s3_via,
                                                                    local_batches):
    """Under on_error="skip" the samples whose bytes arrive damaged every time are replaced
    (counted, with the checksum error); every sample handed out is the right one. (Which
    samples survive depends on how ranges were coalesced, the middle of each request being
    damaged: when none does, the loader stops with the budget's error instead.)"""
    want = by_sample(local_batches)
    with fault_proxy.ProxyProcess(remote_servers["DOCFEED_TEST_S3_ENDPOINT"], "flip", every=1,
                                  ranged_only=True, min_range=4096) as proxy:
        try:
            got, stats = epochs(s3_via(proxy.url), n=1, on_error="skip")
        except docfeed.errors.ResourceExhaustedError as e:
            assert "failed to load" in str(e) and "checksum" in str(e), str(e)
            return
    assert stats["bad_samples"] >= 1
    assert all("checksum" in e for e in stats["bad_sample_errors"]), stats["bad_sample_errors"]
    assert len(got) > 0
    for b in got:
        for i, p in zip(b["sample_ids"], b["pixel_values"]):
            assert p.tobytes() == want[int(i)], int(i)

"""The loader across threads and processes (python/README.md, "Threads" and "Processes"):
several threads calling next(), close() from another thread while one waits in next(), a
torch DataLoader(num_workers=2) forking a wrapped loader, the pool limit, the bad-sample count
with a slow consumer, and no nanobind "leaked" report when views outlive the loader.

Everything that could hang runs with a timeout (threads joined with one, child processes under
subprocess's), so a regression fails instead of stalling the run. Runs in .venv/train.
"""
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (64, 48)
NUM_SAMPLES = 20


def pack(src, out, *args):
    proc = subprocess.run([docfeed.cli_path(), "pack", str(src), "-o", str(out), *map(str, args)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return pack(SAMPLE_DOCS, tmp_path_factory.mktemp("pre") / "ds", "--preprocess", "donut",
                "--size", f"{SIZE[0]}x{SIZE[1]}")


@pytest.fixture(scope="module")
def original_ds(tmp_path_factory):
    return pack(SAMPLE_DOCS, tmp_path_factory.mktemp("orig") / "ds")


def make(path, **kw):
    kw.setdefault("batch_size", 3)
    kw.setdefault("image_size", SIZE)
    kw.setdefault("num_threads", 2)
    kw.setdefault("seed", 5)
    kw.setdefault("drop_last", False)
    return docfeed.Loader(path, **kw)


def run_threads(targets, timeout_s=60):
    """Starts one thread per callable, joins them with a deadline; fails if one is still
    running (a hang) and re-raises the first exception a thread raised."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a thread is still blocked (a hang)"
    if errors:
        raise errors[0]


def epoch_ids(path, epoch, **kw):
    """(sample ids per batch) of `epoch` from one consumer: the order to hold concurrent ones to."""
    loader = make(path, **kw)
    loader.set_epoch(epoch)
    ids = [b.sample_ids.tolist() for b in loader]
    loader.close()
    return ids


# ---- several consumer threads ----

@pytest.mark.parametrize("consumers", [2, 4])
def test_concurrent_next_delivers_each_batch_once_and_every_thread_sees_the_end(ds, consumers):
    want = epoch_ids(ds, 0)
    for _ in range(5):
        loader = make(ds, prefetch=2)
        got, ends, lock = {}, [], threading.Lock()

        def consume():
            while True:
                b = loader.next()
                with lock:
                    if b is None:
                        ends.append(1)
                        return
                    assert b.index not in got, f"batch {b.index} delivered twice"
                    got[b.index] = b.sample_ids.tolist()
                del b  # hold nothing while waiting: the pool limit is not under test here

        run_threads([consume] * consumers)
        assert len(ends) == consumers
        assert [got[k] for k in sorted(got)] == want
        assert loader.next() is None
        loader.close()


# ---- close() from another thread ----

def test_close_from_another_thread_wakes_a_blocked_next(original_ds):
    """One worker on large originals: next() waits for its batch when close() comes."""
    woken = 0
    for round_ in range(6):
        loader = make(original_ds, image_size=(1280, 960), batch_size=4, num_threads=1)
        outcome = {}

        def consume():
            try:
                b = loader.next()
                outcome["batch"] = b
            except docfeed.LoaderClosedError as e:
                outcome["closed"] = str(e)
            outcome["at"] = time.monotonic()

        def close():
            time.sleep(0.005 + 0.004 * round_)
            outcome["blocked"] = "at" not in outcome
            outcome["close_at"] = time.monotonic()
            loader.close()
            outcome["closed_at"] = time.monotonic()

        run_threads([consume, close], timeout_s=30)
        if outcome["blocked"] and "closed" in outcome:
            woken += 1
            assert "loader was closed" in outcome["closed"]
            # Woken at once: not after the epoch, at most after the workers' current samples.
            assert outcome["at"] - outcome["close_at"] < 10
        with pytest.raises(docfeed.LoaderClosedError, match="closed"):
            loader.next()
        with pytest.raises(docfeed.LoaderClosedError):
            loader.set_epoch(1)
        loader.close()  # again: a no-op
    assert woken > 0, "close() never met a blocked next(); the test did not test it"


def test_close_races_next_state_and_epochs_from_several_threads(ds):
    for round_ in range(10):
        loader = make(ds, num_threads=1 + round_ % 3)

        def consume():
            try:
                while True:
                    if loader.next() is None:
                        loader.set_epoch(loader.epoch + 1)
                    loader.state_dict()
            except docfeed.LoaderClosedError:
                pass

        def close():
            time.sleep(0.002 * round_)
            loader.close()

        run_threads([consume, consume, close, close])


# ---- fork: a torch DataLoader with workers ----

FORK_SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    import docfeed

    class Pages(torch.utils.data.IterableDataset):
        def __init__(self, loader):
            self.loader = loader
        def __iter__(self):
            for b in self.loader:
                # Copies: the views of the pool cannot go through torch's shared memory.
                yield {"ids": b.sample_ids, "pixel_values": b["pixel_values"].clone()}

    path, iterate_first = sys.argv[1], sys.argv[2] == "1"
    loader = docfeed.Loader(path, batch_size=3, image_size=(64, 48), seed=5, num_threads=2,
                            drop_last=False)
    if iterate_first:  # the parent's threads are busy when the workers fork
        loader.next()
    dl = torch.utils.data.DataLoader(Pages(loader), batch_size=None, num_workers=2,
                                     multiprocessing_context="fork", timeout=60)
    out = []
    for item in dl:
        out.append({"ids": item["ids"].tolist(),
                    "sum": float(item["pixel_values"].double().sum())})
    print(json.dumps(out))
""")


@pytest.mark.parametrize("iterate_first", [False, True])
def test_a_torch_dataloader_with_forked_workers_gets_the_epoch(ds, iterate_first, tmp_path):
    script = tmp_path / "fork_loader.py"
    script.write_text(FORK_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(ds), "1" if iterate_first else "0"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    # Each worker iterates the loader it inherited from where the parent stood: the rest of
    # epoch 0 (all of it, or after the batch the parent took).
    ref = make(ds)
    if iterate_first:
        ref.next()
    want = [(b.sample_ids.tolist(), float(b["pixel_values"].double().sum())) for b in ref]
    ref.close()
    assert sorted((g["ids"], g["sum"]) for g in got) == sorted(want * 2)


def test_a_pickled_loader_works_where_it_is_unpickled(ds):
    import pickle

    loader = make(ds)
    first = loader.next().sample_ids.tolist()
    copy = pickle.loads(pickle.dumps(loader))
    rest = [b.sample_ids.tolist() for b in copy]
    assert [first] + rest == epoch_ids(ds, 0)
    copy.close()
    loader.close()


# ---- the pool limit ----

@pytest.mark.parametrize("prefetch,max_held", [(1, 1), (1, 3), (3, 2)])
def test_the_pool_limit_is_prefetch_plus_max_held(ds, prefetch, max_held):
    loader = make(ds, batch_size=1, prefetch=prefetch, max_held=max_held, shuffle=False)
    held = [loader.next() for _ in range(prefetch + max_held)]
    with pytest.raises(docfeed.ResourceExhaustedError, match="max_held"):
        loader.next()
    del held[0]
    assert loader.next().sample_ids.tolist() == [prefetch + max_held]
    del held
    loader.close()


# ---- bad samples with a slow consumer ----

def damaged_copy(src, dst, victim_file):
    """A copy of an original dataset whose stored bytes of `victim_file` have one byte flipped."""
    subprocess.run(["cp", "-r", str(src), str(dst)], check=True)
    original = (SAMPLE_DOCS / victim_file).read_bytes()
    for shard in sorted(dst.glob("*.arrow")):
        data = bytearray(shard.read_bytes())
        at = data.find(original)
        if at >= 0:
            data[at + len(original) // 2] ^= 0x55
            shard.write_bytes(bytes(data))
            return dst
    raise AssertionError(f"{victim_file} not found stored verbatim")


def test_a_skipped_sample_is_counted_once_with_a_slow_consumer(original_ds, tmp_path):
    rows = [json.loads(line) for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()]
    bad = damaged_copy(original_ds, tmp_path / "bad", rows[4]["file_name"])
    loader = make(bad, shuffle=False, on_error="skip", prefetch=8, num_threads=2)
    ids = [i for b in loader for i in b.sample_ids.tolist()]
    assert 4 not in ids and len(ids) == NUM_SAMPLES
    # The slow consumer: the workers meanwhile read the next epoch ahead, sample 4 included.
    deadline = time.monotonic() + 30
    while loader.stats()["read"][0] < 2 * NUM_SAMPLES and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    stats = loader.stats()
    assert stats["bad_samples"] == 1, stats["bad_sample_errors"]
    assert len(stats["bad_sample_errors"]) == 1 and "sample 4" in stats["bad_sample_errors"][0]
    loader.close()


# ---- views outliving the loader at interpreter exit ----

LEAK_SCRIPT = textwrap.dedent("""
    import sys
    import docfeed
    loader = docfeed.Loader(sys.argv[1], batch_size=2, image_size=(64, 48), num_threads=2)
    batch = loader.next()
    kept = batch["pixel_values"]       # a torch view of the pool buffer
    labels = batch.get("labels")
    mode = sys.argv[2]
    if mode == "close":
        loader.close()
    elif mode == "del":
        del loader, batch
    elif mode == "daemon":
        # A view held by a daemon thread's frame at exit: Python never frees that frame.
        import threading, time
        ready = threading.Event()
        def hold(view=batch["pixel_values"]):
            ready.set()
            time.sleep(600)
        threading.Thread(target=hold, daemon=True).start()
        ready.wait()
        del loader, batch
    # "keep": the loader, the batch and the view all live until exit
    print(float(kept.double().sum()))
""")


@pytest.mark.parametrize("mode", ["close", "del", "keep", "daemon"])
def test_views_outliving_the_loader_leak_nothing_at_exit(ds, mode, tmp_path):
    script = tmp_path / "views.py"
    script.write_text(LEAK_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(ds), mode], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "leaked" not in proc.stderr, proc.stderr
    assert float(proc.stdout) != 0.0

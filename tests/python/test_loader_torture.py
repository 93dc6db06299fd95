"""Concurrency and lifetime torture through the Python front: several threads call next(),
close(), state_dict(), load_state_dict(), set_epoch() and drop or release batches in seeded
random interleavings for a bounded time. Every call must return or raise a docfeed error its
contract allows (never hang or crash, never hand out a wrong batch), and afterwards the loader's
invariants hold. A few seconds; also run against the ASan build by `make test-python-asan`.
"""
import pathlib
import random
import subprocess
import threading
import time

import pytest
import torch

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (48, 40)
NUM_SAMPLES = 20
BATCH = 3


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("torture") / "ds"
    proc = subprocess.run([docfeed.cli_path(), "pack", str(SAMPLE_DOCS), "-o", str(out),
                           "--preprocess", "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def make(ds, **kw):
    return docfeed.Loader(ds, batch_size=BATCH, image_size=SIZE, seed=3, drop_last=False,
                          pad="center", **kw)


def reference(ds, epoch):
    """{position of the batch's first sample: (ids, pixels)} for `epoch`, from one consumer on one
    thread; center padding makes a sample's pixels the same whatever batch it lands in."""
    out = {}
    loader = make(ds, num_threads=1)
    loader.set_epoch(epoch)
    for start in range(0, NUM_SAMPLES):
        loader.load_state_dict({"seed": 3, "epoch": epoch, "position": start})
        b = loader.next()
        out[start] = (b.sample_ids.tolist(), b["pixel_values"].clone())
    loader.close()
    return out


class Storm:
    def __init__(self, ds, seed, refs):
        self.loader = make(ds, num_threads=1 + seed % 3, prefetch=1 + seed % 2, max_held=6)
        self.refs = refs
        self.seed = seed
        self.closing = False
        self.closed = False
        self.failures = []
        self.ops = 0

    def check_batch(self, b):
        end = b.resume_state["position"]
        start = end - len(b.sample_ids)
        if b.resume_state["epoch"] != b.epoch or start not in self.refs[b.epoch]:
            self.failures.append(f"batch of epoch {b.epoch}: resume state {b.resume_state}")
            return
        ids, pixels = self.refs[b.epoch][start]
        n = len(b.sample_ids)
        if b.sample_ids.tolist() != ids[:n] or not torch.equal(b["pixel_values"], pixels[:n]):
            self.failures.append(f"epoch {b.epoch} batch at {start}: wrong ids or pixels")

    def allowed(self, error, closed_before):
        if isinstance(error, docfeed.LoaderClosedError):
            return self.closing
        if isinstance(error, docfeed.ResourceExhaustedError):
            return not closed_before
        return False

    def run(self, thread, end):
        rng = random.Random(self.seed * 131 + thread)
        held = []
        while time.monotonic() < end:
            self.ops += 1
            op = rng.randrange(100)
            closed_before = self.closed
            try:
                if op < 45 and len(held) < 2:
                    b = self.loader.next()
                    if closed_before:
                        self.failures.append("next() returned after close()")
                    elif b is not None:
                        self.check_batch(b)
                        held.append(b)
                elif op < 65:
                    if held:
                        held.pop(rng.randrange(len(held)))  # the tensors go with it
                elif op < 75:
                    state = self.loader.state_dict()
                    if not 0 <= state["position"] <= NUM_SAMPLES:
                        self.failures.append(f"state_dict out of range: {state}")
                elif op < 85:
                    self.loader.load_state_dict({"seed": 3, "epoch": rng.randrange(2),
                                                 "position": rng.randrange(NUM_SAMPLES)})
                elif op < 95:
                    self.loader.set_epoch(rng.randrange(2))
                elif op < 99:
                    self.loader.stats()
                elif thread == 0 and self.seed % 2 == 1 and not self.closing:
                    self.closing = True
                    self.loader.close()
                    self.closed = True
            except docfeed.Error as e:
                if not self.allowed(e, closed_before):
                    self.failures.append(f"op {op}: {type(e).__name__}: {e}")
        held.clear()


@pytest.fixture(scope="module")
def refs(ds):
    return {e: reference(ds, e) for e in (0, 1)}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_interleavings_from_several_threads(ds, refs, seed):
    storm = Storm(ds, seed, refs)
    end = time.monotonic() + 1.5
    threads = [threading.Thread(target=storm.run, args=(t, end), daemon=True) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread is blocked (a hang)"
    assert storm.failures == []
    assert storm.ops > 50
    loader = storm.loader
    if not storm.closed:
        # Invariants: a restored epoch comes out whole and right; every buffer is back.
        loader.load_state_dict({"seed": 3, "epoch": 1, "position": 0})
        kept = list(loader)
        assert sum(len(b.sample_ids) for b in kept) == NUM_SAMPLES
        for b in kept:
            storm.check_batch(b)
        assert storm.failures == []
        loader.close()
    with pytest.raises(docfeed.LoaderClosedError):
        loader.next()

"""Concurrency and lifetime torture through the Python front: several threads call next(),
close(), state_dict(), load_state_dict(), set_epoch() and drop or release batches in seeded
random interleavings for a bounded time. Every call must return or raise a docfeed error its
contract allows (never hang or crash, never hand out a wrong batch), and afterwards the loader's
invariants hold. A few seconds; also run against the ASan build by `make test-python-asan`.

The last test puts the lifetime hazards into the same storm: one seeded schedule also forks the
process at random points (the child uses the loader it inherited and exits) and truncates, rewrites
or replaces the data file under the running loader.
"""
import os
import pathlib
import random
import shutil
import signal
import subprocess
import threading
import time

import pytest
import torch

import docfeed
from conftest import copy_sample_docs

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

    # One op is drawn from 0..99: next() below CUTS[0] (when fewer than 2 batches are held),
    # release below CUTS[1], state_dict, load_state_dict, set_epoch, stats below the next ones,
    # and close() (thread 0, once, on the seeds closes() picks) at 99.
    CUTS = (45, 65, 75, 85, 95, 99)

    def closes(self):
        return self.seed % 2 == 1

    def check(self, b):
        self.check_batch(b)

    def step(self, thread, rng, held):
        """One random op of `thread`; failures are recorded, allowed errors absorbed."""
        op = rng.randrange(100)
        closed_before = self.closed
        to_next, to_release, to_state, to_load, to_epoch, to_stats = self.CUTS
        try:
            if op < to_next and len(held) < 2:
                b = self.loader.next()
                if closed_before:
                    self.failures.append("next() returned after close()")
                elif b is not None:
                    self.check(b)
                    held.append(b)
            elif op < to_release:
                if held:
                    held.pop(rng.randrange(len(held)))  # the tensors go with it
            elif op < to_state:
                state = self.loader.state_dict()
                if not 0 <= state["position"] <= NUM_SAMPLES:
                    self.failures.append(f"state_dict out of range: {state}")
            elif op < to_load:
                self.loader.load_state_dict({"seed": 3, "epoch": rng.randrange(2),
                                             "position": rng.randrange(NUM_SAMPLES)})
            elif op < to_epoch:
                self.loader.set_epoch(rng.randrange(2))
            elif op < to_stats:
                self.loader.stats()
            elif thread == 0 and self.closes() and not self.closing:
                self.closing = True
                self.loader.close()
                self.closed = True
        except docfeed.Error as e:
            if not self.allowed(e, closed_before):
                self.failures.append(f"op {op}: {type(e).__name__}: {e}")

    def run(self, thread, end):
        rng = random.Random(self.seed * 131 + thread)
        held = []
        while time.monotonic() < end:
            self.ops += 1
            self.step(thread, rng, held)
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


# ---- one schedule with fork() and a data file changed under the loader ----

DATA_FILE = "data-00000-of-00001.arrow"
CHANGES = ["truncate", "rewrite", "replace"]  # in place, in place shorter, a rename over it
OPS_PER_THREAD = 120
CHILD_TIMEOUT_S = 20  # a child that is not done by then is a hang: killed, and the test fails


@pytest.fixture(scope="module")
def other_data_file(tmp_path_factory):
    """The data file of another, smaller dataset: what `cp` or a rename puts over ours."""
    base = tmp_path_factory.mktemp("torture-other")
    few = copy_sample_docs(base / "few", 5)
    proc = subprocess.run([docfeed.cli_path(), "pack", str(few), "-o", str(base / "small"),
                           "--preprocess", "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return base / "small" / DATA_FILE


class LifetimeStorm(Storm):
    """Storm's interleavings, plus forks at seeded points of seeded threads and one change of the
    data file at a seeded op of thread 0. After the change a batch is checked sample by sample
    (with on_error="skip" the samples after a bad one move up), and an error must name the file."""

    def __init__(self, ds, seed, refs, by_id, other, on_error):
        self.ds = ds
        self.by_id = by_id
        self.other = other
        self.on_error = on_error
        self.change = CHANGES[seed % len(CHANGES)]
        st = os.stat(ds / DATA_FILE)
        self.original = (st.st_ino, st.st_size)  # each change alters one of them
        self.changed = False
        self.forks = 0
        self.children = []  # (exit code or "hung", what the child was doing)
        rng = random.Random(seed)
        self.change_at = rng.randrange(10, OPS_PER_THREAD // 2)
        # (thread, op) of each fork; every thread may fork, some while others are in next().
        self.fork_at = {(rng.randrange(4), rng.randrange(OPS_PER_THREAD)) for _ in range(3)}
        super().__init__(ds, seed, refs)
        self.loader.close()  # Storm's: this storm needs on_error and a large bad-sample budget
        self.loader = make(ds, num_threads=1 + seed % 3, prefetch=1 + seed % 2, max_held=6,
                           on_error=on_error, max_bad_samples=10 * NUM_SAMPLES)

    def file_changed(self):
        st = os.stat(self.ds / DATA_FILE)
        return (st.st_ino, st.st_size) != self.original

    def names_file(self, error):
        return DATA_FILE in str(error)

    def allowed(self, error, closed_before):
        if super().allowed(error, closed_before):
            return True
        # After the change: a DataError / StorageError (or, with skip, ResourceExhausted when
        # every replacement fails too) naming the file.
        return self.changed and self.names_file(error)

    def check_samples(self, b):
        for k, sid in enumerate(b.sample_ids.tolist()):
            if not torch.equal(b["pixel_values"][k], self.by_id[sid]):
                self.failures.append(f"sample {sid}: wrong pixels after the {self.change}")

    def change_file(self):
        self.changed = True  # first: a batch handed out while this is False predates the change
        data = self.ds / DATA_FILE
        if self.change == "truncate":
            os.truncate(data, os.path.getsize(data) // 4)
        elif self.change == "rewrite":
            shutil.copyfile(self.other, data)  # the same inode, truncated and rewritten
        else:
            tmp = self.ds / "incoming.arrow"
            shutil.copyfile(self.other, tmp)
            os.replace(tmp, data)  # a new inode: the open file keeps the old bytes

    def fork(self):
        """Forks; the child takes a batch from the loader it inherited (which makes itself anew
        there) and exits with 0 (a right batch, the end, or an error its contract allows), 2 (an
        error it does not), 3 (wrong pixels) or 4 (anything else). The wait is bounded."""
        self.forks += 1
        closing, changed = self.closing, self.changed
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: only this thread exists here
            code = 4
            try:
                signal.alarm(CHILD_TIMEOUT_S)
                b = self.loader.next()
                code = 0
                if b is not None:
                    for k, sid in enumerate(b.sample_ids.tolist()):
                        got = b["pixel_values"][k].numpy().tobytes()
                        if got != self.by_id_bytes[sid]:
                            code = 3
            except docfeed.LoaderClosedError as e:
                code = 0 if closing or self.closing else 2
                why = repr(e)
            except docfeed.Error as e:
                # The parent's other threads run on: the change may come while the child reads.
                code = 0 if (changed or self.file_changed()) and self.names_file(e) else 2
                why = repr(e)
            except BaseException as e:
                why = repr(e)
            else:
                why = "wrong pixels" if code else "ok"
            try:
                os.write(w, why.encode()[:4000])
            finally:
                os._exit(code)
        os.close(w)
        deadline = time.monotonic() + CHILD_TIMEOUT_S + 5
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                why = os.read(r, 4000).decode(errors="replace")
                os.close(r)
                self.children.append(0 if code == 0 else f"exit {code}: {why}")
                return
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(r)
                self.children.append("hung")
                return
            time.sleep(0.005)

    CUTS = (45, 65, 72, 80, 90, 99)

    def closes(self):
        return self.seed % 4 == 3

    def check(self, b):
        (self.check_samples if self.changed else self.check_batch)(b)

    def run(self, thread, end):
        rng = random.Random(self.seed * 131 + thread)
        held = []
        for n in range(OPS_PER_THREAD):
            if time.monotonic() > end:
                break
            self.ops += 1
            if (thread, n) in self.fork_at:
                self.fork()
            if thread == 0 and n == self.change_at:
                self.change_file()
            self.step(thread, rng, held)
        held.clear()


@pytest.fixture(scope="module")
def refs_by_id(refs):
    """{sample id: pixels}: center padding makes them the same in every batch and epoch."""
    out = {}
    for epoch in refs.values():
        for ids, pixels in epoch.values():
            for k, sid in enumerate(ids):
                out.setdefault(sid, pixels[k])
    assert sorted(out) == list(range(NUM_SAMPLES))
    return out


# Seeds 11..16 cover each change with both on_error modes; seed % 4 == 3 also closes mid-storm.
@pytest.mark.parametrize("seed", [11, 12, 13, 14, 15, 16])
def test_forks_and_a_changed_data_file_in_one_random_schedule(ds, refs, refs_by_id,
                                                              other_data_file, seed, tmp_path):
    work = tmp_path / "ds"
    shutil.copytree(ds, work)
    on_error = "skip" if seed % 2 else "raise"
    storm = LifetimeStorm(work, seed, refs, refs_by_id, other_data_file, on_error)
    storm.by_id_bytes = {sid: p.numpy().tobytes() for sid, p in refs_by_id.items()}
    end = time.monotonic() + 10  # a safety cap; the schedule is OPS_PER_THREAD ops per thread
    threads = [threading.Thread(target=storm.run, args=(t, end), daemon=True) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread is blocked (a hang)"
    assert storm.failures == []
    assert storm.changed, "the schedule ended before the data file was changed"
    assert storm.forks > 0 and storm.children == [0] * storm.forks, storm.children
    loader = storm.loader
    if not storm.closed:
        # A whole epoch after the change: right samples, and the change seen as the contract says.
        loader.load_state_dict({"seed": 3, "epoch": 1, "position": 0})
        seen = 0
        error = None
        try:
            for b in loader:
                storm.check_samples(b)
                seen += len(b.sample_ids)
        except docfeed.Error as e:
            error = e
        assert storm.failures == []
        if storm.change == "replace":
            # The loader reads the file it opened; the rename does not touch it.
            assert error is None and seen == NUM_SAMPLES, error
        elif on_error == "raise":
            assert error is not None and storm.names_file(error), error
        elif error is None:
            assert loader.stats()["bad_samples"] > 0, loader.stats()
        else:  # every replacement failed too: ResourceExhausted naming the file
            assert storm.names_file(error), error
        loader.close()
    with pytest.raises(docfeed.LoaderClosedError):
        loader.next()

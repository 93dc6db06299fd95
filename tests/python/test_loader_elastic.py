"""Elastic resume through docfeed.Loader's state_dict() / load_state_dict(): a state taken by W
ranks resumes on W' ranks (2 -> 1 -> 4 -> 3 ...) keeping the per-rank batch or the global
batch; over the epoch no sample is served twice and none is skipped but the tail the rule of
src/pipeline/README.md ("Elastic resume") names. The ranks are loaders in this process (rank=,
world_size=), the reference order is one single-rank loader with batch 1. The exhaustive check
is tests/pipeline/elastic_resume_test.cc; this one checks the Python plumbing: the state's
fields, the mode it reports, the errors. Runs in .venv/train and .venv/hf5; a few seconds.
"""
import collections
import subprocess

import pytest

import docfeed

from conftest import copy_sample_docs

SIZE = (64, 48)
N = 20  # the sample documents
SEED = 3


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("elastic")
    src = copy_sample_docs(tmp / "src", N)
    out = tmp / "ds"
    proc = subprocess.run([docfeed.cli_path(), "pack", str(src), "-o", str(out), "--preprocess",
                           "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def make(ds, world, batch, rank=0, drop_last=True):
    return docfeed.Loader(ds, batch_size=batch, image_size=SIZE, seed=SEED, num_threads=1,
                          prefetch=2, rank=rank, world_size=world, drop_last=drop_last)


def reference_order(ds, epoch):
    """The epoch's global order: what one rank with batch 1 is served."""
    with make(ds, 1, 1) as l:
        l.set_epoch(epoch)
        return [int(b.sample_ids[0]) for b in l]


def segment(ds, world, batch, state, steps, served, drop_last=True, elastic=None):
    """Every rank of a run of `world` x `batch` resumes `state` (None: the start of epoch 1),
    takes `steps` batches (None: to the end of the epoch); their samples go into `served`.
    Returns the state_dict every rank agrees on and the ranks' batch counts."""
    states, counts = [], []
    for rank in range(world):
        with make(ds, world, batch, rank, drop_last) as l:
            if state is None:
                l.set_epoch(1)
            else:
                l.load_state_dict(state, elastic=elastic)
            count = 0
            while steps is None or count < steps:
                b = l.next()
                if b is None:
                    break
                assert b.epoch == 1
                served.update(b.sample_ids.tolist())
                count += 1
            counts.append(count)
            states.append(l.state_dict())
    assert all(s == states[0] for s in states), states
    return states[0], counts


def expected(order, last_world, last_batch, last_start, remainder):
    """Samples the epoch serves when its ending run (world x batch) started at last_start."""
    step = last_world * last_batch
    tail = (N - last_start) % step
    want = collections.Counter(order)
    if remainder == "drop":
        for p in range(N - tail, N):
            want[order[p]] -= 1
    elif remainder == "wrap" and tail:
        for p in range(step - tail):
            want[order[p % N]] += 1
    return +want


def test_same_per_rank_batch_2_1_4_3(ds):
    order = reference_order(ds, 1)
    served = collections.Counter()
    state, counts = segment(ds, 2, 1, None, 2, served)  # positions 0..3
    assert counts == [2, 2]
    assert (state["position"], state["world_size"], state["batch_size"]) == (4, 2, 1)
    assert state["elastic"] == "same" and state["num_samples"] == N
    state, counts = segment(ds, 1, 1, state, 3, served)  # 4..6
    assert state["position"] == 7 and state["elastic"] == "rank_batch"
    state, counts = segment(ds, 4, 1, state, 2, served)  # 7..14 (of 3 steps left)
    assert counts == [2] * 4 and state["position"] == 15
    # 3 ranks: 5 left, one step of 3, the last: the epoch is over, its tail of 2 dropped.
    state, counts = segment(ds, 3, 1, state, None, served, elastic="rank_batch")
    assert counts == [1, 1, 1] and state["position"] == N
    assert served == expected(order, 3, 1, 15, "drop")
    assert sum(served.values()) == 18 and max(served.values()) == 1
    # The state at a tail shorter than the resuming run's step: no batch, the epoch ends there.
    with make(ds, 4, 2) as l:
        l.load_state_dict(dict(state, position=15, world_size=4, batch_size=2))
        assert len(l) == 0 and l.next() is None and l.state_dict()["position"] == N


def test_same_global_batch_2_1_4_2(ds):
    order = reference_order(ds, 1)
    served = collections.Counter()
    state, _ = segment(ds, 2, 2, None, 2, served)  # 0..7
    state, _ = segment(ds, 1, 4, state, 1, served)  # 8..11
    assert state["elastic"] == "global_batch" and state["batch_size"] == 4
    state, _ = segment(ds, 4, 1, state, 1, served, elastic="global_batch")  # 12..15
    state, counts = segment(ds, 2, 2, state, None, served)  # 16..19: the end, nothing dropped
    assert counts == [1, 1] and state["position"] == N
    assert served == collections.Counter(order)


def test_the_ending_run_decides_the_tail(ds):
    """2 x 3 runs to the end (3 steps of 6, 2 dropped); a resume by 1 x 3 from that end state,
    whose steps could fill the tail, serves nothing: the epoch is over."""
    order = reference_order(ds, 1)
    served = collections.Counter()
    state, counts = segment(ds, 2, 3, None, None, served)
    assert counts == [3, 3] and state["position"] == N
    state, counts = segment(ds, 1, 3, state, None, served)
    assert counts == [0]
    assert served == expected(order, 2, 3, 0, "drop")
    # Resumed mid-epoch instead, the 1 x 3 run ends it, and its step decides the tail (2 of 14).
    served = collections.Counter()
    state, _ = segment(ds, 2, 3, None, 1, served)
    state, counts = segment(ds, 1, 3, state, None, served)
    assert counts == [4]
    assert served == expected(order, 1, 3, 6, "drop")


def test_without_drop_last_every_sample_is_served(ds):
    order = reference_order(ds, 1)
    # 2 ranks (wrap) -> 1 rank (partial: a short last batch): each sample exactly once.
    served = collections.Counter()
    state, _ = segment(ds, 2, 3, None, 1, served, drop_last=False)
    state, counts = segment(ds, 1, 3, state, None, served, drop_last=False)
    assert counts == [5]  # 14 left: 4 of 3 and one of 2
    assert served == collections.Counter(order)
    # 1 rank -> 3 ranks (wrap): the last step is completed from the epoch's first samples.
    served = collections.Counter()
    state, _ = segment(ds, 1, 2, None, 3, served, drop_last=False)  # 0..5
    state, counts = segment(ds, 3, 2, state, None, served, drop_last=False)
    assert counts == [3, 3, 3]  # 14 left in steps of 6: 18 positions, 4 wrapped
    assert served == expected(order, 3, 2, 6, "wrap")
    assert sorted(s for s, c in served.items() if c == 2) == sorted(order[:4])


def test_combinations_that_cannot_be_honoured_raise_value_errors(ds):
    with make(ds, 2, 3) as saver:
        saver.set_epoch(1)
        saver.next()
        state = saver.state_dict()
    assert (state["world_size"], state["batch_size"], state["position"]) == (2, 3, 6)
    with make(ds, 4, 2) as l:  # 8 != 6 and 2 != 3
        with pytest.raises(ValueError, match=r"world_size 2 and batch_size 3.*world_size 4 and "
                           r"batch_size 2.*no batch_size keeps the global batch 6 over 4 ranks.*"
                           r"batch_size 3 keeps the per-rank batch"):
            l.load_state_dict(state)
        # A failed load changed nothing.
        assert l.state_dict()["position"] == 0 and l.state_dict()["elastic"] == "same"
    with make(ds, 1, 3) as l:
        with pytest.raises(docfeed.InvalidArgumentError,
                           match=r'elastic "global_batch" requires world_size x batch_size to '
                                 r"stay 6; batch_size 6 keeps the global batch"):
            l.load_state_dict(state, elastic="global_batch")
        with pytest.raises(ValueError, match="same, global_batch or rank_batch"):
            l.load_state_dict(state, elastic="global")
        with pytest.raises(ValueError, match="world_size or batch_size without the other"):
            l.load_state_dict({k: v for k, v in state.items() if k != "batch_size"})
        l.load_state_dict(state, elastic="rank_batch")
        assert l.state_dict()["elastic"] == "rank_batch" and len(l) == 4  # 14 left, steps of 3
    with make(ds, 1, 6) as l:
        with pytest.raises(ValueError, match='elastic "same" requires the same world_size'):
            l.load_state_dict(state, elastic="same")
        l.load_state_dict(state)
        assert l.state_dict()["elastic"] == "global_batch"
    # A hand-written state (no shape) is taken as the loader's own.
    with make(ds, 3, 1) as l:
        l.load_state_dict({"seed": SEED, "epoch": 1, "position": 6})
        assert l.state_dict()["elastic"] == "same" and len(l) == 4


def test_batch_resume_state_is_a_full_state_dict(ds):
    with make(ds, 1, 4) as l:
        l.load_state_dict({"seed": SEED, "epoch": 0, "position": 4, "world_size": 2,
                           "batch_size": 2}, elastic="global_batch")
        b = l.next()
        assert b.resume_state == l.state_dict()
        assert b.resume_state == {"seed": SEED, "epoch": 0, "position": 8, "world_size": 1,
                                  "batch_size": 4, "num_samples": N, "elastic": "global_batch"}
        # The mode stays with the loader into later epochs.
        l.set_epoch(1)
        assert l.state_dict()["elastic"] == "global_batch"

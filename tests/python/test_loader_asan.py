"""Batch lifetime through the Python front: hold, drop, stop early, drop the loader or close it
while batches (and tensors viewing them) live, release on other threads, restart epochs with
work in flight. Runs in the normal `make test-python` and, by `make test-python-asan`, against
the extension built with ASan+UBSan (DOCFEED_ASAN=1: then this checks the runtime is really
loaded), where a use-after-free or a torn buffer would abort. A few seconds.
"""
import gc
import os
import pathlib
import subprocess
import threading

import pytest
import torch

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (96, 72)


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("asan") / "ds"
    proc = subprocess.run([docfeed.cli_path(), "pack", str(SAMPLE_DOCS), "-o", str(out),
                           "--preprocess", "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def reference(ds, epoch, **kw):
    loader = docfeed.Loader(ds, batch_size=3, image_size=SIZE, seed=9, num_threads=2, **kw)
    loader.set_epoch(epoch)
    return [(b.sample_ids.clone(), b["pixel_values"].clone()) for b in loader]


def test_sanitizer_runtime_when_asked():
    if os.environ.get("DOCFEED_ASAN") != "1":
        pytest.skip("plain build (make test-python-asan runs this under ASan)")
    maps = pathlib.Path("/proc/self/maps").read_text()
    assert "libasan" in maps, "ASan runtime not loaded"
    # The extension built in build/asan, not the release tree's (build/python-pkg, which the
    # venv's .pth file also puts on the path).
    extension = pathlib.Path(docfeed._docfeed.__file__).resolve()
    assert extension.is_relative_to(REPO / "build" / "asan"), extension


def test_hold_drop_stop_early_and_outlive(ds):
    want = reference(ds, 0)
    for stop in (0, 1, 3):
        loader = docfeed.Loader(ds, batch_size=3, image_size=SIZE, seed=9, num_threads=2,
                                prefetch=2, max_held=3)
        kept = []
        for k, b in enumerate(loader):
            kept.append(b["pixel_values"])  # a tensor alone keeps its buffer
            if len(kept) > 2:
                kept.pop(0)
            if k == stop:
                break  # stop early with the workers still filling buffers
        del loader  # destroy while the workers may run and two batches are held
        gc.collect()
        assert torch.equal(kept[-1], want[stop][1])


def test_close_then_use_held_batch(ds):
    loader = docfeed.Loader(ds, batch_size=3, image_size=SIZE, seed=9, num_threads=2)
    b = loader.next()
    loader.close()
    assert torch.equal(b["pixel_values"], reference(ds, 0)[0][1])
    with pytest.raises(RuntimeError, match="closed"):
        loader.next()


def test_release_on_other_threads_and_restart_epochs(ds):
    loader = docfeed.Loader(ds, batch_size=3, image_size=SIZE, seed=9, num_threads=2,
                            prefetch=3, max_held=4)
    for epoch in (0, 1, 0):
        loader.set_epoch(epoch)
        want = reference(ds, epoch)
        got, threads = [], []
        for b in loader:
            got.append((b.sample_ids.clone(), b["pixel_values"].clone()))
            # Hand the batch to another thread, which drops it (returns the buffer) there.
            t = threading.Thread(target=lambda x=b: x.clear())
            threads.append(t)
            del b
            t.start()
        for t in threads:
            t.join()
        assert len(got) == len(want)
        for (ids, px), (wids, wpx) in zip(got, want):
            assert torch.equal(ids, wids) and torch.equal(px, wpx)
    # Restart mid-epoch with batches in flight, repeatedly.
    for position in (0, 3, 9, 15):
        loader.load_state_dict({"seed": 9, "epoch": 2, "position": position})
        next(iter(loader))
    gc.collect()

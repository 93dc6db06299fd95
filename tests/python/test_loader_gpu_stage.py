"""The CUDA stage of docfeed.Loader (docfeed/_gpu.py) without a GPU: torch's stream/event API is
replaced by CPU stand-ins (events that complete late, to exercise the in-flight bookkeeping)
and the pinned allocator by aligned CPU tensors, so everything but the device copy itself runs:
uint8 over the wire from pool buffers that the C++ loader obtained through the Python allocator
hook, table normalization, host buffers kept until their copy's event completes, epochs and
close. The output must equal the CPU loader's for each dtype. bench/gpu/gpu_check.py checks the
real transfer on a GPU machine.
"""
import contextlib
import pathlib
import subprocess

import pytest
import torch

import docfeed
from docfeed import _gpu

REPO = pathlib.Path(__file__).resolve().parents[2]
SIZE = (96, 72)


class FakeEvent:
    recorded = 0

    def __init__(self, *args, **kwargs):
        self.done = False

    def record(self, stream=None):
        FakeEvent.recorded += 1
        self.done = FakeEvent.recorded % 2 == 0  # every other copy is "still running"

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


class FakeStream:
    def __init__(self, *args, **kwargs):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    allocations = []

    def allocate(nbytes):
        raw = torch.empty(nbytes + 64, dtype=torch.uint8)
        offset = (-raw.data_ptr()) % 64
        allocations.append(nbytes)
        return raw[offset:offset + nbytes]

    monkeypatch.setattr(torch.cuda, "Stream", FakeStream)
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: FakeStream())
    monkeypatch.setattr(torch.Tensor, "record_stream", lambda self, s: None, raising=False)
    monkeypatch.setattr(_gpu.GpuStage, "pinned_allocator", staticmethod(allocate))
    monkeypatch.setattr(_gpu.GpuStage, "create", staticmethod(
        lambda device, dtype, layout, max_held: None if device is None else
        _gpu.GpuStage(torch.device("cpu"), getattr(torch, dtype), layout, max_held)))
    return allocations


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "ds"
    subprocess.run([docfeed.cli_path(), "pack", str(REPO / "tests" / "data" / "sample-docs"),
                    "-o", str(out), "--preprocess", "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.uint8])
def test_gpu_stage_equals_cpu_loader(fake_cuda, ds, dtype):
    kw = dict(batch_size=3, image_size=SIZE, seed=4, dtype=dtype)
    want = [(b.sample_ids.clone(), b["pixel_values"].clone()) for b in docfeed.Loader(ds, **kw)]
    loader = docfeed.Loader(ds, device="cuda", max_held=2, **kw)
    # The pool came from the allocator hook: prefetch 4 + max_held 2 + 1 for copies in flight.
    assert len(fake_cuda) == 7 and set(fake_cuda) == {3 * 3 * SIZE[0] * SIZE[1]}
    got = []
    for batch in loader:
        assert batch["pixel_values"].dtype == dtype
        got.append((batch.sample_ids.clone(), batch["pixel_values"]))
        assert len(loader._gpu.in_flight) <= 2  # host buffers kept only while copies run
    assert len(got) == len(want) == 6
    for (ids, px), (wids, wpx) in zip(got, want):
        assert torch.equal(ids, wids) and torch.equal(px, wpx)
    loader.set_epoch(1)  # drains the copies in flight first
    assert not loader._gpu.in_flight
    next(iter(loader))
    loader.close()
    assert not loader._gpu.in_flight

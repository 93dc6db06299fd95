"""The CUDA stage of docfeed.Loader (docfeed/_gpu.py) without a GPU: torch's stream/event API is
replaced by CPU stand-ins (events that complete late, to exercise the in-flight bookkeeping)
and the pinned allocator by aligned CPU tensors, so everything but the device copy itself runs:
uint8 over the wire from pool buffers that the C++ loader obtained through the Python allocator
hook, table normalization, host buffers kept until their copy's event completes, epochs and
close. The output must equal the CPU loader's for each dtype. bench/gpu/gpu_check.py checks the
real transfer on a GPU machine.
"""
import contextlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import docfeed
from docfeed import _gpu

REPO = pathlib.Path(__file__).resolve().parents[2]
SIZE = (96, 72)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


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


# The GPU stage always takes HWC uint8 from the C++ loader and reorders on the device: both
# output layouts must still equal the CPU loader's.
@pytest.mark.parametrize("layout", ["chw", "hwc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.uint8])
def test_gpu_stage_equals_cpu_loader(fake_cuda, ds, dtype, layout):
    kw = dict(batch_size=3, image_size=SIZE, seed=4, dtype=dtype, layout=layout)
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


# Writes a save_to_disk dataset of 5 centred-padded pages normalized with ImageNet's mean/std by the
# processor's numpy formula (float32 nested lists, the recipe's kind). Run in a subprocess without
# the ASan preload of test-python-asan (pyarrow is not instrumented).
SAVE_IMAGENET = r"""
import sys
import datasets
import numpy as np
out, height, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
table = np.stack([((np.arange(256) * (1 / 255)).astype(np.float32) - np.float32(m)) / np.float32(s)
                  for m, s in zip(mean, std)])
rng = np.random.default_rng(3)
tensors = []
for i in range(5):
    h, w = height - 6 * i, width - 4 * (i % 2)
    canvas = np.zeros((height, width, 3), np.uint8)
    top, left = (height - h) // 2, (width - w) // 2
    canvas[top:top + h, left:left + w] = rng.integers(1, 256, size=(h, w, 3))
    tensors.append(np.stack([table[c][canvas[..., c]] for c in range(3)]))
np.save(out + ".npy", np.stack(tensors))
datasets.Dataset.from_dict({"pixel_values": tensors, "labels": [[i, 2] for i in range(5)]}
                           ).save_to_disk(out)
"""


@pytest.fixture(scope="module")
def imagenet_ds(tmp_path_factory):
    """A dataset migrated from ImageNet-normalized pixel_values (its docfeed.json records the mean
    and std), with the original tensors."""
    tmp = tmp_path_factory.mktemp("gpu-imagenet")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([sys.executable, "-c", SAVE_IMAGENET, str(tmp / "saved"), *map(str, SIZE)],
                   check=True, capture_output=True, env=env)
    subprocess.run([docfeed.cli_path(), "pack", str(tmp / "saved"), "-o", str(tmp / "ds")],
                   check=True, capture_output=True)
    return tmp / "ds", torch.from_numpy(np.load(tmp / "saved.npy"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_stage_uses_the_datasets_and_the_given_normalization(fake_cuda, imagenet_ds, ds,
                                                                  dtype):
    """The GPU table is built from the mean/std the C++ loader uses: the dataset's recorded ones
    (the original tensors come back), or image_mean/image_std when given."""
    path, tensors = imagenet_ds
    kw = dict(batch_size=2, image_size=SIZE, shuffle=False, pad="center", drop_last=False,
              dtype=dtype)
    loader = docfeed.Loader(path, device="cuda", **kw)
    assert loader.image_mean == IMAGENET_MEAN and loader.image_std == IMAGENET_STD
    got = torch.cat([b["pixel_values"].clone() for b in loader])
    assert torch.equal(got, tensors.to(dtype))  # .to(): the rounding the C++ tables use
    loader.close()
    # An override on a dataset without a recorded normalization: GPU stage == C++ float path.
    custom = dict(kw, image_mean=(0.3, 0.62, 0.1), image_std=(0.2, 0.35, 0.71))
    want = torch.cat([b["pixel_values"].clone() for b in docfeed.Loader(ds, **custom)])
    plain = torch.cat([b["pixel_values"].clone() for b in docfeed.Loader(ds, **kw)])
    got = torch.cat([b["pixel_values"].clone() for b in docfeed.Loader(ds, device="cuda",
                                                                         **custom)])
    assert torch.equal(got, want) and not torch.equal(got, plain)

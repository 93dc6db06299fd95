"""docfeed.Loader(path, preset="pix2struct") against the Pix2Struct image processor, batch by batch.

Runs in both transformers environments (the test_hf_* modules run under .venv/train, 4.57.6,
and .venv/hf5, 5.x). The dataset is the sample invoices packed as they are (every sample
document is compared in test_hf_pix2struct_parity.py; these keep the test short); the reference
for each batch is the running generation's numpy processor (4.x Pix2StructImageProcessor, 5.x
Pix2StructImageProcessorPil) given the batch's pages as `datasets.load_from_disk(path)[id]
["image"]`: flattened_patches and attention_mask equal bit for bit (on a CPU where torch
dispatches its DEFAULT kernels the comparison is skipped, saying so: docs/pix2struct-
preprocessing.md, "Exactness"). Also: batches do not depend on the number of
threads, and the pix2struct-only options are refused elsewhere.
"""
import pytest

from conftest import SAMPLE_DOCS, run_docfeed

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402

HF_VERSION = int(transformers.__version__.split(".")[0])
if HF_VERSION >= 5:
    from transformers.models.pix2struct.image_processing_pil_pix2struct import (
        Pix2StructImageProcessorPil as Processor)
else:
    from transformers import Pix2StructImageProcessor as Processor

MAX_PATCHES = 128  # small, to keep the reference fast


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("pix2struct") / "ds"
    run_docfeed("pack", SAMPLE_DOCS / "invoices", "-o", out)
    return out


def make_loader(path, **kwargs):
    args = dict(batch_size=4, preset="pix2struct", max_patches=MAX_PATCHES,
                hf_version=HF_VERSION, seed=3, num_threads=2)
    args.update(kwargs)
    return docfeed.Loader(path, **args)


def batches(loader):
    return [{"flattened_patches": b["flattened_patches"].clone(),
             "attention_mask": b["attention_mask"].clone(),
             "sample_ids": b.sample_ids.clone()} for b in loader]


def test_batches_equal_the_processor(packed):
    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("torch's DEFAULT CPU kernels round the resize differently; docfeed "
                    "reproduces the AVX2 / AVX512 ones")
    rows = datasets.load_from_disk(str(packed))
    proc = Processor(max_patches=MAX_PATCHES)
    got = batches(make_loader(packed, drop_last=False))
    assert sum(len(b["sample_ids"]) for b in got) == len(rows)
    for b in got:
        images = [rows[int(i)]["image"] for i in b["sample_ids"]]
        want = proc(images, return_tensors="pt")
        ours, ref = b["flattened_patches"], want["flattened_patches"]
        assert ours.dtype == torch.float32 and ours.shape == ref.shape
        assert ours.shape[1:] == (MAX_PATCHES, 2 + 3 * 16 * 16)
        assert torch.equal(b["attention_mask"], want["attention_mask"])
        assert torch.equal(ours, ref)


def test_threads_do_not_change_batches(packed):
    one = batches(make_loader(packed, num_threads=1, batch_size=2))
    three = batches(make_loader(packed, num_threads=3, batch_size=2))
    assert len(one) == len(three)
    for a, b in zip(one, three):
        assert torch.equal(a["sample_ids"], b["sample_ids"])
        assert torch.equal(a["flattened_patches"], b["flattened_patches"])


def test_options_are_checked(packed):
    with pytest.raises(docfeed.InvalidArgumentError, match="max_patches"):
        docfeed.Loader(packed, batch_size=2, max_patches=64)
    with pytest.raises(docfeed.InvalidArgumentError, match="float32"):
        make_loader(packed, dtype="bfloat16")
    with pytest.raises(docfeed.InvalidArgumentError, match="max_patches"):
        make_loader(packed, max_patches=0)
    loader = make_loader(packed, patch_size={"height": 8, "width": 16}, max_patches=32,
                         batch_size=2)
    batch = next(iter(loader))
    assert tuple(batch["flattened_patches"].shape) == (2, 32, 2 + 3 * 8 * 16)

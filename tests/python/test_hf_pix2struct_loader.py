"""docfeed.Loader(path, preset="pix2struct") against the Pix2Struct image processor, batch by batch.

Runs in both transformers environments (the test_hf_* modules run under .venv/train, 4.57.6,
and .venv/hf5, 5.x). The dataset is the sample invoices packed as they are (every sample
document is compared in test_hf_pix2struct_parity.py; these keep the test short); the reference
for each batch is the running generation's numpy processor (4.x Pix2StructImageProcessor, 5.x
Pix2StructImageProcessorPil) given the batch's pages as `datasets.load_from_disk(path)[id]
["image"]`: flattened_patches and attention_mask equal bit for bit (on a CPU where torch
dispatches its DEFAULT kernels the comparison is skipped, saying so: docs/pix2struct-
preprocessing.md, "Exactness"). Also: batches do not depend on the number of
threads, the pix2struct-only options are refused elsewhere, and `pack --preprocess pix2struct`
(docfeed.pack(preprocess="pix2struct")) stores pages that load to the same outputs.
"""
import json

import pytest

from conftest import SAMPLE_DOCS, run_docfeed

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
import docfeed  # noqa: E402

from pix2struct_reference import (HF_VERSION, Processor, skip_unless_exact_kernels,  # noqa: E402
                                  write_generated_pages)

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
    skip_unless_exact_kernels()
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


# `pack --preprocess pix2struct`: the pages stored decoded, oriented and converted to RGB as the
# generation does, at their own size; loading them gives the processor's output for the
# original pages. The sample documents, plus generated pages for the generation's conversions:
# a transparent RGBA page (4.x drops alpha, 5.x composites onto white), a grayscale page and a
# JPEG whose EXIF orientation turns it a quarter.
@pytest.fixture(scope="module", params=["sample-docs", "generated"])
def prepared_pair(request, tmp_path_factory):
    """(source, originals, prepared): one source folder, packed as it is and with --preprocess
    pix2struct."""
    root = tmp_path_factory.mktemp("pix2struct-prepared")
    source = SAMPLE_DOCS
    if request.param == "generated":
        source = root / "src"
        write_generated_pages(source, seed=11)
    originals, prepared = root / "originals", root / "prepared"
    run_docfeed("pack", source, "-o", originals)
    run_docfeed("pack", source, "-o", prepared, "--preprocess", "pix2struct", "--hf-version",
                str(HF_VERSION))
    return source, originals, prepared


def test_pack_preprocess_pix2struct_loads_the_processors_batches(prepared_pair):
    skip_unless_exact_kernels()
    _, originals, prepared = prepared_pair
    run_docfeed("verify", prepared)
    manifest = json.loads((prepared / "docfeed.json").read_text())
    assert manifest["preprocess"] == {"preset": "pix2struct", "hf_version": HF_VERSION,
                                      "backend": "pil"}
    assert manifest["codec"] == "ppm"
    info = json.loads(run_docfeed("inspect", prepared, "--json").stdout)
    assert info["preprocess"] == manifest["preprocess"], info["preprocess"]
    rows = datasets.load_from_disk(str(originals))
    stored = datasets.load_from_disk(str(prepared))  # datasets still opens it
    assert len(stored) == len(rows)
    for original, page in zip(rows["image"], stored["image"]):
        assert page.size == original.size and page.mode in ("RGB", "L")
    proc = Processor(max_patches=MAX_PATCHES)
    loader = make_loader(prepared, drop_last=False)
    assert loader.preprocessed
    seen = 0
    for batch in loader:
        ids = [int(i) for i in batch.sample_ids]
        want = proc([rows[i]["image"] for i in ids], return_tensors="pt")
        assert torch.equal(batch["attention_mask"], want["attention_mask"])
        assert torch.equal(batch["flattened_patches"], want["flattened_patches"])
        seen += len(ids)
    assert seen == len(rows)


def test_prepared_pages_serve_any_max_patches_and_refuse_another_generation(prepared_pair):
    _, originals, prepared = prepared_pair
    for kwargs in [{"max_patches": 64}, {"max_patches": 32, "patch_size": {"height": 8,
                                                                         "width": 16}}]:
        want = batches(make_loader(originals, **kwargs))
        got = batches(make_loader(prepared, **kwargs))
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert torch.equal(a["sample_ids"], b["sample_ids"])
            assert torch.equal(a["flattened_patches"], b["flattened_patches"])
    other = 9 - HF_VERSION
    with pytest.raises(docfeed.FailedPreconditionError) as e:
        make_loader(prepared, hf_version=other)
    message = str(e.value)
    assert str(prepared) in message and f"transformers {HF_VERSION}.x" in message, message
    assert f"--hf-version {other}" in message, message
    for kwargs in [{}, {"preset": "nougat"}, {"preset": "qwen2-vl"}, {"preset": "idefics3"}]:
        with pytest.raises(docfeed.FailedPreconditionError, match='"pix2struct"'):
            docfeed.Loader(prepared, batch_size=2, **kwargs)


def test_docfeed_pack_preprocess_pix2struct_equals_the_cli(prepared_pair, tmp_path):
    source, _, prepared = prepared_pair
    out = docfeed.pack(source, tmp_path / "py", preprocess="pix2struct", hf_version=HF_VERSION)

    def stored_bytes(path):
        rows = datasets.load_from_disk(str(path)).cast_column("image", datasets.Image(decode=False))
        return [r["bytes"] for r in rows["image"]]

    assert stored_bytes(out) == stored_bytes(prepared)
    with pytest.raises(docfeed.InvalidArgumentError, match="pix2struct"):
        docfeed.pack(source, tmp_path / "sized", preprocess="pix2struct", size=(64, 64))
    bench = json.loads(run_docfeed("bench", prepared, "--json", "--threads", "1",
                                   "--batch-size", "2").stdout)
    assert bench["preset"] == "pix2struct" and bench["preprocessed"], bench
    assert bench["preset_options"]["hf_version"] == HF_VERSION, bench

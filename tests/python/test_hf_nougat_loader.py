"""docfeed.Loader(path, preset="nougat") against the Nougat image processor, batch by batch.

Runs in both transformers environments (the test_hf_* modules run under .venv/train, 4.57.6,
and .venv/hf5, 5.x). The dataset is the sample documents packed as they are; the reference for
each batch is the running generation's slow processor given the batch's pages as a Hugging Face
pipeline gives them (`datasets.load_from_disk(path)[id]["image"]`, in the order of the batch's
sample ids; 4.x, which takes RGB only, gets `convert("RGB")` of the others, 5.x
do_convert_rgb=True): pixel_values must be equal bit for bit, with centred padding. Also: the
preset's defaults (896 x 672, ImageNet mean/std), random padding keeping the page, bfloat16,
what the preset refuses, and `pack --preprocess nougat` (docfeed.pack(preprocess="nougat")): the
stored resized pages load to the processor's pixel_values for the original pages, bit for bit,
and pages prepared with other settings are refused.
"""
import json

import numpy as np
import pytest

from conftest import SAMPLE_DOCS, assert_bench_names_the_preset, run_docfeed

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402

HF_VERSION = int(transformers.__version__.split(".")[0])
if HF_VERSION >= 5:
    from transformers import NougatImageProcessorPil as SlowProcessor
else:
    from transformers import NougatImageProcessor as SlowProcessor


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("nougat") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out)
    return out


def make_loader(path, **kwargs):
    args = dict(batch_size=3, preset="nougat", hf_version=HF_VERSION, pad="center", seed=3,
                num_threads=2)
    args.update(kwargs)
    return docfeed.Loader(path, **args)


def reference(proc, images):
    if HF_VERSION >= 5:
        out = proc(images, do_convert_rgb=True)["pixel_values"]
    else:
        out = proc([im if im.mode == "RGB" else im.convert("RGB") for im in images],
                   return_tensors="np")["pixel_values"]
    return np.stack([np.asarray(x) for x in out]).astype(np.float32)


def test_batches_equal_the_processor(packed):
    rows = datasets.load_from_disk(str(packed))
    proc = SlowProcessor()
    loader = make_loader(packed, drop_last=False)
    assert loader.image_size == (896, 672)
    assert list(loader.image_mean) == [0.485, 0.456, 0.406]
    assert list(loader.image_std) == [0.229, 0.224, 0.225]
    seen = 0
    for batch in loader:
        ids = [int(i) for i in batch.sample_ids]
        pv = batch["pixel_values"]
        assert pv.dtype == torch.float32 and tuple(pv.shape) == (len(ids), 3, 896, 672)
        want = reference(proc, [rows[i]["image"] for i in ids])
        assert np.array_equal(pv.numpy().view(np.uint32), want.view(np.uint32))
        seen += len(ids)
    assert seen == len(rows)


def test_other_sizes_random_padding_and_bfloat16(packed):
    rows = datasets.load_from_disk(str(packed))
    proc = SlowProcessor(size={"height": 448, "width": 336}, do_pad=False, do_rescale=False,
                         do_normalize=False)
    batch = next(iter(make_loader(packed, image_size=(448, 336), pad="random", dtype=torch.uint8,
                                  layout="hwc")))
    for j, i in enumerate(batch.sample_ids.tolist()):
        page = reference(proc, [rows[i]["image"]])[0].transpose(1, 2, 0).astype(np.uint8)
        top, left = batch.pad_offsets[j].tolist()
        assert tuple(batch.content_sizes[j].tolist()) == page.shape[:2]
        got = batch["pixel_values"][j].numpy()
        assert np.array_equal(got[top:top + page.shape[0], left:left + page.shape[1]], page)
    f32 = next(iter(make_loader(packed)))["pixel_values"].clone()
    bf16 = next(iter(make_loader(packed, dtype=torch.bfloat16)))["pixel_values"]
    assert bf16.dtype == torch.bfloat16 and torch.equal(bf16, f32.to(torch.bfloat16))


def test_refused_options(packed, tmp_path):
    with pytest.raises(docfeed.InvalidArgumentError, match="nougat"):
        make_loader(packed, hf_version=5, backend="torchvision")
    pre = tmp_path / "pre"
    run_docfeed("pack", SAMPLE_DOCS, "-o", pre, "--preprocess", "donut", "--size", "896x672")
    with pytest.raises(docfeed.FailedPreconditionError, match="nougat preset cannot take"):
        make_loader(pre)


@pytest.fixture(scope="module")
def packed_prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("nougat-prepared") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, "--preprocess", "nougat", "--hf-version",
                str(HF_VERSION))
    return out


def test_pack_preprocess_nougat_loads_the_processors_batches(packed, packed_prepared):
    """`docfeed pack --preprocess nougat` stores the resized pages; loading them gives the
    processor's pixel_values for the original pages, bit for bit."""
    run_docfeed("verify", packed_prepared)
    manifest = json.loads((packed_prepared / "docfeed.json").read_text())
    assert manifest["preprocess"] == {"preset": "nougat", "height": 896, "width": 672,
                                      "align_long_axis": False, "hf_version": HF_VERSION,
                                      "backend": "pil"}
    originals = datasets.load_from_disk(str(packed))
    stored = datasets.load_from_disk(str(packed_prepared))  # datasets still opens it
    assert len(stored) == len(originals)
    assert all(max(im.size[0] / 672, im.size[1] / 896) <= 1 for im in stored["image"])
    proc = SlowProcessor()
    loader = make_loader(packed_prepared, drop_last=False)
    assert loader.preprocessed
    seen = 0
    for batch in loader:
        ids = [int(i) for i in batch.sample_ids]
        want = reference(proc, [originals[i]["image"] for i in ids])
        assert np.array_equal(batch["pixel_values"].numpy().view(np.uint32), want.view(np.uint32))
        seen += len(ids)
    assert seen == len(originals)
    assert_bench_names_the_preset(packed_prepared)


def test_nougat_pages_prepared_with_other_settings_are_refused(packed_prepared):
    with pytest.raises(docfeed.FailedPreconditionError, match="size 448x336"):
        make_loader(packed_prepared, image_size=(448, 336))
    with pytest.raises(docfeed.FailedPreconditionError, match="align_long_axis"):
        make_loader(packed_prepared, align_long_axis=True)
    with pytest.raises(docfeed.FailedPreconditionError, match="nougat"):
        docfeed.Loader(packed_prepared, batch_size=2)  # the Donut preset


def test_docfeed_pack_preprocess_nougat_equals_the_cli(packed_prepared, tmp_path):
    out = docfeed.pack(SAMPLE_DOCS, tmp_path / "py", preprocess="nougat", hf_version=HF_VERSION)
    want = json.loads((packed_prepared / "docfeed.json").read_text())["preprocess"]
    assert json.loads((tmp_path / "py" / "docfeed.json").read_text())["preprocess"] == want

    def stored_bytes(path):
        rows = datasets.load_from_disk(str(path)).cast_column("image", datasets.Image(decode=False))
        return [r["bytes"] for r in rows["image"]]

    assert stored_bytes(out) == stored_bytes(packed_prepared)
    with pytest.raises(docfeed.InvalidArgumentError, match="nougat"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "tv", preprocess="nougat", hf_version=5,
                     backend="torchvision")
    proc = run_docfeed("pack", SAMPLE_DOCS, "-o", tmp_path / "cli-tv", "--preprocess", "nougat",
                       "--hf-version", "5", "--backend", "torchvision", check=False)
    assert proc.returncode == 2 and "nougat" in proc.stderr, proc.stderr

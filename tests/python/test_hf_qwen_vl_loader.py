"""docfeed.Loader(path, preset="qwen2-vl") against the Qwen2-VL image processor, batch by batch.

Runs in both transformers environments (the test_hf_* modules run under .venv/train, 4.57.6,
and .venv/hf5, 5.x). The dataset is the sample documents packed as they are; the reference for
each batch is the running generation's slow processor given the batch's pages as the user's
Hugging Face pipeline gives them (`datasets.load_from_disk(path)[id]["image"]`, in the order of
the batch's sample ids): pixel_values (bit for bit) and image_grid_thw must be equal. Also:
batches do not depend on the number of threads, a state_dict resumes the same batches, and the
Qwen-only options are refused with other presets.
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
    from transformers import Qwen2VLImageProcessorPil as SlowProcessor
else:
    from transformers import Qwen2VLImageProcessor as SlowProcessor

MAX_PIXELS = 28 * 28 * 256  # small pages keep the reference fast; the rules are the same


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("qwen") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out)
    return out


def make_loader(path, **kwargs):
    args = dict(batch_size=3, preset="qwen2-vl", max_pixels=MAX_PIXELS, hf_version=HF_VERSION,
                seed=7, num_threads=2)
    args.update(kwargs)
    return docfeed.Loader(path, **args)


def batches(loader):
    out = []
    for batch in loader:
        out.append({"pixel_values": batch["pixel_values"].clone(),
                    "image_grid_thw": batch["image_grid_thw"].clone(),
                    "sample_ids": batch.sample_ids.clone()})
    return out


def test_batches_equal_the_processor(packed):
    rows = datasets.load_from_disk(str(packed))
    proc = SlowProcessor(min_pixels=56 * 56, max_pixels=MAX_PIXELS)
    got = batches(make_loader(packed, drop_last=False))
    assert sum(len(b["sample_ids"]) for b in got) == len(rows)
    for b in got:
        images = [rows[int(i)]["image"] for i in b["sample_ids"]]
        want = proc(images, do_convert_rgb=True)
        pv = np.asarray(want["pixel_values"], dtype=np.float32)
        assert b["pixel_values"].dtype == torch.float32
        assert tuple(b["pixel_values"].shape) == pv.shape
        assert np.array_equal(b["pixel_values"].numpy().view(np.uint32), pv.view(np.uint32))
        assert b["image_grid_thw"].tolist() == np.asarray(want["image_grid_thw"]).tolist()


def test_threads_and_resume_give_the_same_batches(packed):
    one = batches(make_loader(packed, num_threads=1))
    three = batches(make_loader(packed, num_threads=3))
    assert len(one) == len(three) > 2
    for a, b in zip(one, three):
        assert torch.equal(a["sample_ids"], b["sample_ids"])
        assert torch.equal(a["pixel_values"], b["pixel_values"])
        assert torch.equal(a["image_grid_thw"], b["image_grid_thw"])
    loader = make_loader(packed)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    resumed = make_loader(packed)
    resumed.load_state_dict(state)
    rest = batches(resumed)
    assert len(rest) == len(one) - 1
    for a, b in zip(one[1:], rest):
        assert torch.equal(a["pixel_values"], b["pixel_values"])


def test_bfloat16_is_the_float32_rounded(packed):
    f32 = batches(make_loader(packed))[0]["pixel_values"]
    bf16 = batches(make_loader(packed, dtype=torch.bfloat16))[0]["pixel_values"]
    assert bf16.dtype == torch.bfloat16
    assert torch.equal(bf16, f32.to(torch.bfloat16))


def test_qwen_options_need_a_qwen_preset(packed):
    with pytest.raises(docfeed.InvalidArgumentError, match="max_pixels"):
        docfeed.Loader(packed, batch_size=2, max_pixels=1000)
    with pytest.raises(docfeed.InvalidArgumentError, match="max_pixels"):
        make_loader(packed, min_pixels=5000, max_pixels=4000)


@pytest.fixture(scope="module")
def packed_prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("qwen-prepared") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, "--preprocess", "qwen2-vl", "--max-pixels",
                str(MAX_PIXELS), "--hf-version", str(HF_VERSION))
    return out


def test_pack_preprocess_stores_the_resized_pages_and_loads_the_same_batches(packed,
                                                                            packed_prepared):
    run_docfeed("verify", packed_prepared)
    manifest = json.loads((packed_prepared / "docfeed.json").read_text())
    assert manifest["preprocess"] == {"preset": "qwen2-vl", "min_pixels": 3136,
                                      "max_pixels": MAX_PIXELS, "patch_size": 14,
                                      "merge_size": 2, "hf_version": HF_VERSION,
                                      "backend": "pil"}
    # inspect says what the manifest records (no Donut height and width of 0).
    info = json.loads(run_docfeed("inspect", packed_prepared, "--json").stdout)
    assert info["preprocess"] == manifest["preprocess"], info["preprocess"]
    text = run_docfeed("inspect", packed_prepared).stdout
    assert (f"qwen2-vl smart_resize pages (min_pixels 3136, max_pixels {MAX_PIXELS}, "
            "patch_size 14, merge_size 2)") in text, text
    # datasets still opens it, and its pages are the processor's resized stage.
    rows = datasets.load_from_disk(str(packed_prepared))
    originals = datasets.load_from_disk(str(packed))
    assert len(rows) == len(originals)
    assert_bench_names_the_preset(packed_prepared)
    loader = make_loader(packed_prepared)
    assert loader.preprocessed
    from_prepared = batches(loader)
    from_originals = batches(make_loader(packed))
    assert len(from_prepared) == len(from_originals)
    for a, b in zip(from_prepared, from_originals):
        assert torch.equal(a["sample_ids"], b["sample_ids"])
        assert torch.equal(a["pixel_values"], b["pixel_values"])
        assert torch.equal(a["image_grid_thw"], b["image_grid_thw"])


def test_pages_prepared_with_other_settings_are_refused(packed_prepared):
    with pytest.raises(docfeed.FailedPreconditionError, match="max_pixels"):
        make_loader(packed_prepared, max_pixels=MAX_PIXELS * 2)
    with pytest.raises(docfeed.FailedPreconditionError, match="qwen2-vl"):
        docfeed.Loader(packed_prepared, batch_size=2)  # the Donut preset


def test_docfeed_pack_preprocess_equals_the_cli(packed, packed_prepared, tmp_path):
    """docfeed.pack(preprocess="qwen2-vl", max_pixels=...) from a path and from in-memory rows
    stores what `docfeed pack --preprocess qwen2-vl` stores: the same manifest record and
    images, loading to the same batches."""
    manifest = json.loads((packed_prepared / "docfeed.json").read_text())
    from_path = docfeed.pack(SAMPLE_DOCS, tmp_path / "path", preprocess="qwen2-vl",
                             max_pixels=MAX_PIXELS, hf_version=HF_VERSION)
    rows = datasets.load_from_disk(str(packed)).select_columns(["image"])
    from_rows = docfeed.pack(rows, tmp_path / "rows", preprocess="qwen2-vl",
                             max_pixels=MAX_PIXELS, hf_version=HF_VERSION)
    want = datasets.load_from_disk(str(packed_prepared)).cast_column(
        "image", datasets.Image(decode=False))["image"]
    for out in (from_path, from_rows):
        got_manifest = json.loads((tmp_path / out / "docfeed.json").read_text())
        assert got_manifest["preprocess"] == manifest["preprocess"]
        got = datasets.load_from_disk(out).cast_column("image", datasets.Image(decode=False))
        assert [g["bytes"] for g in got["image"]] == [w["bytes"] for w in want]
    for a, b in zip(batches(make_loader(from_rows)), batches(make_loader(packed)), strict=True):
        assert torch.equal(a["sample_ids"], b["sample_ids"])
        assert torch.equal(a["pixel_values"], b["pixel_values"])
        assert torch.equal(a["image_grid_thw"], b["image_grid_thw"])
    with pytest.raises(docfeed.InvalidArgumentError, match="min_pixels"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "a", min_pixels=5000)
    with pytest.raises(docfeed.InvalidArgumentError, match="Donut's"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "b", preprocess="qwen2-vl", size=(64, 48))
    with pytest.raises(docfeed.InvalidArgumentError, match="Qwen2-VL"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "c", preprocess="donut", size=(64, 48),
                     max_pixels=MAX_PIXELS)

"""docfeed.Loader(path, preset="idefics3") against the Idefics3 image processor, batch by batch.

Runs in both transformers environments (the test_hf_* modules run under .venv/train, 4.57.6,
and .venv/hf5, 5.x). The dataset is the sample documents packed as they are; the reference for
each batch is the running generation's PIL processor given the batch's pages as the user's
Hugging Face pipeline gives them (`datasets.load_from_disk(path)[id]["image"]`, one image per
sample, in the order of the batch's sample ids; under 4.x a page in a mode the processor raises
on is given as image.convert("RGB"), as docs/idefics3-preprocessing.md says docfeed does):
pixel_values (bit for bit, padded to the batch's most tiles), pixel_attention_mask, rows and cols
must be equal. Also: batches do not depend on the number of threads, a state_dict resumes the same
batches, bfloat16 is the float32 rounded, and the Idefics3-only options are refused elsewhere.
And `pack --preprocess idefics3` (docfeed.pack(preprocess="idefics3")): the stored prepared pages
(tile grid + global image) load to the processor's pixel_values and pixel_attention_mask for the
original pages, bit for bit (with and without image splitting); pages prepared with other settings
are refused naming the dataset and both settings, and the other presets refuse them.
"""
import json
import pathlib

import numpy as np
import pytest

from conftest import SAMPLE_DOCS, assert_bench_names_the_preset, run_docfeed

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402
from docfeed import _docfeed  # noqa: E402

HF_VERSION = int(transformers.__version__.split(".")[0])
if HF_VERSION >= 5:
    from transformers import Idefics3ImageProcessorPil as Processor
else:
    from transformers import Idefics3ImageProcessor as Processor

# Smaller than SmolDocling's 2048 / 512 (test_hf_idefics3_parity.py checks those) to keep the
# reference fast; pages still give 2 x 2 to 3 x 3 grids, so batches mix tile counts.
LONGEST_EDGE, TILE = 640, 256


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("idefics3") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out)
    return out


def make_loader(path, **kwargs):
    args = dict(batch_size=3, preset="idefics3", longest_edge=LONGEST_EDGE, max_image_size=TILE,
                hf_version=HF_VERSION, seed=7, num_threads=2)
    args.update(kwargs)
    return docfeed.Loader(path, **args)


def batches(loader):
    out = []
    for batch in loader:
        out.append({"pixel_values": batch["pixel_values"].clone(),
                    "pixel_attention_mask": batch["pixel_attention_mask"].clone(),
                    "rows": batch.rows.clone(), "cols": batch.cols.clone(),
                    "sample_ids": batch.sample_ids.clone()})
    return out


def as_processor_takes_it(image):
    if HF_VERSION < 5 and image.mode not in ("RGB", "RGBA"):
        return image.convert("RGB")
    return image


def test_batches_equal_the_processor(packed):
    rows = datasets.load_from_disk(str(packed))
    proc = Processor(size={"longest_edge": LONGEST_EDGE}, max_image_size={"longest_edge": TILE})
    got = batches(make_loader(packed, drop_last=False))
    assert sum(len(b["sample_ids"]) for b in got) == len(rows)
    mixed = 0
    for b in got:
        images = [[as_processor_takes_it(rows[int(i)]["image"])] for i in b["sample_ids"]]
        want = proc(images, return_tensors="np", return_row_col_info=True)
        pv = np.asarray(want["pixel_values"], dtype=np.float32)
        assert b["pixel_values"].dtype == torch.float32
        assert tuple(b["pixel_values"].shape) == pv.shape
        assert np.array_equal(b["pixel_values"].numpy().view(np.uint32), pv.view(np.uint32))
        mask = np.asarray(want["pixel_attention_mask"])
        assert b["pixel_attention_mask"].dtype == torch.int64 and mask.dtype == np.int64
        assert np.array_equal(b["pixel_attention_mask"].numpy(), mask)
        assert b["rows"].tolist() == want["rows"] and b["cols"].tolist() == want["cols"]
        mixed += int(not mask.all())
    assert mixed > 0  # some batch padded a page to another's tile count


def test_threads_and_resume_give_the_same_batches(packed):
    one = batches(make_loader(packed, num_threads=1))
    three = batches(make_loader(packed, num_threads=3))
    assert len(one) == len(three) > 2
    for a, b in zip(one, three):
        for key in a:
            assert torch.equal(a[key], b[key]), key
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


def test_idefics3_options_need_the_idefics3_preset(packed):
    with pytest.raises(docfeed.InvalidArgumentError, match="max_image_size"):
        docfeed.Loader(packed, batch_size=2, max_image_size=512)
    with pytest.raises(docfeed.InvalidArgumentError, match="max_image_size"):
        make_loader(packed, max_image_size=0)
    with pytest.raises(docfeed.InvalidArgumentError, match="layout"):
        make_loader(packed, layout="hwc")
    with pytest.raises(docfeed.InvalidArgumentError, match="torchvision"):
        make_loader(packed, hf_version=5, backend="torchvision")


@pytest.fixture(scope="module")
def packed_prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("idefics3-prepared") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, "--preprocess", "idefics3", "--longest-edge",
                LONGEST_EDGE, "--max-image-size", TILE, "--hf-version", HF_VERSION)
    return out


def assert_batches_equal_the_processor(loader, originals, proc):
    """Every batch of `loader` against `proc` given the batch's original pages."""
    seen = 0
    for batch in loader:
        ids = [int(i) for i in batch.sample_ids]
        images = [[as_processor_takes_it(originals[i]["image"])] for i in ids]
        want = proc(images, return_tensors="np", return_row_col_info=True)
        pv = np.asarray(want["pixel_values"], dtype=np.float32)
        got = batch["pixel_values"]
        assert got.dtype == torch.float32 and tuple(got.shape) == pv.shape
        assert np.array_equal(got.numpy().view(np.uint32), pv.view(np.uint32))
        assert np.array_equal(batch["pixel_attention_mask"].numpy(),
                              np.asarray(want["pixel_attention_mask"]))
        assert batch.rows.tolist() == want["rows"] and batch.cols.tolist() == want["cols"]
        seen += len(ids)
    assert seen == len(originals)


def test_pack_preprocess_idefics3_loads_the_processors_batches(packed, packed_prepared):
    """`docfeed pack --preprocess idefics3` stores the prepared pages; loading them gives the
    processor's batches for the original pages, bit for bit."""
    run_docfeed("verify", packed_prepared)
    manifest = json.loads((packed_prepared / "docfeed.json").read_text())
    assert manifest["preprocess"] == {"preset": "idefics3", "longest_edge": LONGEST_EDGE,
                                      "max_image_size": TILE, "do_image_splitting": True,
                                      "hf_version": HF_VERSION, "backend": "pil"}
    info = _docfeed.dataset_info(str(packed_prepared))["preprocess"]
    assert (info["longest_edge"], info["max_image_size"], info["do_image_splitting"]) == \
        (LONGEST_EDGE, TILE, True)
    originals = datasets.load_from_disk(str(packed))
    stored = datasets.load_from_disk(str(packed_prepared))  # datasets still opens it
    assert len(stored) == len(originals)
    # Each stored page is its grid of tiles above the global image's band.
    assert all(im.size[0] % TILE == 0 and im.size[1] % TILE == 0 for im in stored["image"])
    proc = Processor(size={"longest_edge": LONGEST_EDGE}, max_image_size={"longest_edge": TILE})
    loader = make_loader(packed_prepared, drop_last=False)
    assert loader.preprocessed
    assert_batches_equal_the_processor(loader, originals, proc)
    assert_bench_names_the_preset(packed_prepared)


def test_pack_preprocess_idefics3_without_image_splitting(packed, tmp_path):
    out = tmp_path / "one-tile"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, "--preprocess", "idefics3", "--longest-edge",
                LONGEST_EDGE, "--max-image-size", TILE, "--no-image-splitting", "--hf-version",
                HF_VERSION)
    stored = datasets.load_from_disk(str(out))
    assert {im.size for im in stored["image"]} == {(TILE, TILE)}
    proc = Processor(size={"longest_edge": LONGEST_EDGE}, max_image_size={"longest_edge": TILE},
                     do_image_splitting=False)
    loader = make_loader(out, drop_last=False, do_image_splitting=False)
    assert_batches_equal_the_processor(loader, datasets.load_from_disk(str(packed)), proc)


def test_idefics3_pages_prepared_with_other_settings_are_refused(packed_prepared):
    other = 4 if HF_VERSION == 5 else 5
    for kwargs, packed_with, asked in [
            ({"longest_edge": 2 * LONGEST_EDGE}, f"longest_edge {LONGEST_EDGE}",
             f"longest_edge {2 * LONGEST_EDGE}"),
            ({"max_image_size": 2 * TILE}, f"max_image_size {TILE}",
             f"max_image_size {2 * TILE}"),
            ({"do_image_splitting": False}, f"max_image_size {TILE}, transformers",
             "no image splitting"),
            ({"hf_version": other}, f"transformers {HF_VERSION}.x", f"transformers {other}.x")]:
        with pytest.raises(docfeed.FailedPreconditionError) as e:
            make_loader(packed_prepared, **kwargs)
        message = str(e.value)
        assert str(packed_prepared) in message, message
        packed_part, asked_part = message.split("but the loader was asked for")
        assert packed_with in packed_part and asked not in packed_part, message
        assert asked in asked_part, message


def test_other_presets_refuse_idefics3_pages(packed_prepared):
    for kwargs in [{}, {"preset": "nougat"}, {"preset": "qwen2-vl"}, {"preset": "pix2struct"}]:
        with pytest.raises(docfeed.FailedPreconditionError) as e:
            docfeed.Loader(packed_prepared, batch_size=2, **kwargs)
        message = str(e.value)
        assert str(packed_prepared) in message and '"idefics3"' in message, message


def test_docfeed_dataset_loads_stored_pages_with_their_settings(packed_prepared):
    """DocfeedDataset(preset="idefics3") without a processor takes the stored pages' settings
    and generation."""
    from docfeed.hf import DocfeedDataset

    ds = DocfeedDataset(packed_prepared, preset="idefics3", batch_size=3, seed=7, num_threads=2)
    got = next(iter(ds.loader()))
    assert ds.generation[0] == HF_VERSION
    want = next(iter(make_loader(packed_prepared)))
    assert torch.equal(got["pixel_values"], want["pixel_values"])


def test_docfeed_pack_preprocess_idefics3_equals_the_cli(packed, packed_prepared, tmp_path):
    settings = dict(preprocess="idefics3", longest_edge=LONGEST_EDGE, max_image_size=TILE,
                    hf_version=HF_VERSION)
    from_path = docfeed.pack(SAMPLE_DOCS, tmp_path / "path", **settings)
    from_rows = docfeed.pack(datasets.load_from_disk(str(packed)), tmp_path / "rows", **settings)
    want = json.loads((packed_prepared / "docfeed.json").read_text())["preprocess"]

    def stored_bytes(path):
        rows = datasets.load_from_disk(str(path)).cast_column("image", datasets.Image(decode=False))
        return [r["bytes"] for r in rows["image"]]

    for out in (from_path, from_rows):
        assert json.loads(pathlib.Path(out, "docfeed.json").read_text())["preprocess"] == want
        assert stored_bytes(out) == stored_bytes(packed_prepared)


def test_pack_preprocess_idefics3_refuses_other_presets_settings(tmp_path):
    with pytest.raises(docfeed.InvalidArgumentError, match="idefics3"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "tv", preprocess="idefics3", hf_version=5,
                     backend="torchvision")
    with pytest.raises(docfeed.InvalidArgumentError, match="not idefics3's"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "size", preprocess="idefics3", size=(64, 64))
    with pytest.raises(docfeed.InvalidArgumentError, match="idefics3 preset's, not nougat's"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "nougat", preprocess="nougat", longest_edge=640)
    with pytest.raises(docfeed.InvalidArgumentError, match="need preprocess="):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "none", max_image_size=256)
    with pytest.raises(docfeed.InvalidArgumentError, match="max_image_size"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "zero", preprocess="idefics3", max_image_size=0)
    for args, says in [
            (["--preprocess", "idefics3", "--backend", "torchvision", "--hf-version", "5"],
             "not offered for idefics3"),
            (["--preprocess", "idefics3", "--size", "64x64"], "not idefics3's"),
            (["--preprocess", "idefics3", "--min-pixels", "100"], "not idefics3's"),
            (["--preprocess", "donut", "--size", "64x64", "--longest-edge", "640"],
             "idefics3 preset's, not donut's"),
            (["--no-image-splitting"], "need --preprocess"),
            (["--preprocess", "idefics3", "--longest-edge", "0"], "--longest-edge")]:
        proc = run_docfeed("pack", SAMPLE_DOCS, "-o", tmp_path / "cli", *args, check=False)
        assert proc.returncode == 2 and says in proc.stderr, (args, proc.stderr)

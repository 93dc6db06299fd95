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
"""
import numpy as np
import pytest

from conftest import SAMPLE_DOCS, run_docfeed

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402

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


def test_pack_preprocess_is_not_offered(packed, tmp_path):
    proc = run_docfeed("pack", SAMPLE_DOCS, "-o", tmp_path / "ds", "--preprocess", "idefics3",
                       check=False)
    assert proc.returncode != 0 and "--preprocess" in proc.stderr

"""docfeed.Loader (the Python front, python/docfeed) against the real DonutImageProcessor.

Runs in both front environments (`make test-python`: .venv/train with transformers 4.57.6 and
.venv/hf5 with 5.x). Checks: tensors equal the installed transformers' processor's pixel_values
bit for bit with centred padding (datasets of original images and `--preprocess donut` ones; on
4.x DonutImageProcessor, on 5.x both backends, DonutImageProcessorPil and the torchvision
DonutImageProcessor, each against the loader's matching hf_version/backend), the dtypes, the GPU path's table normalization
on CPU tensors, order/state/resume semantics, rank splitting, and batch lifetime (hold, drop,
stop early, outlive the loader).
"""
import hashlib
import json
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
import torch
from PIL import Image

import docfeed
from docfeed import _gpu

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (310, 240)  # small (height, width) to keep the processor reference fast


def sample_files():
    """Image paths in metadata.jsonl order: sample id i is row i."""
    rows = [json.loads(line) for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()]
    return [SAMPLE_DOCS / row["file_name"] for row in rows]


def pack(src, out, *args):
    proc = subprocess.run([docfeed.cli_path(), "pack", str(src), "-o", str(out), *map(str, args)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def original_ds(tmp_path_factory):
    return pack(SAMPLE_DOCS, tmp_path_factory.mktemp("orig") / "ds")


@pytest.fixture(scope="session")
def preprocessed_ds(tmp_path_factory):
    return pack(SAMPLE_DOCS, tmp_path_factory.mktemp("pre") / "ds", "--preprocess", "donut",
                "--size", f"{SIZE[0]}x{SIZE[1]}")


def _transformers_major():
    import transformers

    return int(transformers.__version__.split(".")[0])


# The processor generations of the installed transformers: (hf_version, backend) as the
# loader names them.
GENERATIONS = [(4, "pil")] if _transformers_major() < 5 else [(5, "pil"), (5, "torchvision")]
AUTO_GENERATION = GENERATIONS[-1]  # what AutoImageProcessor builds (torchvision is installed)


def processor(generation):
    """The real processor of `generation` at SIZE. On 5.x with do_convert_rgb=True: its default
    (None) passes L pages through with one channel, and normalize then fails on them."""
    import transformers

    size = {"height": SIZE[0], "width": SIZE[1]}
    if generation[0] == 4:
        assert transformers.__version__ == "4.57.6", transformers.__version__
        return transformers.DonutImageProcessor(size=size)
    if generation[1] == "pil":
        return transformers.DonutImageProcessorPil(size=size, do_convert_rgb=True)
    torch.set_num_threads(1)
    proc = transformers.DonutImageProcessor(size=size, do_convert_rgb=True)
    assert proc.backend == "torchvision"
    return proc


def processor_pixels(proc, path):
    with Image.open(path) as img:
        return np.asarray(proc(img, return_tensors="np")["pixel_values"][0])


@pytest.fixture(scope="session")
def references():
    """pixel_values per sample id for each installed generation."""
    return {g: [processor_pixels(processor(g), path) for path in sample_files()]
            for g in GENERATIONS}


@pytest.fixture(scope="session")
def preprocessed_by_generation(tmp_path_factory, preprocessed_ds):
    out = {(4, "pil"): preprocessed_ds}
    for version, backend in GENERATIONS:
        if (version, backend) not in out:
            out[(version, backend)] = pack(
                SAMPLE_DOCS, tmp_path_factory.mktemp(f"pre{version}{backend}") / "ds",
                "--preprocess", "donut", "--size", f"{SIZE[0]}x{SIZE[1]}", "--hf-version",
                version, "--backend", backend)
    return out


def all_batches(loader):
    return [(b["pixel_values"].clone(), b.sample_ids.clone()) for b in loader]


def digest(batch):
    h = hashlib.sha256(batch["pixel_values"].contiguous().view(torch.uint8).numpy().tobytes())
    if "labels" in batch:
        h.update(batch["labels"].numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: f"{g[0]}.x-{g[1]}")
@pytest.mark.parametrize("kind", ["original", "preprocessed"])
def test_center_padding_equals_donut_image_processor(kind, generation, original_ds,
                                                     preprocessed_by_generation, references):
    ds = original_ds if kind == "original" else preprocessed_by_generation[generation]
    reference = references[generation]
    loader = docfeed.Loader(ds, batch_size=3, image_size=SIZE, shuffle=False, pad="center",
                            drop_last=False, num_threads=2, hf_version=generation[0],
                            backend=generation[1])
    assert loader.preprocessed == (kind == "preprocessed")
    assert loader.num_samples == len(reference) and len(loader) == 7
    seen = []
    for batch in loader:
        pixels = batch["pixel_values"]
        assert pixels.dtype == torch.float32 and pixels.shape[1:] == (3, *SIZE)
        for row, sid in enumerate(batch.sample_ids.tolist()):
            want = torch.from_numpy(reference[sid])
            assert torch.equal(pixels[row], want), f"sample {sid} ({sample_files()[sid]})"
            seen.append(sid)
    assert seen == list(range(len(reference)))  # shuffle=False: storage order


def test_dtypes_and_gpu_table_normalization_on_cpu(preprocessed_ds):
    original_ds = preprocessed_ds  # cheap to decode; both kinds give the same bytes (above)
    """float16/bfloat16 are the float32 rounded by torch; uint8 pushed through the GPU stage's
    table lookup (run here on CPU tensors) equals the C++ float32 path bit for bit."""
    def first(dtype):
        loader = docfeed.Loader(original_ds, batch_size=4, image_size=SIZE, seed=3, dtype=dtype)
        return next(iter(loader))["pixel_values"].clone()

    f32, u8 = first(torch.float32), first(torch.uint8)
    assert u8.dtype == torch.uint8 and u8.shape == f32.shape
    table = _gpu.normalize_table("cpu")
    assert torch.equal(_gpu.normalize(u8, table), f32)
    for dtype in (torch.float16, torch.bfloat16):
        got = first(dtype)
        assert got.dtype == dtype and torch.equal(got, f32.to(dtype))
        assert torch.equal(_gpu.normalize(u8, table, dtype), got)
    # The table is the processor's formula in float32 numpy (image_transforms rescale/normalize).
    v = np.arange(256, dtype=np.float64)
    rescaled = (v * (1 / 255)).astype(np.float32)
    want = ((rescaled - np.float32(0.5)) / np.float32(0.5)).astype(np.float32)
    assert np.array_equal(table.numpy(), np.stack([want] * 3))
    # HWC layout through the same lookup.
    hwc = docfeed.Loader(original_ds, batch_size=4, image_size=SIZE, seed=3, dtype="uint8",
                         layout="hwc")
    hwc_u8 = next(iter(hwc))["pixel_values"]
    assert torch.equal(hwc_u8.permute(0, 3, 1, 2), u8)
    assert torch.equal(_gpu.normalize(hwc_u8, table, layout="hwc").permute(0, 3, 1, 2), f32)


def test_order_is_reproducible_and_resumes_exactly(preprocessed_ds):
    original_ds = preprocessed_ds  # cheap to decode; both kinds give the same bytes (above)
    def run(**kw):
        return [digest(b) + str(b.sample_ids.tolist())
                for b in docfeed.Loader(original_ds, batch_size=3, image_size=SIZE, seed=7, **kw)]

    one = run(num_threads=1)
    assert run(num_threads=2, prefetch=1) == one  # thread count and prefetch do not matter
    assert len(one) == 6  # drop_last: 20 // 3
    loader = docfeed.Loader(original_ds, batch_size=3, image_size=SIZE, seed=7)
    it = iter(loader)
    for _ in range(4):
        next(it)
    state = loader.state_dict()
    assert state["epoch"] == 0 and state["position"] == 12
    resumed = docfeed.Loader(original_ds, batch_size=3, image_size=SIZE, seed=7)
    resumed.load_state_dict(state)
    resumed.set_epoch(0)  # a Trainer-style loop calls this after loading: keeps the position
    assert len(resumed) == 2
    assert [digest(b) + str(b.sample_ids.tolist()) for b in resumed] == one[4:]
    # Epochs: a new permutation and new random padding, each reproducible.
    loader.set_epoch(1)
    epoch1 = [digest(b) + str(b.sample_ids.tolist()) for b in loader]
    assert epoch1 != one and len(epoch1) == 6
    again = docfeed.Loader(original_ds, batch_size=3, image_size=SIZE, seed=7)
    again.set_epoch(1)
    assert [digest(b) + str(b.sample_ids.tolist()) for b in again] == epoch1
    # Iterating on after a finished epoch starts the next one.
    assert [digest(b) + str(b.sample_ids.tolist()) for b in again][0] != epoch1[0]
    assert again.epoch == 2
    with pytest.raises(ValueError, match="seed"):
        again.load_state_dict(dict(state, seed=8))


def test_ranks_split_one_global_order(preprocessed_ds):
    original_ds = preprocessed_ds  # cheap to decode; both kinds give the same bytes (above)
    def ids(**kw):
        return [b.sample_ids.tolist() for b in
                docfeed.Loader(original_ds, image_size=SIZE, seed=5, pad="center", **kw)]

    single = ids(batch_size=4)  # one process, 4 = 2 ranks x 2
    ranks = [ids(batch_size=2, rank=r, world_size=2) for r in range(2)]
    assert len(ranks[0]) == len(ranks[1]) == len(single) == 5
    for k, step in enumerate(single):
        assert ranks[0][k] + ranks[1][k] == step
    flat = [s for r in ranks for b in r for s in b]
    assert sorted(flat) == list(range(20))
    wrap = [ids(batch_size=3, rank=r, world_size=2, drop_last=False) for r in range(2)]
    assert len(wrap[0]) == len(wrap[1]) == 4  # 20 positions -> 4 steps of 6, the last wrapped
    assert set(s for r in wrap for b in r for s in b) == set(range(20))


def test_batch_lifetime_hold_drop_stop_early_outlive(preprocessed_ds):
    original_ds = preprocessed_ds  # cheap to decode; both kinds give the same bytes (above)
    import gc

    def reference(k):
        ref = docfeed.Loader(original_ds, batch_size=2, image_size=SIZE, shuffle=False,
                             pad="center")
        return [b["pixel_values"].clone() for b in ref][k]

    loader = docfeed.Loader(original_ds, batch_size=2, image_size=SIZE, seed=1, max_held=2,
                            prefetch=1, pad="center", shuffle=False)
    held = [loader.next() for _ in range(3)]  # the pool: prefetch + max_held = 3 buffers
    copies = [b["pixel_values"].clone() for b in held]
    with pytest.raises(RuntimeError, match="max_held"):
        loader.next()  # a fourth batch would need a buffer the consumer still references
    # A tensor alone keeps its buffer: drop the dicts, keep one tensor.
    kept = held[1]["pixel_values"]
    del held
    gc.collect()
    fourth = loader.next()  # reuses a freed buffer, not the one `kept` views
    assert torch.equal(kept, copies[1]) and torch.equal(kept, reference(1))
    assert torch.equal(fourth["pixel_values"], reference(3))
    del kept, fourth
    # Stop a `for` early, drop the loader, keep a batch: it stays valid (the pool outlives it).
    for batch in loader:
        if batch.index == 6:
            break
    want = batch["pixel_values"].clone()
    del loader
    gc.collect()
    assert torch.equal(batch["pixel_values"], want) and torch.equal(want, reference(6))
    labels_free = docfeed.Loader(original_ds, batch_size=2, image_size=SIZE)
    assert "labels" not in labels_free.next()  # packed without a tokenizer: no labels


def test_errors_name_the_problem(original_ds, tmp_path):
    with pytest.raises(FileNotFoundError):
        docfeed.Loader(tmp_path / "missing", batch_size=2, image_size=SIZE)
    with pytest.raises(ValueError, match="pad"):
        docfeed.Loader(original_ds, batch_size=2, image_size=SIZE, pad="left")
    with pytest.raises(ValueError, match="dtype"):
        docfeed.Loader(original_ds, batch_size=2, image_size=SIZE, dtype=torch.int32)
    with pytest.raises(ValueError):
        docfeed.Loader(original_ds, batch_size=0, image_size=SIZE)


def test_pack_from_python_dataset_with_tokenizer(tmp_path):
    """docfeed.pack of an in-memory `datasets` dataset with a Hugging Face tokenizer: the loader
    serves the images' processor pixels and the tokenizer's ids (pad -> -100)."""
    import datasets
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    files = sample_files()[:5]
    texts = ["<s_total>9.00</s_total>", "hello world", "a b c d e f g h", "", "x" * 3]
    ds = datasets.Dataset.from_dict({"image": [str(f) for f in files], "target_sequence": texts})
    ds = ds.cast_column("image", datasets.Image())
    vocab = {"<pad>": 0, "<unk>": 1}
    for ch in sorted(set("".join(texts))):
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")
    out = docfeed.pack(ds, tmp_path / "packed", tokenizer=tok, max_length=12)
    version, backend = AUTO_GENERATION  # what the installed AutoImageProcessor gives
    loader = docfeed.Loader(out, batch_size=5, image_size=SIZE, shuffle=False, pad="center",
                            drop_last=False, hf_version=version, backend=backend)
    batch = next(iter(loader))
    proc = processor(AUTO_GENERATION)
    for i, path in enumerate(files):
        want = processor_pixels(proc, path)
        assert torch.equal(batch["pixel_values"][i], torch.from_numpy(want))
        ids = tok(texts[i], add_special_tokens=False, max_length=12, truncation=True)["input_ids"]
        row = batch["labels"][i].tolist()
        assert row[:len(ids)] == ids and all(v == -100 for v in row[len(ids):])

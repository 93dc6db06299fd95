"""`docfeed pack SAVED_DATASET`: migrating seed-like "preprocessed" float datasets (issue 7).

The inputs are made the way the Donut fine-tuning recipe makes them: the real transformers
DonutImageProcessor (4.57.6, in .venv/donut-ref, run in a subprocess as in
test_donut_parity.py) turns documents into pixel_values; the real `datasets` (.venv) stores them
with `labels` and `target_sequence` via `save_to_disk` (nested float32 lists, float16, float64,
Array3D, several shards, a DatasetDict, random padding, ImageNet normalization).

Checked against those references, never against docfeed's own output:
* exact recovery: every stored image, padded back centred with numpy and normalized with numpy's
  float32 formula (the processor's), equals the original pixel_values bit for bit;
* content boxes: the detected box equals the processor's own resized-stage size and centred
  offsets; with --content-box tight on randomly padded tensors, the stored image equals the
  processor's resized stage (do_pad=False) exactly;
* the other columns equal the source's; `datasets.load_from_disk` opens the output;
* docfeed.Loader (in .venv/train, subprocess) with centred padding on the migrated dataset
  yields the original pixel_values bit for bit, also for randomly padded ones, and for ImageNet's
  or a recipe's own image_mean/image_std (recorded in docfeed.json's "normalization");
* resume: a run killed mid-way (SIGKILL from a test hook) and rerun gives the same bytes as an
  uninterrupted run;
* clear errors: a truncated Arrow file, a tensor column of integers, values off the grid.
"""
import io
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import REPO, SAMPLE_DOCS, run_docfeed, docfeed_bin

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")

TRANSFORMERS_VERSION = "4.57.6"
REF_DIR = pathlib.Path(os.environ.get("DOCFEED_DONUT_REF", REPO / ".venv" / "donut-ref"))
FULL_PAGES = ["sroie/023.jpg", "invoices/AmazonWebServices.png"]  # 1553x1200: 22 MB each
SMALL_DOCS = ["sroie/000.jpg", "receipts/cord_receipt_00004.png", "invoices/simple-invoice.png",
              "receipts/demo_kie.jpeg"]
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CUSTOM_MEAN = (0.3, 0.62, 0.1)  # a recipe's own image_mean/image_std (--mean/--std)
CUSTOM_STD = (0.2, 0.35, 0.71)
N_CUSTOM = 8
SMALL = (64, 48)  # H, W

# Runs in .venv/donut-ref: one .npy per job (pixel_values CHW float32, or the resized stage).
WORKER = r"""
import json, sys
import numpy as np
from PIL import Image
import transformers
from transformers import DonutImageProcessor
assert transformers.__version__ == sys.argv[2], transformers.__version__
for job in json.load(open(sys.argv[1])):
    proc = DonutImageProcessor(**job["init"])
    with Image.open(job["image"]) as img:
        if job["kind"] == "resized":
            out = proc(img, do_pad=False, do_rescale=False, do_normalize=False,
                       data_format="channels_last", return_tensors="np")["pixel_values"][0]
            out = out.astype(np.uint8)
        else:
            np.random.seed(job["seed"])
            out = proc(img, random_padding=job["random"], return_tensors="np")["pixel_values"][0]
    np.save(job["out"], out)
"""


def run_reference(jobs, tmp):
    assert (REF_DIR / "transformers" / "__init__.py").exists(), (
        f"{REF_DIR} lacks the transformers 4.x reference; run `make venv`")
    job_file = tmp / "jobs.json"
    job_file.write_text(json.dumps(jobs))
    env = dict(os.environ, PYTHONPATH=str(REF_DIR), TRANSFORMERS_VERBOSITY="error")
    proc = subprocess.run([sys.executable, "-c", WORKER, str(job_file), TRANSFORMERS_VERSION],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def document_like(w, h, seed, gray=False, black_top_rows=0):
    """Page-like content with no pure-black pixel (so the content box is unambiguous), except
    `black_top_rows` rows of (0, 0, 0) at the top (content with a black border)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = 200 + (x * 40 // max(w - 1, 1)) - (y * 30 // max(h - 1, 1))
    text = ((x // 3 + y // 4) % 7 == 0) * rng.integers(80, 180, size=(h, w))
    planes = [np.clip(base - text + 9 * c, 1, 255) for c in range(1 if gray else 3)]
    arr = np.stack(planes, axis=-1).astype(np.uint8)
    arr[:black_top_rows] = 0
    return arr[..., 0] if gray else arr


def table(mean, std):
    """The processor's uint8 -> float32 table, per channel (numpy, as image_transforms does)."""
    v = np.arange(256, dtype=np.float64)
    rescaled = (v * (1 / 255)).astype(np.float32)
    return np.stack([(rescaled - np.float32(m)) / np.float32(s) for m, s in zip(mean, std)])


def reconstruct(stored, height, width, mean, std):
    """Centred padding of a stored image (numpy) + normalization: pixel_values, CHW float32."""
    if stored.ndim == 2:
        stored = np.repeat(stored[..., None], 3, axis=2)
    h, w = stored.shape[:2]
    top, left = (height - h) // 2, (width - w) // 2
    canvas = np.zeros((height, width, 3), np.uint8)
    canvas[top:top + h, left:left + w] = stored
    t = table(mean, std)
    return np.stack([t[c][canvas[..., c]] for c in range(3)])


@pytest.fixture(scope="session")
def refs(tmp_path_factory):
    """Reference tensors from the real processor: {key: np.ndarray}."""
    tmp = tmp_path_factory.mktemp("migrate-ref")
    jobs, keys = [], []
    small = {"size": {"height": SMALL[0], "width": SMALL[1]}}

    def add(key, image, init, kind="normalized", random=False, seed=0):
        jobs.append({"kind": kind, "image": str(image), "init": init, "random": random,
                     "seed": seed, "out": str(tmp / f"{len(jobs)}.npy")})
        keys.append(key)

    for i, rel in enumerate(FULL_PAGES):
        add(("full", i), SAMPLE_DOCS / rel, {"size": {"height": 1553, "width": 1200}})
        add(("full-resized", i), SAMPLE_DOCS / rel, {"size": {"height": 1553, "width": 1200}},
            kind="resized")
    images = []
    for i in range(24):  # portrait, landscape, gray and square pages of many aspect ratios
        w, h = [(37, 91), (90, 40), (50, 50), (61, 83), (120, 33)][i % 5]
        w, h = w + 3 * i, h + 2 * i
        path = tmp / f"gen-{i}.png"
        Image.fromarray(document_like(w, h, i, gray=(i % 4 == 3))).save(path)
        images.append(path)
    black = tmp / "black-border.png"
    Image.fromarray(document_like(40, 90, 99, black_top_rows=6)).save(black)
    images += [SAMPLE_DOCS / rel for rel in SMALL_DOCS] + [black]
    imagenet = dict(small, image_mean=list(IMAGENET_MEAN), image_std=list(IMAGENET_STD))
    custom = dict(small, image_mean=list(CUSTOM_MEAN), image_std=list(CUSTOM_STD))
    for i, path in enumerate(images):
        add(("small", i), path, small)
        add(("resized", i), path, small, kind="resized")
        add(("random", i), path, small, random=True, seed=i)
        add(("imagenet", i), path, imagenet)
        if i < N_CUSTOM:
            add(("custom", i), path, custom)
    run_reference(jobs, tmp)
    out = {key: np.load(job["out"]) for key, job in zip(keys, jobs)}
    out["n_small"] = len(images)
    return out


def columns(n, seed):
    """The recipe's other columns: labels (512 ids, pad -> -100) and target_sequence."""
    rng = np.random.default_rng(seed)
    labels, targets = [], []
    for i in range(n):
        k = int(rng.integers(3, 40))
        ids = [0] + rng.integers(4, 57000, size=k).tolist() + [2]
        labels.append(ids + [-100] * (512 - len(ids)))
        targets.append(f"<s><s_total>{i}.{k:02d}</s_total></s>")
    return labels, targets


def save(path, tensors, dtype="float32", array3d=False, num_shards=1, seed=0):
    labels, targets = columns(len(tensors), seed)
    data = {"pixel_values": [t.astype(dtype) for t in tensors], "labels": labels,
            "target_sequence": targets}
    features = None
    if array3d:
        features = datasets.Features({
            "pixel_values": datasets.Array3D(shape=tensors[0].shape, dtype=dtype),
            "labels": datasets.List(datasets.Value("int64")),
            "target_sequence": datasets.Value("string")})
    ds = datasets.Dataset.from_dict(data, features=features)
    if not array3d and dtype != "float32":
        ds = ds.cast_column("pixel_values", datasets.List(datasets.List(datasets.List(
            datasets.Value(dtype)))))
    ds.save_to_disk(str(path), num_shards=num_shards)
    return ds


def small_tensors(refs, kind):
    return [refs[(kind, i)] for i in range(refs["n_small"])]


def stored_images(out):
    """The stored images of a migrated dataset, read through datasets + Pillow."""
    ds = datasets.load_from_disk(str(out))
    return ds, [np.asarray(Image.open(io.BytesIO(row["image"]["bytes"])))
                for row in ds.cast_column("image", datasets.Image(decode=False))]


def check_exact(out, tensors, mean=(0.5,) * 3, std=(0.5,) * 3, seed=0):
    ds, images = stored_images(out)
    assert len(images) == len(tensors)
    height, width = tensors[0].shape[1:]
    for i, (img, ref) in enumerate(zip(images, tensors)):
        got = reconstruct(img, height, width, mean, std)
        assert np.array_equal(got, ref.astype(np.float32)), f"sample {i}"
    labels, targets = columns(len(tensors), seed)
    assert ds["labels"] == labels and ds["target_sequence"] == targets
    run_docfeed("verify", out)
    manifest = json.loads((out / "docfeed.json").read_text())
    assert manifest["preprocess"] == {"preset": "donut", "height": height, "width": width,
                                      "align_long_axis": False, "hf_version": 4,
                                      "backend": "pil"}
    # What the loader normalizes with (tested through docfeed.Loader below).
    assert manifest["normalization"] == {"mean": list(mean), "std": list(std)}
    return json.loads((out / "migration.json").read_text())


def test_full_size_pages_are_recovered_exactly(refs, tmp_path):
    tensors = [refs[("full", i)] for i in range(len(FULL_PAGES))]
    save(tmp_path / "src", tensors)
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out")
    info = check_exact(tmp_path / "out", tensors)
    assert info["normalization"]["name"] == "imagenet_standard"
    assert info["max_deviation"] == 0 and info["off_grid_values"] == 0
    for i, box in enumerate(info["boxes"]):  # the processor's resized image, centred
        resized = refs[("full-resized", i)]
        h, w = resized.shape[:2]
        assert box[4:] == [(1553 - h) // 2, (1200 - w) // 2, h, w]
        stored = np.asarray(Image.open(io.BytesIO(
            datasets.load_from_disk(str(tmp_path / "out")).cast_column(
                "image", datasets.Image(decode=False))[i]["image"]["bytes"])))
        if stored.ndim == 2:  # a grayscale page is stored with one channel
            assert (resized == resized[..., :1]).all()
            stored = np.repeat(stored[..., None], 3, axis=2)
        assert np.array_equal(stored, resized)


def test_many_small_shards_and_content_boxes(refs, tmp_path):
    tensors = small_tensors(refs, "small")
    save(tmp_path / "src", tensors, num_shards=3)
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", "--threads", "2")
    assert "every value exact" in proc.stdout
    info = check_exact(tmp_path / "out", tensors)
    black = refs["n_small"] - 1
    for i, box in enumerate(info["boxes"]):
        h, w = refs[("resized", i)].shape[:2]
        expected = [(SMALL[0] - h) // 2, (SMALL[1] - w) // 2, h, w]
        if i == black:  # 6 black content rows at the top look like padding...
            assert box[4:] != expected and box[4] > expected[0]
        else:
            assert box[4:] == expected, i
            assert box[:4] == expected, i
    assert info["grayscale"] >= 6  # generated gray pages and the L-mode SROIE scan
    manifest = json.loads((tmp_path / "out" / "docfeed.json").read_text())
    assert len(manifest["data_files"]) == 3


@pytest.mark.parametrize("variant", ["float16", "float64", "array3d", "imagenet"])
def test_variants(refs, tmp_path, variant):
    kind = "imagenet" if variant == "imagenet" else "small"
    tensors = small_tensors(refs, kind)[:10]
    dtype = variant if variant in ("float16", "float64") else "float32"
    save(tmp_path / "src", tensors, dtype=dtype, array3d=(variant == "array3d"))
    schema = pa.ipc.open_stream(next((tmp_path / "src").glob("*.arrow"))).schema
    if variant == "array3d":
        # datasets registered its extension type, so pyarrow shows it (not the field metadata).
        assert "Array3D" in getattr(schema.field("pixel_values").type, "extension_name", "")
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out")
    if variant == "imagenet":
        info = check_exact(tmp_path / "out", tensors, IMAGENET_MEAN, IMAGENET_STD)
        assert info["normalization"]["name"] == "imagenet_default"
    elif variant == "float16":  # the float32 grid rounded to float16, as .astype(float16) does
        ds, images = stored_images(tmp_path / "out")
        for img, ref in zip(images, tensors):
            got = reconstruct(img, *SMALL, (0.5,) * 3, (0.5,) * 3).astype(np.float16)
            assert np.array_equal(got, ref.astype(np.float16))
    else:
        check_exact(tmp_path / "out", tensors)


def test_dataset_dict_with_random_padding(refs, tmp_path):
    train, val = small_tensors(refs, "random"), small_tensors(refs, "small")[:5]
    save(tmp_path / "train", train, seed=1)
    save(tmp_path / "val", val, seed=2)
    dd = datasets.DatasetDict({"train": datasets.load_from_disk(str(tmp_path / "train")),
                               "validation": datasets.load_from_disk(str(tmp_path / "val"))})
    dd.save_to_disk(str(tmp_path / "src"))
    # Default (centred box): centred padding of the stored box gives every tensor back.
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out")
    assert "off-centre padding" in proc.stdout
    check_exact(tmp_path / "out" / "train", train, seed=1)
    check_exact(tmp_path / "out" / "validation", val, seed=2)
    loaded = datasets.load_from_disk(str(tmp_path / "out"))
    assert set(loaded) == {"train", "validation"} and len(loaded["train"]) == len(train)
    # --content-box tight: the stored image is the processor's resized stage (random padding
    # removed entirely), except for the black-bordered page.
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "tight", "--content-box", "tight")
    _, images = stored_images(tmp_path / "tight" / "train")
    for i, img in enumerate(images[:-1]):
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        assert np.array_equal(img, refs[("resized", i)]), i
    # ...which centred padding no longer turns into the randomly padded tensors.
    moved = sum(not np.array_equal(reconstruct(img, *SMALL, (0.5,) * 3, (0.5,) * 3), ref)
                for img, ref in zip(images, train))
    assert moved > len(train) // 2


def test_keep_padding_stores_the_whole_tensor(refs, tmp_path):
    tensors = small_tensors(refs, "random")[:4]
    save(tmp_path / "src", tensors)
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", "--keep-padding")
    info = check_exact(tmp_path / "out", tensors)
    assert all(box[:4] == [0, 0, *SMALL] for box in info["boxes"])


def read_tree(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_resume_after_kill_gives_identical_bytes(refs, tmp_path):
    tensors = small_tensors(refs, "small")
    save(tmp_path / "src", tensors, num_shards=4)
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "whole", "--threads", "1")
    out = tmp_path / "resumed"
    # Killed (SIGKILL) after 10 rows: file 0 (8 rows) is finished, file 1 is half done.
    env = dict(os.environ, DOCFEED_MIGRATE_KILL_AFTER_ROWS="10")
    killed = subprocess.run([str(docfeed_bin()), "pack", str(tmp_path / "src"), "-o", str(out),
                             "--threads", "1"], env=env, capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    assert not out.exists() and (tmp_path / "resumed.partial" / "journal.json").exists()
    proc = run_docfeed("pack", tmp_path / "src", "-o", out, "--threads", "1")
    assert "resuming" in proc.stderr and "resumed    1 input file" in proc.stdout
    assert not (tmp_path / "resumed.partial").exists()
    assert read_tree(out) == read_tree(tmp_path / "whole")
    run_docfeed("verify", out)


def test_truncated_arrow_file_is_refused(refs, tmp_path):
    save(tmp_path / "src", small_tensors(refs, "small")[:6], num_shards=2)
    data = tmp_path / "src" / "data-00001-of-00002.arrow"
    data.write_bytes(data.read_bytes()[:data.stat().st_size * 2 // 3])
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1
    assert "data-00001-of-00002.arrow" in proc.stderr and "record batch" in proc.stderr
    assert "past the end" in proc.stderr or "truncated" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_tensor_of_unexpected_type_is_refused(tmp_path):
    ds = datasets.Dataset.from_dict({"pixel_values": [np.zeros((3, 4, 5), np.int64)],
                                     "labels": [[1, 2]]})
    ds.save_to_disk(str(tmp_path / "src"))
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1
    assert "pixel_values" in proc.stderr and "int64" in proc.stderr
    assert "float16/float32/float64" in proc.stderr


def test_values_off_the_grid_are_refused_unless_lossy(refs, tmp_path):
    tensors = small_tensors(refs, "small")[:3]
    bad = [t.copy() for t in tensors]
    bad[2][1, 20, 10] += np.float32(0.001)
    save(tmp_path / "src", bad)
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1
    assert "row 2" in proc.stderr and "channel 1 at (y 20, x 10)" in proc.stderr
    assert "--allow-lossy" in proc.stderr
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", "--allow-lossy")
    assert "1 value(s) off the grid rounded, largest deviation 0.00" in proc.stdout
    check_exact(tmp_path / "out", tensors)  # the nearest grid value is the original pixel


LOADER_WORKER = r"""
import sys
import numpy as np
import docfeed
out, height, width, dest = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
loader = docfeed.Loader(out, batch_size=4, image_size=(height, width), shuffle=False,
                        pad="center", drop_last=False, num_threads=2)
assert loader.preprocessed
tensors = {}
for batch in loader:
    for row, sid in enumerate(batch.sample_ids.tolist()):
        tensors[str(sid)] = batch["pixel_values"][row].numpy().copy()  # batches are recycled
np.savez(dest, **tensors)
"""


def train_python_or_skip():
    """.venv/train's python (docfeed.Loader needs torch), or skip when it is not installed."""
    train_python = REPO / ".venv" / "train" / "bin" / "python"
    if not train_python.exists():
        pytest.skip(".venv/train (the Python front's venv, `make test-python`) is not installed")
    return train_python


def load_in_train_venv(train_python, worker, out, height, width, dest):
    """Runs `worker` (a script taking OUT HEIGHT WIDTH DEST) there; returns the npz it wrote."""
    proc = subprocess.run([str(train_python), "-c", worker, str(out), str(height), str(width),
                           str(dest)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return np.load(dest)


@pytest.mark.parametrize("kind", ["full", "random"])
def test_docfeed_loader_gives_the_original_tensors(refs, tmp_path, kind):
    """The issue's end state: docfeed.Loader (centred padding) on the migrated dataset yields
    the original pixel_values bit for bit, also for tensors whose padding was random."""
    train_python = train_python_or_skip()
    tensors = ([refs[("full", i)] for i in range(len(FULL_PAGES))] if kind == "full"
               else small_tensors(refs, "random"))
    save(tmp_path / "src", tensors)
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out")
    height, width = tensors[0].shape[1:]
    loaded = load_in_train_venv(train_python, LOADER_WORKER, tmp_path / "out", height, width,
                                tmp_path / "loaded.npz")
    assert len(loaded.files) == len(tensors)
    for i, ref in enumerate(tensors):
        assert np.array_equal(loaded[str(i)], ref), f"sample {i}"


NORM_WORKER = r"""
import sys
import numpy as np
import docfeed
out, height, width, dest = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
kw = dict(batch_size=3, image_size=(height, width), shuffle=False, pad="center", drop_last=False,
          num_threads=2)
arrays = {}
for dtype in ("float32", "float16"):
    loader = docfeed.Loader(out, dtype=dtype, **kw)
    arrays["mean"], arrays["std"] = np.array(loader.image_mean), np.array(loader.image_std)
    for batch in loader:
        for row, sid in enumerate(batch.sample_ids.tolist()):
            arrays[f"{dtype}-{sid}"] = batch["pixel_values"][row].numpy().copy()
# The user's override (one number, as DonutImageProcessor accepts) wins over the dataset's.
loader = docfeed.Loader(out, image_mean=0.5, image_std=0.5, **kw)
assert loader.image_mean == (0.5, 0.5, 0.5) and loader.image_std == (0.5, 0.5, 0.5)
arrays["override-0"] = next(iter(loader))["pixel_values"][0].numpy().copy()
np.savez(dest, **arrays)
"""


@pytest.mark.parametrize("kind", ["imagenet", "custom"])
def test_docfeed_loader_applies_the_recorded_normalization(refs, tmp_path, kind):
    """A recipe that normalized with ImageNet's or its own image_mean/image_std: the migration
    records the mean/std in docfeed.json, and docfeed.Loader (centred padding) gives the real
    processor's pixel_values back bit for bit (float32; float16 = numpy's rounding of them),
    unless image_mean/image_std override it."""
    train_python = train_python_or_skip()
    if kind == "imagenet":
        tensors, mean, std, args = small_tensors(refs, "imagenet")[:N_CUSTOM], IMAGENET_MEAN, \
            IMAGENET_STD, []
    else:
        tensors, mean, std = [refs[("custom", i)] for i in range(N_CUSTOM)], CUSTOM_MEAN, CUSTOM_STD
        args = ["--mean", ",".join(map(str, mean)), "--std", ",".join(map(str, std))]
    save(tmp_path / "src", tensors)
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", *args)
    manifest = json.loads((tmp_path / "out" / "docfeed.json").read_text())
    assert manifest["normalization"] == {"mean": list(mean), "std": list(std)}
    height, width = tensors[0].shape[1:]
    loaded = load_in_train_venv(train_python, NORM_WORKER, tmp_path / "out", height, width,
                                tmp_path / "loaded.npz")
    assert tuple(loaded["mean"]) == mean and tuple(loaded["std"]) == std
    for i, ref in enumerate(tensors):
        assert np.array_equal(loaded[f"float32-{i}"], ref), f"sample {i}"
        assert np.array_equal(loaded[f"float16-{i}"], ref.astype(np.float16)), f"sample {i}"
    # Donut's 0.5 / 0.5 instead: the stored pixels normalized that way (numpy), not the tensor.
    _, images = stored_images(tmp_path / "out")
    want = reconstruct(images[0], height, width, (0.5,) * 3, (0.5,) * 3)
    assert np.array_equal(loaded["override-0"], want)
    assert not np.array_equal(want, tensors[0])


def test_other_columns_keep_their_type_and_feature(refs, tmp_path):
    """ClassLabel, int32, a struct and a list of lists next to the tensors: kept as the source
    had them (types, features, values), not refused or widened."""
    tensors = small_tensors(refs, "small")[:4]
    labels, targets = columns(len(tensors), 0)
    features = datasets.Features({
        "pixel_values": datasets.List(datasets.List(datasets.List(datasets.Value("float32")))),
        "labels": datasets.List(datasets.Value("int64")),
        "target_sequence": datasets.Value("string"),
        "doc_type": datasets.ClassLabel(names=["receipt", "invoice"]),
        "id": datasets.Value("int32"),
        "meta": {"source": datasets.Value("string"), "score": datasets.Value("float32")},
        "boxes": datasets.List(datasets.List(datasets.Value("int16")))})
    data = {"pixel_values": tensors, "labels": labels, "target_sequence": targets,
            "doc_type": [i % 2 for i in range(4)], "id": list(range(10, 14)),
            "meta": [{"source": f"s{i}", "score": i / 8} for i in range(4)],
            "boxes": [[[i, i + 1]] * i for i in range(4)]}
    datasets.Dataset.from_dict(data, features=features).save_to_disk(str(tmp_path / "src"))
    run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out")
    source = datasets.load_from_disk(str(tmp_path / "src")).remove_columns("pixel_values")
    packed = datasets.load_from_disk(str(tmp_path / "out")).remove_columns("image")
    assert packed.features == source.features
    assert packed.to_list() == source.to_list()
    check_exact(tmp_path / "out", tensors)

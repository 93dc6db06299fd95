"""Migrating float32 datasets made by transformers 5's processors (`docfeed pack SAVED_DATASET`).

Runs in .venv/hf5 (`make test-python`), where transformers 5.x, datasets 5.x and torch are
imported together. A 5.x user's recipe stores pixel_values from DonutImageProcessorPil (numpy
arithmetic, as 4.x) or from the torchvision DonutImageProcessor that AutoImageProcessor returns
(a fused float32 rescale-and-normalize whose values differ from numpy's by one ulp on some
pixels). Both must migrate with every value exact, and docfeed.Loader (centred padding, as 5.x
always pads) must give back each original tensor bit for bit: the references are the real
processors' outputs, never docfeed's.
"""
import subprocess

import numpy as np
import pytest
from PIL import Image

from conftest import SAMPLE_DOCS, docfeed_bin

transformers = pytest.importorskip("transformers")
if int(transformers.__version__.split(".")[0]) < 5:
    pytest.skip(f"transformers {transformers.__version__} is not 5.x (run this module with "
                ".venv/hf5/bin/python)", allow_module_level=True)
datasets = pytest.importorskip("datasets")
torch = pytest.importorskip("torch")
import docfeed  # noqa: E402

DOCS = ["sroie/000.jpg", "receipts/cord_receipt_00004.png", "invoices/simple-invoice.png",
        "receipts/demo_kie.jpeg", "sroie/459.jpg"]
SIZE = (128, 96)
IMAGENET_DEFAULT = {"image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}


def processor(backend, **init):
    size = {"height": SIZE[0], "width": SIZE[1]}
    if backend == "pil":
        return transformers.DonutImageProcessorPil(size=size, do_convert_rgb=True, **init)
    torch.set_num_threads(1)
    proc = transformers.DonutImageProcessor(size=size, do_convert_rgb=True, **init)
    assert proc.backend == "torchvision"
    return proc


@pytest.mark.parametrize("backend", ["pil", "torchvision"])
@pytest.mark.parametrize("stats", ["standard", "imagenet_default"])
def test_5x_tensors_migrate_exactly_and_load_back_bit_for_bit(backend, stats, tmp_path):
    init = IMAGENET_DEFAULT if stats == "imagenet_default" else {}
    proc = processor(backend, **init)
    want = []
    for name in DOCS:
        with Image.open(SAMPLE_DOCS / name) as img:
            want.append(np.asarray(proc(img, return_tensors="np")["pixel_values"][0], np.float32))
    src = tmp_path / "recipe.hf"
    datasets.Dataset.from_dict({"pixel_values": want,
                                "target_sequence": [f"<s>{i}</s>" for i in range(len(want))]}
                               ).save_to_disk(str(src))
    out = tmp_path / "migrated"
    proc = subprocess.run([str(docfeed_bin()), "pack", str(src), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    arithmetic = "transformers 5 torchvision" if backend == "torchvision" else "numpy"
    assert f"{arithmetic} arithmetic); every value exact" in proc.stdout, proc.stdout
    info = docfeed._docfeed.dataset_info(str(out))["preprocess"]
    assert (info["hf_version"], info["backend"]) == \
        ((5, "torchvision") if backend == "torchvision" else (4, "pil"))
    loader = docfeed.Loader(out, batch_size=len(want), image_size=SIZE, shuffle=False,
                            pad="center", drop_last=False)
    batch = next(iter(loader))
    for i, sid in enumerate(batch.sample_ids.tolist()):
        got = batch["pixel_values"][i].numpy()
        assert got.view(np.uint32).tobytes() == want[sid].view(np.uint32).tobytes(), \
            f"{DOCS[sid]}: {np.count_nonzero(got != want[sid])} values differ"
    loader.close()


def test_the_torchvision_grid_is_not_numpy_s():
    """The case the second grid exists for: 5.x's torchvision values are not all on numpy's."""
    img = Image.open(SAMPLE_DOCS / DOCS[0])
    tv = np.asarray(processor("torchvision")(img, return_tensors="np")["pixel_values"][0])
    pil = np.asarray(processor("pil")(img, return_tensors="np")["pixel_values"][0])
    v = np.arange(256, dtype=np.float64)
    numpy_grid = ((v * (1 / 255)).astype(np.float32) - np.float32(0.5)) / np.float32(0.5)
    assert np.isin(pil, numpy_grid).all()
    assert not np.isin(tv, numpy_grid).all()


def test_a_blank_first_page_does_not_decide_the_arithmetic(tmp_path):
    """A white page is on numpy's and torchvision's grids alike (1.0 and -1.0 only): when the
    first tensor cannot tell them apart, the next rows do, and every value stays exact."""
    proc = processor("torchvision")
    want = [np.asarray(proc(Image.new("RGB", (300, 400), "white"),
                            return_tensors="np")["pixel_values"][0], np.float32)]
    for name in DOCS[:2]:
        with Image.open(SAMPLE_DOCS / name) as img:
            want.append(np.asarray(proc(img, return_tensors="np")["pixel_values"][0], np.float32))
    assert set(np.unique(want[0]).tolist()) <= {-1.0, 1.0}
    src = tmp_path / "recipe.hf"
    datasets.Dataset.from_dict({"pixel_values": want}).save_to_disk(str(src))
    out = tmp_path / "migrated"
    run = subprocess.run([str(docfeed_bin()), "pack", str(src), "-o", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "transformers 5 torchvision arithmetic); every value exact" in run.stdout, run.stdout
    loader = docfeed.Loader(out, batch_size=len(want), image_size=SIZE, shuffle=False,
                            pad="center", drop_last=False)
    batch = next(iter(loader))
    for i, sid in enumerate(batch.sample_ids.tolist()):
        assert batch["pixel_values"][i].numpy().tobytes() == want[sid].tobytes(), sid
    loader.close()

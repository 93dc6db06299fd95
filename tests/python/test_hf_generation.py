"""docfeed.hf's choice of the DonutImageProcessor generation (hf_version, backend).

Runs in both front environments (`make test-python`: .venv/train with transformers 4.57 and
.venv/hf5 with 5.x). The decision reads only the version string and the processor's class, so
each test that is about one generation sets the version it is about; the test of the installed
stack checks the real one, and tests/python/test_donut_parity_hf5.py checks the real 5.x
classes' pixels.
"""
import logging
import pathlib
import subprocess

import pytest

import docfeed
import docfeed.hf
from docfeed.hf import DocfeedDataset, processor_generation

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"


def fake(name, **attrs):
    return type(name, (), attrs)()


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "ds"
    proc = subprocess.run([docfeed.cli_path(), "pack", str(SAMPLE_DOCS / "sroie"), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def packed_v5(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen5") / "ds"
    proc = subprocess.run([docfeed.cli_path(), "pack", str(SAMPLE_DOCS / "sroie"), "-o", str(out),
                           "--preprocess", "donut", "--size", "64x48", "--hf-version", "5",
                           "--backend", "torchvision"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def test_installed_transformers_gives_its_generation(tmp_path):
    """No processor given: what the installed transformers' AutoImageProcessor builds (4.x: the
    PIL DonutImageProcessor; 5.x: the torchvision one when torchvision is installed, as in
    .venv/hf5), checked against AutoImageProcessor itself on a saved Donut processor config."""
    import transformers

    version, backend, reason = processor_generation()
    assert transformers.__version__ in reason
    transformers.DonutImageProcessor().save_pretrained(tmp_path)
    built = transformers.AutoImageProcessor.from_pretrained(tmp_path)
    if transformers.__version__.startswith("4."):
        assert (version, backend) == (4, "pil")
        assert processor_generation(built)[:2] == (4, "pil")
    else:
        assert (version, backend) == (5, "torchvision")
        assert processor_generation(built)[:2] == (5, "torchvision")
        assert getattr(built, "backend", None) == "torchvision"


def test_processor_classes_under_transformers_5(monkeypatch):
    monkeypatch.setattr(docfeed.hf.transformers, "__version__", "5.23.0")
    assert processor_generation(fake("DonutImageProcessorPil", backend="pil"))[:2] == (5, "pil")
    assert processor_generation(fake("DonutImageProcessor", backend="torchvision"))[:2] == \
        (5, "torchvision")
    # A DonutProcessor holds the image processor.
    proc = fake("DonutProcessor", image_processor=fake("DonutImageProcessorPil", backend="pil"))
    assert processor_generation(proc)[:2] == (5, "pil")
    # No processor: what AutoImageProcessor builds, torchvision when installed.
    monkeypatch.setattr(docfeed.hf, "_torchvision_installed", lambda: True)
    assert processor_generation()[:2] == (5, "torchvision")
    monkeypatch.setattr(docfeed.hf, "_torchvision_installed", lambda: False)
    version, backend, reason = processor_generation(fake("XLMRobertaTokenizer"))
    assert (version, backend) == (5, "pil") and "torchvision is not installed" in reason


def test_transformers_4_fast_processor_is_refused(monkeypatch):
    monkeypatch.setattr(docfeed.hf.transformers, "__version__", "4.57.6")
    with pytest.raises(docfeed.InvalidArgumentError, match="DonutImageProcessorFast"):
        processor_generation(fake("DonutImageProcessorFast"))
    assert processor_generation(fake("DonutImageProcessor"))[:2] == (4, "pil")


def test_explicit_arguments_win_and_the_choice_is_logged(packed, monkeypatch, caplog):
    monkeypatch.setattr(docfeed.hf.transformers, "__version__", "5.23.0")
    monkeypatch.setattr(docfeed.hf, "_torchvision_installed", lambda: True)
    seen = {}

    def loader(path, **kwargs):
        seen.update(kwargs)
        return "loader"

    monkeypatch.setattr(docfeed.hf.docfeed, "Loader", loader)
    with caplog.at_level(logging.INFO, logger="docfeed.hf"):
        DocfeedDataset(packed, image_size=(64, 48)).loader(batch_size=2)
    assert (seen["hf_version"], seen["backend"]) == (5, "torchvision")
    assert "transformers 5.x DonutImageProcessor (torchvision backend)" in caplog.text
    DocfeedDataset(packed, image_size=(64, 48), hf_version=4).loader(batch_size=2)
    assert (seen["hf_version"], seen["backend"]) == (4, "pil")
    ds = DocfeedDataset(packed, image_size=(64, 48), backend="pil")
    ds.loader(processor=fake("DonutImageProcessor", backend="torchvision"), batch_size=2)
    assert (seen["hf_version"], seen["backend"]) == (5, "pil")
    assert ds.generation[:2] == (5, "pil")


def test_a_preprocessed_dataset_keeps_its_generation(packed_v5, monkeypatch, caplog):
    """Stored pages cannot be resized again: the dataset's record wins over the environment,
    with a warning, and the real loader accepts it."""
    monkeypatch.setattr(docfeed.hf.transformers, "__version__", "4.57.6")
    assert docfeed._docfeed.dataset_info(str(packed_v5))["preprocess"]["backend"] == "torchvision"
    ds = DocfeedDataset(packed_v5, image_size=(64, 48))
    with caplog.at_level(logging.WARNING, logger="docfeed.hf"):
        loader = ds.loader(batch_size=2, shuffle=False)
    assert ds.generation[:2] == (5, "torchvision")
    assert "not for the processor this run would use (4.x pil" in caplog.text
    batch = next(iter(loader))
    assert tuple(batch["pixel_values"].shape) == (2, 3, 64, 48)
    loader.close()
    # Asked explicitly for another generation, the loader refuses and says how to re-pack.
    with pytest.raises(docfeed.Error, match="--hf-version 4 --backend pil"):
        DocfeedDataset(packed_v5, image_size=(64, 48), hf_version=4).loader(batch_size=2)


def test_loader_validates_its_generation_arguments(packed):
    for kwargs, named in (({"hf_version": 6}, "hf_version"), ({"hf_version": "5"}, "hf_version"),
                          ({"backend": "cv2"}, "backend"), ({"backend": 5}, "backend"),
                          ({"backend": "torchvision"}, "hf_version=5")):
        with pytest.raises(docfeed.InvalidArgumentError, match=named):
            docfeed.Loader(packed, batch_size=2, image_size=(64, 48), **kwargs)


def test_the_default_choice_gives_the_installed_processors_pixels(packed, tmp_path):
    """End to end in the installed stack: DocfeedDataset's own choice (no arguments) serves the
    pixels of the processor AutoImageProcessor builds from a saved Donut config (on 5.x with
    do_convert_rgb=True, which grayscale pages need), centred as the processor pads."""
    import numpy as np
    import transformers
    from PIL import Image

    size = (64, 48)
    transformers.DonutImageProcessor(size={"height": size[0], "width": size[1]}).save_pretrained(
        tmp_path)
    five = int(transformers.__version__.split(".")[0]) >= 5
    auto = transformers.AutoImageProcessor.from_pretrained(
        tmp_path, **({"do_convert_rgb": True} if five else {}))
    # The folder has no metadata.jsonl: samples are its files in sorted order.
    files = sorted(str(p) for p in (SAMPLE_DOCS / "sroie").iterdir() if p.is_file())
    ds = DocfeedDataset(packed, image_size=size)
    loader = ds.loader(batch_size=len(files), shuffle=False, pad="center", drop_last=False)
    assert ds.generation[:2] == ((5, "torchvision") if five else (4, "pil"))
    batch = next(iter(loader))
    for row, sid in enumerate(batch.sample_ids.tolist()):
        with Image.open(files[sid]) as img:
            want = np.asarray(auto(img, return_tensors="np")["pixel_values"][0])
        got = batch["pixel_values"][row].numpy()
        assert got.tobytes() == want.astype(np.float32).tobytes(), files[sid]
    loader.close()

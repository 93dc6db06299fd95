"""`docfeed preprocess --preset qwen2-vl` against the real Qwen2-VL image processor.

Runs in both transformers environments (`make test-python` runs the test_hf_* modules with
.venv/train, transformers 4.57.6, and .venv/hf5, transformers 5.x): the reference is the slow
(PIL) processor of the running generation, given `PIL.Image.open(path)` as a fine-tuning script
gives it, and docfeed reproduces that generation (--hf-version 4 or 5):
  * 4.x: Qwen2VLImageProcessor (its convert("RGB") drops alpha),
  * 5.x: Qwen2VLImageProcessorPil (do_convert_rgb composites transparency onto white).
Under 5.x the torchvision Qwen2VLImageProcessor (the 5.x default) is compared too, on the CPU
(--backend torchvision).
Compared bit for bit: pixel_values (float32 rows of flattened patches, as bits) and the grid
(image_grid_thw = (1, rows / patch, columns / patch), from the output's shape and the resized
stage), on every sample document at a fine-tuning max_pixels, a few at the checkpoints' default
(12845056) and at a small one, and on generated pages covering smart_resize's rules: round()
ties, the min_pixels branch (tiny pages), the max_pixels branch (huge pages, sides clamped to one
merged patch), aspect ratios just under and over 200, every Pillow mode docfeed decodes, TIFF
pages, and other patch / merge / temporal sizes.
"""
import pathlib

import numpy as np
import pytest
from PIL import Image

from conftest import SAMPLE_DOCS, run_docfeed
from test_donut_parity import SAMPLES, make_image

transformers = pytest.importorskip("transformers")
HF_VERSION = int(transformers.__version__.split(".")[0])
if HF_VERSION >= 5:
    from transformers import Qwen2VLImageProcessorPil as SlowProcessor
else:
    from transformers import Qwen2VLImageProcessor as SlowProcessor
# 5.x's default Qwen2VLImageProcessor is the torchvision one: compared on the CPU as well
# (--backend torchvision: torch's uint8 BICUBIC and fused rescale/normalize). transformers 4's
# fast processor is not reproduced (and .venv/train has no torchvision).
BACKENDS = ["pil"]
if HF_VERSION >= 5:
    try:
        import torch
        import torchvision  # noqa: F401
        from transformers import Qwen2VLImageProcessor as TorchvisionProcessor

        BACKENDS.append("torchvision")
    except ImportError:
        pass

FINE_TUNE_MAX = 28 * 28 * 1280  # 1003520, the max_pixels of the Qwen2-VL fine-tuning examples
DEFAULT_MAX = 12845056
TIFF_CASES = pathlib.Path(__file__).resolve().parents[1] / "data" / "tiff" / "cases"

# (name, width, height, mode, processor settings)
GENERATED = [
    ("tie-70x42", 70, 42, "RGB", {}),                      # 2.5 and 1.5 patches: ties to even
    ("tie-98x126", 98, 126, "RGB", {"min_pixels": 784}),    # 3.5 / 4.5, no min_pixels growth
    ("tiny-2x2", 2, 2, "RGB", {}),                         # min_pixels branch
    ("tiny-17x9-rgba", 17, 9, "RGBA", {}),
    ("small-60x80", 60, 80, "L", {"min_pixels": 256 * 256}),
    ("huge-4200x4000", 4200, 4000, "RGB", {"max_pixels": DEFAULT_MAX}),  # 16.8 MP: scaled down
    ("clamped-wide", 5000, 40, "RGB", {"max_pixels": 28 * 28 * 64}),  # h clamped to 28
    ("clamped-tall", 30, 5000, "L", {"max_pixels": 28 * 28 * 16}),
    ("aspect-199", 3980, 20, "RGB", {}),
    ("landscape", 2000, 1000, "RGB", {"max_pixels": FINE_TUNE_MAX}),
    ("mode-1", 300, 400, "1", {}),
    ("mode-L", 301, 399, "L", {}),
    ("mode-LA", 300, 400, "LA", {}),
    ("mode-P", 300, 400, "P", {}),
    ("mode-PA", 300, 400, "PA", {}),
    ("mode-RGBA", 300, 400, "RGBA", {}),
    ("mode-RGB-key", 300, 400, "RGB+key", {}),
    ("mode-L-key", 300, 400, "L+key", {}),
    ("patch16-merge1-t1", 500, 700, "RGB",
     {"patch_size": 16, "merge_size": 1, "temporal_patch_size": 1}),
    ("patch14-merge2-t3", 500, 700, "RGB", {"temporal_patch_size": 3}),
]

SMALL_MAX = 28 * 28 * 64
DEFAULT_MAX_DOCS = ["invoices/AmazonWebServices.png", "sroie/023.jpg", "receipts/cord_receipt_00004.png"]
TIFF_PAGES = ["doc_azure_invoice_g4.tif", "doc_sroie_gray_lzw.tif", "rgb_jpeg_ycbcr.tif",
              "cmyk_lzw.tif", "gray16_le.tif"]


def cases():
    out = [(f"{rel}@max{FINE_TUNE_MAX}", SAMPLE_DOCS / rel, {"max_pixels": FINE_TUNE_MAX})
           for rel in SAMPLES]
    out += [(f"{rel}@max{DEFAULT_MAX}", SAMPLE_DOCS / rel, {"max_pixels": DEFAULT_MAX})
            for rel in DEFAULT_MAX_DOCS]
    out += [(f"{rel}@max{SMALL_MAX}", SAMPLE_DOCS / rel, {"max_pixels": SMALL_MAX})
            for rel in DEFAULT_MAX_DOCS]
    out += [(f"tiff/{name}", TIFF_CASES / name, {"max_pixels": FINE_TUNE_MAX})
            for name in TIFF_PAGES]
    out += [(name, (w, h, mode), settings) for name, w, h, mode, settings in GENERATED]
    return out


def settings_args(settings):
    names = {"min_pixels": "--min-pixels", "max_pixels": "--max-pixels",
             "patch_size": "--patch-size", "merge_size": "--merge-size",
             "temporal_patch_size": "--temporal-patch-size"}
    args = []
    for key, value in settings.items():
        args += [names[key], str(value)]
    return args


def reference(path, settings, backend="pil"):
    init = {"min_pixels": 56 * 56, "max_pixels": DEFAULT_MAX, **settings}
    if backend == "torchvision":
        torch.set_num_threads(1)
        proc = TorchvisionProcessor(**init)
        assert proc.backend == "torchvision"
        with Image.open(path) as img:
            out = proc(img, do_convert_rgb=True, return_tensors="pt")
        return out["pixel_values"].numpy(), out["image_grid_thw"].numpy()
    proc = SlowProcessor(**init)
    with Image.open(path) as img:
        out = proc(img, do_convert_rgb=True)
    return np.asarray(out["pixel_values"]), np.asarray(out["image_grid_thw"])


def image_path(source, tmp_path, name):
    if isinstance(source, tuple):
        w, h, mode = source
        path = tmp_path / f"{name}.png"
        make_image(path, w, h, mode)
        return path
    return source


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,source,settings", cases(), ids=[c[0] for c in cases()])
def test_pixel_values_match_the_processor(name, source, settings, backend, tmp_path):
    path = image_path(source, tmp_path, name)
    want, grid = reference(path, settings, backend)
    common = ["preprocess", path, "--preset", "qwen2-vl", "--hf-version", str(HF_VERSION),
              "--backend", backend, *settings_args(settings)]
    run_docfeed(*common, "-o", tmp_path / "pv.npy")
    got = np.load(tmp_path / "pv.npy")
    assert got.dtype == np.float32 and got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32)), (
        f"{name}: max difference {np.abs(got - want).max()}")
    # The grid: the resized stage's size in patches.
    run_docfeed(*common, "--stage", "resized", "-o", tmp_path / "resized.npy")
    h, w, _ = np.load(tmp_path / "resized.npy").shape
    patch = settings.get("patch_size", 14)
    assert grid.tolist() == [[1, h // patch, w // patch]]


def test_aspect_ratio_over_200_is_refused_like_the_processor(tmp_path):
    path = tmp_path / "thin.png"
    make_image(path, 4020, 20, "RGB")
    with pytest.raises(ValueError, match="aspect ratio must be smaller than 200"):
        reference(path, {})
    proc = run_docfeed("preprocess", path, "--preset", "qwen2-vl", "--hf-version",
                       str(HF_VERSION), "-o", tmp_path / "pv.npy", check=False)
    assert proc.returncode == 1
    assert "absolute aspect ratio must be smaller than 200" in proc.stderr
    assert "thin.png" in proc.stderr
    assert not (tmp_path / "pv.npy").exists()

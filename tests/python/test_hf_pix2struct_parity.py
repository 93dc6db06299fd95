"""`docfeed preprocess --preset pix2struct` against the real Pix2Struct image processor.

Runs in both transformers environments (`make test-python` runs the test_hf_* modules with
.venv/train, transformers 4.57.6, and .venv/hf5, transformers 5.x): the reference is the numpy
(PIL) processor of the running generation, given `PIL.Image.open(path)`:
  * 4.x: Pix2StructImageProcessor,
  * 5.x: Pix2StructImageProcessorPil (5.x's default Pix2StructImageProcessor is the torchvision
    one, which uses torch's unbiased std; docfeed does not reproduce it).
Compared bit for bit (torch.equal): flattened_patches and attention_mask, on every sample
document at max_patches 256, two at the checkpoints' default 2048, and generated pages (smaller
than one patch, gray, RGBA, wide, tall, landscape, large). The reference's resize sums round as
torch's AVX2 / AVX512 kernels do (docs/pix2struct-preprocessing.md, "Exactness"); on a CPU where
torch dispatches its DEFAULT kernel the test is skipped, saying so.
"""
import numpy as np
import pytest
import torch
from PIL import Image

from conftest import SAMPLE_DOCS, run_docfeed
from test_donut_parity import SAMPLES, make_image

from pix2struct_reference import DEFAULT_KERNELS, EXACT_KERNELS, HF_VERSION, Processor  # noqa: E402

if not EXACT_KERNELS:
    pytest.skip(DEFAULT_KERNELS, allow_module_level=True)

# (name, width, height, mode, max_patches). Heights 1, 3 and 4 are avoided: the 4.x processor
# then takes the first axis for channels (infer_channel_dimension_format) and fails.
GENERATED = [
    ("tiny-5x7", 5, 7, "RGB", 64),            # smaller than one patch: enlarged
    ("tiny-9x2", 9, 2, "RGB", 256),
    ("patch-16x16", 16, 16, "RGB", 2048),     # enlarged to 45 x 45 patches
    ("gray-37x53", 37, 53, "L", 64),
    ("rgba-40x30", 40, 30, "RGBA", 64),
    ("wide-300x41", 300, 41, "RGB", 64),
    ("tall-41x700", 41, 700, "RGB", 256),
    ("landscape-523x371", 523, 371, "RGB", 256),
    ("large-2200x1500", 2200, 1500, "RGB", 64),  # (sroie/459.jpg is a 4961 x 7016 scan)
    # Grids whose side equals the page's: that axis is not resampled (ATen skips it).
    ("same-size-48x32", 48, 32, "RGB", 6),          # 2 x 3 patches: no resize at all
    ("same-height-50x32", 50, 32, "RGB", 7),        # 2 x 3: the width alone
    ("same-width-48x90", 48, 90, "RGB", 17),        # 5 x 3: the height alone
    ("gray-same-height-50x32", 50, 32, "L", 7),
    ("gray-same-width-48x90", 48, 90, "L", 17),
]


def reference(path, max_patches):
    out = Processor(max_patches=max_patches)(Image.open(path), return_tensors="pt")
    return out["flattened_patches"][0], out["attention_mask"][0]


def check(path, max_patches, tmp_path):
    out = tmp_path / "p.npy"
    run_docfeed("preprocess", path, "--preset", "pix2struct", "--max-patches", max_patches,
                "--hf-version", HF_VERSION, "-o", out)
    ours = torch.from_numpy(np.load(out))
    ref, ref_mask = reference(path, max_patches)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype == torch.float32
    assert torch.equal(ours[:, :2], ref[:, :2])  # row and column ids, zero rows
    mask = torch.from_numpy((ours.numpy().sum(axis=-1) != 0).astype(np.float32))
    assert torch.equal(mask, ref_mask)
    assert torch.equal(ours, ref), (
        f"max |diff| {(ours - ref).abs().max().item():.3g} on {(ours != ref).sum().item()} values")


@pytest.mark.parametrize("name,width,height,mode,max_patches", GENERATED,
                         ids=[g[0] for g in GENERATED])
def test_generated(name, width, height, mode, max_patches, tmp_path):
    path = tmp_path / f"{name}.png"
    make_image(path, width, height, mode)
    check(path, max_patches, tmp_path)


# Every sample document at a small budget; two at the checkpoints' default (2048).
@pytest.mark.parametrize("sample", SAMPLES)
def test_sample_documents(sample, tmp_path):
    check(SAMPLE_DOCS / sample, 256, tmp_path)


@pytest.mark.parametrize("sample", ["receipts/cord_receipt_00004.png",
                                    "invoices/AmazonWebServices.png"])
def test_default_max_patches(sample, tmp_path):
    check(SAMPLE_DOCS / sample, 2048, tmp_path)


def test_refuses_other_dtypes_and_bad_settings(tmp_path):
    path = tmp_path / "p.png"
    make_image(path, 20, 20, "RGB")
    for args in (["--dtype", "float16"], ["--max-patches", "0"], ["--patch-size", "0"]):
        proc = run_docfeed("preprocess", path, "--preset", "pix2struct", *args, "-o",
                           tmp_path / "o.npy", check=False)
        assert proc.returncode == 2, proc.stderr

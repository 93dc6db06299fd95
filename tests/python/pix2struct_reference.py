"""The reference of the test_hf_pix2struct_* modules: the running transformers generation's numpy
Pix2Struct processor (4.x Pix2StructImageProcessor, 5.x Pix2StructImageProcessorPil), and whether
this CPU's torch kernels round its resize as docfeed does (docs/pix2struct-preprocessing.md,
"Exactness": docfeed reproduces torch's AVX2 / AVX512 kernels, not its DEFAULT ones)."""
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

HF_VERSION = int(transformers.__version__.split(".")[0])
if HF_VERSION >= 5:
    from transformers.models.pix2struct.image_processing_pil_pix2struct import (  # noqa: F401
        Pix2StructImageProcessorPil as Processor)
else:
    from transformers import Pix2StructImageProcessor as Processor  # noqa: F401

EXACT_KERNELS = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
DEFAULT_KERNELS = ("torch dispatches its DEFAULT CPU kernels here, whose resize rounds every term "
                   "separately; docfeed reproduces the AVX2 / AVX512 kernels")


def skip_unless_exact_kernels():
    """Skips (saying why) a comparison with the processor that this CPU's torch cannot pass."""
    if not EXACT_KERNELS:
        pytest.skip(DEFAULT_KERNELS)


def write_generated_pages(folder, seed):
    """Pages for each generation's conversions into `folder`: a half-transparent RGBA page with
    colour behind the transparent half, a grayscale page and a JPEG with an EXIF quarter turn."""
    import numpy as np
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rgba = rng.integers(0, 256, (300, 220, 4), dtype=np.uint8)
    rgba[:, :110, 3] = 0
    Image.fromarray(rgba, "RGBA").save(folder / "transparent.png")
    Image.fromarray(rng.integers(0, 256, (90, 410), dtype=np.uint8), "L").save(folder / "gray.png")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    Image.fromarray(rng.integers(0, 256, (160, 250, 3), dtype=np.uint8)).save(
        folder / "turned.jpg", exif=exif, quality=92)

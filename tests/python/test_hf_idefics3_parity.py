"""`docfeed preprocess --preset idefics3` against the real Idefics3 image processor.

Runs in both transformers environments (`make test-python` runs the test_hf_* modules with
.venv/train, transformers 4.57.6, and .venv/hf5, transformers 5.x): the reference is the PIL
processor of the running generation, given `PIL.Image.open(path)` as a fine-tuning script gives
it, and docfeed reproduces that generation (--hf-version 4 or 5):
  * 4.x: Idefics3ImageProcessor (resizes first, converts to RGB last),
  * 5.x: Idefics3ImageProcessorPil (converts to RGB first). 5.x's default Idefics3ImageProcessor
    is the torchvision one, which docfeed does not reproduce (docs/idefics3-preprocessing.md).
Settings: SmolDocling-256M-preview's, as its preprocessor_config.json is documented to have them
(size {"longest_edge": 2048}, max_image_size {"longest_edge": 512}, do_image_splitting True;
nothing is downloaded, so they are written here), the processor class's defaults (1456 / 364,
Idefics3-8B's) and no splitting. Compared bit for bit: pixel_values (float32, as bits), the
pixel_attention_mask and the rows / cols the processor returns with return_row_col_info (docfeed
gives them through the prepared page's size), on every sample document, TIFF pages, and generated
pages: tiny, odd and extreme sizes, and every Pillow mode (gray, palette, transparency, RGBA).
The 4.x processor raises ValueError on every mode but RGB, RGBA and CMYK (its channel inference
fails on one or two bands: gray, palette, 1-bit, LA, 16-bit); for those docfeed gives what it
returns for image.convert("RGB"), and the test checks both halves of that. It reads CMYK's bands
as RGBA, which docfeed refuses.
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
    from transformers import Idefics3ImageProcessorPil as Processor
else:
    from transformers import Idefics3ImageProcessor as Processor

TIFF_CASES = pathlib.Path(__file__).resolve().parents[1] / "data" / "tiff" / "cases"
SMOLDOCLING = {"longest_edge": 2048, "max_image_size": 512}
CLASS_DEFAULT = {"longest_edge": 1456, "max_image_size": 364}
NO_SPLIT = {"longest_edge": 2048, "max_image_size": 512, "do_image_splitting": False}

# (name, width, height, mode, settings). Heights 1, 3 and 4 are avoided here: the 4.x processor
# then takes the first axis for channels (its infer_channel_dimension_format) and fails; 5.x
# cases below.
GENERATED = [
    ("tiny-2x2", 2, 2, "RGB", SMOLDOCLING),                # enlarged to 2048 x 2048: 4 x 4 tiles
    ("tiny-7x5-gray", 7, 5, "L", SMOLDOCLING),
    ("odd-513x511", 513, 511, "RGB", SMOLDOCLING),
    ("odd-1000x333", 1000, 333, "RGB", SMOLDOCLING),        # short side 681 -> even 682
    ("wide-3000x40", 3000, 40, "RGB", SMOLDOCLING),
    ("tall-30x2500", 30, 2500, "RGB", SMOLDOCLING),
    ("one-tile-400x300", 400, 300, "RGB", {"longest_edge": 512, "max_image_size": 512}),
    ("odd-edge-999", 640, 480, "RGB", {"longest_edge": 999, "max_image_size": 300}),
    ("huge-3000x1900", 3000, 1900, "RGB", {"longest_edge": 3000, "max_image_size": 512}),  # 6 x 4 tiles
    ("nosplit-600x800", 600, 800, "RGB", NO_SPLIT),
    ("mode-L", 301, 399, "L", SMOLDOCLING),
    ("mode-P", 300, 400, "P", SMOLDOCLING),
    ("mode-PA", 300, 400, "PA", SMOLDOCLING),
    ("mode-RGBA", 300, 400, "RGBA", SMOLDOCLING),
    ("mode-RGBA-364", 333, 517, "RGBA", CLASS_DEFAULT),
    ("mode-RGBA-opaque", 333, 517, "RGBA-opaque", SMOLDOCLING),  # docfeed resizes it as RGB
    ("mode-RGB-key", 300, 400, "RGB+key", SMOLDOCLING),
    ("mode-L-key", 300, 400, "L+key", SMOLDOCLING),
    ("mode-L-nosplit", 300, 400, "L", NO_SPLIT),
    ("mode-1", 300, 400, "1", SMOLDOCLING),
    ("mode-LA", 300, 400, "LA", SMOLDOCLING),
]
CLASS_DEFAULT_DOCS = ["invoices/AmazonWebServices.png", "sroie/023.jpg",
                      "receipts/cord_receipt_00004.png"]
TIFF_PAGES = ["doc_sroie_gray_lzw.tif", "rgb_jpeg_ycbcr.tif", "doc_azure_invoice_g4.tif",
              "gray16_le.tif"]
CMYK_PAGE = TIFF_CASES / "cmyk_lzw.tif"  # 4.x: refused; 5.x: compared


def cases():
    out = [(rel, SAMPLE_DOCS / rel, SMOLDOCLING) for rel in SAMPLES]
    out += [(f"{rel}@364", SAMPLE_DOCS / rel, CLASS_DEFAULT) for rel in CLASS_DEFAULT_DOCS]
    out += [(f"{CLASS_DEFAULT_DOCS[0]}@nosplit", SAMPLE_DOCS / CLASS_DEFAULT_DOCS[0], NO_SPLIT)]
    out += [(f"tiff/{name}", TIFF_CASES / name, SMOLDOCLING) for name in TIFF_PAGES]
    if HF_VERSION >= 5:
        out += [("tiff/cmyk_lzw.tif", CMYK_PAGE, SMOLDOCLING)]
        # 5.x moves the channel axis itself: pages 1, 3 or 4 pixels tall are fine there.
        out += [(f"short-{w}x{h}", (w, h, "RGB"), SMOLDOCLING) for w, h in ((9, 3), (700, 1))]
    out += [(name, (w, h, mode), settings) for name, w, h, mode, settings in GENERATED]
    return out


def settings_args(settings):
    args = ["--longest-edge", str(settings["longest_edge"]),
            "--max-image-size", str(settings["max_image_size"])]
    if not settings.get("do_image_splitting", True):
        args.append("--no-image-splitting")
    return args


def processor(settings):
    return Processor(size={"longest_edge": settings["longest_edge"]},
                     max_image_size={"longest_edge": settings["max_image_size"]},
                     do_image_splitting=settings.get("do_image_splitting", True))


def reference(path, settings):
    """The processor's output for Image.open(path); under 4.x, for a mode it raises on, its
    output for image.convert("RGB"), after checking that it raises."""
    proc = processor(settings)
    with Image.open(path) as img:
        if HF_VERSION < 5 and img.mode not in ("RGB", "RGBA", "CMYK"):
            with pytest.raises(ValueError):
                proc(img, return_tensors="np")
            img = img.convert("RGB")
        out = proc(img, return_tensors="np", return_row_col_info=True)
    return (np.asarray(out["pixel_values"]), np.asarray(out["pixel_attention_mask"]),
            out["rows"], out["cols"])


def image_path(source, tmp_path, name):
    if isinstance(source, tuple):
        w, h, mode = source
        path = tmp_path / f"{name}.png"
        if mode == "RGBA-opaque":
            make_image(path, w, h, "RGB")
            with Image.open(path) as img:
                img.convert("RGBA").save(path)
            with Image.open(path) as img:
                assert img.mode == "RGBA"
        else:
            make_image(path, w, h, mode)
        return path
    return source


def docfeed_outputs(path, settings, tmp_path):
    common = ["preprocess", path, "--preset", "idefics3", "--hf-version", str(HF_VERSION),
              *settings_args(settings)]
    run_docfeed(*common, "-o", tmp_path / "pv.npy")
    got = np.load(tmp_path / "pv.npy")
    # rows and cols: the prepared page is the grid with a band for the global image below it,
    # or one tile.
    run_docfeed(*common, "--stage", "resized", "-o", tmp_path / "prepared.npy")
    h, w, _ = np.load(tmp_path / "prepared.npy").shape
    s = settings["max_image_size"]
    rows, cols = (0, 0) if (h, w) == (s, s) else (h // s - 1, w // s)
    return got, rows, cols


@pytest.mark.parametrize("name,source,settings", cases(), ids=[c[0] for c in cases()])
def test_pixel_values_match_the_processor(name, source, settings, tmp_path):
    path = image_path(source, tmp_path, name)
    want, mask, want_rows, want_cols = reference(path, settings)
    got, rows, cols = docfeed_outputs(path, settings, tmp_path)
    s = settings["max_image_size"]
    assert want.dtype == np.float32 and want.shape == (1, got.shape[0], 3, s, s), want.shape
    assert got.dtype == np.float32, got.dtype
    assert np.array_equal(got.view(np.uint32), want[0].view(np.uint32)), (
        f"{name}: max difference {np.abs(got - want[0]).max()}")
    assert (want_rows, want_cols) == ([[rows]], [[cols]])
    # One image: every tile is real, so the processor's mask is all ones (the loader test checks
    # the padding of a batch).
    assert mask.shape == (1, got.shape[0], s, s) and mask.all()


@pytest.mark.skipif(HF_VERSION >= 5, reason="transformers 5 converts CMYK to RGB first")
def test_cmyk_is_refused_for_4x_which_reads_it_as_rgba(tmp_path):
    with Image.open(CMYK_PAGE) as img:
        assert img.mode == "CMYK"
        want = processor(SMOLDOCLING)(img, return_tensors="np")["pixel_values"]
        rgb = processor(SMOLDOCLING)(img.convert("RGB"), return_tensors="np")["pixel_values"]
    assert want.shape == rgb.shape and not np.array_equal(want, rgb)  # not a colour conversion
    proc = run_docfeed("preprocess", CMYK_PAGE, "--preset", "idefics3", "--hf-version", "4",
                       "-o", tmp_path / "pv.npy", check=False)
    assert proc.returncode == 1
    assert "mode CMYK" in proc.stderr and CMYK_PAGE.name in proc.stderr
    assert not (tmp_path / "pv.npy").exists()

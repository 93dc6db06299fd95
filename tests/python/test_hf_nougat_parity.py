"""`docfeed preprocess --preset nougat` against the real Nougat image processor.

Runs in both transformers environments (`make test-python` runs the test_hf_* modules with
.venv/train, transformers 4.57.6, and .venv/hf5, transformers 5.x): the reference is the slow
(PIL) processor of the running generation, given `PIL.Image.open(path)` as a script gives it,
and docfeed reproduces that generation (--hf-version 4 or 5):
  * 4.x: NougatImageProcessor. It has no colour conversion and raises on anything but an RGB
    image (an L page is 2-D: "Unsupported number of image dimensions"; LA / RGBA: "Unable to
    infer channel dimension format"), so a working 4.x pipeline converts first: the reference is
    given `image.convert("RGB")` for other modes (alpha dropped), which docfeed reproduces.
  * 5.x: NougatImageProcessorPil with do_convert_rgb=True (its default None raises on the same
    modes): transparency composited onto white.
Compared bit for bit: the resized stage (do_pad / rescale / normalize off, HWC uint8), the padded
stage (rescale / normalize off) and pixel_values (float32, as bits), on every sample document,
generated pages covering crop_margin (white margins of several sizes, one dark pixel, one-pixel
lines, light content, pages whose gray range puts values exactly on the threshold, all white,
all black, one gray value), tiny / huge / landscape pages with align_long_axis on and off, other
target sizes, the modes 1 / L / LA / P / PA / RGBA and tRNS colour keys (transparent margins
that are dark underneath), and TIFF pages (tests/data/tiff/cases).
"""
import pathlib

import numpy as np
import pytest
from PIL import Image

from conftest import SAMPLE_DOCS, run_docfeed
from test_donut_parity import SAMPLES, make_image, smooth_noise

transformers = pytest.importorskip("transformers")
HF_VERSION = int(transformers.__version__.split(".")[0])
if HF_VERSION >= 5:
    from transformers import NougatImageProcessorPil as SlowProcessor
else:
    from transformers import NougatImageProcessor as SlowProcessor

TIFF_CASES = pathlib.Path(__file__).resolve().parents[1] / "data" / "tiff" / "cases"
TIFF_PAGES = ["doc_azure_invoice_g4.tif", "doc_sroie_gray_lzw.tif", "rgb_jpeg_ycbcr.tif",
              "cmyk_lzw.tif", "gray16_le.tif", "bilevel_miniswhite.tif", "multipage_lzw.tif",
              "orientation6.tif", "la_raw.tif"]
STAGES = ("resized", "padded", "normalized")
DEFAULT = "896x672"


def margin_page(path, w, h, box, mode="RGB", background=255, seed=0, content=None):
    """A page of `background` with document-like content in box = (left, top, width, height);
    `content` (an (height, width, 3) uint8 array) replaces the generated noise."""
    arr = np.full((h, w, 3), background, np.uint8)
    left, top, bw, bh = box
    if bw > 0 and bh > 0:
        arr[top:top + bh, left:left + bw] = (smooth_noise(bw, bh, 3, seed) if content is None
                                             else content)
    save_mode(path, arr, mode, seed)


def save_mode(path, arr, mode, seed=0):
    """Saves the RGB array `arr` as a PNG of `mode`. Alpha modes get an alpha that is 0 on the
    left eighth (whatever colour is stored there), 255 on the right half and a ramp between."""
    h, w, _ = arr.shape
    img = Image.fromarray(arr)
    alpha = np.clip((np.arange(w) - w // 8) * 510 // max(w, 1), 0, 255).astype(np.uint8)
    alpha = np.broadcast_to(alpha, (h, w))
    if mode == "RGB":
        img.save(path)
    elif mode in ("L", "1"):
        img.convert(mode).save(path)
    elif mode == "LA":
        Image.merge("LA", (img.convert("L"), Image.fromarray(alpha))).save(path)
    elif mode == "RGBA":
        Image.merge("RGBA", (*img.split(), Image.fromarray(alpha))).save(path)
    elif mode == "P":
        img.quantize(colors=37).save(path)
    elif mode == "PA":  # a transparent palette entry: the darkest colour
        pal = img.quantize(colors=23)
        lum = [sum(pal.getpalette()[3 * i:3 * i + 3]) for i in range(23)]
        index = int(np.argmin(lum))
        pal.save(path, transparency=index)
    elif mode in ("RGB+key", "L+key"):  # the darkest value is the tRNS colour key
        if mode == "L+key":
            gray = np.asarray(img.convert("L"))
            Image.fromarray(gray).save(path, transparency=int(gray.min()))
        else:
            flat = arr.reshape(-1, 3)
            key = tuple(int(v) for v in flat[np.argmin(flat.astype(int).sum(axis=1))])
            img.save(path, transparency=key)
    else:
        raise ValueError(mode)


def ramp_content(lo, hi, bw, bh):
    """A block of background `hi` with one pixel of every gray value lo..hi on a diagonal, so
    the crop box's extent says exactly which values crop_margin counts as dark."""
    block = np.full((bh, bw, 3), hi, np.uint8)
    for i, v in enumerate(range(lo, hi + 1)):
        block[(i * 7) % bh, i % bw] = v
    return block


# (name, builder, "HxW", align): builder(path) writes the page.
def _page(w, h, box, mode="RGB", background=255, seed=0, content=None):
    return lambda path: margin_page(path, w, h, box, mode, background, seed, content)


def _noise(w, h, mode):
    return lambda path: make_image(path, w, h, mode)


GENERATED = [
    ("margins-wide", _page(600, 800, (150, 200, 300, 350)), DEFAULT, False),
    ("margins-thin", _page(700, 900, (1, 1, 698, 898)), DEFAULT, False),
    ("margins-asymmetric", _page(640, 880, (5, 300, 535, 578)), DEFAULT, False),
    ("margins-a4-200dpi", _page(1654, 2339, (180, 240, 1300, 1850), seed=3), DEFAULT, False),
    ("no-margin", _noise(500, 700, "RGB"), DEFAULT, False),
    ("gray-background-margins", _page(500, 650, (60, 90, 300, 400), background=230), DEFAULT,
     False),
    ("light-content", _page(500, 650, (40, 50, 400, 500),
                            content=np.full((500, 400, 3), 200, np.uint8) +
                            (smooth_noise(400, 500, 3, 1) % 55).astype(np.uint8)),
     DEFAULT, False),
    # Every gray value from lo to hi once: the box ends at the last value below the threshold
    # (float64 (v - lo) / (hi - lo) * 255 < 200; with lo 0, hi 255, v = 200 is 200.0 exactly).
    ("threshold-0-255", _page(400, 500, (20, 30, 256, 300), content=ramp_content(0, 255, 256, 300)),
     DEFAULT, False),
    ("threshold-10-250", _page(400, 500, (0, 0, 241, 400), background=250,
                               content=ramp_content(10, 250, 241, 400)), DEFAULT, False),
    ("threshold-100-151", _page(300, 400, (0, 0, 52, 390), background=151,
                                content=ramp_content(100, 151, 52, 390)), DEFAULT, False),
    ("threshold-3-4", _page(300, 400, (100, 100, 2, 2), background=4,
                            content=np.array([[[3] * 3, [4] * 3], [[4] * 3, [3] * 3]],
                                             np.uint8)), DEFAULT, False),
    ("one-dark-pixel", _page(400, 500, (123, 321, 1, 1), content=np.zeros((1, 1, 3), np.uint8)),
     DEFAULT, False),
    ("one-pixel-row", _page(400, 500, (50, 250, 30, 1), content=np.zeros((1, 30, 3), np.uint8)),
     DEFAULT, False),
    ("one-pixel-column", _page(400, 500, (250, 50, 1, 40),
                               content=np.zeros((40, 1, 3), np.uint8)), DEFAULT, False),
    ("all-white", _page(400, 500, (0, 0, 0, 0)), DEFAULT, False),
    ("all-black", _page(400, 500, (0, 0, 0, 0), background=0), DEFAULT, False),
    ("all-one-gray", _page(300, 200, (0, 0, 0, 0), background=137), DEFAULT, False),
    ("all-white-gray-mode", _page(400, 500, (0, 0, 0, 0), mode="L"), DEFAULT, False),
    ("tiny-2x2", _noise(2, 2, "RGB"), DEFAULT, False),
    ("tiny-5x4-margin", _page(5, 4, (1, 1, 2, 2)), DEFAULT, False),
    ("huge", _page(3000, 4200, (200, 300, 2500, 3500), seed=5), DEFAULT, False),
    ("landscape", _page(1400, 1000, (100, 50, 1200, 880)), DEFAULT, False),
    ("landscape-align", _page(1400, 1000, (100, 50, 1200, 880)), DEFAULT, True),
    ("portrait-align-no-op", _page(700, 1000, (30, 40, 600, 900)), DEFAULT, True),
    ("portrait-landscape-target-align", _page(700, 1000, (30, 40, 600, 900)), "672x896", True),
    ("landscape-target", _page(700, 1000, (30, 40, 600, 900)), "672x896", False),
    ("small-target-reduce", _page(1600, 2200, (100, 100, 1400, 2000)), "224x168", False),
    ("square-target", _page(600, 800, (50, 60, 500, 700)), "512x512", False),
    ("mode-1", _page(500, 700, (60, 80, 380, 540), mode="1"), DEFAULT, False),
    ("mode-L", _page(501, 699, (60, 80, 380, 540), mode="L"), DEFAULT, False),
    ("mode-LA", _page(500, 700, (20, 80, 380, 540), mode="LA"), DEFAULT, False),
    ("mode-P", _page(500, 700, (60, 80, 380, 540), mode="P"), DEFAULT, False),
    ("mode-PA", _page(500, 700, (60, 80, 380, 540), mode="PA"), DEFAULT, False),
    # Dark but transparent on the left: 4.x crops to it, 5.x sees white there.
    ("mode-RGBA-dark-transparent", _page(500, 700, (10, 80, 380, 540), mode="RGBA",
                                          background=0), DEFAULT, False),
    ("mode-RGBA", _page(500, 700, (60, 80, 380, 540), mode="RGBA"), DEFAULT, False),
    ("mode-RGB-key", _page(500, 700, (60, 80, 380, 540), mode="RGB+key"), DEFAULT, False),
    ("mode-L-key", _page(500, 700, (60, 80, 380, 540), mode="L+key"), DEFAULT, False),
    ("noise-L", _noise(413, 587, "L"), DEFAULT, False),
    ("noise-LA", _noise(167, 233, "LA"), DEFAULT, False),
    ("noise-P", _noise(350, 461, "P"), DEFAULT, False),
    ("noise-RGBA", _noise(402, 503, "RGBA"), DEFAULT, False),
    ("noise-1", _noise(250, 333, "1"), DEFAULT, False),
]


def cases():
    out = []
    for rel in SAMPLES:
        out.append((rel, SAMPLE_DOCS / rel, DEFAULT, False))
    out += [(f"tiff/{name}", TIFF_CASES / name, DEFAULT, False) for name in TIFF_PAGES]
    out += [(name, builder, hw, align) for name, builder, hw, align in GENERATED]
    return out


CASES = cases()


def reference(path, hw, align, stage):
    """The processor's output for one stage: HWC uint8 for resized/padded, CHW float32 else."""
    h, w = (int(v) for v in hw.split("x"))
    init = {"size": {"height": h, "width": w}, "do_align_long_axis": align}
    if stage in ("resized", "padded"):
        init.update(do_rescale=False, do_normalize=False)
    if stage == "resized":
        init["do_pad"] = False
    proc = SlowProcessor(**init)
    with Image.open(path) as img:
        if HF_VERSION >= 5:
            out = proc(img, do_convert_rgb=True)["pixel_values"][0]
        else:
            rgb = img if img.mode == "RGB" else img.convert("RGB")
            out = proc(rgb, return_tensors="np")["pixel_values"][0]
    out = np.asarray(out)
    return out if stage == "normalized" else out.transpose(1, 2, 0)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The generated pages, written once per module."""
    root = tmp_path_factory.mktemp("nougat-pages")
    out = {}
    for name, builder, _, _ in GENERATED:
        path = root / f"{name}.png"
        builder(path)
        out[name] = path
    return out


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("name,source,hw,align", CASES, ids=[c[0] for c in CASES])
def test_stage_matches_the_processor(name, source, hw, align, stage, pages, tmp_path):
    path = pages[name] if callable(source) else source
    want = reference(path, hw, align, stage)
    args = ["preprocess", path, "--preset", "nougat", "--hf-version", str(HF_VERSION),
            "--size", hw, "--stage", stage, "-o", tmp_path / "out.npy"]
    if align:
        args.append("--align-long-axis")
    run_docfeed(*args)
    got = np.load(tmp_path / "out.npy")
    assert got.shape == want.shape, (got.shape, want.shape)
    if stage == "normalized":
        assert got.dtype == np.float32
        want = want.astype(np.float32)
        same = got.view(np.uint32) == want.view(np.uint32)
        assert same.all(), (f"{name}: {np.count_nonzero(~same)} values differ, max difference "
                            f"{np.abs(got - want).max()}")
    else:
        assert got.dtype == np.uint8 and want.dtype == np.uint8, want.dtype
        diff = np.abs(got.astype(int) - want.astype(int))
        assert diff.max() == 0, (f"{name}: {np.count_nonzero(diff)} values differ by up to "
                                 f"{diff.max()}")


def test_default_size_and_normalization_are_the_checkpoints(tmp_path):
    """Without --size the output is 3 x 896 x 672, normalized with ImageNet's mean/std."""
    path = tmp_path / "page.png"
    margin_page(path, 600, 800, (100, 120, 400, 500))
    run_docfeed("preprocess", path, "--preset", "nougat", "--hf-version", str(HF_VERSION),
                "-o", tmp_path / "pv.npy")
    got = np.load(tmp_path / "pv.npy")
    proc = SlowProcessor()
    assert proc.size["height"] == 896 and proc.size["width"] == 672
    assert list(proc.image_mean) == [0.485, 0.456, 0.406]
    with Image.open(path) as img:
        want = np.asarray(proc(img, do_convert_rgb=True)["pixel_values"][0]
                          if HF_VERSION >= 5 else proc(img, return_tensors="np")["pixel_values"][0])
    assert got.shape == (3, 896, 672)
    assert np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32))


def test_options_of_other_presets_are_refused(tmp_path):
    path = tmp_path / "page.png"
    margin_page(path, 60, 80, (10, 10, 40, 60))
    for extra in (["--fast"], ["--hf-version", "5", "--backend", "torchvision"]):
        proc = run_docfeed("preprocess", path, "--preset", "nougat", *extra, "-o",
                           tmp_path / "x.npy", check=False)
        assert proc.returncode == 2 and "nougat" in proc.stderr, proc.stderr

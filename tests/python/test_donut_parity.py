"""`docfeed preprocess --preset donut` against the real DonutImageProcessor (transformers 4.57.6).

The reference is transformers' slow/PIL processor given `PIL.Image.open(path)`, exactly as a
Donut fine-tuning script calls it. transformers 4.x needs huggingface-hub<1.0, which conflicts
with datasets 5.x in .venv, so it lives in its own directory (.venv/donut-ref, see
python/requirements-donut-ref.txt; installed by `make venv`) and runs in one subprocess that
computes every reference array of the session. Pillow and numpy are .venv's own.

Compared: the resized stage (do_pad/rescale/normalize off, HWC uint8), the centred padded stage
(rescale/normalize off, HWC uint8) and pixel_values (CHW float32, bit for bit), on every sample
document and on generated images (tiny, huge, very tall/wide, landscape, L/LA/P/RGBA/1, sizes
that make the thumbnail run Pillow's reduce() step, align_long_axis), on TIFF files (generated
G4/LZW/JPEG/palette/Orientation-tagged ones and the document pages of tests/data/tiff/cases).
Random padding cannot
match numpy's stream (docfeed has its own generator); it is checked for range, reachability of
every offset, determinism, and the same placement semantics as the processor's.
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import REPO, SAMPLE_DOCS, run_docfeed

TRANSFORMERS_VERSION = "4.57.6"
REF_DIR = pathlib.Path(os.environ.get("DOCFEED_DONUT_REF", REPO / ".venv" / "donut-ref"))
REF_REQUIREMENTS = REPO / "python" / "requirements-donut-ref.txt"

SAMPLES = sorted(str(p.relative_to(SAMPLE_DOCS)) for p in SAMPLE_DOCS.rglob("*")
                 if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
# Full pages also checked at the cord-v2 size and at the resized stage (the rest: 1553x1200).
FULL_PAGE_EXTRA = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
                   "receipts/cord_receipt_00004.png", "invoices/FlipkartInvoice.png"]

# The reference worker: reads jobs (JSON) and writes one .npy per job.
WORKER = r"""
import json, sys
import numpy as np
from PIL import Image
import transformers
from transformers import DonutImageProcessor
assert transformers.__version__ == sys.argv[2], transformers.__version__
jobs = json.load(open(sys.argv[1]))
for job in jobs:
    if job["kind"] == "sizes":
        out = {}
        for key, size in job["sizes"].items():
            p = DonutImageProcessor(size=size)
            out[key] = [p.size, p.preprocess(Image.new("RGB", (10, 20)), size=size,
                                            return_tensors="np")["pixel_values"].shape[2:]]
        json.dump(out, open(job["out"], "w"), default=list)
        continue
    proc = DonutImageProcessor(**job["init"])
    if job["kind"] == "random_offsets":
        img = Image.open(job["image"])
        resized = proc(img, do_pad=False, data_format="channels_last",
                       return_tensors="np")["pixel_values"][0]
        h, w = resized.shape[:2]
        seen = set()
        for seed in range(job["seeds"]):
            np.random.seed(seed)
            padded = proc(img, random_padding=True, data_format="channels_last",
                          return_tensors="np")["pixel_values"][0]
            H, W = padded.shape[:2]
            found = [(t, l) for t in range(H - h + 1) for l in range(W - w + 1)
                     if np.array_equal(padded[t:t + h, l:l + w], resized)]
            assert len(found) == 1, found
            seen.add(found[0])
        json.dump(sorted(seen), open(job["out"], "w"))
        continue
    with Image.open(job["image"]) as img:
        out = proc(img, return_tensors="np", **job["call"])["pixel_values"][0]
    np.save(job["out"], out)
"""


def ensure_reference_env():
    # Installed by `make venv` (Makefile), never downloaded by a test.
    assert (REF_DIR / "transformers" / "__init__.py").exists(), (
        f"{REF_DIR} lacks the transformers 4.x reference; run `make venv` "
        f"(pip install --no-deps --target {REF_DIR} -r {REF_REQUIREMENTS})")


def run_reference(jobs, tmp):
    ensure_reference_env()
    job_file = tmp / "jobs.json"
    job_file.write_text(json.dumps(jobs))
    env = dict(os.environ, PYTHONPATH=str(REF_DIR), TRANSFORMERS_VERBOSITY="error")
    proc = subprocess.run([sys.executable, "-c", WORKER, str(job_file), TRANSFORMERS_VERSION],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


# ---- cases ----

def smooth_noise(w, h, channels, seed):
    """Document-like content: a gradient, blocks and noise (compresses, resamples non-trivially)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = (x * 255 // max(w - 1, 1) + y * 128 // max(h - 1, 1)) % 256
    blocks = ((x // 7 + y // 5) % 3) * 60
    noise = rng.integers(0, 40, size=(h, w))
    planes = [(base + blocks * (c + 1) + noise) % 256 for c in range(channels)]
    return np.stack(planes, axis=-1).astype(np.uint8)


def make_image(path, w, h, mode, seed=0):
    if mode == "1":
        img = Image.fromarray(smooth_noise(w, h, 1, seed)[..., 0] > 127)
    elif mode == "P":
        img = Image.fromarray(smooth_noise(w, h, 3, seed)).quantize(colors=37)
    elif mode == "PA":  # palette with a transparent entry (decodes to RGBA)
        img = Image.fromarray(smooth_noise(w, h, 3, seed)).quantize(colors=23)
        img.info["transparency"] = 3
    elif mode.endswith("+key"):  # a tRNS colour key (mode 1, L or RGB): every 6th row is it
        base = mode[:-4]
        channels = 3 if base == "RGB" else 1
        arr = smooth_noise(w, h, channels, seed)
        key = (200, 40, 90)[:channels] if base != "1" else (0,)
        arr[::6] = key
        if base == "1":
            img = Image.fromarray(arr[..., 0] > 127)
        else:
            img = Image.fromarray(arr[..., 0] if channels == 1 else arr, base)
        img.save(path, transparency=key if channels == 3 else key[0])
        return
    else:
        channels = len(mode)
        arr = smooth_noise(w, h, channels, seed)
        img = Image.fromarray(arr[..., 0] if channels == 1 else arr, mode)
    img.save(path, transparency=img.info.get("transparency")) if mode == "PA" else img.save(path)


_rng = np.random.default_rng(20240601)
# (name, width, height, mode, target "HxW", align_long_axis)
GENERATED = [
    # Heights 1 and 3 are avoided: the processor then guesses channels-first and fails.
    ("tiny-1x2", 1, 2, "RGB", "1553x1200", False),
    ("tiny-3x2", 3, 2, "L", "155x120", False),
    ("tiny-17x9-rgba", 17, 9, "RGBA", "1553x1200", False),
    ("small-upscale", 60, 80, "RGB", "1553x1200", False),
    ("exact-target", 120, 155, "RGB", "155x120", False),
    ("one-short", 1200, 1552, "L", "1553x1200", False),
    ("huge-smooth", 3000, 4000, "RGB", "155x120", False),
    ("very-tall", 100, 5000, "RGB", "155x120", False),
    ("tall-doc-example", 800, 5000, "L", "1553x1200", False),
    ("very-wide", 5000, 100, "RGB", "155x120", False),
    ("landscape", 2000, 1000, "RGB", "1553x1200", False),
    ("landscape-small", 301, 97, "LA", "155x120", False),
    ("gray", 413, 587, "L", "155x120", False),
    ("gray-1bit", 250, 333, "1", "155x120", False),
    ("palette", 350, 461, "P", "155x120", False),
    ("palette-transparent", 229, 311, "PA", "155x120", False),
    ("rgba", 402, 503, "RGBA", "155x120", False),
    ("la", 167, 233, "LA", "155x120", False),
    # A tRNS colour key: 4.x's convert("RGB") ignores it, 5.x's convert_to_rgb makes those
    # pixels transparent and composites them onto white.
    ("gray-colour-key", 233, 311, "L+key", "155x120", False),
    ("rgb-colour-key", 311, 233, "RGB+key", "155x120", False),
    ("1bit-colour-key", 250, 333, "1+key", "155x120", False),
    # Thumbnails shrinking >= 4x run Pillow's reduce() first (here 3x3 and 2x2 with a
    # fractional box); very-tall, very-wide and tall-doc-example do too.
    ("reduce-step-3x", 250, 2400, "RGB", "60x40", False),
    ("reduce-step-odd", 300, 2000, "L", "60x47", False),
    ("square", 500, 500, "RGB", "155x120", False),
    ("square-target", 300, 500, "RGB", "128x128", False),
    ("landscape-target", 300, 500, "RGB", "96x160", False),
    ("align-rotates", 2000, 1000, "RGB", "155x120", True),
    ("align-rotates-gray", 501, 219, "L", "155x120", True),
    ("align-landscape-target", 219, 501, "RGB", "96x160", True),
    ("align-no-op", 219, 501, "RGB", "155x120", True),
] + [  # Random shapes, modes and targets (fixed seed).
    (f"random-{i}", int(w), int(h), mode, f"{th}x{tw}", bool(align))
    for i, (w, h, mode, th, tw, align) in enumerate(zip(
        _rng.integers(2, 900, 12), _rng.integers(4, 900, 12),
        _rng.choice(["L", "RGB", "RGBA", "LA", "P"], 12), _rng.integers(8, 200, 12),
        _rng.integers(8, 200, 12), _rng.integers(0, 2, 12)))
    if h != 3  # (see tiny-1x2)
]

# TIFF inputs: (name, width, height, mode, target "HxW", Pillow save options). Pillow applies a
# TIFF's Orientation tag when it loads the page, so the processor sees the turned image.
GENERATED_TIFF = [
    ("tiff-g4-a4-page", 1240, 1754, "1", "1553x1200", {"compression": "group4"}),
    ("tiff-lzw-rgb", 413, 587, "RGB", "155x120", {"compression": "tiff_lzw"}),
    ("tiff-jpeg-rgb", 350, 461, "RGB", "155x120", {"compression": "jpeg"}),
    ("tiff-palette-deflate", 229, 311, "P", "155x120", {"compression": "tiff_adobe_deflate"}),
    ("tiff-rgba-packbits", 167, 233, "RGBA", "155x120", {"compression": "packbits"}),
    ("tiff-orientation6", 300, 200, "L", "155x120", {"compression": "tiff_lzw",
                                                     "tiffinfo": {274: 6}}),
]
TIFF_CASES = REPO / "tests" / "data" / "tiff" / "cases"
TIFF_PAGES = ["doc_azure_invoice_g4.tif", "doc_sroie_gray_lzw.tif", "rgb_jpeg_ycbcr.tif",
              "multipage_lzw.tif", "cmyk_lzw.tif", "gray16_le.tif"]

STAGES = ("resized", "padded", "normalized")
# In a 12x11 (HxW) canvas: tiny-3x2 resizes to 11x7 (room below), gray to 8x12 (room right).
RANDOM_PAD_IMAGES = ("tiny-3x2", "gray")


def stage_job(image, hw, stage, align, out):
    h, w = (int(v) for v in hw.split("x"))
    init = {"size": {"height": h, "width": w}, "do_align_long_axis": align}
    call = {}
    if stage in ("resized", "padded"):
        init.update(do_rescale=False, do_normalize=False)
        call["data_format"] = "channels_last"
    if stage == "resized":
        init["do_pad"] = False
    return {"kind": "stage", "image": str(image), "init": init, "call": call, "out": str(out)}


def all_cases(gen_dir):
    """(id, image path, "HxW", align, stage) for every comparison."""
    cases = []
    for rel in SAMPLES:
        for stage in ("padded", "normalized"):
            cases.append((f"{rel}@1553x1200-{stage}", SAMPLE_DOCS / rel, "1553x1200", False, stage))
    for rel in FULL_PAGE_EXTRA:
        cases.append((f"{rel}@1553x1200-resized", SAMPLE_DOCS / rel, "1553x1200", False, "resized"))
        cases.append((f"{rel}@1280x960-normalized", SAMPLE_DOCS / rel, "1280x960", False,
                      "normalized"))
    for name, w, h, mode, hw, align in GENERATED:
        for stage in STAGES:
            cases.append((f"{name}-{stage}", gen_dir / f"{name}.png", hw, align, stage))
    for name, _, _, _, hw, _ in GENERATED_TIFF:
        for stage in STAGES:
            cases.append((f"{name}-{stage}", gen_dir / f"{name}.tif", hw, False, stage))
    for name in TIFF_PAGES:
        cases.append((f"{name}@1553x1200-normalized", TIFF_CASES / name, "1553x1200", False,
                      "normalized"))
    return cases


CASE_IDS = ([f"{r}@1553x1200-{s}" for r in SAMPLES for s in ("padded", "normalized")]
            + [f"{r}@{hw}-{s}" for r in FULL_PAGE_EXTRA
               for hw, s in (("1553x1200", "resized"), ("1280x960", "normalized"))]
            + [f"{g[0]}-{s}" for g in GENERATED for s in STAGES]
            + [f"{g[0]}-{s}" for g in GENERATED_TIFF for s in STAGES]
            + [f"{name}@1553x1200-normalized" for name in TIFF_PAGES])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("donut")
    gen_dir = tmp / "gen"
    gen_dir.mkdir()
    for name, w, h, mode, _, _ in GENERATED:
        make_image(gen_dir / f"{name}.png", w, h, mode, seed=w * 7 + h)
    for name, w, h, mode, _, options in GENERATED_TIFF:
        make_image(gen_dir / f"{name}.png", w, h, mode, seed=w * 5 + h)
        Image.open(gen_dir / f"{name}.png").save(gen_dir / f"{name}.tif", **options)
    cases = {c[0]: c for c in all_cases(gen_dir)}
    jobs = [stage_job(img, hw, stage, align, tmp / f"ref-{i}.npy")
            for i, (_, img, hw, align, stage) in enumerate(cases.values())]
    jobs.append({"kind": "sizes", "out": str(tmp / "sizes.json"), "sizes": {
        "legacy_recipe": [1200, 1553], "legacy_cord": [960, 1280],
        "dict": {"height": 1553, "width": 1200}}})
    for name in RANDOM_PAD_IMAGES:
        jobs.append({"kind": "random_offsets", "image": str(gen_dir / f"{name}.png"),
                     "seeds": 200, "init": {"size": {"height": 12, "width": 11}},
                     "out": str(tmp / f"rand-{name}.json")})
    run_reference(jobs, tmp)
    refs = {cid: (case, tmp / f"ref-{i}.npy") for i, (cid, case) in enumerate(cases.items())}
    return {"cases": refs, "tmp": tmp, "gen_dir": gen_dir,
            "sizes": json.loads((tmp / "sizes.json").read_text()),
            "random_offsets": {name: {tuple(o) for o in json.loads(
                (tmp / f"rand-{name}.json").read_text())} for name in RANDOM_PAD_IMAGES}}


def docfeed_stage(image, hw, stage, out, *extra):
    run_docfeed("preprocess", image, "--preset", "donut", "--size", hw, "--stage", stage,
                "-o", out, *extra)
    return np.load(out)


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_matches_transformers(reference, case_id, tmp_path):
    (_, image, hw, align, stage), ref_path = reference["cases"][case_id]
    extra = ["--align-long-axis"] if align else []
    got = docfeed_stage(image, hw, stage, tmp_path / "out.npy", *extra)
    want = np.load(ref_path)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    if stage == "normalized":  # bit for bit, not merely ==
        got, want = got.view(np.uint32), want.view(np.uint32)
    if not np.array_equal(got, want):
        diff = np.argwhere(got != want)
        pytest.fail(f"{case_id}: {len(diff)} elements differ, first at {diff[0].tolist()}")


def test_legacy_size_list_is_width_height(reference):
    sizes = reference["sizes"]
    assert sizes["legacy_recipe"][0] == {"height": 1553, "width": 1200}
    assert sizes["legacy_cord"][0] == {"height": 1280, "width": 960}
    assert sizes["dict"][0] == {"height": 1553, "width": 1200}
    # The call-time size list is reversed the same way.
    assert list(sizes["legacy_recipe"][1]) == [1553, 1200]
    assert list(sizes["legacy_cord"][1]) == [1280, 960]


def test_png_output_equals_npy(tmp_path):
    image = SAMPLE_DOCS / "invoices" / "simple-invoice.png"
    arr = docfeed_stage(image, "155x120", "padded", tmp_path / "a.npy")
    run_docfeed("preprocess", image, "--preset", "donut", "--size", "155x120", "--stage",
                "padded", "-o", tmp_path / "a.png")
    assert np.array_equal(np.asarray(Image.open(tmp_path / "a.png")), arr)


def test_float16_is_rounded_float32(tmp_path):
    image = SAMPLE_DOCS / "sroie" / "000.jpg"
    f32 = docfeed_stage(image, "155x120", "normalized", tmp_path / "a.npy")
    f16 = docfeed_stage(image, "155x120", "normalized", tmp_path / "b.npy", "--dtype", "float16")
    assert f16.dtype == np.float16
    assert np.array_equal(f16.view(np.uint16), f32.astype(np.float16).view(np.uint16))
    hwc = docfeed_stage(image, "155x120", "normalized", tmp_path / "c.npy", "--layout", "hwc")
    assert np.array_equal(hwc, f32.transpose(1, 2, 0))


# ---- random padding ----

def placement(padded, resized):
    """(top, left) where `resized` sits in `padded`; asserts the rest is 0."""
    h, w = resized.shape[:2]
    for top in range(padded.shape[0] - h + 1):
        for left in range(padded.shape[1] - w + 1):
            if np.array_equal(padded[top:top + h, left:left + w], resized):
                rest = padded.copy()
                rest[top:top + h, left:left + w] = 0
                assert not rest.any()
                return top, left
    raise AssertionError("resized image not found in the padded one")


@pytest.mark.parametrize("name", RANDOM_PAD_IMAGES)
def test_random_padding_range_reachability_determinism(reference, name, tmp_path):
    image = reference["gen_dir"] / f"{name}.png"
    resized = docfeed_stage(image, "12x11", "resized", tmp_path / "r.npy")
    dh, dw = 12 - resized.shape[0], 11 - resized.shape[1]
    assert dh + dw >= 3, resized.shape  # one of them is 0: the thumbnail fills one side
    seen = set()
    for seed in range(60):
        padded = docfeed_stage(image, "12x11", "padded", tmp_path / "p.npy", "--pad", "random",
                               "--seed", seed)
        top, left = placement(padded, resized)
        assert 0 <= top <= dh and 0 <= left <= dw
        seen.add((top, left))
    grid = {(t, l) for t in range(dh + 1) for l in range(dw + 1)}
    assert seen == grid
    # The processor reaches exactly the same offsets (inclusive ranges, same placement, pad 0).
    assert reference["random_offsets"][name] == grid
    again = [docfeed_stage(image, "12x11", "padded", tmp_path / f"s{i}.npy", "--pad", "random",
                           "--seed", 77) for i in range(2)]
    assert np.array_equal(again[0], again[1])
    normalized = docfeed_stage(image, "12x11", "normalized", tmp_path / "n.npy", "--pad",
                               "random", "--seed", 77)
    expected = ((again[0].astype(np.float64) * (1 / 255)).astype(np.float32) - np.float32(0.5))
    expected = (expected / np.float32(0.5)).transpose(2, 0, 1)
    assert np.array_equal(normalized.view(np.uint32), expected.view(np.uint32))


def test_random_padding_on_a_page_stays_in_range(tmp_path):
    image = SAMPLE_DOCS / "sroie" / "027.jpg"
    resized = docfeed_stage(image, "1553x1200", "resized", tmp_path / "r.npy")  # 1098 x 1553
    dw = 1200 - resized.shape[1]
    lefts = set()
    for seed in (1, 2, 3):
        padded = docfeed_stage(image, "1553x1200", "padded", tmp_path / "p.npy", "--pad",
                               "random", "--seed", seed)
        top, left = placement(padded, resized)
        assert top == 0 and 0 <= left <= dw
        lefts.add(left)
    assert len(lefts) > 1


def test_rejects_bad_arguments(tmp_path):
    image = SAMPLE_DOCS / "sroie" / "000.jpg"
    for args in (["--size", "12"], ["--size", "0x5"], ["--stage", "decoded"], ["--pad", "left"],
                 ["--preset", "layoutlmv3"], ["--seed", "-1"]):
        proc = run_docfeed("preprocess", image, *args, "-o", tmp_path / "x.npy", check=False)
        assert proc.returncode == 2, args
    proc = run_docfeed("preprocess", image, "--preset", "donut", "--stage", "normalized",
                       "-o", tmp_path / "x.png", check=False)
    assert proc.returncode == 1 and ".png" in proc.stderr
    proc = run_docfeed("preprocess", tmp_path / "missing.jpg", "-o", tmp_path / "x.npy",
                       check=False)
    assert proc.returncode == 1 and "missing.jpg" in proc.stderr

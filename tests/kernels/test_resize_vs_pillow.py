"""Byte parity of docfeed's Resize()/Reduce() with real Pillow.

Runs `$DOCFEED_BUILD_DIR/bin/resize_probe` (default build dir: `build`) on seeded random and
document-like images and requires the exact bytes that Pillow's `Image.resize`, `Image.reduce`
and `Image.thumbnail` produce, with the SIMD kernels and with DOCFEED_SIMD=scalar.

Run: .venv/bin/python -m pytest tests/kernels -q
"""

import os
import pathlib
import subprocess
import tempfile

import numpy as np
import pytest
from PIL import Image

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("DOCFEED_BUILD_DIR", "build"))
PROBE = (BUILD if BUILD.is_absolute() else REPO / BUILD) / "bin" / "resize_probe"

MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
FILTERS = {
    "nearest": Image.Resampling.NEAREST,
    "box": Image.Resampling.BOX,
    "bilinear": Image.Resampling.BILINEAR,
    "hamming": Image.Resampling.HAMMING,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
}
SIMD_MODES = ["auto", "scalar"]

pytestmark = pytest.mark.skipif(not PROBE.exists(), reason=f"{PROBE} not built")


def noise_image(rng, w, h, c):
    return rng.integers(0, 256, size=(h, w, c), dtype=np.uint8)


def document_image(rng, w, h, c):
    """White page, dark text-like strokes, a grey box and mild noise."""
    page = np.full((h, w, c), 255, dtype=np.int16)
    pitch = max(6, h // 60)
    for y0 in range(pitch, h - pitch, pitch):
        x = int(rng.integers(0, max(1, w // 10)))
        while x < w - 2:
            word = int(rng.integers(3, max(4, w // 12)))
            stroke_h = max(1, pitch // 2)
            page[y0 : y0 + stroke_h, x : x + word] = rng.integers(0, 70)
            x += word + int(rng.integers(2, max(3, w // 40)))
    page[h // 3 : h // 3 + h // 10, w // 5 : w // 2] -= 60
    page -= rng.integers(0, 8, size=page.shape, dtype=np.int16)
    if c in (2, 4):
        page[..., -1] = rng.integers(0, 256, size=(h, w))
    return np.clip(page, 0, 255).astype(np.uint8)


def to_pil(arr):
    c = arr.shape[2]
    return Image.fromarray(arr[..., 0] if c == 1 else arr, MODES[c])


def from_pil(im):
    arr = np.asarray(im)
    return arr[..., None] if arr.ndim == 2 else arr


def run_probe(arr, args, simd):
    h, w, c = arr.shape
    env = dict(os.environ)
    env.pop("DOCFEED_SIMD", None)
    if simd == "scalar":
        env["DOCFEED_SIMD"] = "scalar"
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = pathlib.Path(tmp, "in.raw"), pathlib.Path(tmp, "out.raw")
        src.write_bytes(np.array([w, h, c], "<i4").tobytes() + arr.tobytes())
        subprocess.run([str(PROBE), str(src), str(dst), *map(str, args)], check=True, env=env)
        raw = dst.read_bytes()
    ow, oh, oc = np.frombuffer(raw[:12], "<i4")
    return np.frombuffer(raw[12:], np.uint8).reshape(oh, ow, oc)


def assert_same(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if not np.array_equal(got, want):
        diff = np.abs(got.astype(int) - want.astype(int))
        idx = np.argwhere(diff)[:5].tolist()
        pytest.fail(f"{what}: {np.count_nonzero(diff)} bytes differ, max {diff.max()}, at {idx}")


def check_resize(arr, size, filt, box=None, gap=None, simd="auto"):
    want = from_pil(to_pil(arr).resize(size, FILTERS[filt], box=box, reducing_gap=gap))
    args = ["resize", size[0], size[1], filt]
    if box is not None:
        args += ["--box", *[repr(float(v)) for v in box]]
    if gap is not None:
        args += ["--gap", repr(float(gap))]
    got = run_probe(arr, args, simd)
    assert_same(got, want, f"{arr.shape} -> {size} {filt} box={box} gap={gap} simd={simd}")


def random_cases(count, seed):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        c = [1, 3, 2, 4][i % 4]
        w, h = (int(v) for v in rng.integers(1, 260, size=2))
        ow, oh = (int(v) for v in rng.integers(1, 300, size=2))
        filt = list(FILTERS)[i % len(FILTERS)]
        box = None
        if rng.random() < 0.35 and w > 1 and h > 1:
            x0, x1 = sorted(rng.uniform(0, w, size=2))
            y0, y1 = sorted(rng.uniform(0, h, size=2))
            if x1 - x0 > 0.05 and y1 - y0 > 0.05:
                box = (float(x0), float(y0), float(x1), float(y1))
        gap = [None, None, 2.0, 3.0, 1.5][i % 5]
        kind = "doc" if i % 3 == 0 else "noise"
        cases.append((i, kind, w, h, c, (ow, oh), filt, box, gap))
    return cases


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("case", random_cases(90, seed=2024), ids=lambda c: f"r{c[0]}")
def test_random_resize(case, simd):
    i, kind, w, h, c, size, filt, box, gap = case
    rng = np.random.default_rng(1000 + i)
    arr = (document_image if kind == "doc" else noise_image)(rng, w, h, c)
    check_resize(arr, size, filt, box, gap, simd)


# (w, h, c), size, filter, box, reducing_gap. Strong downscales, where reducing_gap actually
# triggers reduce(), fractional boxes and integral crop boxes.
GAP_CASES = [
    ((997, 613, 3), (101, 67), "bicubic", None, 2.0),
    ((997, 613, 1), (55, 300), "bilinear", None, 3.0),
    ((640, 480, 3), (100, 75), "lanczos", (13.0, 7.0, 601.0, 470.0), 2.0),
    ((640, 480, 4), (97, 51), "bicubic", None, 2.0),
    ((333, 777, 2), (40, 41), "hamming", (0.5, 1.25, 300.75, 700.5), 3.0),
    ((501, 403, 3), (50, 40), "box", None, 2.0),
    ((400, 300, 3), (120, 90), "bicubic", (10.0, 20.0, 130.0, 110.0), None),  # crop shortcut
    ((400, 300, 3), (120, 90), "nearest", (10.0, 20.0, 130.0, 110.0), None),
    ((400, 300, 4), (50, 31), "nearest", (1.5, 2.5, 333.25, 299.0), 2.0),
]


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("case", GAP_CASES, ids=lambda c: f"{c[0]}->{c[1]}-{c[2]}-gap{c[4]}")
def test_reducing_gap_and_box(case, simd):
    (w, h, c), size, filt, box, gap = case
    rng = np.random.default_rng(w + h + c + size[0])
    arr = document_image(rng, w, h, c)
    check_resize(arr, size, filt, box, gap, simd)


EXTREME_CASES = [
    ((1, 500, 1), (3, 40)),  # (h, w, c): 500 x 1 image
    ((500, 1, 3), (40, 3)),
    ((3, 2000, 3), (17, 5)),
    ((2500, 20, 3), (7, 300)),  # h > 100 w (Pillow's tall-image path)
    ((3000, 9, 1), (4, 1000)),
    ((1, 1, 3), (17, 9)),
    ((2, 3, 4), (1, 1)),
    ((7, 5, 3), (300, 200)),
]


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("filt", ["bilinear", "bicubic", "lanczos", "nearest"])
@pytest.mark.parametrize("case", EXTREME_CASES, ids=lambda c: f"{c[0]}->{c[1]}")
def test_extreme_aspect_ratios(case, filt, simd):
    (h, w, c), size = case
    arr = noise_image(np.random.default_rng(h * 7 + w), w, h, c)
    check_resize(arr, size, filt, None, 2.0 if filt == "bicubic" else None, simd)


REDUCE_CASES = [
    ((2, 2), None), ((3, 3), None), ((4, 4), None), ((5, 5), None), ((6, 6), None),
    ((2, 3), None), ((1, 4), None), ((7, 1), None), ((1, 1), (3, 4, 50, 61)),
    ((3, 2), (5, 1, 98, 70)), ((4, 5), (0, 0, 17, 13)),
]


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("c", [1, 2, 3, 4])
@pytest.mark.parametrize("case", REDUCE_CASES, ids=lambda c: f"{c[0]}-box{c[1]}")
def test_reduce(case, c, simd):
    factor, box = case
    arr = noise_image(np.random.default_rng(factor[0] * 10 + c), 101, 73, c)
    want = from_pil(to_pil(arr).reduce(factor, box=box))
    args = ["reduce", factor[0], factor[1]] + (["--box", *box] if box else [])
    assert_same(run_probe(arr, args, simd), want, f"reduce {factor} box={box} c={c}")


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("size,target", [((1200, 1697), (1098, 1553)), ((977, 600), (300, 300)),
                                          ((640, 2400), (200, 200)), ((500, 400), (100, 20))])
def test_thumbnail(size, target, simd):
    """Pillow's own thumbnail(): its aspect rounding, then resize(BICUBIC, reducing_gap=2.0)."""
    arr = document_image(np.random.default_rng(size[0]), size[0], size[1], 3)
    im = to_pil(arr)
    im.thumbnail(target)
    want = from_pil(im)
    got = run_probe(arr, ["resize", im.width, im.height, "bicubic", "--gap", "2.0"], simd)
    assert_same(got, want, f"thumbnail {size} -> {target}")


def donut_resize_and_thumbnail(arr, simd, out_w=1200, out_h=1553):
    """DonutImageProcessor: shortest-edge BILINEAR resize, then BICUBIC thumbnail, gap 2.0."""
    h, w = arr.shape[:2]
    s = min(out_h, out_w)
    new_w, new_h = (s, int(s * h / w)) if w <= h else (int(s * w / h), s)
    im = to_pil(arr)
    resized = im.resize((new_w, new_h), Image.Resampling.BILINEAR) if (new_w, new_h) != im.size else im
    got1 = run_probe(arr, ["resize", new_w, new_h, "bilinear"], simd)
    assert_same(got1, from_pil(resized), f"donut shortest edge {w}x{h} -> {new_w}x{new_h}")
    th, tw = min(new_h, out_h), min(new_w, out_w)
    if new_h > new_w:
        tw = int(new_w * th / new_h)
    elif new_w > new_h:
        th = int(new_h * tw / new_w)
    if (tw, th) == (new_w, new_h):
        return
    want = from_pil(resized.resize((tw, th), Image.Resampling.BICUBIC, reducing_gap=2.0))
    got2 = run_probe(got1, ["resize", tw, th, "bicubic", "--gap", "2.0"], simd)
    assert_same(got2, want, f"donut thumbnail {new_w}x{new_h} -> {tw}x{th}")


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("kind", ["doc", "noise"])
def test_a4_page_300dpi(kind, simd):
    rng = np.random.default_rng(300)
    arr = (document_image if kind == "doc" else noise_image)(rng, 2480, 3508, 3)
    check_resize(arr, (1200, 1553), "bilinear", simd=simd)
    donut_resize_and_thumbnail(arr, simd)


@pytest.mark.parametrize("simd", SIMD_MODES)
@pytest.mark.parametrize("wh", [(1654, 2339), (1700, 2200), (600, 800), (2000, 1000), (800, 5000)])
def test_donut_worked_examples(wh, simd):
    arr = document_image(np.random.default_rng(wh[0]), wh[0], wh[1], 3)
    donut_resize_and_thumbnail(arr, simd)

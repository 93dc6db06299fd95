"""Donut preprocessing per page, one core: transformers vs Pillow resizes vs docfeed.

Times, in one run and on the same A4 scans, the time per page to produce 1553x1200 pixel_values:
  (a) transformers 4.57.6 DonutImageProcessor (Image.open + processor, numpy output),
  (b) Pillow's two resize calls alone (BILINEAR shortest edge + BICUBIC thumbnail) on a decoded
      image, i.e. the floor for any Pillow-based pipeline,
  (c) docfeed exact: decode + resize + thumbnail + pad + normalize (`docfeed preprocess`; JPEGs
      stream 16-row bands from libjpeg-turbo through both resizes, pad+normalize is one pass),
  (c0) the same computed as separate whole-image steps (`donut_stages_bench --mode unfused`,
       src/imaging/donut_stages_bench.cc: the previous pipeline),
  (d) docfeed fast: (c) with a DCT-scaled JPEG decode (--fast),
  (e) the decode alone (`donut_stages_bench --mode decode-only`): libjpeg-turbo into a buffer
      reused across runs (no allocation or page faults), i.e. the library's own decode time; PNG
      through DecodeImage,
  (p) Pillow's decode alone, Image.open(page).load() (libjpeg-turbo too, with allocation),
and the pixel cost of (d): max/mean absolute difference and PSNR of its padded uint8 image
against (c)'s. Prints a markdown table.

All times are CPU time per page (time.process_time() in Python, the thread's CPU clock inside
`docfeed preprocess` and donut_stages_bench), not wall time: on a shared machine the wall clock
also counts the time other processes hold the core, which moved single numbers by 1.5-3x between
runs.

Usage (pin to one core; transformers comes from .venv/donut-ref, see
python/requirements-donut-ref.txt):
  taskset -c 0 .venv/bin/python bench/imaging/donut_bench.py --build build/imaging
(the build needs the targets docfeed and donut_stages_bench).
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/027.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png"]
HEIGHT, WIDTH = 1553, 1200

TRANSFORMERS_TIMER = r"""
import json, sys, time
from PIL import Image
from transformers import DonutImageProcessor
pages, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
proc = DonutImageProcessor(size={"height": 1553, "width": 1200})
out = {}
for page in pages:
    proc(Image.open(page), return_tensors="np")  # warm-up
    t = time.process_time()
    for _ in range(repeat):
        proc(Image.open(page), return_tensors="np")
    out[page] = (time.process_time() - t) / repeat
print(json.dumps(out))
"""


def time_transformers(pages, repeat, ref_dir):
    env = dict(os.environ, PYTHONPATH=str(ref_dir), TRANSFORMERS_VERBOSITY="error")
    proc = subprocess.run([sys.executable, "-c", TRANSFORMERS_TIMER, json.dumps(pages),
                           str(repeat)], env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def time_pillow_resizes(page, repeat):
    """The processor's two Pillow calls, sizes computed as it does (docs/donut-preprocessing.md)."""
    img = Image.open(page).convert("RGB")
    w, h = img.size
    s = min(HEIGHT, WIDTH)
    rw, rh = (s, int(s * h / w)) if w <= h else (int(s * w / h), s)
    th, tw = min(rh, HEIGHT), min(rw, WIDTH)
    if rh > rw:
        tw = int(rw * th / rh)
    elif rw > rh:
        th = int(rh * tw / rw)
    img.resize((rw, rh), Image.BILINEAR).resize((tw, th), Image.BICUBIC, reducing_gap=2.0)
    t = time.process_time()
    for _ in range(repeat):
        img.resize((rw, rh), Image.BILINEAR).resize((tw, th), Image.BICUBIC, reducing_gap=2.0)
    return (time.process_time() - t) / repeat


def docfeed(build, page, out, repeat, *extra):
    """Runs `docfeed preprocess`; returns the mean CPU time per page in seconds."""
    proc = subprocess.run([str(build / "bin" / "docfeed"), "preprocess", page, "--preset", "donut",
                           "--size", f"{HEIGHT}x{WIDTH}", "-o", out, "--repeat", str(repeat),
                           *extra], capture_output=True, text=True, check=True)
    m = re.search(r"cpu per image \(mean of \d+\): ([\d.]+) ms", proc.stderr)
    return float(m.group(1)) / 1e3


def stages(build, page, repeat, mode):
    """Runs the white-box `donut_stages_bench --mode MODE`; the mean CPU time per page in s."""
    proc = subprocess.run([str(build / "bin" / "donut_stages_bench"), page, "--mode", mode,
                           "--size", f"{HEIGHT}x{WIDTH}", "--repeat", str(repeat)],
                          capture_output=True, text=True, check=True)
    m = re.search(r"cpu per image \(mean of \d+\): ([\d.]+) ms", proc.stderr)
    return float(m.group(1)) / 1e3


def time_pillow_decode(page, repeat):
    Image.open(page).load()
    t = time.process_time()
    for _ in range(repeat):
        Image.open(page).load()
    return (time.process_time() - t) / repeat


def fast_cost(build, page, tmp):
    exact, fast = tmp / "exact.npy", tmp / "fast.npy"
    docfeed(build, page, exact, 1, "--stage", "padded")
    docfeed(build, page, fast, 1, "--stage", "padded", "--fast")
    a, b = np.load(exact).astype(np.int16), np.load(fast).astype(np.int16)
    diff = np.abs(a - b)
    mse = float(np.mean(diff.astype(np.float64) ** 2))
    psnr = float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
    return int(diff.max()), float(diff.mean()), psnr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build",
                    help="build dir holding bin/docfeed and bin/donut_stages_bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ref", default=str(REPO / ".venv" / "donut-ref"))
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    build = build if build.is_absolute() else REPO / build
    pages = [str(DOCS / p) for p in PAGES]
    hf = time_transformers(pages, max(1, args.repeat // 2), args.ref)
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        for rel, page in zip(PAGES, pages):
            with Image.open(page) as im:
                size, mode = f"{im.width}x{im.height}", im.mode
            pil = time_pillow_resizes(page, args.repeat)
            pil_decode = time_pillow_decode(page, args.repeat)
            # Interleaved, so that load changes hit the columns alike.
            exact, unfused, decode = [], [], []
            for _ in range(3):
                exact.append(docfeed(build, page, tmp / "c.npy", args.repeat))
                unfused.append(stages(build, page, args.repeat, "unfused"))
                decode.append(stages(build, page, args.repeat, "decode-only"))
            fast = docfeed(build, page, tmp / "d.npy", args.repeat, "--fast")
            med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
            rows.append((rel, size, mode, hf[page], pil, med(exact), med(unfused), fast,
                         med(decode), pil_decode, fast_cost(build, page, tmp)))
    print(f"CPU time per page, one core, 1553x1200 output (repeat {args.repeat}; pages/s in "
          "brackets)\n")
    print("| page | size | mode | (a) transformers | (b) Pillow resizes | (c) docfeed exact "
          "| (c0) unfused | (d) docfeed fast | (e) decode only | (p) Pillow decode | (a)/(c) "
          "| (c)/(e) | (c0)/(e) | fast: max / mean abs diff, PSNR |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ms = lambda s: f"{s * 1e3:.1f} ms ({1 / s:.1f})"  # noqa: E731
    for rel, size, mode, a, b, c, c0, d, e, p, (dmax, dmean, psnr) in rows:
        cost = "identical (no DCT scaling)" if dmax == 0 else \
            f"{dmax} / {dmean:.3f}, {psnr:.1f} dB"
        print(f"| {rel} | {size} | {mode} | {ms(a)} | {ms(b)} | {ms(c)} | {ms(c0)} | {ms(d)} "
              f"| {ms(e)} | {ms(p)} | {a / c:.1f}x | {c / e:.2f} | {c0 / e:.2f} | {cost} |")


if __name__ == "__main__":
    main()

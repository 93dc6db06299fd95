"""Idefics3 / SmolDocling preprocessing per page, one core: transformers' processors vs docfeed.

Times, in one run and on the same sample pages, the CPU time per page to produce pixel_values
(tiles x 3 x 512 x 512 float32, SmolDocling-256M-preview's longest_edge 2048 / max_image_size
512) from the image file:
  (slow) Idefics3ImageProcessor of transformers 4.57.6 (Image.open, convert("RGB") for a page
         that is neither RGB nor RGBA, which 4.x needs, then the processor with numpy output):
         the reference docfeed reproduces bit for bit;
  (fast) the torchvision Idefics3ImageProcessor of transformers 5.x on the CPU, 5.x's default
         (torch.set_num_threads(1); Image.open + processor, torch output), when the hf5
         environment is there (docfeed does not reproduce it);
  (docfeed) `docfeed preprocess --preset idefics3 --repeat N` (decode, three LANCZOS resizes,
         then rescale + normalize into tiles), the thread's CPU clock.
Prints a markdown table with the pages' sizes, the grids and the ratios.

CPU time (time.process_time in Python), not wall time: the machine is shared. Each Python timer
runs in its own process with OMP/MKL/OpenBLAS limited to one thread.

Usage (pin to one core):
  taskset -c 0 .venv/train/bin/python bench/imaging/idefics3_bench.py --build build
"""
import argparse
import pathlib
import sys

import preprocess_timing

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
         "receipts/cord_receipt_00004.png", "invoices/FlipkartInvoice.png"]
LONGEST_EDGE, TILE = 2048, 512

TIMER = r"""
import json, sys, time
from PIL import Image
import numpy as np
kind, pages, repeat, longest, tile = (sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]),
                                      int(sys.argv[4]), int(sys.argv[5]))
settings = dict(size={"longest_edge": longest}, max_image_size={"longest_edge": tile})
if kind == "fast":
    import torch
    torch.set_num_threads(1)
    from transformers import Idefics3ImageProcessor as P
    proc = P(**settings)
    assert proc.backend == "torchvision", proc.backend
    def run(page):
        return proc(Image.open(page), return_tensors="pt")
else:
    from transformers import Idefics3ImageProcessor as P
    proc = P(**settings)
    def run(page):
        img = Image.open(page)
        return proc(img if img.mode in ("RGB", "RGBA") else img.convert("RGB"),
                    return_tensors="np")
out = {}
for page in pages:
    r = run(page)  # warm-up
    tiles = tuple(r["pixel_values"].shape)[1]
    t = time.process_time()
    for _ in range(repeat):
        run(page)
    out[page] = [(time.process_time() - t) / repeat, tiles]
print(json.dumps(out))
"""


def python_times(python, kind, pages, repeat):
    return preprocess_timing.python_times(python, TIMER, kind, pages, repeat, LONGEST_EDGE, TILE)


def docfeed_run(build, page, repeat, stage="normalized"):
    """CPU seconds per page, and the output's shape."""
    return preprocess_timing.docfeed_preprocess(
        build, page, repeat, "--preset", "idefics3", "--longest-edge", LONGEST_EDGE,
        "--max-image-size", TILE, "--stage", stage)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hf5-python", default=str(REPO / ".venv" / "hf5" / "bin" / "python"))
    args = ap.parse_args()
    pages = [str(DOCS / p) for p in PAGES]
    have_fast = pathlib.Path(args.hf5_python).exists()
    slow = python_times(sys.executable, "slow", pages, args.repeat)
    fast = python_times(args.hf5_python, "fast", pages, args.repeat) if have_fast else {}
    print("| page | size, mode | grid (rows x cols), tiles | slow 4.57 ms | fast 5.x ms | "
          "docfeed ms | vs slow | vs fast |")
    print("|---|---|---|---|---|---|---|---|")
    from PIL import Image
    for page, rel in zip(pages, PAGES):
        ours, shape = docfeed_run(args.build, page, args.repeat)
        s, tiles = slow[page]
        assert shape == (tiles, 3, TILE, TILE), (shape, tiles)
        _, prepared = docfeed_run(args.build, page, 1, stage="resized")
        rows = 0 if prepared[:2] == (TILE, TILE) else prepared[0] // TILE - 1
        cols = 0 if prepared[:2] == (TILE, TILE) else prepared[1] // TILE
        f = fast[page][0] if page in fast else None
        with Image.open(page) as img:
            size = f"{img.width}x{img.height} {img.mode}"
        print(f"| {rel} | {size} | {rows}x{cols}, {tiles} | {1e3 * s:.1f} | "
              f"{'-' if f is None else f'{1e3 * f:.1f}'} | {1e3 * ours:.1f} | {s / ours:.1f}x | "
              f"{'-' if f is None else f'{f / ours:.1f}x'} |")


if __name__ == "__main__":
    main()

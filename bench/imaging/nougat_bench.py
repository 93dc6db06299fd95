"""Nougat preprocessing per page, one core: transformers' processors vs docfeed.

Times, in one run and on the same sample pages, the CPU time per page to produce pixel_values
(3 x 896 x 672 float32) from the image file:
  (slow) NougatImageProcessor of transformers 4.57.6 (Image.open, convert("RGB") for a page that
         is not RGB, which 4.x needs, then the processor with numpy output): the reference
         docfeed reproduces bit for bit;
  (fast) the torchvision NougatImageProcessor of transformers 5.x on the CPU
         (torch.set_num_threads(1); Image.open + processor with do_convert_rgb=True, torch
         output), when the hf5 environment is there (docfeed does not reproduce it);
  (docfeed) `docfeed preprocess --preset nougat --repeat N` (decode, crop_margin, resize,
         thumbnail, then pad + rescale + normalize), the thread's CPU clock.
Prints a markdown table with the pages' sizes, the crop and the ratios.

CPU time (time.process_time in Python), not wall time: the machine is shared. Each Python timer
runs in its own process with OMP/MKL/OpenBLAS limited to one thread.

Usage (pin to one core):
  taskset -c 0 .venv/train/bin/python bench/imaging/nougat_bench.py --build build
"""
import argparse
import pathlib
import sys

import preprocess_timing

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
         "receipts/cord_receipt_00004.png", "invoices/FlipkartInvoice.png"]

TIMER = r"""
import json, sys, time
from PIL import Image
import numpy as np
kind, pages, repeat = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
if kind == "fast":
    import torch
    torch.set_num_threads(1)
    from transformers import NougatImageProcessor as P
    proc = P()
    assert proc.backend == "torchvision", proc.backend
    def run(page):
        return proc(Image.open(page), do_convert_rgb=True, return_tensors="pt")
else:
    from transformers import NougatImageProcessor as P
    proc = P()
    def run(page):
        img = Image.open(page)
        return proc(img if img.mode == "RGB" else img.convert("RGB"), return_tensors="np")
out = {}
for page in pages:
    r = run(page)  # warm-up
    assert tuple(r["pixel_values"].shape) == (1, 3, 896, 672), r["pixel_values"].shape
    t = time.process_time()
    for _ in range(repeat):
        run(page)
    out[page] = (time.process_time() - t) / repeat
print(json.dumps(out))
"""


def python_times(python, kind, pages, repeat):
    return preprocess_timing.python_times(python, TIMER, kind, pages, repeat)


def docfeed_run(build, page, repeat, stage="normalized"):
    """CPU seconds per page, and the output's shape."""
    return preprocess_timing.docfeed_preprocess(build, page, repeat, "--preset", "nougat",
                                                "--stage", stage)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hf5-python", default=str(REPO / ".venv" / "hf5" / "bin" / "python"))
    args = ap.parse_args()
    pages = [str(DOCS / p) for p in PAGES]
    have_fast = pathlib.Path(args.hf5_python).exists()
    slow = python_times(sys.executable, "slow", pages, args.repeat)
    fast = python_times(args.hf5_python, "fast", pages, args.repeat) if have_fast else {}
    print("| page | size, mode | resized (after crop) | slow 4.57 ms | fast 5.x ms | docfeed ms "
          "| vs slow | vs fast |")
    print("|---|---|---|---|---|---|---|---|")
    from PIL import Image
    for page, rel in zip(pages, PAGES):
        ours, shape = docfeed_run(args.build, page, args.repeat)
        assert shape == (3, 896, 672), shape
        _, resized = docfeed_run(args.build, page, 1, stage="resized")
        s = slow[page]
        f = fast.get(page)
        with Image.open(page) as img:
            size = f"{img.width}x{img.height} {img.mode}"
        print(f"| {rel} | {size} | {resized[1]}x{resized[0]} | {1e3 * s:.1f} | "
              f"{'-' if f is None else f'{1e3 * f:.1f}'} | {1e3 * ours:.1f} | {s / ours:.1f}x | "
              f"{'-' if f is None else f'{f / ours:.1f}x'} |")


if __name__ == "__main__":
    main()

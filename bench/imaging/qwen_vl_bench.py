"""Qwen2-VL preprocessing per page, one core: transformers' processors vs docfeed.

Times, in one run and on the same sample pages, the CPU time per page to produce pixel_values and
image_grid_thw from the image file:
  (slow) Qwen2VLImageProcessor of transformers 4.57.6 (Image.open + processor, numpy output),
         the reference docfeed reproduces bit for bit;
  (fast) the torchvision Qwen2VLImageProcessor of transformers 5.x on the CPU
         (torch.set_num_threads(1); Image.open + processor, torch output), when the hf5
         environment is there;
  (docfeed) `docfeed preprocess --preset qwen2-vl --repeat N` (decode + smart_resize + BICUBIC
         resize, then rescale + normalize + patch flattening), the thread's CPU clock.
for max_pixels 28*28*1280 (what the fine-tuning recipes pass) and the checkpoints' default
28*28*16384. Prints a markdown table with the pages' sizes, patches per page and the ratios.

CPU time (time.process_time in Python), not wall time: the machine is shared. Each Python timer
runs in its own process with OMP/MKL/OpenBLAS limited to one thread.

Usage (pin to one core):
  taskset -c 0 .venv/train/bin/python bench/imaging/qwen_vl_bench.py --build build
"""
import argparse
import pathlib
import sys

import preprocess_timing

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
         "receipts/cord_receipt_00004.png"]
MAX_PIXELS = [28 * 28 * 1280, 28 * 28 * 16384]

TIMER = r"""
import json, sys, time
from PIL import Image
import numpy as np
kind, pages, repeat, max_pixels = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if kind == "fast":
    import torch
    torch.set_num_threads(1)
    from transformers import Qwen2VLImageProcessor as P
    proc = P(min_pixels=3136, max_pixels=max_pixels)
    assert proc.backend == "torchvision", proc.backend
    tensors = "pt"
else:
    from transformers import Qwen2VLImageProcessor as P
    proc = P(min_pixels=3136, max_pixels=max_pixels)
    tensors = "np"
out = {}
for page in pages:
    r = proc(Image.open(page), return_tensors=tensors)  # warm-up
    t = time.process_time()
    for _ in range(repeat):
        proc(Image.open(page), return_tensors=tensors)
    out[page] = [(time.process_time() - t) / repeat, list(r["image_grid_thw"][0].tolist())]
print(json.dumps(out))
"""


def python_times(python, kind, pages, repeat, max_pixels):
    return preprocess_timing.python_times(python, TIMER, kind, pages, repeat, max_pixels)


def docfeed_time(build, page, repeat, max_pixels):
    return preprocess_timing.docfeed_preprocess(build, page, repeat, "--preset", "qwen2-vl",
                                                "--max-pixels", max_pixels)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hf5-python", default=str(REPO / ".venv" / "hf5" / "bin" / "python"))
    args = ap.parse_args()
    pages = [str(DOCS / p) for p in PAGES]
    have_fast = pathlib.Path(args.hf5_python).exists()
    print("| max_pixels | page | size | grid (patches) | slow 4.57 ms | fast 5.x ms | docfeed ms "
          "| vs slow | vs fast |")
    print("|---|---|---|---|---|---|---|---|---|")
    for max_pixels in MAX_PIXELS:
        slow = python_times(sys.executable, "slow", pages, args.repeat, max_pixels)
        fast = (python_times(args.hf5_python, "fast", pages, args.repeat, max_pixels)
                if have_fast else {})
        for page, rel in zip(pages, PAGES):
            ours = docfeed_time(args.build, page, args.repeat, max_pixels)
            s, grid = slow[page]
            f = fast.get(page, [None])[0]
            from PIL import Image
            with Image.open(page) as img:
                size = f"{img.width}x{img.height}"
            patches = grid[1] * grid[2]
            print(f"| {max_pixels} | {rel} | {size} | {grid[1]}x{grid[2]} ({patches}) | "
                  f"{1e3 * s:.1f} | {'-' if f is None else f'{1e3 * f:.1f}'} | {1e3 * ours:.1f} | "
                  f"{s / ours:.1f}x | {'-' if f is None else f'{f / ours:.1f}x'} |")


if __name__ == "__main__":
    main()

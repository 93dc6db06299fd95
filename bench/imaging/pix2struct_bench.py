"""Pix2Struct preprocessing per page, one core: transformers' processors vs docfeed.

Times, in one run and on the same sample pages, the CPU time per page to produce
flattened_patches (max_patches x 770 float32, google/pix2struct-base's max_patches 2048 and
16 x 16 patches) from the image file:
  (slow) Pix2StructImageProcessor of transformers 4.57.6 (Image.open, then the processor with
         torch output; numpy standardization, torch's antialiased resize): the reference docfeed
         reproduces bit for bit;
  (fast) the torchvision Pix2StructImageProcessor of transformers 5.x on the CPU, 5.x's default
         (Image.open + processor, torch output), when the hf5 environment is there (docfeed does
         not reproduce it: it uses torch's unbiased std);
  (docfeed) `docfeed preprocess --preset pix2struct --repeat N` (decode, standardization,
         resize, patches), the thread's CPU clock.
Every Python timer runs with torch.set_num_threads(1) in its own process with OMP/MKL/OpenBLAS
limited to one thread. CPU time (time.process_time), not wall time: the machine is shared.

Usage (pin to one core):
  taskset -c 0 .venv/train/bin/python bench/imaging/pix2struct_bench.py --build build
"""
import argparse
import pathlib
import sys

import preprocess_timing

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
         "receipts/cord_receipt_00004.png", "invoices/FlipkartInvoice.png"]
MAX_PATCHES = 2048

TIMER = r"""
import json, sys, time
import torch
from PIL import Image
torch.set_num_threads(1)
kind, pages, repeat, max_patches = (sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]),
                                    int(sys.argv[4]))
from transformers import Pix2StructImageProcessor as P
proc = P(max_patches=max_patches)
if kind == "fast":
    assert proc.backend == "torchvision", proc.backend
def run(page):
    return proc(Image.open(page), return_tensors="pt")
out = {}
for page in pages:
    r = run(page)  # warm-up
    patches = int(r["attention_mask"].sum())
    t = time.process_time()
    for _ in range(repeat):
        run(page)
    out[page] = [(time.process_time() - t) / repeat, patches]
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hf5-python", default=str(REPO / ".venv" / "hf5" / "bin" / "python"))
    args = ap.parse_args()
    pages = [str(DOCS / p) for p in PAGES]
    have_fast = pathlib.Path(args.hf5_python).exists()
    slow = preprocess_timing.python_times(sys.executable, TIMER, "slow", pages, args.repeat,
                                          MAX_PATCHES)
    fast = (preprocess_timing.python_times(args.hf5_python, TIMER, "fast", pages, args.repeat,
                                           MAX_PATCHES) if have_fast else {})
    print("| page | size, mode | patches (of 2048) | slow 4.57 ms | fast 5.x ms | docfeed ms | "
          "vs slow | vs fast |")
    print("|---|---|---|---|---|---|---|---|")
    from PIL import Image
    for page, rel in zip(pages, PAGES):
        ours, shape = preprocess_timing.docfeed_preprocess(
            args.build, page, args.repeat, "--preset", "pix2struct", "--max-patches", MAX_PATCHES)
        s, patches = slow[page]
        assert shape == (MAX_PATCHES, 770), shape
        f = fast[page][0] if page in fast else None
        with Image.open(page) as img:
            size = f"{img.width}x{img.height} {img.mode}"
        print(f"| {rel} | {size} | {patches} | {1e3 * s:.1f} | "
              f"{'-' if f is None else f'{1e3 * f:.1f}'} | {1e3 * ours:.1f} | {s / ours:.1f}x | "
              f"{'-' if f is None else f'{f / ours:.1f}x'} |")


if __name__ == "__main__":
    main()

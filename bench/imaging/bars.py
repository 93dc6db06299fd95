"""Issue 19's per-core bars for every preset in one run, with the floor an exact path cannot go under.

For each model preset (Qwen2-VL at the recipes' and the checkpoints' max_pixels, Nougat,
Idefics3 / SmolDocling, Pix2Struct) and each sample page, times in the same run, CPU time per
page on one thread, from the image file:
  slow     the transformers 4.57.6 processor (PIL / numpy), the reference docfeed equals bit for
           bit (the timer scripts of qwen_vl_bench.py, nougat_bench.py, idefics3_bench.py and
           pix2struct_bench.py, which say what each includes);
  fast     transformers 5.x's torchvision processor, torch on one thread;
  docfeed  `docfeed preprocess --preset P --repeat N` (N = --docfeed-repeat, 20: its runs take
           milliseconds, and its first few after the warm-up are slower while glibc's malloc
           adapts its mmap threshold to the page's buffers, which a loader's workers are past
           after their first pages);
  decode   docfeed's decode of the file alone (`donut_stages_bench --mode decode-only`), and
  Pillow   `Image.open(path).load()`, Pillow's decode alone (libjpeg-turbo / zlib).
The bars are 10x the slow processor and 2x the fast one. Every exact path decodes the whole
file (each processor resizes from the full-size pixels) and writes its output (float32) at least
once, so the floor of a page is the faster of the two decodes plus the output's bytes at this
core's write speed (numpy filling a reused buffer of that size, measured in the run). When the floor
exceeds a tenth of the slow processor's time, no bit-exact implementation on one core reaches
10x on that page: the table marks those rows "floor".

Usage (pin to one core; a quiet machine):
  taskset -c 0 .venv/train/bin/python bench/imaging/bars.py --build build [--repeat 3]
"""
import argparse
import math
import pathlib
import subprocess
import sys
import time

import idefics3_bench
import nougat_bench
import pix2struct_bench
import preprocess_timing
import qwen_vl_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
         "receipts/cord_receipt_00004.png", "invoices/FlipkartInvoice.png"]


def seconds(value):
    """A timer's per-page value: seconds, or [seconds, detail]."""
    return value[0] if isinstance(value, list) else value


def presets():
    """(label, timer script, extra timer args, docfeed preprocess args) per preset setting."""
    out = []
    for max_pixels in qwen_vl_bench.MAX_PIXELS:
        out.append((f"qwen2-vl max_pixels={max_pixels}", qwen_vl_bench.TIMER, [max_pixels],
                    ["--preset", "qwen2-vl", "--max-pixels", max_pixels]))
    out.append(("nougat", nougat_bench.TIMER, [], ["--preset", "nougat"]))
    out.append(("idefics3", idefics3_bench.TIMER,
                [idefics3_bench.LONGEST_EDGE, idefics3_bench.TILE],
                ["--preset", "idefics3", "--longest-edge", idefics3_bench.LONGEST_EDGE,
                 "--max-image-size", idefics3_bench.TILE]))
    out.append(("pix2struct", pix2struct_bench.TIMER, [pix2struct_bench.MAX_PATCHES],
                ["--preset", "pix2struct", "--max-patches", pix2struct_bench.MAX_PATCHES]))
    return out


def docfeed_decode(build, page, repeat):
    out = subprocess.run([str(pathlib.Path(build) / "bin" / "donut_stages_bench"), page,
                          "--mode", "decode-only", "--repeat", str(repeat)],
                         capture_output=True, text=True, check=True)
    return preprocess_timing.cpu_seconds_per_image(out.stdout + out.stderr)


def pillow_decode(page, repeat):
    from PIL import Image

    with Image.open(page) as img:  # warm-up
        img.load()
    start = time.process_time()
    for _ in range(repeat):
        with Image.open(page) as img:
            img.load()
    return (time.process_time() - start) / repeat


def write_seconds(nbytes, repeat=20):
    """The time this core takes to write `nbytes` once: numpy filling a reused float32 buffer of
    that size (so the caches help as much as they would help any writer of that output)."""
    import numpy as np

    buf = np.empty(nbytes // 4, np.float32)
    buf.fill(0)
    start = time.process_time()
    for i in range(repeat):
        buf.fill(i)
    return (time.process_time() - start) / repeat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--docfeed-repeat", type=int, default=20)
    ap.add_argument("--hf5-python", default=str(REPO / ".venv" / "hf5" / "bin" / "python"))
    args = ap.parse_args()
    pages = [str(DOCS / p) for p in PAGES]
    floors = {}
    for page in pages:
        floors[page] = (docfeed_decode(args.build, page, 5 * args.repeat),
                        pillow_decode(page, 5 * args.repeat))
    print("| preset | page | slow 4.57 ms | fast 5.x ms | docfeed ms | vs slow | vs fast | "
          "decode ms: docfeed / Pillow | floor ms | slow / 10 ms | 10x reachable |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    counts = {"met": 0, "open": 0, "floor": 0, "fast met": 0, "fast open": 0}
    for label, timer, extra, flags in presets():
        slow = preprocess_timing.python_times(sys.executable, timer, "slow", pages, args.repeat,
                                              *extra)
        fast = preprocess_timing.python_times(args.hf5_python, timer, "fast", pages,
                                              args.repeat, *extra)
        for page, rel in zip(pages, PAGES):
            ours, shape = preprocess_timing.docfeed_preprocess(args.build, page,
                                                               args.docfeed_repeat, *flags)
            s, f = seconds(slow[page]), seconds(fast[page])
            decode, pil = floors[page]
            floor = min(decode, pil) + write_seconds(4 * math.prod(shape))
            if s / ours >= 10:
                verdict = "met"
            elif floor > s / 10:
                verdict = "floor"
            else:
                verdict = "open"
            counts[verdict] += 1
            counts["fast met" if f / ours >= 2 else "fast open"] += 1
            print(f"| {label} | {rel} | {1e3 * s:.1f} | {1e3 * f:.1f} | {1e3 * ours:.1f} | "
                  f"{s / ours:.1f}x | {f / ours:.1f}x | {1e3 * decode:.1f} / {1e3 * pil:.1f} | "
                  f"{1e3 * floor:.1f} | {100 * s:.1f} | {verdict} |", flush=True)
    print(f"\n10x the slow processor: met {counts['met']}, below and reachable {counts['open']}, "
          f"under the floor {counts['floor']}; 2x the fast one: met {counts['fast met']}, "
          f"not met {counts['fast open']}")


if __name__ == "__main__":
    main()

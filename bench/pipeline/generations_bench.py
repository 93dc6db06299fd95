#!/usr/bin/env python3
"""What each DonutImageProcessor generation costs the loader, measured in one interleaved run.

Packs (once) the 200-page folder of loader_bench.py as original images, then runs `docfeed bench`
on it for transformers 4.x (`--hf-version 4`, the default), 5.x PIL (`--hf-version 5 --backend
pil`) and 5.x torchvision (`--backend torchvision`), round after round in turn, with the same
threads, size and dtype. Prints each generation's median pages/s over the rounds and its ratio
to 4.x in the same round (the median of the per-round ratios), so a noisy, shared machine
compares like with like.

    python3 bench/pipeline/generations_bench.py --build build --rounds 5 --threads 1

Where they differ (docs/donut-preprocessing.md section 7): 5.x's thumbnail is BILINEAR without a
reducing gap (4.x: BICUBIC, reducing_gap 2.0); the torchvision backend has no DCT-scaled JPEG
decode (torch takes no box), so every JPEG is decoded at full size.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loader_bench import ROOT, docfeed, make_folder, pack  # noqa: E402

GENERATIONS = (("4.x", []), ("5.x pil", ["--hf-version", "5", "--backend", "pil"]),
               ("5.x torchvision", ["--hf-version", "5", "--backend", "torchvision"]))


def pages_per_s(build, dataset, extra, a):
    import json

    out = json.loads(docfeed(build, "bench", dataset, "--threads", str(a.threads), "--dtype",
                             a.dtype, "--size", a.size, "--batch-size", "8", "--json", *extra))
    return out["pages_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default="/tmp/docfeed-loader-bench")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--size", default="1553x1200")
    a = p.parse_args()
    folder = os.path.join(a.work, "folder")
    make_folder(folder, 10)
    dataset = os.path.join(a.work, "originals.docfeed")
    pack(a.build, folder, dataset)
    rates = {name: [] for name, _ in GENERATIONS}
    for _ in range(a.rounds):
        for name, extra in GENERATIONS:
            rates[name].append(pages_per_s(a.build, dataset, extra, a))
    load = os.getloadavg()
    print(f"{a.rounds} rounds, {a.threads} thread(s), {a.size} {a.dtype}, original images "
          f"(200 pages); load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("| generation | pages/s (median) | per-round range | vs 4.x (median of round ratios) |")
    print("|---|---:|---:|---:|")
    base = rates["4.x"]
    for name, _ in GENERATIONS:
        r = rates[name]
        ratios = [x / b for x, b in zip(r, base)]
        print(f"| {name} | {statistics.median(r):.1f} | {min(r):.1f}-{max(r):.1f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()

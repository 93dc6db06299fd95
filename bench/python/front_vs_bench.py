#!/usr/bin/env python3
"""docfeed.Loader in Python against `docfeed bench` (the C++ loader alone) on the same dataset.

What the Python front adds per batch (the tensors' wrapping, the layout a preset's batch takes
in Python: Idefics3's tiles, Qwen's grid, Pix2Struct's attention mask) shows as the gap between
the two. Both read a dataset packed with `pack --preprocess PRESET` (the preset and its settings
come from the manifest), batch 8, the same threads and dtype, one epoch each after the first
batch, alternating within each repetition (the machine is shared and noisy).

    .venv/train/bin/python bench/python/front_vs_bench.py DATASET [--dtype bfloat16] [--runs 3]

For Idefics3, e.g. 120 synthetic documents packed with SmolDocling's settings:

    docfeed synth -o /tmp/i3/src --n 120 && docfeed pack /tmp/i3/src -o /tmp/i3/prep \\
        --preprocess idefics3
    .venv/train/bin/python bench/python/front_vs_bench.py /tmp/i3/prep --dtype bfloat16
"""
import argparse
import json
import statistics
import subprocess
import time

import torch

import docfeed
from docfeed import _docfeed


def front(path, preset, threads, dtype):
    """Pages/s of docfeed.Loader after the first batch, and the consumer's wait (s)."""
    loader = docfeed.Loader(path, preset=preset, batch_size=8, shuffle=False,
                            num_threads=threads, dtype=getattr(torch, dtype), label_column="-")
    batches = iter(loader)
    next(batches)
    start, pages = time.perf_counter(), 0
    for batch in batches:
        pages += len(batch.sample_ids)
    seconds = time.perf_counter() - start
    wait = loader.stats()["consumer_wait"][1]
    loader.close()
    return pages / seconds, wait


def bench(path, threads, dtype):
    out = subprocess.run([docfeed.cli_path(), "bench", path, "--threads", str(threads),
                          "--batch-size", "8", "--dtype", dtype, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["pages_per_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    preset = _docfeed.dataset_info(args.dataset)["preprocess"]["preset"]
    # The process's first Loader pays the front's one-time imports: opened once, untimed.
    docfeed.Loader(args.dataset, preset=preset, batch_size=8, label_column="-").close()
    fronts, benches = [], []
    for run in range(args.runs):
        fronts.append(front(args.dataset, preset, args.threads, args.dtype))
        benches.append(bench(args.dataset, args.threads, args.dtype))
        print(f"run {run}: Python front {fronts[-1][0]:.1f} pages/s (consumer waited "
              f"{fronts[-1][1]:.2f} s), docfeed bench {benches[-1]:.1f} pages/s")
    ratios = [f / b for (f, _), b in zip(fronts, benches)]
    print(f"{preset}, {args.dtype}, {args.threads} threads: front / bench "
          + ", ".join(f"{r:.2f}" for r in ratios)
          + f" (median {statistics.median(ratios):.2f})")


if __name__ == "__main__":
    main()

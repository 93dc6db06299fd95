#!/usr/bin/env python3
"""Packing a Hugging Face Image dataset against `datasets`' own copy of it, per core.

Makes (once) a `save_to_disk` dataset of the 20 sample documents repeated to N rows (Image,
ClassLabel and string columns, as a document dataset holds), then times, round after round in
turn:

  * `datasets.load_from_disk(SRC).save_to_disk(DST, num_proc=1)`: datasets' own copy (in a
    subprocess, so both sides pay their start-up);
  * `docfeed pack SRC -o OUT --codec keep --threads 1`: the same rows into a docfeed dataset,
    with the default `--validate auto` (for a dataset's images: `structure`, the JPEG/PNG
    container structure and checksums), writing the index and verifying the output;
  * the same with `--validate full`, which validates every image as a decode would.

Prints each column's median rows/s and each docfeed column's ratio to datasets (median of the
per-round ratios), so a noisy, shared machine compares like with like.

    python3 bench/pack/hf_pack_bench.py --build build --rows 400 --rounds 5 [--validate auto full]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "tests", "data", "sample-docs")

COPY = """
import sys, datasets
datasets.disable_progress_bars()
datasets.load_from_disk(sys.argv[1]).save_to_disk(sys.argv[2], num_proc=1)
"""


def make_source(path, rows):
    import datasets

    lines = [json.loads(l) for l in open(os.path.join(DOCS, "metadata.jsonl"))]
    files = [os.path.join(DOCS, r["file_name"]) for r in lines]
    data = {"image": [files[i % len(files)] for i in range(rows)],
            "label": [int("invoice" in files[i % len(files)]) for i in range(rows)],
            "ground_truth": [lines[i % len(lines)].get("ground_truth", "") for i in range(rows)]}
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=["receipt", "invoice"]),
                                  "ground_truth": datasets.Value("string")})
    datasets.disable_progress_bars()
    datasets.Dataset.from_dict(data, features=features).save_to_disk(path)


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default="/tmp/docfeed-hf-pack-bench")
    p.add_argument("--rows", type=int, default=400)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--validate", nargs="+", choices=["auto", "full", "structure"],
                   default=["auto", "full"],
                   help="the docfeed columns, each timed in every round (default: auto, the "
                        "default of `docfeed pack`, and full)")
    a = p.parse_args()
    src = os.path.join(a.work, f"src-{a.rows}")
    if not os.path.exists(src):
        make_source(src, a.rows)
    cli = os.path.join(a.build, "bin", "docfeed")
    base = "datasets save_to_disk"
    modes = {f"docfeed pack --codec keep --validate {m}": m for m in a.validate}
    rates = {base: [], **{name: [] for name in modes}}
    for r in range(a.rounds):
        shutil.rmtree(os.path.join(a.work, "copy"), ignore_errors=True)
        seconds = timed([sys.executable, "-c", COPY, src, os.path.join(a.work, "copy")])
        rates[base].append(a.rows / seconds)
        for name, mode in modes.items():
            shutil.rmtree(os.path.join(a.work, "packed"), ignore_errors=True)
            seconds = timed([cli, "pack", src, "-o", os.path.join(a.work, "packed"), "--threads",
                             "1", "--codec", "keep", "--validate", mode])
            rates[name].append(a.rows / seconds)
    load = os.getloadavg()
    size = sum(os.path.getsize(os.path.join(src, f)) for f in os.listdir(src))
    print(f"{a.rounds} rounds, {a.rows} rows ({size / 1e6:.1f} MB), one core each; load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("| copy | rows/s (median) | per-round range |")
    print("|---|---:|---:|")
    for name, values in rates.items():
        print(f"| {name} | {statistics.median(values):.0f} | {min(values):.0f}-{max(values):.0f} |")
    for name in modes:
        ratios = [d / s for d, s in zip(rates[name], rates[base])]
        print(f"{name} / datasets: {statistics.median(ratios):.2f}x (median of round ratios; "
              f"range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()

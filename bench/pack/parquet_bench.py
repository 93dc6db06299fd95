#!/usr/bin/env python3
"""Reading Parquet: docfeed's reader (src/format/parquet) against pyarrow's, and `docfeed pack`
of a Hub-layout Parquet folder against the same rows saved with save_to_disk, per core.

Makes (once) the 20 sample documents repeated to N rows (an embedded Image column, ClassLabel and
string columns), written by `datasets` itself: `Dataset.to_parquet` into a Hub-layout folder
(data/train-00000-of-00001.parquet: SNAPPY, row groups of 100 rows as datasets writes image
datasets) and `save_to_disk`. Then, round after round in turn, each command in a subprocess (so
every side pays its start-up):

  * reader, same work on both sides (Parquet file in, Arrow IPC stream out, one thread):
    `parquet_to_arrow FILE OUT` (docfeed's reader and Arrow writer) against
    `pq.read_table(FILE, use_threads=False)` written with `pa.ipc.new_stream` (pyarrow's C++);
  * pack: `docfeed pack PARQUET_DIR --codec keep --threads 1` against the same command on the
    save_to_disk copy (what reading Parquet costs the pack), and against what a `datasets` user
    runs to get a dataset on disk from Parquet: `load_dataset("parquet", ...)` then
    `save_to_disk` (with a fresh cache each round).

Prints medians and docfeed's ratios (median of the per-round ratios).

    python3 bench/pack/parquet_bench.py --build build --rows 1000 --rounds 5
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

PYARROW = """
import sys, pyarrow as pa, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1], use_threads=False)
with pa.OSFile(sys.argv[2], "wb") as sink, pa.ipc.new_stream(sink, t.schema) as w:
    w.write_table(t)
"""

DATASETS = """
import sys, datasets
datasets.disable_progress_bars()
ds = datasets.load_dataset("parquet", data_files={"train": sys.argv[1]}, cache_dir=sys.argv[3],
                           num_proc=None)
ds.save_to_disk(sys.argv[2], num_proc=1)
"""


def make_sources(work, rows):
    import datasets

    datasets.disable_progress_bars()
    lines = [json.loads(l) for l in open(os.path.join(DOCS, "metadata.jsonl"))]
    files = [os.path.join(DOCS, r["file_name"]) for r in lines]
    blobs = [open(f, "rb").read() for f in files]
    n = len(files)
    data = {"image": [{"bytes": blobs[i % n], "path": os.path.basename(files[i % n])}
                      for i in range(rows)],
            "label": [int("invoice" in files[i % n]) for i in range(rows)],
            "ground_truth": [lines[i % n].get("ground_truth", "") for i in range(rows)]}
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=["receipt", "invoice"]),
                                  "ground_truth": datasets.Value("string")})
    ds = datasets.Dataset.from_dict(data, features=features)
    os.makedirs(os.path.join(work, "hub", "data"))
    ds.to_parquet(os.path.join(work, "hub", "data", "train-00000-of-00001.parquet"))
    ds.save_to_disk(os.path.join(work, "saved"))


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default="/tmp/docfeed-parquet-bench")
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    work = os.path.join(a.work, str(a.rows))
    if not os.path.exists(os.path.join(work, "saved")):
        shutil.rmtree(work, ignore_errors=True)
        make_sources(work, a.rows)
    parquet = os.path.join(work, "hub", "data", "train-00000-of-00001.parquet")
    cli = os.path.join(a.build, "bin", "docfeed")
    tool = os.path.join(a.build, "bin", "parquet_to_arrow")
    out = os.path.join(work, "out")
    names = ["reader: docfeed", "reader: pyarrow", "pack: docfeed from Parquet",
             "pack: docfeed from save_to_disk", "datasets: load_dataset + save_to_disk"]
    seconds = {n: [] for n in names}
    for _ in range(a.rounds):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        seconds[names[0]].append(timed([tool, parquet, os.path.join(out, "a.arrow")]))
        seconds[names[1]].append(timed([sys.executable, "-c", PYARROW, parquet,
                                        os.path.join(out, "b.arrow")]))
        seconds[names[2]].append(timed([cli, "pack", os.path.join(work, "hub"), "-o",
                                        os.path.join(out, "p"), "--threads", "1", "--codec",
                                        "keep"]))
        seconds[names[3]].append(timed([cli, "pack", os.path.join(work, "saved"), "-o",
                                        os.path.join(out, "s"), "--threads", "1", "--codec",
                                        "keep"]))
        seconds[names[4]].append(timed([sys.executable, "-c", DATASETS, parquet,
                                        os.path.join(out, "d"), os.path.join(out, "cache")]))

    def ratio(a_name, b_name):  # how many times faster a is than b, per round
        r = [b / x for x, b in zip(seconds[a_name], seconds[b_name])]
        return f"{statistics.median(r):.2f}x (range {min(r):.2f}-{max(r):.2f})"

    load = os.getloadavg()
    size = os.path.getsize(parquet)
    print(f"{a.rounds} rounds, {a.rows} rows, Parquet file {size / 1e6:.1f} MB, one core each; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("| command | rows/s (median) | MB/s of Parquet | per-round range rows/s |")
    print("|---|---:|---:|---:|")
    for n in names:
        rates = [a.rows / s for s in seconds[n]]
        print(f"| {n} | {statistics.median(rates):.0f} | "
              f"{size / 1e6 / statistics.median(seconds[n]):.0f} | "
              f"{min(rates):.0f}-{max(rates):.0f} |")
    print(f"reader, docfeed vs pyarrow: {ratio(names[0], names[1])}")
    print(f"pack from Parquet vs from save_to_disk: {ratio(names[2], names[3])}")
    print(f"pack from Parquet vs datasets load_dataset + save_to_disk: {ratio(names[2], names[4])}")


if __name__ == "__main__":
    main()

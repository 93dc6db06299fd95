#!/usr/bin/env python3
"""The loader issue's benchmark table, from `docfeed bench` runs made in one go on one machine.

Builds (once) a 200-page image folder from the sample documents (each repeated 10 times under new
names), packs it twice (original images; `--preprocess donut --size 1553x1200`), then runs
`docfeed bench` with 1 and 2 threads (more with --threads) and prints, per source and output type:
pages/s, pages/s per thread, the single-thread floor measured in the same run (read + decode of the
stored pages; + the exact resize for originals), the ratio to it, 2-thread scaling, peak RSS
against the batch buffers, and RSS after each epoch.

    python3 bench/pipeline/loader_bench.py --build build --work /tmp/docfeed-loader-bench

Every figure comes from this run; nothing is compared with numbers from another day.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLES = os.path.join(ROOT, "tests", "data", "sample-docs")


def make_folder(dst, repeats):
    if os.path.exists(os.path.join(dst, "metadata.jsonl")):
        return
    rows = [json.loads(line) for line in open(os.path.join(SAMPLES, "metadata.jsonl"))]
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "metadata.jsonl"), "w") as out:
        for rep in range(repeats):
            for row in rows:
                base, ext = os.path.splitext(row["file_name"])
                name = "r%d/%s%s" % (rep, base.replace("/", "_"), ext)
                os.makedirs(os.path.dirname(os.path.join(dst, name)), exist_ok=True)
                os.link(os.path.join(SAMPLES, row["file_name"]), os.path.join(dst, name))
                out.write(json.dumps(dict(row, file_name=name)) + "\n")


def docfeed(build, *args):
    return subprocess.run([os.path.join(build, "bin", "docfeed"), *args], check=True,
                          capture_output=True, text=True).stdout


def pack(build, src, out, *extra):
    if not os.path.exists(os.path.join(out, "docfeed.json")):
        docfeed(build, "pack", src, "-o", out, *extra)


def bench(build, dataset, threads, dtype, epochs, baseline, batch):
    args = ["bench", dataset, "--threads", str(threads), "--dtype", dtype, "--epochs", str(epochs),
            "--batch-size", str(batch), "--json"]
    if baseline:
        args += ["--baseline", str(baseline)]
    return json.loads(docfeed(build, *args))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default="/tmp/docfeed-loader-bench")
    p.add_argument("--repeats", type=int, default=10, help="copies of each sample document")
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=8)
    a = p.parse_args()
    src = os.path.join(a.work, "src")
    make_folder(src, a.repeats)
    orig = os.path.join(a.work, "orig.docfeed")
    pre = os.path.join(a.work, "pre.docfeed")
    pack(a.build, src, orig)
    pack(a.build, src, pre, "--preprocess", "donut", "--size", "1553x1200")

    cases = [("preprocessed", pre, "uint8", a.epochs), ("preprocessed", pre, "float32", a.epochs),
             ("original images", orig, "uint8", 1)]
    print("| source | output | threads | pages/s | pages/s per thread | floor ms/page (1 thread) "
          "| loader ms/page per thread | ratio to floor | scaling vs 1 thread | peak RSS MB "
          "| buffers MB | RSS after each epoch MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, path, dtype, epochs in cases:
        one = None
        for t in a.threads:
            r = bench(a.build, path, t, dtype, epochs, 40, a.batch_size)
            if one is None:
                one = r
            per_thread_ms = 1e3 * t / r["pages_per_s"] if r["pages_per_s"] else float("nan")
            floor = r["baseline_ms_per_page"]
            rss = " ".join("%.0f" % (x / 1e6) for x in r["rss_after_epoch"])
            print("| %s | %s | %d | %.1f | %.1f | %.2f | %.2f | %.2fx | %.2fx | %.0f | %.0f | %s |" % (
                name, "uint8 HWC" if dtype == "uint8" else "float32 CHW", t, r["pages_per_s"],
                r["pages_per_s"] / t, floor, per_thread_ms, per_thread_ms / floor,
                r["pages_per_s"] / one["pages_per_s"], r["peak_rss_bytes"] / 1e6,
                r["pool_bytes"] / 1e6, rss))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

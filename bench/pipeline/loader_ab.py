#!/usr/bin/env python3
"""A/B of two `docfeed` builds on the same packed datasets, runs interleaved in one go.

Uses loader_bench.py's 200-page folder and its two packs (original images;
`--preprocess donut --size 1553x1200`), packed once with build A (the format is the same for
both builds). Then, for R rounds, runs `docfeed bench` of A and of B back to back for every
configuration (source x output type x threads), alternating which build goes first from one
round to the next (A B, B A, A B, ...), so neither build always runs on a warmer or quieter
machine. Prints per configuration: the median pages/s of A and of B, B/A of the medians, the
min..max of the per-round B/A ratios (the noise of the machine, visible), and the same for the
CPU time a page (user + system of the `docfeed bench` process, from getrusage), which other
processes' load disturbs less than wall time.

    python3 bench/pipeline/loader_ab.py --build-a ../before/build/bench --build-b build/bench \\
        --work /tmp/docfeed-loader-ab --rounds 7

Each DIR holds bin/docfeed. B/A > 1 means B is faster (pages/s) or B costs more CPU (CPU ms a
page; read that column the other way round).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loader_bench  # noqa: E402  (make_folder, pack: shared with the one-build table)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def bench_run(build, dataset, threads, dtype, epochs, batch):
    """One `docfeed bench --json`: (pages/s, CPU ms a page of that process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([os.path.join(build, "bin", "docfeed"), "bench", dataset,
                          "--threads", str(threads), "--dtype", dtype, "--epochs", str(epochs),
                          "--batch-size", str(batch), "--json"],
                         check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = json.loads(out)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r["pages_per_s"], 1e3 * cpu_s / r["pages"]


def spread(xs):
    return "%.3f..%.3f" % (min(xs), max(xs))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-a", required=True, help="build dir of A (the before), holds bin/docfeed")
    p.add_argument("--build-b", required=True, help="build dir of B (the after)")
    p.add_argument("--work", default="/tmp/docfeed-loader-ab")
    p.add_argument("--repeats", type=int, default=10, help="copies of each sample document")
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--dtypes", nargs="*", default=["uint8", "float32"],
                   help="output types for the preprocessed dataset (originals: uint8)")
    p.add_argument("--epochs", type=int, default=3, help="epochs a run, preprocessed dataset")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    builds = {"A": a.build_a, "B": a.build_b}

    src = os.path.join(a.work, "src")
    loader_bench.make_folder(src, a.repeats)
    orig = os.path.join(a.work, "orig.docfeed")
    pre = os.path.join(a.work, "pre.docfeed")
    loader_bench.pack(a.build_a, src, orig)
    loader_bench.pack(a.build_a, src, pre, "--preprocess", "donut", "--size", "1553x1200")

    configs = [("preprocessed", pre, d, a.epochs, t) for d in a.dtypes for t in a.threads]
    configs += [("original images", orig, "uint8", 1, t) for t in a.threads]
    # One untimed run of each build on each dataset: page cache and binaries warm for both.
    for b in builds.values():
        for path in (pre, orig):
            bench_run(b, path, 1, "uint8", 1, a.batch_size)

    start = time.time()
    load_before = loadavg()
    res = {(c, k): {"pps": [], "cpu": []} for c in range(len(configs)) for k in builds}
    for rnd in range(a.rounds):
        order = ["A", "B"] if rnd % 2 == 0 else ["B", "A"]
        for ci, (_, path, dtype, epochs, threads) in enumerate(configs):
            for k in order:
                pps, cpu = bench_run(builds[k], path, threads, dtype, epochs, a.batch_size)
                res[(ci, k)]["pps"].append(pps)
                res[(ci, k)]["cpu"].append(cpu)
        print("round %d/%d done, load average %s" % (rnd + 1, a.rounds, loadavg()),
              file=sys.stderr, flush=True)
    load_after = loadavg()

    print("A = %s, B = %s; %d rounds, %.0f s; load average (1/5/15 min) before %s, after %s" % (
        a.build_a, a.build_b, a.rounds, time.time() - start, load_before, load_after))
    print()
    print("| source | output | threads | A pages/s (median) | B pages/s (median) | B/A of medians "
          "| B/A per round (min..max) | A CPU ms/page | B CPU ms/page | B/A CPU (median) "
          "| B/A CPU per round (min..max) |")
    print("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|")
    for ci, (name, _, dtype, _, threads) in enumerate(configs):
        ra, rb = res[(ci, "A")], res[(ci, "B")]
        pps_ratio = [b / x for x, b in zip(ra["pps"], rb["pps"])]
        cpu_ratio = [b / x for x, b in zip(ra["cpu"], rb["cpu"])]
        ma, mb = statistics.median(ra["pps"]), statistics.median(rb["pps"])
        ca, cb = statistics.median(ra["cpu"]), statistics.median(rb["cpu"])
        print("| %s | %s | %d | %.1f | %.1f | %.3f | %s | %.2f | %.2f | %.3f | %s |" % (
            name, "uint8 HWC" if dtype == "uint8" else dtype + " CHW", threads, ma, mb, mb / ma,
            spread(pps_ratio), ca, cb, cb / ca, spread(cpu_ratio)))
    print()
    print("raw pages/s per round (A; B):")
    for ci, (name, _, dtype, _, threads) in enumerate(configs):
        print("  %s %s %dt: %s; %s" % (
            name, dtype, threads, " ".join("%.1f" % x for x in res[(ci, "A")]["pps"]),
            " ".join("%.1f" % x for x in res[(ci, "B")]["pps"])))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

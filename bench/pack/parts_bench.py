#!/usr/bin/env python3
"""Split packs (`docfeed pack --part I/N` + `docfeed merge`) against one `docfeed pack`.

Throughput: the same synthetic pages (`docfeed synth`) packed by one `docfeed pack --threads 2`
and as N parts run two at a time (`--threads 1` each, the same two cores), then merged; rounds
interleaved, the first of each round alternating, medians reported with the ratio measured in
the same run (docs/benchmarks.md, "Parts and merge").

Merge: a dataset of --merge-pages pages packed as --merge-parts parts, then `docfeed merge`
timed --rounds times (OUT removed between runs; the parts' files stay in the page cache, as
after packing them).

  bench/pack/parts_bench.py --docfeed build/bin/docfeed --pages 300 --parts 4 --rounds 3 \
      --merge-pages 10000 --merge-parts 100
"""
import argparse
import concurrent.futures
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time


def run(*args):
    subprocess.run([str(a) for a in args], check=True, stdout=subprocess.DEVNULL)


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def pack_parts(docfeed, src, parts_dir, n, flags=()):
    """The n parts, two `docfeed pack --threads 1` at a time."""
    parts = [parts_dir / f"{i:05d}" for i in range(n)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = [pool.submit(run, docfeed, "pack", src, "--part", f"{i}/{n}", "-o", p,
                            "--threads", "1", *flags) for i, p in enumerate(parts)]
        for j in jobs:
            j.result()
    return parts


def throughput(docfeed, src, work, pages, n, rounds):
    whole_s, parts_s, merge_s = [], [], []
    for r in range(rounds):
        def whole():
            out = work / f"whole-{r}"
            whole_s.append(timed(lambda: run(docfeed, "pack", src, "-o", out, "--threads", "2")))
            shutil.rmtree(out)

        def split():
            parts_dir = work / f"parts-{r}"
            parts_s.append(timed(lambda: pack_parts(docfeed, src, parts_dir, n)))
            out = work / f"merged-{r}"
            merge_s.append(timed(lambda: run(docfeed, "merge", *sorted(parts_dir.iterdir()),
                                             "-o", out)))
            shutil.rmtree(out)
            shutil.rmtree(parts_dir)

        for step in ((whole, split) if r % 2 == 0 else (split, whole)):
            step()
    w, p, m = (statistics.median(x) for x in (whole_s, parts_s, merge_s))
    print(f"throughput, {pages} pages, median of {rounds} interleaved rounds")
    print(f"  docfeed pack --threads 2          {w:7.2f} s  {pages / w:7.1f} pages/s")
    print(f"  {n} parts, 2 at a time, --threads 1 {p:7.2f} s  {pages / p:7.1f} pages/s")
    print(f"  + docfeed merge                   {m:7.2f} s  {pages / (p + m):7.1f} pages/s")
    print(f"  ratio parts / pack: {w / p:.2f}x (parts alone), {w / (p + m):.2f}x (with the merge)")
    print(f"  rounds: pack {['%.2f' % x for x in whole_s]}, parts {['%.2f' % x for x in parts_s]},"
          f" merge {['%.3f' % x for x in merge_s]}")


def merge_time(docfeed, work, pages, n, rounds):
    src = work / "merge-src"
    run(docfeed, "synth", "-o", src, "--n", pages, "--dpi", "50", "--threads", "2")
    packed = timed(lambda: pack_parts(docfeed, src, work / "merge-parts", n))
    parts = sorted((work / "merge-parts").iterdir())
    times = []
    for r in range(rounds):
        out = work / f"merge-out-{r}"
        times.append(timed(lambda: run(docfeed, "merge", *parts, "-o", out)))
        shutil.rmtree(out)
    size = sum(f.stat().st_size for p in parts for f in p.glob("data-*.arrow"))
    print(f"merge of {n} parts of {pages} pages ({size / 1e6:.0f} MB of data files; parts packed "
          f"in {packed:.1f} s): median {statistics.median(times):.3f} s, runs "
          f"{['%.3f' % t for t in times]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docfeed", default="build/bin/docfeed")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--merge-pages", type=int, default=0, help="0 skips the merge timing")
    ap.add_argument("--merge-parts", type=int, default=100)
    ap.add_argument("--work", default=None, help="working directory (default: a temporary one)")
    args = ap.parse_args()
    docfeed = pathlib.Path(args.docfeed).resolve()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="parts_bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    if not src.exists():
        run(docfeed, "synth", "-o", src, "--n", args.pages, "--threads", "2")
    throughput(docfeed, src, work, args.pages, args.parts, args.rounds)
    if args.merge_pages:
        merge_time(docfeed, work, args.merge_pages, args.merge_parts, args.rounds)
    if not args.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

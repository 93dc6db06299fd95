#!/usr/bin/env python3
"""Split packs (`docfeed pack --part I/N` + `docfeed merge`) against one `docfeed pack`.

Throughput: the same synthetic pages (`docfeed synth`) packed by one `docfeed pack --threads 2`
and as N parts run two at a time (`--threads 1` each, the same two cores), then merged; rounds
interleaved, the first of each round alternating, medians reported with the ratio measured in
the same run (docs/benchmarks.md, "Parts and merge").

With --ray (a Python with ray[data] and docfeed importable, e.g. .venv/train): also
docfeed.ray.pack of the same source as N parts on a local Ray with 2 CPUs (ray.init(num_cpus=2):
two workers, one CPU and one encoding thread per part), merge included, in the same rounds. Ray
is started and its workers warmed up (docfeed imported) before the first round; that start-up
is reported, not timed in the rounds.

  .venv/train/bin/python bench/pack/parts_bench.py --docfeed build/bin/docfeed --pages 300 \
      --parts 4 --rounds 3 --ray

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


def start_ray():
    """A local Ray with 2 CPUs, its two workers started and holding docfeed; returns seconds."""
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    @ray.remote(num_cpus=1)
    def warm(_):
        import docfeed.ray  # noqa: F401
        time.sleep(0.5)  # both workers busy at once, so two are started
        return 0

    ray.get([warm.remote(i) for i in range(2)])
    return time.perf_counter() - start


def throughput(docfeed, src, work, pages, n, rounds, use_ray=False):
    whole_s, parts_s, merge_s, ray_s = [], [], [], []
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

        def on_ray():
            import docfeed.ray

            out = work / f"ray-{r}"
            ray_s.append(timed(lambda: docfeed.ray.pack(
                str(src), str(out), num_parts=n, num_cpus_per_part=1, progress=False)))
            shutil.rmtree(out)
            shutil.rmtree(str(out) + ".parts")

        steps = [whole, split] + ([on_ray] if use_ray else [])
        for step in (steps if r % 2 == 0 else steps[::-1]):
            step()
    w, p, m = (statistics.median(x) for x in (whole_s, parts_s, merge_s))
    print(f"throughput, {pages} pages, median of {rounds} interleaved rounds")
    print(f"  docfeed pack --threads 2          {w:7.2f} s  {pages / w:7.1f} pages/s")
    print(f"  {n} parts, 2 at a time, --threads 1 {p:7.2f} s  {pages / p:7.1f} pages/s")
    print(f"  + docfeed merge                   {m:7.2f} s  {pages / (p + m):7.1f} pages/s")
    print(f"  ratio parts / pack: {w / p:.2f}x (parts alone), {w / (p + m):.2f}x (with the merge)")
    print(f"  rounds: pack {['%.2f' % x for x in whole_s]}, parts {['%.2f' % x for x in parts_s]},"
          f" merge {['%.3f' % x for x in merge_s]}")
    if use_ray:
        y = statistics.median(ray_s)
        print(f"  docfeed.ray.pack, {n} parts on 2 Ray workers, merge included "
              f"{y:7.2f} s  {pages / y:7.1f} pages/s")
        print(f"  ratio ray / pack: {w / y:.2f}x; rounds {['%.2f' % x for x in ray_s]}")


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
    ap.add_argument("--ray", action="store_true",
                    help="also docfeed.ray.pack on a local Ray with 2 CPUs")
    ap.add_argument("--work", default=None, help="working directory (default: a temporary one)")
    args = ap.parse_args()
    docfeed = pathlib.Path(args.docfeed).resolve()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="parts_bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    if not src.exists():
        run(docfeed, "synth", "-o", src, "--n", args.pages, "--threads", "2")
    if args.ray:
        print(f"ray started and its 2 workers warmed up in {start_ray():.1f} s (not timed below)")
    throughput(docfeed, src, work, args.pages, args.parts, args.rounds, args.ray)
    if args.merge_pages:
        merge_time(docfeed, work, args.merge_pages, args.merge_parts, args.rounds)
    if not args.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

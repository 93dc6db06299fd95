"""The pix2struct loader from `pack --preprocess pix2struct` shards against the same loader on the
original pages, and against reading and decoding the stored pages alone, in one run.

Makes N synthetic invoices (`docfeed synth`), packs them three times (as they are, with
`--preprocess pix2struct`, and with `--preprocess pix2struct --stored-form patches`), then,
alternating within each repetition (the machine is shared and noisy):
  originals   docfeed.Loader(originals, preset="pix2struct"): decode (JPEG/PNG) + Finish
  prepared    docfeed.Loader(prepared, preset="pix2struct"): read the stored page + Finish
  patches     docfeed.Loader(patches, preset="pix2struct"): read the stored rows + copy them
for one epoch each (batch 8, --threads threads, google/pix2struct-base's max_patches 2048), and
`docfeed bench prepared|patches --baseline 60` (the issue's bar: the loader from preprocessed
shards within 1.5x of one thread reading and decoding the stored pages alone; `bench` prints
the ratio of the loader's time per page and thread to that baseline's; for the patches form
the baseline reads and validates the stored PFMs).

Run from the repository root, in .venv/train (the docfeed package installed by `make
python-install`):

    .venv/train/bin/python bench/imaging/pix2struct_loader_bench.py --n 120 --runs 3
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile
import time

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]


def run(*cmd):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True,
                          text=True).stdout


def epoch(path, threads):
    """(pages/s after the first batch, seconds to the first batch) over one epoch."""
    start = time.perf_counter()
    loader = docfeed.Loader(str(path), preset="pix2struct", batch_size=8, shuffle=False,
                            num_threads=threads, label_column="-")
    pages, first, after = 0, None, None
    for batch in loader:
        if first is None:
            first = time.perf_counter()
        else:
            pages += len(batch.sample_ids)
        after = time.perf_counter()
    loader.close()
    return pages / (after - first), first - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", default=str(docfeed.cli_path()))
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", help="keep the datasets here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docfeed_p2s_bench_") as tmp:
        work = pathlib.Path(args.work or tmp)
        src = work / "src"
        packs = {"originals": [], "prepared": ["--preprocess", "pix2struct"],
                 "patches": ["--preprocess", "pix2struct", "--stored-form", "patches"]}
        paths = {name: work / name for name in packs}
        if not (src / "metadata.jsonl").exists():
            run(args.cli, "synth", "-o", src, "--n", args.n, "--seed", "1")
        for name, flags in packs.items():
            if not (paths[name] / "docfeed.json").exists():
                run(args.cli, "pack", src, "-o", paths[name], *flags)
        sizes = {name: sum(f.stat().st_size for f in p.glob("*.arrow"))
                 for name, p in paths.items()}
        print(f"{args.n} pages; data files: " +
              ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sizes.items()))
        # The process's first Loader pays the Python front's one-time imports (seconds):
        # opened once here, untimed.
        docfeed.Loader(str(paths["prepared"]), preset="pix2struct", batch_size=8,
                       label_column="-").close()
        stored = ("prepared", "patches")
        results = {name: [] for name in packs}
        benches = {name: [] for name in stored}
        for r in range(args.runs):
            for name, path in paths.items():
                results[name].append(epoch(path, args.threads))
            line = f"run {r}: " + ", ".join(f"{name} {results[name][-1][0]:.1f} pages/s"
                                            for name in packs)
            for name in stored:
                out = run(args.cli, "bench", paths[name], "--threads", args.threads,
                          "--batch-size", 8, "--baseline", 60, "--json")
                j = json.loads(out.strip().splitlines()[-1])
                # bench's own ratio: the loader's ms per page and thread over the baseline's.
                loader_ms = 1e3 * j["threads"] / j["pages_per_s"]
                ratio = loader_ms / j["baseline_ms_per_page"]
                benches[name].append(ratio)
                line += (f"; bench {name}: loader {loader_ms:.2f} ms/page/thread, baseline "
                         f"{j['baseline_ms_per_page']:.2f} ms/page, {ratio:.2f}x; per page "
                         f"{json.dumps(j['ms_per_page'])}")
            print(line)
        for name in packs:
            rates = [p for p, _ in results[name]]
            firsts = [f for _, f in results[name]]
            print(f"{name:10s} pages/s {', '.join(f'{p:.1f}' for p in rates)} "
                  f"(median {statistics.median(rates):.1f}); first batch median "
                  f"{statistics.median(firsts):.2f} s")
        for name in stored:
            print(f"{name} / originals pages/s, paired: " +
                  ", ".join(f"{p / o:.2f}x" for (o, _), (p, _) in
                            zip(results["originals"], results[name])))
        for name in stored:
            print(f"loader from {name} / baseline (the 1.5x bar): " +
                  ", ".join(f"{b:.2f}x" for b in benches[name]) +
                  f" (median {statistics.median(benches[name]):.2f}x)")


if __name__ == "__main__":
    main()

"""The pix2struct loader from `pack --preprocess pix2struct` shards against the same loader on the
original pages, and against reading and decoding the stored pages alone, in one run.

Makes N synthetic invoices (`docfeed synth`), packs them twice (as they are, and with
`--preprocess pix2struct`), then, alternating within each repetition (the machine is shared and
noisy):
  originals   docfeed.Loader(originals, preset="pix2struct"): decode (JPEG/PNG) + Finish
  prepared    docfeed.Loader(prepared, preset="pix2struct"): read the stored page + Finish
for one epoch each (batch 8, --threads threads, google/pix2struct-base's max_patches 2048), and
`docfeed bench prepared --baseline 60` (the issue's bar: the loader from preprocessed shards
within 1.5x of one thread reading and decoding the stored pages alone; `bench` prints the
ratio of the loader's time per page and thread to that baseline's).

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
        src, orig, prep = work / "src", work / "originals", work / "prepared"
        if not (src / "metadata.jsonl").exists():
            run(args.cli, "synth", "-o", src, "--n", args.n, "--seed", "1")
        if not (orig / "docfeed.json").exists():
            run(args.cli, "pack", src, "-o", orig)
        if not (prep / "docfeed.json").exists():
            run(args.cli, "pack", src, "-o", prep, "--preprocess", "pix2struct")
        sizes = {p.name: sum(f.stat().st_size for f in p.glob("*.arrow")) for p in (orig, prep)}
        print(f"{args.n} pages; data files: originals {sizes['originals'] / 1e6:.1f} MB, "
              f"prepared {sizes['prepared'] / 1e6:.1f} MB")
        # The process's first Loader pays the Python front's one-time imports (seconds):
        # opened once here, untimed.
        docfeed.Loader(str(prep), preset="pix2struct", batch_size=8, label_column="-").close()
        results = {"originals": [], "prepared": [], "bench": []}
        for r in range(args.runs):
            for name, path in (("originals", orig), ("prepared", prep)):
                results[name].append(epoch(path, args.threads))
            out = run(args.cli, "bench", prep, "--threads", args.threads, "--batch-size", 8,
                      "--baseline", 60, "--json")
            j = json.loads(out.strip().splitlines()[-1])
            # bench's own ratio: the loader's ms per page and thread over the baseline's.
            loader_ms = 1e3 * j["threads"] / j["pages_per_s"]
            ratio = loader_ms / j["baseline_ms_per_page"]
            results["bench"].append((loader_ms, j["baseline_ms_per_page"], ratio,
                                     j["ms_per_page"]))
            print(f"run {r}: originals {results['originals'][-1][0]:.1f} pages/s, prepared "
                  f"{results['prepared'][-1][0]:.1f} pages/s; bench: loader {loader_ms:.2f} "
                  f"ms/page/thread, baseline {j['baseline_ms_per_page']:.2f} ms/page, "
                  f"{ratio:.2f}x; per page {json.dumps(j['ms_per_page'])}")
        for name in ("originals", "prepared"):
            rates = [p for p, _ in results[name]]
            firsts = [f for _, f in results[name]]
            print(f"{name:10s} pages/s {', '.join(f'{p:.1f}' for p in rates)} "
                  f"(median {statistics.median(rates):.1f}); first batch median "
                  f"{statistics.median(firsts):.2f} s")
        print("prepared / originals pages/s, paired: " +
              ", ".join(f"{p / o:.2f}x" for (o, _), (p, _) in
                        zip(results["originals"], results["prepared"])))
        print("loader from prepared / baseline (the 1.5x bar): " +
              ", ".join(f"{b[2]:.2f}x" for b in results["bench"]))


if __name__ == "__main__":
    main()

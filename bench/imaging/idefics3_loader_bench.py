"""The idefics3 preset through docfeed.Loader against Idefics3ImageProcessor, CPU per page.

Packs tests/data/sample-docs (originals), then, in one run: docfeed.Loader(preset="idefics3",
SmolDocling's longest_edge 2048 / max_image_size 512, batch_size 1, one worker thread) over every
page, the transformers 4.x processor over the same pages (`datasets.load_from_disk` images, one
per sample, convert("RGB") for the modes 4.x raises on, torch output), and the loader again. CPU
time of the whole process (time.process_time: the loader's worker thread included), torch and
BLAS on one thread. Prints both loader passes and the ratio range.

Usage (pin to one core):
  taskset -c 0 .venv/train/bin/python bench/imaging/idefics3_loader_bench.py --build build
  (the docfeed module from the build tree or the installed wheel)
"""
import argparse
import os
import pathlib
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]


def loader_cpu(path):
    import docfeed

    start, pages = time.process_time(), 0
    with docfeed.Loader(path, batch_size=1, shuffle=False, drop_last=False, num_threads=1,
                        prefetch=2, preset="idefics3", longest_edge=2048,
                        max_image_size=512) as loader:
        for batch in loader:
            pages += batch["pixel_values"].shape[0]
    return (time.process_time() - start) / pages, pages


def processor_cpu(path):
    import datasets
    from transformers import Idefics3ImageProcessor

    rows = datasets.load_from_disk(path)
    proc = Idefics3ImageProcessor(size={"longest_edge": 2048}, max_image_size={"longest_edge": 512})
    start = time.process_time()
    for row in rows:
        img = row["image"]
        img = img if img.mode in ("RGB", "RGBA") else img.convert("RGB")
        proc([[img]], return_tensors="pt", return_row_col_info=True)
    return (time.process_time() - start) / len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/ds"
        subprocess.run([str(pathlib.Path(args.build) / "bin" / "docfeed"), "pack",
                        str(REPO / "tests" / "data" / "sample-docs"), "-o", path],
                       check=True, capture_output=True)
        first, pages = loader_cpu(path)
        ref = processor_cpu(path)
        second, _ = loader_cpu(path)
    print(f"{pages} pages: loader {1e3 * first:.1f} / {1e3 * second:.1f} ms CPU per page, "
          f"Idefics3ImageProcessor {1e3 * ref:.1f} ms; docfeed "
          f"{ref / max(first, second):.1f}x-{ref / min(first, second):.1f}x")


if __name__ == "__main__":
    main()

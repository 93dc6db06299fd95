"""CPU cost of the C++ loader's uint8 output by layout (HWC row copies vs CHW de-interleave).

The GPU stage of docfeed.Loader(device="cuda") takes whichever host layout is cheaper and
reorders on the device; this measures the choice. Rounds alternate the layouts so that drift on
a shared machine hits both.

usage: .venv/train/bin/python bench/python/host_layout.py DATASET [--size 1553x1200]
       [--rounds 3] [--threads 1]
DATASET: a `docfeed pack --preprocess donut --size HxW` pack (e.g. bench/compare's docfeed-pre).
"""
import argparse
import time

import docfeed


def one_pass(path, size, layout, threads):
    loader = docfeed.Loader(path, batch_size=8, image_size=size, shuffle=False, pad="center",
                            dtype="uint8", num_threads=threads, label_column="-", layout=layout)
    pages, cpu, wall = 0, time.process_time(), time.perf_counter()
    for batch in loader:
        pages += batch["pixel_values"].shape[0]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    loader.close()
    return pages, cpu, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--size", default="1553x1200")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    for r in range(args.rounds):
        for layout in ("hwc", "chw"):
            pages, cpu, wall = one_pass(args.dataset, size, layout, args.threads)
            print(f"round {r}  uint8 {layout}: {pages / wall:6.0f} pages/s wall, "
                  f"{1000 * cpu / pages:6.2f} ms CPU/page")


if __name__ == "__main__":
    main()

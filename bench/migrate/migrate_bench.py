"""Migration throughput: `docfeed pack SAVED_DATASET` against a plain read of the same files.

Builds a seed-like dataset the way the Donut recipe stores it (pixel_values: 3 x 1553 x 1200
float32 nested lists, labels: 512 int64, target_sequence: string; datasets' save_to_disk) from
the sample documents (resized to fit, padded centred, normalized with the processor's float32
table - the same values DonutImageProcessor gives; tests/python/test_migrate.py checks that
against the real processor), then measures in one run:

  baseline  sequential read of every data file (8 MiB reads, bytes discarded)
  migrate   docfeed pack SRC -o OUT --threads N, for each N given

and prints wall and CPU time (GNU time; the machine may be shared, so throughput per core is
input MB per CPU-second), the ratio to the baseline, and the peak RSS (%M) of each.

usage: .venv/bin/python bench/migrate/migrate_bench.py [--samples 64] [--threads 1 2]
       [--build build] [--workdir /tmp/docfeed-migrate-bench] [--keep]
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np
from PIL import Image

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = sorted(p for p in (REPO / "tests" / "data" / "sample-docs").rglob("*")
              if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
H, W = 1553, 1200


def table():
    v = np.arange(256, dtype=np.float64)
    return ((v * (1 / 255)).astype(np.float32) - np.float32(0.5)) / np.float32(0.5)


def tensor(path):
    """Donut-like pixel_values: fit into H x W, pad centred with 0, normalize (0.5 / 0.5)."""
    img = Image.open(path).convert("RGB")
    scale = min(H / img.height, W / img.width)
    img = img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))),
                     Image.BILINEAR)
    canvas = np.zeros((H, W, 3), np.uint8)
    top, left = (H - img.height) // 2, (W - img.width) // 2
    canvas[top:top + img.height, left:left + img.width] = np.asarray(img)
    return table()[canvas].transpose(2, 0, 1).copy()


def build_dataset(out, samples):
    import datasets
    tensors = [tensor(p) for p in DOCS]

    def rows():
        for i in range(samples):
            yield {"pixel_values": tensors[i % len(tensors)],
                   "labels": [0] + [5 + i % 900] * 20 + [2] + [-100] * 490,
                   "target_sequence": f"<s><s_total>{i}</s_total></s>"}

    features = datasets.Features({
        "pixel_values": datasets.List(datasets.List(datasets.List(datasets.Value("float32")))),
        "labels": datasets.List(datasets.Value("int64")),
        "target_sequence": datasets.Value("string")})
    ds = datasets.Dataset.from_generator(rows, features=features,
                                         cache_dir=str(out.parent / "cache"))
    ds.save_to_disk(str(out))


def read_all(files):
    buf = bytearray(8 << 20)
    total = 0
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while n := fh.readinto(buf):
                total += n
    return total


def timed(cmd, stdout=subprocess.PIPE):
    """Runs cmd under GNU time: (wall seconds, CPU seconds (user + sys), peak RSS in MB)."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *map(str, cmd)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}")
    wall, user, system, rss = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--workdir", default="/tmp/docfeed-migrate-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated dataset")
    args = ap.parse_args()
    work = pathlib.Path(args.workdir)
    src = work / f"src-{args.samples}"
    if not src.exists():
        print(f"building {args.samples} samples in {src} ...", flush=True)
        build_dataset(src, args.samples)
    files = sorted(src.glob("data-*.arrow"))
    size = sum(f.stat().st_size for f in files)
    print(f"input: {len(files)} data files, {size / 1e9:.2f} GB, {args.samples} samples")
    read_all(files)  # warm the page cache so every measurement below sees the same state
    docfeed = pathlib.Path(args.build) / "bin" / "docfeed"
    rows = []
    with open(os.devnull, "w") as null:  # baseline: cat's read(2) of every file
        rows.append(("sequential read: cat FILES > /dev/null", *timed(["cat", *files], null)))
    for n in args.threads:
        out = work / f"out-{n}"
        shutil.rmtree(out, ignore_errors=True)
        rows.append((f"docfeed pack SRC -o OUT --threads {n}",
                     *timed([docfeed, "pack", src, "-o", out, "--threads", n])))
    out_size = sum(p.stat().st_size for p in (work / f"out-{args.threads[0]}").rglob("*")
                   if p.is_file())
    print(f"output: {out_size / 1e9:.3f} GB ({size / out_size:.1f}x smaller)")
    print("| run | wall s | CPU s | input MB per CPU-second | vs baseline | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    base = size / 1e6 / rows[0][2]
    for name, wall, cpu, rss in rows:
        per_core = size / 1e6 / cpu
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {per_core:.0f} | {per_core / base:.3f} | "
              f"{rss:.0f} |")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

"""Two docfeed binaries on every model preset and sample page, same run: CPU ms per page.

For each preset setting (Qwen2-VL at max_pixels 1003520 and 12845056, Nougat, Idefics3,
Pix2Struct) and each page of bars.py, runs `BIN preprocess PAGE --preset P --repeat N` with
the two binaries alternating over --rounds rounds (the first one first in even rounds, the
second in odd ones), pinned to one core, and prints the median of each binary's per-page CPU
time and their ratio as a markdown table. Use it to measure a change against the build before
it (copy each build's bin/docfeed aside first).

Usage: python3 bench/imaging/preset_ab.py BEFORE AFTER [--rounds 3] [--repeat 20] [--cpu 0]
"""
import argparse
import pathlib
import re
import statistics
import subprocess
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "tests" / "data" / "sample-docs"
PAGES = ["sroie/023.jpg", "sroie/459.jpg", "invoices/AmazonWebServices.png",
         "receipts/cord_receipt_00004.png", "invoices/FlipkartInvoice.png"]
PRESETS = [("qwen2-vl 1003520", ["--preset", "qwen2-vl", "--max-pixels", "1003520"]),
           ("qwen2-vl 12845056", ["--preset", "qwen2-vl", "--max-pixels", "12845056"]),
           ("nougat", ["--preset", "nougat"]), ("idefics3", ["--preset", "idefics3"]),
           ("pix2struct", ["--preset", "pix2struct"])]


def cpu_ms(binary, page, flags, repeat, cpu, out_npy):
    out = subprocess.run(["taskset", "-c", str(cpu), binary, "preprocess", str(DOCS / page),
                          *flags, "--repeat", str(repeat), "-o", out_npy],
                         capture_output=True, text=True, check=True)
    return float(re.search(r"cpu per image \(mean of \d+\): ([0-9.]+) ms", out.stderr)[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--cpu", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, f"{tmp}/out.npy")


def run(args, out_npy):
    print("| preset | page | before ms | after ms | after / before |")
    print("|---|---|---:|---:|---:|")
    for label, flags in PRESETS:
        for page in PAGES:
            times = {args.before: [], args.after: []}
            for r in range(args.rounds):
                order = [args.before, args.after] if r % 2 == 0 else [args.after, args.before]
                for binary in order:
                    times[binary].append(cpu_ms(binary, page, flags, args.repeat, args.cpu, out_npy))
            a = statistics.median(times[args.before])
            b = statistics.median(times[args.after])
            print(f"| {label} | {page} | {a:.1f} | {b:.1f} | {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()

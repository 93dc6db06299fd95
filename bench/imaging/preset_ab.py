"""Two docfeed binaries on every model preset and sample page of bars.py, same run: CPU ms per page.

For each preset setting of bars.py (Qwen2-VL at max_pixels 1003520 and 12845056, Nougat,
Idefics3, Pix2Struct) and each of its pages, runs `BIN preprocess PAGE --preset P --repeat N`
with the two binaries alternating over --rounds rounds (the first one first in even rounds, the
second in odd ones), and prints the median of each binary's per-page CPU time and their ratio as
a markdown table. Use it to measure a change against the build before it (copy each build's
bin/docfeed aside first).

Usage (pin to one core): taskset -c 0 python3 bench/imaging/preset_ab.py BEFORE AFTER
       [--rounds 3] [--repeat 20]
"""
import argparse
import statistics
import tempfile

import bars
import preprocess_timing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    print("| preset | page | before ms | after ms | after / before |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for label, _, _, flags in bars.presets():
            for page in bars.PAGES:
                times = {args.before: [], args.after: []}
                for r in range(args.rounds):
                    order = [args.before, args.after] if r % 2 == 0 else [args.after, args.before]
                    for binary in order:
                        times[binary].append(preprocess_timing.run_preprocess(
                            binary, bars.DOCS / page, args.repeat, f"{tmp}/out.npy", *flags))
                before = 1e3 * statistics.median(times[args.before])
                after = 1e3 * statistics.median(times[args.after])
                print(f"| {label} | {page} | {before:.1f} | {after:.1f} | {after / before:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()

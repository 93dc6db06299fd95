"""Times docfeed's Resize() (scalar and SIMD) against Pillow on the same pages, same run, one core.

Pillow is timed in-process with time.perf_counter; docfeed through `resize_probe --repeat N`,
which times only the Resize() call. Both are pinned to one CPU. Prints a table of minimum
milliseconds per page and docfeed/Pillow ratios, after checking that the bytes are identical.

Run: .venv/bin/python bench/kernels/resize_vs_pillow.py [--repeat 10]
     (build first: cmake --build build --target resize_probe; DOCFEED_BUILD_DIR overrides build)
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "kernels"))
from test_resize_vs_pillow import document_image  # noqa: E402

BUILD = pathlib.Path(os.environ.get("DOCFEED_BUILD_DIR", "build"))
PROBE = (BUILD if BUILD.is_absolute() else REPO / BUILD) / "bin" / "resize_probe"

# name, input (w, h), output (w, h), filter, reducing_gap
CASES = [
    ("A4 300dpi -> 1200x1697 bilinear", (2480, 3508), (1200, 1697), "bilinear", None),
    ("A4 300dpi -> 1200x1553 bilinear", (2480, 3508), (1200, 1553), "bilinear", None),
    ("A4 300dpi -> 1200x1697 bicubic", (2480, 3508), (1200, 1697), "bicubic", None),
    ("A4 300dpi -> 1200x1697 lanczos", (2480, 3508), (1200, 1697), "lanczos", None),
    ("A4 150dpi -> 1200x1697 bilinear", (1240, 1754), (1200, 1697), "bilinear", None),
    ("A4 150dpi -> 1200x1697 bicubic", (1240, 1754), (1200, 1697), "bicubic", None),
    ("thumbnail 1200x1697 -> 1098x1553 bicubic gap2", (1200, 1697), (1098, 1553), "bicubic", 2.0),
    ("A4 300dpi -> 600x849 bicubic gap2 (reduce)", (2480, 3508), (600, 849), "bicubic", 2.0),
]
FILTERS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC,
           "lanczos": Image.Resampling.LANCZOS}


def time_pillow(im, size, filt, gap, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out = im.resize(size, FILTERS[filt], reducing_gap=gap)
        best = min(best, time.perf_counter() - start)
    return best * 1000, np.asarray(out)


def time_docfeed(raw_path, out_path, size, filt, gap, repeat, simd):
    env = dict(os.environ)
    env.pop("DOCFEED_SIMD", None)
    if simd == "scalar":
        env["DOCFEED_SIMD"] = "scalar"
    args = [str(PROBE), raw_path, out_path, "resize", str(size[0]), str(size[1]), filt,
            "--repeat", str(repeat)] + (["--gap", str(gap)] if gap else [])
    result = subprocess.run(args, check=True, env=env, capture_output=True, text=True)
    raw = pathlib.Path(out_path).read_bytes()
    out = np.frombuffer(raw[12:], np.uint8).reshape(size[1], size[0], 3)
    return json.loads(result.stdout)["min_ms"], out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to")
    opts = parser.parse_args()
    os.sched_setaffinity(0, {opts.cpu})  # Inherited by the probe.
    print(f"Pillow {Image.__version__}, pinned to CPU {opts.cpu}, best of {opts.repeat}")
    header = f"{'case':48} {'Pillow ms':>9} {'scalar ms':>9} {'SIMD ms':>8} {'scalar/Pil':>10} {'SIMD/Pil':>8}"
    print(header)
    print("-" * len(header))
    pages = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, in_size, out_size, filt, gap in CASES:
            if in_size not in pages:
                arr = document_image(np.random.default_rng(in_size[0]), in_size[0], in_size[1], 3)
                raw = pathlib.Path(tmp, f"{in_size[0]}.raw")
                raw.write_bytes(np.array([*in_size, 3], "<i4").tobytes() + arr.tobytes())
                pages[in_size] = (Image.fromarray(arr, "RGB"), str(raw))
            im, raw = pages[in_size]
            out_path = str(pathlib.Path(tmp, "out.raw"))
            pil_ms, want = time_pillow(im, out_size, filt, gap, opts.repeat)
            sc_ms, got_sc = time_docfeed(raw, out_path, out_size, filt, gap, opts.repeat, "scalar")
            simd_ms, got_simd = time_docfeed(raw, out_path, out_size, filt, gap, opts.repeat, "auto")
            same = np.array_equal(want, got_sc) and np.array_equal(want, got_simd)
            print(f"{name:48} {pil_ms:9.2f} {sc_ms:9.2f} {simd_ms:8.2f} {sc_ms / pil_ms:10.2f} "
                  f"{simd_ms / pil_ms:8.2f}{'' if same else '  BYTES DIFFER'}")


if __name__ == "__main__":
    main()

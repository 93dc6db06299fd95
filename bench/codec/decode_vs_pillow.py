"""Image decode per page, one core: docfeed's DecodeImage against Pillow, same pages, same run.

--pages tiff (the default) makes document-size TIFF pages in a temporary folder from the
repository's real scans (tests/data/images): the 1700x2200 Azure invoice scan and the 463x1013
SROIE receipt, each scaled to an A4 page (300 dpi 2480x3508 bilevel, 150 dpi 1240x1754
colour/gray), written by Pillow and libtiff's tiffcp as
  - CCITT G4 bilevel, 300 dpi, a one-page file and the first page of a two-page file,
  - LZW RGB (horizontal predictor), 150 dpi, and LZW gray, 300 dpi,
  - JPEG-in-TIFF (YCbCr 2x2, quality 90), 150 dpi and 300 dpi,
  - Adobe Deflate RGB in 256x256 tiles, 150 dpi.
--pages png takes the PNG sample documents as they are (tests/data/sample-docs: a photographed
receipt, rendered invoices in RGB, RGBA and palette) and adds the Azure scan as a 300 dpi A4
grayscale page written by Pillow.
Then times, per page:
  (p) Pillow: Image.open(BytesIO(bytes)).load() (what `datasets` does to an Image column),
  (d) docfeed: DecodeImage (`donut_stages_bench FILE --mode decode-only`,
      src/imaging/donut_stages_bench.cc; the image buffer is allocated per run, as in Pillow),
and prints a markdown table with docfeed/Pillow ratios. Both are CPU time per page, the mean of
--repeat runs after one warm-up (time.process_time() in Python, the thread's CPU clock in
donut_stages_bench), on the core the script is pinned to. With --rounds N the measurements of a
page alternate N times (Pillow, docfeed, each --baseline) and each column is the median of the N
means, so that load changes on a shared machine hit every column alike. --baseline NAME=PATH
adds another donut_stages_bench binary (e.g. one built from the previous commit) as a column
measured in the same rounds, with its own ratio to Pillow.

Usage: taskset -c 0 .venv/bin/python bench/codec/decode_vs_pillow.py --build build [--pages png]
       [--repeat 20] [--rounds 5] [--baseline before=/tmp/donut_stages_bench.before]
(the build needs the target donut_stages_bench; for TIFF pages, tiffcp from libtiff-tools on
PATH).
"""
import argparse
import io
import os
import pathlib
import platform
import re
import statistics
import subprocess
import tempfile
import time

from PIL import Image, features

REPO = pathlib.Path(__file__).resolve().parents[2]
IMAGES = REPO / "tests" / "data" / "images"
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"


def make_png_pages(tmp):
    """(name, path) of the PNG benchmark pages: the sample documents, and one written into `tmp`."""
    pages = []
    for rel in ["receipts/cord_receipt_00004.png", "invoices/AmazonWebServices.png",
                "invoices/simple-invoice.png", "invoices/FlipkartInvoice.png",
                "invoices/SammyMaystoneLinesTest.png"]:
        path = SAMPLE_DOCS / rel
        with Image.open(path) as img:
            pages.append((f"{path.name} {img.width}x{img.height} {img.mode}", path))
    scan = Image.open(IMAGES / "azure_invoice_sample.jpg").convert("L")
    scan.resize((2480, 3508), Image.Resampling.BICUBIC).save(tmp / "scan_gray.png")
    pages.append(("Azure scan, Pillow PNG 2480x3508 L", tmp / "scan_gray.png"))
    return pages


def make_tiff_pages(tmp):
    """(name, path) of the TIFF benchmark pages, written into `tmp`."""
    scan = Image.open(IMAGES / "azure_invoice_sample.jpg").convert("L")
    receipt = Image.open(IMAGES / "sroie_000.jpg").convert("RGB")
    bilevel = scan.resize((2480, 3508), Image.Resampling.BILINEAR).point(
        lambda v: 255 if v > 160 else 0).convert("1", dither=Image.Dither.NONE)
    rgb150 = receipt.resize((1240, 1754), Image.Resampling.BICUBIC)
    gray300 = scan.resize((2480, 3508), Image.Resampling.BICUBIC)
    rgb300 = receipt.resize((2480, 3508), Image.Resampling.BICUBIC)
    pages = []

    def add(name, path):
        pages.append((name, path))

    bilevel.save(tmp / "g4.tif", compression="group4")
    add("G4 bilevel 2480x3508, 1 page", tmp / "g4.tif")
    bilevel.save(tmp / "g4x2.tif", compression="group4", save_all=True,
                 append_images=[bilevel.transpose(Image.Transpose.FLIP_TOP_BOTTOM)])
    add("G4 bilevel 2480x3508, first of 2 pages", tmp / "g4x2.tif")
    rgb150.save(tmp / "rgb150_raw.tif")
    subprocess.run(["tiffcp", "-c", "lzw:2", str(tmp / "rgb150_raw.tif"),
                    str(tmp / "lzw_rgb.tif")], check=True)
    add("LZW+predictor RGB 1240x1754", tmp / "lzw_rgb.tif")
    gray300.save(tmp / "lzw_gray.tif", compression="tiff_lzw")
    add("LZW gray 2480x3508", tmp / "lzw_gray.tif")
    subprocess.run(["tiffcp", "-c", "jpeg:90", "-r", "16", str(tmp / "rgb150_raw.tif"),
                    str(tmp / "jpeg150.tif")], check=True)
    add("JPEG YCbCr 1240x1754", tmp / "jpeg150.tif")
    rgb300.save(tmp / "rgb300_raw.tif")
    subprocess.run(["tiffcp", "-c", "jpeg:90", "-r", "16", str(tmp / "rgb300_raw.tif"),
                    str(tmp / "jpeg300.tif")], check=True)
    add("JPEG YCbCr 2480x3508", tmp / "jpeg300.tif")
    subprocess.run(["tiffcp", "-c", "zip", "-t", "-w", "256", "-l", "256",
                    str(tmp / "rgb150_raw.tif"), str(tmp / "zip_tiled.tif")], check=True)
    add("Deflate RGB tiled 1240x1754", tmp / "zip_tiled.tif")
    return pages


def time_pillow(data, repeat):
    def once():
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            return img.mode

    mode = once()  # warm-up
    start = time.process_time()
    for _ in range(repeat):
        once()
    return 1e3 * (time.process_time() - start) / repeat, mode


def time_docfeed(bench, path, repeat):
    subprocess.run([str(bench), str(path), "--mode", "decode-only", "--repeat", "1"], check=True,
                   capture_output=True)  # warm-up
    proc = subprocess.run([str(bench), str(path), "--mode", "decode-only", "--repeat",
                           str(repeat)], check=True, capture_output=True, text=True)
    return float(re.search(r"cpu per image \(mean of \d+\): ([0-9.]+) ms", proc.stderr).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.environ.get("DOCFEED_BUILD_DIR", "build"))
    parser.add_argument("--pages", choices=["tiff", "png"], default="tiff")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", action="append", default=[], metavar="NAME=PATH",
                        help="another donut_stages_bench, measured in the same rounds")
    opts = parser.parse_args()
    build = pathlib.Path(opts.build)
    bench = (build if build.is_absolute() else REPO / build) / "bin" / "donut_stages_bench"
    baselines = [tuple(b.split("=", 1)) for b in opts.baseline]
    cpus = sorted(os.sched_getaffinity(0))
    library = "libtiff" if opts.pages == "tiff" else "zlib"
    print(f"Pillow {Image.__version__} ({library} {features.version(library)}), "
          f"{platform.processor() or platform.machine()}, CPUs {cpus}, mean of {opts.repeat}"
          + (f", median of {opts.rounds} interleaved rounds" if opts.rounds > 1 else ""))
    print()
    extra_head = "".join(f" {name} ms | {name} / Pillow |" for name, _ in baselines)
    print("| page | bytes | Pillow mode | Pillow ms | docfeed ms | docfeed / Pillow |" + extra_head)
    print("|---|---|---|---|---|---|" + "---|---|" * len(baselines))
    with tempfile.TemporaryDirectory() as tmp:
        make_pages = make_tiff_pages if opts.pages == "tiff" else make_png_pages
        for name, path in make_pages(pathlib.Path(tmp)):
            data = path.read_bytes()
            times = {"pillow": [], "docfeed": [], **{b: [] for b, _ in baselines}}
            for _ in range(opts.rounds):
                pillow_ms, mode = time_pillow(data, opts.repeat)
                times["pillow"].append(pillow_ms)
                times["docfeed"].append(time_docfeed(bench, path, opts.repeat))
                for b, b_path in baselines:
                    times[b].append(time_docfeed(b_path, path, opts.repeat))
            ms = {k: statistics.median(v) for k, v in times.items()}
            extra = "".join(f" {ms[b]:.2f} | {ms[b] / ms['pillow']:.2f} |" for b, _ in baselines)
            print(f"| {name} | {len(data):,} | {mode} | {ms['pillow']:.2f} | {ms['docfeed']:.2f} | "
                  f"{ms['docfeed'] / ms['pillow']:.2f} |" + extra, flush=True)


if __name__ == "__main__":
    main()

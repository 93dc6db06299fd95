#!/usr/bin/env python3
"""docfeed's PDF page rendering next to `pdftoppm -r DPI` on the same file, one core each.

    python3 bench/pdf/pdf_vs_pdftoppm.py [--pdf FILE] [--pages 10] [--dpi 200] [--rounds 5]
                                         [--build build]

Without --pdf it makes a --pages-page A4 invoice-like PDF (dense text in embedded fonts, table
rules, a translucent stamp, a bitmap logo: the cairo drawing of tests/data/pdf/make_pdfs.py,
repeated) in a temporary folder. Each round runs, interleaved:

* pdftoppm -r DPI FILE > /dev/null       (poppler-utils; renders and writes PPM to /dev/null)
* build/bin/pdf_render_bench FILE        (PdfDocument::RenderPage of every page, pixels in RAM)
* build/bin/pdf_render_bench FILE --png  (the same plus the PNG encode `docfeed pack` stores)

and reports pages per CPU-second (user + system of that process) for each, with docfeed's
ratio to pdftoppm measured in the same run: of the median runs, of the fastest runs, and the
median of the rounds' own ratios. The machine is shared: compare ratios, not times.
"""
import argparse
import importlib.util
import json
import os
import pathlib
import resource
import statistics
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]


def make_bench_pdf(path, pages=10):
    spec = importlib.util.spec_from_file_location("make_pdfs", REPO / "tests/data/pdf/make_pdfs.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    lib = mk.cairo_lib()
    width, height = 595.276, 841.89
    surface = lib.cairo_pdf_surface_create(str(path).encode(), width, height)
    cr = lib.cairo_create(surface)
    for page in range(pages):
        mk.draw_page(lib, cr, width, height, 0)
        lib.cairo_select_font_face(cr, b"DejaVu Sans Mono", 0, 0)
        lib.cairo_set_font_size(cr, 8.5)
        lib.cairo_set_source_rgb(cr, 0, 0, 0)
        for row in range(48):  # an item table: most of an invoice page is text
            lib.cairo_move_to(cr, 40, 330 + 10.5 * row)
            line = f"{page:02d}-{row:03d}  Item description {row * 37 % 1000:>4}  x{row % 9 + 1}" \
                   f"  {row * 3.17:9.2f}  {row * 7.31:10.2f} EUR"
            lib.cairo_show_text(cr, line.encode())
        lib.cairo_show_page(cr)
    lib.cairo_destroy(cr)
    lib.cairo_surface_finish(surface)
    lib.cairo_surface_destroy(surface)


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args, **kwargs):
    """(CPU seconds, wall seconds, stdout) of one child process."""
    cpu, wall = child_cpu(), time.perf_counter()
    proc = subprocess.run(args, check=True, stdout=kwargs.get("stdout", subprocess.PIPE),
                          stderr=subprocess.PIPE)
    return child_cpu() - cpu, time.perf_counter() - wall, proc.stdout


def page_count(pdf):
    out = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(next(l for l in out.splitlines() if l.startswith("Pages:")).split()[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pdf")
    ap.add_argument("--pages", type=int, default=10,
                    help="pages of the PDF made without --pdf (each process starts once per run, "
                         "so more pages weigh its start less)")
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default=os.environ.get("DOCFEED_BUILD_DIR", "build"))
    args = ap.parse_args()
    bench = pathlib.Path(args.build) / "bin" / "pdf_render_bench"
    if not bench.is_absolute():
        bench = REPO / bench
    with tempfile.TemporaryDirectory() as tmp:
        pdf = pathlib.Path(args.pdf) if args.pdf else pathlib.Path(tmp) / "bench.pdf"
        if not args.pdf:
            make_bench_pdf(pdf, args.pages)
        pages = page_count(pdf)
        cpu = {"pdftoppm": [], "docfeed render": [], "docfeed render + PNG": []}
        for _ in range(args.rounds):
            with open(os.devnull, "wb") as null:
                cpu["pdftoppm"].append(timed(["pdftoppm", "-r", str(args.dpi), str(pdf)],
                                             stdout=null)[0])
            for name, extra in (("docfeed render", []), ("docfeed render + PNG", ["--png"])):
                spent, _, out = timed([str(bench), str(pdf), "--dpi", str(args.dpi), "--rounds",
                                       "1", *extra])
                assert json.loads(out)["pages"] == pages
                cpu[name].append(spent)  # the whole process, as for pdftoppm
        print(f"{pdf.name if args.pdf else f'bench.pdf ({args.pages} A4 pages, made here)'}: {pages} pages "
              f"at {args.dpi} dpi, {args.rounds} rounds, CPU seconds per run")
        # Three summaries, because a shared machine slows whole stretches of time: the median run,
        # the fastest run (the least disturbed), and the median over rounds of the ratio of the
        # runs made back to back in that round (both disturbed alike).
        base = statistics.median(cpu["pdftoppm"])
        base_min = min(cpu["pdftoppm"])
        print("| renderer | pages/s per core (median) | CPU ms per page | vs pdftoppm (median) "
              "| vs pdftoppm (fastest runs) | vs pdftoppm (median of per-round ratios) |")
        print("|---|---|---|---|---|---|")
        for name, values in cpu.items():
            med = statistics.median(values)
            paired = statistics.median(b / v for b, v in zip(cpu["pdftoppm"], values))
            print(f"| {name} | {pages / med:.1f} | {1000 * med / pages:.1f} | {base / med:.2f}x "
                  f"| {base_min / min(values):.2f}x | {paired:.2f}x |")

if __name__ == "__main__":
    main()

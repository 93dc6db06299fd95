"""PDF input of `docfeed pack` as a user meets it: each page packed from a PDF is, once
`datasets.load_from_disk` and Pillow decode it, exactly the raster `pdftoppm -r DPI` writes for
that page (the reference is the real pdftoppm of poppler-utils), the page counts are pdfinfo's,
and broken or encrypted documents are named with their page, without poppler writing to stderr."""
import json
import pathlib
import shutil
import subprocess

import datasets
import numpy as np
import pytest
from PIL import Image

from conftest import REPO, SAMPLE_DOCS, run_docfeed

PDFS = REPO / "tests" / "data" / "pdf"
SCAN = "sroie/000.jpg"
def pdfinfo_pages(path):
    out = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(next(line for line in out.splitlines() if line.startswith("Pages:")).split()[1])


def pdftoppm(path, page, dpi, tmp_path):
    prefix = tmp_path / f"ref-{path.name}-{page}-{dpi}"
    args = ["pdftoppm", "-singlefile", "-r", str(dpi), "-f", str(page), "-l", str(page)]
    subprocess.run(args + [str(path), str(prefix)], check=True, capture_output=True)
    with Image.open(f"{prefix}.ppm") as im:
        assert im.mode == "RGB"
        return np.asarray(im)


def make_folder(tmp_path, names, metadata=None):
    src = tmp_path / "src"
    src.mkdir()
    for name in names:
        source = SAMPLE_DOCS / SCAN if name.endswith(".jpg") else PDFS / name
        shutil.copy(source, src / name)
    if metadata is not None:
        (src / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metadata))
    return src


@pytest.mark.parametrize("dpi", [72, 200])
def test_packed_pages_equal_pdftoppm(tmp_path, dpi):
    src = make_folder(tmp_path, ["a.jpg", "handmade.pdf", "invoice.pdf"])
    out = tmp_path / "out"
    proc = run_docfeed("pack", src, "-o", out, "--dpi", dpi, "--threads", 2)
    assert f"2 document(s), 6 page(s) rendered at {dpi} dpi" in proc.stdout
    ds = datasets.load_from_disk(str(out))
    assert ds.features["page"].dtype == "int64" and ds.features["pages"].dtype == "int64"
    expected = [("a.jpg", None)] + [("handmade.pdf", k) for k in (1, 2, 3)] + \
               [("invoice.pdf", k) for k in (1, 2, 3)]
    assert len(ds) == len(expected)
    raw = ds.cast_column("image", datasets.Image(decode=False))
    for i, (name, page) in enumerate(expected):
        row = ds[i]
        assert raw[i]["image"]["path"] == name
        assert row["page"] == page
        if page is None:
            assert row["pages"] is None
            continue
        assert row["pages"] == pdfinfo_pages(src / name)
        assert raw[i]["image"]["bytes"][:8] == b"\x89PNG\r\n\x1a\n"  # stored losslessly
        ours = np.asarray(row["image"])
        reference = pdftoppm(src / name, page, dpi, tmp_path)
        assert ours.shape == reference.shape, (name, page)
        assert np.array_equal(ours, reference), (name, page)
    manifest = json.loads((out / "docfeed.json").read_text())
    assert manifest["pdf"]["dpi"] == dpi and manifest["pdf"]["pages"] == "all"


def test_first_page_only_and_metadata_rows(tmp_path):
    src = make_folder(tmp_path, ["invoice.pdf", "handmade.pdf", "a.jpg"], metadata=[
        {"file_name": "invoice.pdf", "ground_truth": "whole document"},
        {"file_name": "handmade.pdf", "page": 3, "ground_truth": "page three"},
        {"file_name": "a.jpg", "ground_truth": "scan"},
    ])
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out, "--pages", "1", "--dpi", 50)
    ds = datasets.load_from_disk(str(out))
    # --pages 1 takes invoice.pdf's first page; a row naming page 3 still gets page 3.
    assert ds["ground_truth"] == ["whole document", "page three", "scan"]
    assert ds["page"] == [1, 3, None]
    assert ds["pages"] == [3, 3, None]
    assert np.array_equal(np.asarray(ds[1]["image"]), pdftoppm(src / "handmade.pdf", 3, 50, tmp_path))
    manifest = json.loads((out / "docfeed.json").read_text())
    assert manifest["pdf"]["pages"] == "first"


def test_broken_documents_are_named_and_poppler_stays_quiet(tmp_path):
    src = make_folder(tmp_path, ["damaged_page.pdf", "encrypted.pdf", "truncated.pdf", "a.jpg"])
    out = tmp_path / "out"
    proc = run_docfeed("pack", src, "-o", out, check=False)
    assert proc.returncode == 1
    assert "encrypted.pdf: PDF is encrypted and needs a password" in proc.stderr
    # docfeed's one line, nothing from poppler (its messages are collected, not printed).
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert not out.exists()

    (src / "encrypted.pdf").unlink()
    (src / "truncated.pdf").unlink()
    proc = run_docfeed("pack", src, "-o", out, check=False)
    assert proc.returncode == 1
    assert "damaged_page.pdf page 2 of 3: page 2 is damaged (poppler: " in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr

    shutil.copy(PDFS / "encrypted.pdf", src / "encrypted.pdf")
    proc = run_docfeed("pack", src, "-o", out, "--skip-bad")
    assert "rejected   2 sample(s)" in proc.stdout
    assert proc.stderr == ""
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert [(r["file_name"], r.get("page")) for r in rejects] == \
           [("damaged_page.pdf", 2), ("encrypted.pdf", None)]
    assert rejects[0]["error"].startswith("Corruption: ")
    assert "password" in rejects[1]["error"] and rejects[1]["error"].startswith("Unsupported: ")
    ds = datasets.load_from_disk(str(out))
    assert [(p, n) for p, n in zip(ds["page"], ds["pages"])] == [(None, None), (1, 3), (3, 3)]


def test_cli_refuses_bad_pdf_options(tmp_path):
    src = make_folder(tmp_path, ["invoice.pdf"])
    for args in (["--dpi", "0"], ["--dpi", "2401"], ["--pages", "2"]):
        proc = run_docfeed("pack", src, "-o", tmp_path / "out", *args, check=False)
        assert proc.returncode != 0 and ("--dpi" in proc.stderr or "--pages" in proc.stderr)

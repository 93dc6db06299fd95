"""Multi-page TIFF input of `docfeed pack` as a user meets it, against Pillow and `datasets`.

The TIFFs are made here from a real scan (tests/data/sample-docs) by Pillow's writer (LZW,
CCITT G4, JPEG, Deflate, PackBits; RGB, L, 1-bit and palette pages) and by libtiff's `tiffcp`
(which joins files, keeping a page's Orientation tag). With `--pages all` every page is one row;
`datasets.load_from_disk(OUT)[i]["image"]` must be Pillow's `Image.open(f); f.seek(k)` of that
page, converted to RGB, and `page` / `pages` the page number and Pillow's n_frames. The default
(`--pages auto`) keeps a TIFF as one image, as `datasets` reads it; `--pages 1` takes the first
page. A page libtiff cannot decode is named with its page and lands in rejects.jsonl.
"""
import json
import shutil
import subprocess

import datasets
import numpy as np
import pytest
from PIL import Image

from conftest import REPO, SAMPLE_DOCS, run_docfeed

CASES = REPO / "tests" / "data" / "tiff" / "cases"
SCAN = SAMPLE_DOCS / "sroie" / "000.jpg"


def scan_pages(count, size=(60, 80)):
    """`count` different RGB crops of a real receipt scan, each `size` (width, height)."""
    with Image.open(SCAN) as scan:
        scan = scan.convert("RGB")
        w, h = size
        return [scan.crop((40 * k, 60 * k, 40 * k + w, 60 * k + h)) for k in range(count)]


def save_pages(path, pages, **options):
    pages[0].save(path, save_all=True, append_images=pages[1:], **options)


def pillow_page(path, k):
    """Page k (0-based) as Pillow gives it (its Orientation applied on load), in RGB."""
    with Image.open(path) as im:
        im.seek(k)
        return np.asarray(im.convert("RGB"))


def pillow_frames(path):
    with Image.open(path) as im:
        return im.n_frames


def make_tiffs(src):
    """The folder's TIFFs: name -> path, in sorted (sample) order."""
    rgb = scan_pages(3)
    save_pages(src / "a_lzw.tif", [rgb[0], rgb[1].convert("L"), rgb[2].convert("P")],
               compression="tiff_lzw")
    save_pages(src / "b_g4.tif", [p.convert("L").point(lambda v: 255 if v > 160 else 0)
                                  .convert("1") for p in rgb], compression="group4")
    save_pages(src / "c_jpeg.tiff", scan_pages(2, (64, 48)), compression="jpeg", quality=80)
    save_pages(src / "d_deflate.tif", [p.convert("L") for p in scan_pages(4, (50, 30))],
               compression="tiff_adobe_deflate")
    save_pages(src / "e_packbits.tif", rgb[:2], compression="packbits")
    # tiffcp joins an upright page and a page tagged Orientation 6 (turned when loaded).
    subprocess.run(["tiffcp", str(CASES / "multipage_lzw.tif"), str(CASES / "orientation6_lzw.tif"),
                    str(src / "f_tiffcp.tif")], check=True, capture_output=True)
    rgb[0].save(src / "g_single.tif", compression="tiff_lzw")
    return sorted(p.name for p in src.glob("*.tif*"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    src = tmp_path_factory.mktemp("tiffpages") / "src"
    src.mkdir()
    names = make_tiffs(src)
    shutil.copy(SCAN, src / "z_scan.jpg")
    return src, names


def raw(ds):
    return ds.cast_column("image", datasets.Image(decode=False))


def test_every_page_is_a_row_with_pillows_pixels(folder, tmp_path):
    src, names = folder
    out = tmp_path / "out"
    proc = run_docfeed("pack", src, "-o", out, "--pages", "all", "--threads", 2)
    expected = [(n, k) for n in names for k in range(1, pillow_frames(src / n) + 1)]
    assert f"tiff       {len(names)} file(s) split into {len(expected)} page(s)" in proc.stdout
    run_docfeed("verify", out)
    ds = datasets.load_from_disk(str(out))
    assert ds.features["page"].dtype == "int64" and ds.features["pages"].dtype == "int64"
    assert len(ds) == len(expected) + 1
    stored = raw(ds)
    for i, (name, page) in enumerate(expected):
        row = ds[i]
        assert stored[i]["image"]["path"] == name
        assert (row["page"], row["pages"]) == (page, pillow_frames(src / name)), (name, page)
        if row["pages"] == 1:  # a one-page TIFF is kept as it is
            assert stored[i]["image"]["bytes"] == (src / name).read_bytes()
        else:  # a page of a multi-page TIFF is stored losslessly on its own
            assert stored[i]["image"]["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
        ours = np.asarray(row["image"].convert("RGB"))
        reference = pillow_page(src / name, page - 1)
        assert ours.shape == reference.shape, (name, page)
        assert np.array_equal(ours, reference), (name, page)
    last = ds[len(expected)]
    assert stored[len(expected)]["image"]["path"] == "z_scan.jpg"
    assert last["page"] is None and last["pages"] is None


def test_by_default_a_tiff_is_one_image_as_datasets_reads_it(folder, tmp_path):
    src, names = folder
    out = tmp_path / "out"
    proc = run_docfeed("pack", src, "-o", out)
    assert "tiff " not in proc.stdout
    ds = datasets.load_from_disk(str(out))
    assert list(ds.features) == ["image"]  # no page columns without a PDF
    stored = raw(ds)
    assert [stored[i]["image"]["path"] for i in range(len(ds))] == names + ["z_scan.jpg"]
    for i, name in enumerate(names):
        assert stored[i]["image"]["bytes"] == (src / name).read_bytes()
        assert np.array_equal(np.asarray(ds[i]["image"].convert("RGB")),
                              pillow_page(src / name, 0)), name


def test_first_pages_and_rows_naming_pages(folder, tmp_path):
    src, _ = folder
    meta = tmp_path / "meta"
    shutil.copytree(src, meta)
    rows = [{"file_name": "d_deflate.tif", "ground_truth": "whole"},
            {"file_name": "a_lzw.tif", "page": 3, "ground_truth": "palette page"},
            {"file_name": "a_lzw.tif", "page": 2, "ground_truth": "gray page"},
            {"file_name": "z_scan.jpg", "ground_truth": "scan"}]
    (meta / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    proc = run_docfeed("pack", meta, "-o", out, "--pages", "1")
    ds = datasets.load_from_disk(str(out))
    # --pages 1 gives d_deflate.tif's first page; a row naming a page gets that page.
    assert ds["ground_truth"] == ["whole", "palette page", "gray page", "scan"]
    assert ds["page"] == [1, 3, 2, None]
    assert ds["pages"] == [4, 3, 3, None]
    for i, (name, page) in enumerate([("d_deflate.tif", 1), ("a_lzw.tif", 3), ("a_lzw.tif", 2)]):
        assert np.array_equal(np.asarray(ds[i]["image"].convert("RGB")),
                              pillow_page(meta / name, page - 1)), (name, page)
    assert "5 image file(s) not named in metadata.jsonl" in proc.stdout


def test_a_bad_page_is_named_and_rejected(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    # Pages 1-3 are LZW, page 4 is WebP-compressed, which Pillow (and so docfeed) cannot read.
    subprocess.run(["tiffcp", str(CASES / "multipage_lzw.tif"), str(CASES / "rgb_webp.tif"),
                    str(src / "mixed.tif")], check=True, capture_output=True)
    out = tmp_path / "out"
    proc = run_docfeed("pack", src, "-o", out, "--pages", "all", check=False)
    assert proc.returncode == 1
    assert "mixed.tif page 4 of 4: " in proc.stderr and "WEBP" in proc.stderr, proc.stderr
    assert not out.exists()
    proc = run_docfeed("pack", src, "-o", out, "--pages", "all", "--skip-bad")
    assert "rejected   1 sample(s)" in proc.stdout
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert [(r["file_name"], r["page"]) for r in rejects] == [("mixed.tif", 4)]
    ds = datasets.load_from_disk(str(out))
    assert ds["page"] == [1, 2, 3] and ds["pages"] == [4, 4, 4]
    for k in range(3):
        assert np.array_equal(np.asarray(ds[k]["image"].convert("RGB")),
                              pillow_page(src / "mixed.tif", k))


def test_cli_refuses_bad_pages_values(folder, tmp_path):
    src, _ = folder
    for value in ("2", "ALL", "first", ""):
        proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--pages", value, check=False)
        assert proc.returncode != 0 and "--pages" in proc.stderr, proc.stderr
        assert "auto, all or 1" in proc.stderr

"""TIFF inputs through the CLI, against Pillow and the real Hugging Face `datasets`.

An image folder holding TIFF files (CCITT G4 and LZW document pages, JPEG-in-TIFF, a tiled and a
planar file, a three-page file, Orientation 6, RGBA, palette, CMYK, 16-bit gray) next to a JPEG
is packed by `docfeed pack`; `datasets.load_from_disk` reads every row back and `docfeed verify`
and `docfeed bench` (the C++ loader) accept it. The pixel reference is Pillow on the source file:
`Image.open` + load (Pillow's TIFF loader applies the Orientation tag itself), page 0, converted
to RGBA, i.e. what `datasets` gives. `--codec png` stores docfeed's own decode, so it checks
docfeed's TIFF decoder pixel for pixel through the CLI.
"""
import json
import shutil

import datasets
import numpy as np
import pytest
from PIL import Image

from conftest import REPO, SAMPLE_DOCS, run_docfeed

CASES = REPO / "tests" / "data" / "tiff" / "cases"
TIFFS = ["doc_azure_invoice_g4.tif", "doc_sroie_gray_lzw.tif", "rgb_jpeg_ycbcr.tif",
         "rgb_tiled_jpeg_ycbcr.tif", "rgb_planar_lzw.tif", "multipage_lzw.tif",
         "orientation6_lzw.tif", "rgba_deflate.tif", "palette8_lzw.tif", "cmyk_lzw.tif",
         "gray16_le.tif", "bilevel_miniswhite.tif", "rgb_bigtiff_lzw.tif"]


def pillow_rgba(path):
    with Image.open(path) as img:
        img.load()
        return np.asarray(img.convert("RGBA"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiff") / "src"
    (root / "scans").mkdir(parents=True)
    names = [f"scans/{t}" for t in TIFFS] + ["sroie/000.jpg"]
    for name in TIFFS:
        shutil.copy(CASES / name, root / "scans" / name)
    (root / "sroie").mkdir()
    shutil.copy(SAMPLE_DOCS / "sroie" / "000.jpg", root / "sroie" / "000.jpg")
    with open(root / "metadata.jsonl", "w", encoding="utf-8") as meta:
        for i, name in enumerate(names):
            meta.write(json.dumps({"file_name": name, "ground_truth": f"page {i}"}) + "\n")
    return root, names


@pytest.mark.parametrize("codec", ["keep", "png"])
def test_a_folder_of_tiffs_packs_and_datasets_reads_pillows_pixels(folder, tmp_path, codec):
    root, names = folder
    out = tmp_path / "ds"
    run_docfeed("pack", root, "-o", out, "--codec", codec)
    run_docfeed("verify", out)
    stats = json.loads(run_docfeed("inspect", out, "--json").stdout)
    if codec == "keep":
        assert stats["stored_codecs"] == {"tiff": len(TIFFS), "jpeg": 1}, stats["stored_codecs"]
    ds = datasets.load_from_disk(str(out))
    assert len(ds) == len(names)
    for i, name in enumerate(names):
        row = ds[i]
        assert row["ground_truth"] == f"page {i}"
        got = np.asarray(row["image"].convert("RGBA"))
        np.testing.assert_array_equal(got, pillow_rgba(root / name), err_msg=f"{codec} {name}")


def test_keep_stores_the_tiff_bytes_and_every_page(folder, tmp_path):
    root, names = folder
    out = tmp_path / "ds"
    run_docfeed("pack", root, "-o", out)
    ds = datasets.load_from_disk(str(out)).cast_column("image", datasets.Image(decode=False))
    for i, name in enumerate(names):
        assert ds[i]["image"]["bytes"] == (root / name).read_bytes(), name


def test_the_loader_decodes_the_tiffs(folder, tmp_path):
    root, names = folder
    out = tmp_path / "ds"
    run_docfeed("pack", root, "-o", out)
    proc = run_docfeed("bench", out, "--size", "64x48", "--json", "--threads", "1",
                       "--batch-size", "1")
    # The first batch is timed apart: every other page counts.
    assert json.loads(proc.stdout)["pages"] == len(names) - 1


def test_a_tiff_pillow_cannot_read_is_refused_naming_the_file(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    shutil.copy(CASES / "rgb_webp.tif", root / "a.tif")
    proc = run_docfeed("pack", root, "-o", tmp_path / "ds", check=False)
    assert proc.returncode == 1, proc.stderr
    assert "a.tif" in proc.stderr and "WEBP" in proc.stderr, proc.stderr

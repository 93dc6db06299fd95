"""docfeed.pack(PATH, pages=, dpi=) in process, read back by `datasets` and by docfeed.Loader.

An image folder of multi-page TIFFs written by Pillow (LZW with RGB, L and palette pages, CCITT
G4, PackBits) and a one-page TIFF is packed with pages="all"; every row's page must be, in
`datasets.load_from_disk` and in the loader's uint8 output, Pillow's `Image.open(f); f.seek(k)`
converted to RGB. The pages are all image_size, which the Donut preset leaves as it is (no
resize, no padding), so the loader's pixels are the decoded page itself. dpi reaches the PDF
renderer; bad values raise ValueError naming the parameter. Runs in .venv/train
(`make test-python`).
"""
import json
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

import docfeed

from conftest import REPO, SAMPLE_DOCS

SCAN = SAMPLE_DOCS / "sroie" / "000.jpg"
PDF = REPO / "tests" / "data" / "pdf" / "invoice.pdf"
WIDTH, HEIGHT = 60, 80


def scan_pages(count):
    with Image.open(SCAN) as scan:
        scan = scan.convert("RGB")
        return [scan.crop((50 * k, 70 * k, 50 * k + WIDTH, 70 * k + HEIGHT)) for k in range(count)]


def save_pages(path, pages, **options):
    pages[0].save(path, save_all=True, append_images=pages[1:], **options)


def pillow_page(path, k):
    with Image.open(path) as im:
        im.seek(k)
        return np.asarray(im.convert("RGB"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    src = tmp_path_factory.mktemp("pages") / "src"
    src.mkdir()
    rgb = scan_pages(3)
    save_pages(src / "a.tif", [rgb[0], rgb[1].convert("L"), rgb[2].convert("P")],
               compression="tiff_lzw")
    save_pages(src / "b.tif", [p.convert("L").point(lambda v: 255 if v > 150 else 0).convert("1")
                               for p in rgb[:2]], compression="group4")
    save_pages(src / "c.tif", rgb[1:], compression="packbits")
    rgb[2].save(src / "d.tif", compression="tiff_lzw")
    # (file, 1-based page, page count) of every row with pages="all".
    rows = [("a.tif", 1, 3), ("a.tif", 2, 3), ("a.tif", 3, 3), ("b.tif", 1, 2), ("b.tif", 2, 2),
            ("c.tif", 1, 2), ("c.tif", 2, 2), ("d.tif", 1, 1)]
    return src, rows


def loader_pages(path):
    """Every sample's pixels as docfeed.Loader gives them (uint8, HWC, storage order)."""
    loader = docfeed.Loader(path, batch_size=1, image_size=(HEIGHT, WIDTH), shuffle=False,
                            pad="center", dtype="uint8", layout="hwc", drop_last=False,
                            num_threads=1)
    pages = [b["pixel_values"][0].clone().numpy() for b in loader]
    loader.close()
    return pages


def test_every_page_in_datasets_and_the_loader_is_pillows(folder, tmp_path):
    import datasets

    src, rows = folder
    out = docfeed.pack(src, tmp_path / "out", pages="all", threads=2)
    ds = datasets.load_from_disk(out)
    assert ds["page"] == [page for _, page, _ in rows]
    assert ds["pages"] == [count for _, _, count in rows]
    paths = [r["image"]["path"] for r in ds.cast_column("image", datasets.Image(decode=False))]
    assert paths == [name for name, _, _ in rows]
    from_loader = loader_pages(out)
    assert len(from_loader) == len(rows)
    for i, (name, page, _) in enumerate(rows):
        reference = pillow_page(src / name, page - 1)
        assert reference.shape == (HEIGHT, WIDTH, 3)
        assert np.array_equal(np.asarray(ds[i]["image"].convert("RGB")), reference), (name, page)
        assert np.array_equal(from_loader[i], reference), (name, page)


def test_pages_auto_and_first(folder, tmp_path):
    import datasets

    src, _ = folder
    ds = datasets.load_from_disk(docfeed.pack(src, tmp_path / "auto"))
    assert list(ds.features) == ["image"] and len(ds) == 4  # each TIFF one image, as datasets
    for kind, value in (("str", "1"), ("int", 1)):
        ds = datasets.load_from_disk(docfeed.pack(src, tmp_path / kind, pages=value))
        assert ds["page"] == [1, 1, 1, 1] and ds["pages"] == [3, 2, 2, 1]
        for i, name in enumerate("abcd"):
            assert np.array_equal(np.asarray(ds[i]["image"].convert("RGB")),
                                  pillow_page(src / f"{name}.tif", 0))


def test_dpi_reaches_the_pdf_renderer(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(PDF, src / "invoice.pdf")
    sizes = {}
    for dpi in (36, 72):
        out = docfeed.pack(src, tmp_path / f"dpi{dpi}", dpi=dpi, pages="1")
        manifest = json.loads((tmp_path / f"dpi{dpi}" / "docfeed.json").read_text())
        assert manifest["pdf"]["dpi"] == dpi and manifest["pdf"]["pages"] == "first"
        assert docfeed._docfeed.dataset_info(out)["num_samples"] == 1
        import datasets

        sizes[dpi] = datasets.load_from_disk(out)[0]["image"].size
    # pdftoppm's ceil(points * dpi / 72) a side: twice the dpi, twice the pixels (within one).
    assert all(abs(2 * a - b) <= 1 for a, b in zip(sizes[36], sizes[72])), sizes


@pytest.mark.parametrize("name, value", [
    ("pages", "2"), ("pages", "ALL"), ("pages", "first"), ("pages", 2), ("pages", None),
    ("pages", True), ("dpi", 0), ("dpi", 2401), ("dpi", "200"), ("dpi", 200.0), ("dpi", True),
])
def test_bad_values_raise_value_error_naming_the_parameter(folder, tmp_path, name, value):
    src, _ = folder
    with pytest.raises(ValueError, match=f"^{name} ") as raised:
        docfeed.pack(src, tmp_path / "out", **{name: value})
    assert isinstance(raised.value, docfeed.InvalidArgumentError)
    assert not (tmp_path / "out").exists()


def test_the_binding_checks_them_too(folder, tmp_path):
    src, _ = folder
    with pytest.raises(docfeed.InvalidArgumentError, match="pages: unknown pages choice"):
        docfeed._docfeed.pack_path(str(src), str(tmp_path / "out"), pages="every")
    with pytest.raises(docfeed.InvalidArgumentError, match="dpi"):
        docfeed._docfeed.pack_path(str(src), str(tmp_path / "out"), dpi=0)


def test_in_memory_rows_take_no_pages(tmp_path):
    rows = [{"image": {"bytes": SCAN.read_bytes(), "path": "a.jpg"}}]
    with pytest.raises(docfeed.InvalidArgumentError, match="dpi and pages apply to an image"):
        docfeed.pack(rows, tmp_path / "out", pages="all")
    with pytest.raises(docfeed.InvalidArgumentError, match="dpi and pages apply to an image"):
        docfeed.pack(rows, tmp_path / "out", dpi=100)

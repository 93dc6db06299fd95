"""`docfeed pack` of documents stored as a `List(Image)` of pages (issue 15: Sequence(Image)
columns): with no `image` column, each page becomes a sample, with `page` (1-based) and `pages`
columns as PDF pages get, for `save_to_disk` datasets and Parquet alike.

The source is written by the real `datasets`; the reference for every packed row is the
source's own page bytes (`datasets.load_from_disk` / `load_dataset` with decode=False).
"""
import pathlib

import pytest

from conftest import SAMPLE_DOCS, run_docfeed

datasets = pytest.importorskip("datasets")
from datasets import Dataset, Features, Image, Value  # noqa: E402

try:  # datasets >= 4: List; 3.x spelled it Sequence
    from datasets import List
except ImportError:  # pragma: no cover
    from datasets import Sequence as List

DOCS = ["sroie/000.jpg", "receipts/cord_receipt_00004.png", "invoices/simple-invoice.png",
        "receipts/demo_kie.jpeg", "sroie/016.jpg", "invoices/invoice_sample.jpg"]
FEATURES = Features({"pages": List(Image()), "ground_truth": Value("string"),
                     "doc_id": Value("int64")})


def page(name):
    return {"bytes": (SAMPLE_DOCS / name).read_bytes(), "path": pathlib.Path(name).name}


def documents():
    # 1, 3 and 2 pages.
    return Dataset.from_dict({
        "pages": [[page(DOCS[0])], [page(DOCS[1]), page(DOCS[2]), page(DOCS[3])],
                  [page(DOCS[4]), page(DOCS[5])]],
        "ground_truth": ["one", "two", "three"],
        "doc_id": [10, 20, 30]}, features=FEATURES)


def expected_rows(ds, first_only=False):
    rows = []
    for doc in ds.cast_column("pages", List(Image(decode=False))).to_list():
        pages = doc["pages"][:1] if first_only else doc["pages"]
        for k, p in enumerate(pages):
            rows.append({"image": p, "ground_truth": doc["ground_truth"], "doc_id": doc["doc_id"],
                         "page": k + 1, "pages": len(doc["pages"])})
    return rows


def packed_rows(out):
    ds = datasets.load_from_disk(str(out))
    return ds.cast_column("image", Image(decode=False)).to_list()


@pytest.mark.parametrize("form", ["save_to_disk", "parquet"])
def test_every_page_is_a_sample_with_its_page_number(tmp_path, form):
    src = tmp_path / "src"
    ds = documents()
    if form == "save_to_disk":
        ds.save_to_disk(str(src))
    else:
        src = tmp_path / "docs.parquet"
        ds.to_parquet(str(src))
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out)
    assert packed_rows(out) == expected_rows(ds)
    features = datasets.load_from_disk(str(out)).features
    assert features["page"] == Value("int64") and features["pages"] == Value("int64")
    assert "pages" in features and features["doc_id"] == Value("int64")
    run_docfeed("verify", out)
    first = tmp_path / "first"
    run_docfeed("pack", src, "-o", first, "--pages", "1")
    assert packed_rows(first) == expected_rows(ds, first_only=True)


def test_an_empty_or_null_document_and_a_null_page_are_bad_samples(tmp_path):
    ds = Dataset.from_dict({
        "pages": [[page(DOCS[0])], [], None, [page(DOCS[1]), None]],
        "ground_truth": ["a", "b", "c", "d"], "doc_id": [1, 2, 3, 4]}, features=FEATURES)
    src = tmp_path / "src"
    ds.save_to_disk(str(src))
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0
    assert "row 1" in proc.stderr and "has no pages" in proc.stderr, proc.stderr
    run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    import json
    rejects = [json.loads(l) for l in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["row"], r.get("page")) for r in rejects] == [(1, None), (2, None), (3, 2)], rejects
    assert "page 2 of 2 (column 'pages')" in rejects[2]["error"]
    rows = packed_rows(tmp_path / "out")
    assert [(r["doc_id"], r["page"]) for r in rows] == [(1, 1), (4, 1)]


def test_page_columns_must_not_clash(tmp_path):
    ds = Dataset.from_dict({"pages": [[page(DOCS[0])]], "page": [3]},
                           features=Features({"pages": List(Image()), "page": Value("int64")}))
    ds.save_to_disk(str(tmp_path / "src"))
    proc = run_docfeed("pack", tmp_path / "src", "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0 and "clashes" in proc.stderr, proc.stderr

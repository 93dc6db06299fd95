"""`docfeed synth`: the CLI's output read with the reference libraries (Pillow, datasets).

Small documents (--dpi 60) keep this to a few seconds."""
import json
from decimal import Decimal

import datasets
import numpy as np
import pytest
from PIL import Image

from conftest import run_docfeed

N = 10
DPI = 60
# Page sizes from the paper standards, not from our output: A4 is 210 x 297 mm, Letter 8.5 x 11 in.
A4 = (round(210 / 25.4 * DPI), round(297 / 25.4 * DPI))
LETTER = (round(8.5 * DPI), round(11 * DPI))


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "docs"
    run_docfeed("synth", "-o", out, "--n", N, "--seed", 3, "--dpi", DPI, "--threads", 2)
    return out


def rows(folder):
    return [json.loads(line) for line in (folder / "metadata.jsonl").read_text().splitlines()]


def test_same_seed_same_bytes_on_one_thread(synth_dir, tmp_path):
    again = tmp_path / "again"
    run_docfeed("synth", "-o", again, "--n", N, "--seed", 3, "--dpi", DPI, "--threads", 1)
    assert (again / "metadata.jsonl").read_bytes() == (synth_dir / "metadata.jsonl").read_bytes()
    for row in rows(synth_dir):
        assert (again / row["file_name"]).read_bytes() == (synth_dir / row["file_name"]).read_bytes()


def test_ground_truth_is_donut_json_with_consistent_sums(synth_dir):
    meta = rows(synth_dir)
    assert len(meta) == N
    for row in meta:
        assert set(row) == {"file_name", "ground_truth"}
        gt = json.loads(row["ground_truth"])["gt_parse"]
        assert list(gt) == ["company", "date", "address", "items", "subtotal", "tax", "total"]
        assert all(isinstance(gt[k], str) and gt[k] for k in gt if k != "items")
        assert gt["items"] and all(set(i) == {"name", "count", "price"} for i in gt["items"])
        subtotal = sum(int(i["count"]) * Decimal(i["price"]) for i in gt["items"])
        assert Decimal(gt["subtotal"]) == subtotal, row["file_name"]
        assert Decimal(gt["total"]) == Decimal(gt["subtotal"]) + Decimal(gt["tax"])


def test_images_decode_with_pillow_at_page_sizes(synth_dir):
    kinds = set()
    for row in rows(synth_dir):
        with Image.open(synth_dir / row["file_name"]) as im:
            im.load()
            assert im.format == ("PNG" if row["file_name"].endswith(".png") else "JPEG")
            assert im.mode in ("RGB", "L")
            if im.size in (A4, LETTER):
                kinds.add("invoice")
            else:  # a receipt: a strip at least 58 mm wide on a scanner bed or a table
                kinds.add("receipt")
                assert im.size[0] >= round(58 / 25.4 * DPI)
    assert kinds == {"invoice", "receipt"}


def test_pack_accepts_the_output_and_keeps_labels_and_pixels(synth_dir, tmp_path):
    out = tmp_path / "ds"
    run_docfeed("pack", synth_dir, "-o", out)
    ds = datasets.load_from_disk(str(out))
    meta = rows(synth_dir)
    assert len(ds) == len(meta)
    for i, row in enumerate(meta):
        assert ds[i]["ground_truth"] == row["ground_truth"]
        with Image.open(synth_dir / row["file_name"]) as src:
            assert np.array_equal(np.asarray(ds[i]["image"]), np.asarray(src))


@pytest.mark.parametrize("args, message", [
    (["--n", "3"], "-o OUT"),
    (["-o", "X"], "--n N"),
    (["-o", "X", "--n", "0"], "--n"),
    (["-o", "X", "--n", "2", "--kind", "letters"], "--kind must be invoice, receipt or mixed"),
    (["-o", "X", "--n", "2", "--dpi", "20"], "--dpi"),
    (["-o", "X", "--n", "2", "--seed", "-1"], "--seed"),
    (["-o", "X", "--n", "2", "--colour"], "--colour"),
])
def test_bad_flags_are_usage_errors(tmp_path, args, message):
    args = [str(tmp_path / "x") if a == "X" else a for a in args]
    proc = run_docfeed("synth", *args, check=False)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "x").exists()


def test_non_empty_output_needs_overwrite(synth_dir, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    proc = run_docfeed("synth", "-o", out, "--n", 1, "--dpi", DPI, check=False)
    assert proc.returncode == 1 and "--overwrite" in proc.stderr
    proc = run_docfeed("synth", "-o", out, "--n", 1, "--dpi", DPI, "--overwrite", check=False)
    assert proc.returncode == 1 and "keep.txt" in proc.stderr
    assert (out / "keep.txt").read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["o"]  # no partial directory left behind

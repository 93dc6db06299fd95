"""`docfeed pack --part I/N` and `docfeed merge`, through the CLI, against the real readers.

For N in {1, 2, 3, 7} the merged dataset must equal a single `docfeed pack` of the same source
as pyarrow and `datasets.load_from_disk` read them: same rows (image bytes and path, every
column) in the same order, and `docfeed verify` passes. Sources: tests/data/sample-docs (labels in
metadata.jsonl) and a folder with a PDF, a multi-page TIFF (`--pages all`) and a bad file
(`--skip-bad`), whose pages and reject fall across part boundaries. Refusals (mismatched,
missing, damaged parts), reruns, and a merge killed by SIGKILL (OUT absent or complete).
"""
import json
import os
import shutil
import signal
import subprocess
import time

import datasets
import pyarrow as pa
import pytest

from conftest import REPO, SAMPLE_DOCS, docfeed_bin, run_docfeed

DATA = REPO / "tests" / "data"


def arrow_rows(out):
    """Every row of a dataset's data files, in state.json order, read by pyarrow."""
    state = json.loads((out / "state.json").read_text())
    rows = []
    for f in state["_data_files"]:
        with pa.OSFile(str(out / f["filename"])) as src:
            rows.extend(pa.ipc.open_stream(src).read_all().to_pylist())
    return rows


def assert_same_dataset(whole, merged):
    assert arrow_rows(merged) == arrow_rows(whole)
    a = datasets.load_from_disk(str(whole))
    b = datasets.load_from_disk(str(merged))
    assert a.features == b.features
    assert len(a) == len(b)
    # Rows as datasets gives them, images as stored bytes (not decoded).
    a = a.cast_column("image", datasets.Image(decode=False))
    b = b.cast_column("image", datasets.Image(decode=False))
    for i in range(len(a)):
        assert a[i] == b[i], f"row {i}"
    run_docfeed("verify", merged)
    for name in ("rejects.jsonl", "tokenizer"):
        assert (whole / name).exists() == (merged / name).exists()
    if (whole / "rejects.jsonl").exists():
        assert (whole / "rejects.jsonl").read_bytes() == (merged / "rejects.jsonl").read_bytes()
    wm = json.loads((whole / "docfeed.json").read_text())
    mm = json.loads((merged / "docfeed.json").read_text())
    for key in ("num_samples", "columns", "label_column", "codec", "stored_codecs",
                "source_bytes", "stored_image_bytes", "rejected", "pdf"):
        assert wm.get(key) == mm.get(key), key


def pack_parts(src, parts_dir, n, *flags):
    for i in range(n):
        run_docfeed("pack", src, "--part", f"{i}/{n}", "-o", parts_dir / str(i), "--threads", "2",
                    *flags)
    return [parts_dir / str(i) for i in range(n)]


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    """An image folder with a 3-page PDF, a 3-page TIFF and a bad file among images."""
    src = tmp_path_factory.mktemp("docs") / "src"
    src.mkdir()
    rows = [json.loads(line) for line in open(SAMPLE_DOCS / "metadata.jsonl", encoding="utf-8")]
    for r in rows[:3]:
        shutil.copy(SAMPLE_DOCS / r["file_name"], src / os.path.basename(r["file_name"]))
    shutil.copy(DATA / "pdf" / "invoice.pdf", src / "invoice.pdf")
    shutil.copy(DATA / "tiff" / "cases" / "multipage_lzw.tif", src / "scan.tif")
    (src / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    names = [os.path.basename(rows[0]["file_name"]), "invoice.pdf",
             os.path.basename(rows[1]["file_name"]), "broken.jpg", "scan.tif",
             os.path.basename(rows[2]["file_name"])]
    with open(src / "metadata.jsonl", "w", encoding="utf-8") as f:
        for k, name in enumerate(names):
            f.write(json.dumps({"file_name": name, "ground_truth": f"doc {k}", "k": k}) + "\n")
    return src


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_sample_docs_parts_merge_to_the_whole_pack(tmp_path, n):
    run_docfeed("pack", SAMPLE_DOCS, "-o", tmp_path / "whole", "--threads", "2")
    parts = pack_parts(SAMPLE_DOCS, tmp_path / "parts", n)
    proc = run_docfeed("merge", *parts, "-o", tmp_path / "out")
    assert f"merged {n} parts" in proc.stdout and "0 copied" in proc.stdout, proc.stdout
    assert_same_dataset(tmp_path / "whole", tmp_path / "out")
    # No image bytes were copied: OUT's data files are the parts' files.
    part_inodes = {os.stat(f).st_ino for p in parts for f in p.glob("data-*.arrow")}
    out_inodes = {os.stat(f).st_ino for f in (tmp_path / "out").glob("data-*.arrow")}
    assert out_inodes == part_inodes


@pytest.mark.parametrize("n", [2, 3, 7])
def test_document_pages_and_rejects_across_parts(tmp_path, documents, n):
    flags = ("--pages", "all", "--dpi", "50", "--skip-bad")
    run_docfeed("pack", documents, "-o", tmp_path / "whole", "--threads", "2", *flags)
    parts = pack_parts(documents, tmp_path / "parts", n, *flags)
    # Parts given in another order: merge orders them by their index.
    run_docfeed("merge", *reversed(parts), "-o", tmp_path / "out")
    assert_same_dataset(tmp_path / "whole", tmp_path / "out")
    pages = [r["page"] for r in arrow_rows(tmp_path / "out")]
    assert pages.count(None) == 3 and sorted(p for p in pages if p) == [1, 1, 2, 2, 3, 3]


def test_mismatched_missing_and_damaged_parts_are_refused(tmp_path):
    parts = pack_parts(SAMPLE_DOCS, tmp_path / "parts", 3)
    run_docfeed("pack", SAMPLE_DOCS, "--part", "2/3", "--codec", "png", "-o", tmp_path / "png")
    proc = run_docfeed("merge", parts[0], parts[1], tmp_path / "png", "-o", tmp_path / "out",
                       check=False)
    assert proc.returncode == 1
    assert str(tmp_path / "png") in proc.stderr and "codec" in proc.stderr, proc.stderr
    proc = run_docfeed("merge", parts[0], parts[2], "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "part 1/3 is missing" in proc.stderr, proc.stderr
    data = next(parts[1].glob("data-*.arrow"))
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    data.write_bytes(bytes(raw))
    proc = run_docfeed("merge", *parts, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and f"part {parts[1]}" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob("out.partial-*"))
    # A rerun of the damaged part refuses to keep it and says how to pack it again.
    proc = run_docfeed("pack", SAMPLE_DOCS, "--part", "1/3", "-o", parts[1], check=False)
    assert proc.returncode == 1 and "--overwrite" in proc.stderr, proc.stderr
    run_docfeed("pack", SAMPLE_DOCS, "--part", "1/3", "-o", parts[1], "--overwrite")
    run_docfeed("merge", *parts, "-o", tmp_path / "out")


def test_reruns_keep_complete_parts_and_merges(tmp_path):
    parts = pack_parts(SAMPLE_DOCS, tmp_path / "parts", 2)
    before = os.stat(parts[0] / "docfeed.json").st_mtime_ns
    proc = run_docfeed("pack", SAMPLE_DOCS, "--part", "0/2", "-o", parts[0])
    assert "already holds part 0/2" in proc.stdout, proc.stdout
    assert os.stat(parts[0] / "docfeed.json").st_mtime_ns == before
    run_docfeed("merge", *parts, "-o", tmp_path / "out")
    proc = run_docfeed("merge", *parts, "-o", tmp_path / "out")
    assert "already the merge" in proc.stdout, proc.stdout


def test_merge_killed_midway_leaves_no_dataset_or_a_complete_one(tmp_path):
    """SIGKILL at several moments of a merge of 7 parts: OUT is absent or opens and verifies."""
    parts = pack_parts(SAMPLE_DOCS, tmp_path / "parts", 7)
    seen_partial = False
    for delay_ms in (0, 2, 5, 10, 20, 40, 80):
        out = tmp_path / f"out-{delay_ms}"
        proc = subprocess.Popen([str(docfeed_bin()), "merge", *map(str, parts), "-o", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay_ms / 1000)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        seen_partial |= any(tmp_path.glob(f"out-{delay_ms}.partial-*"))
        if out.exists():
            assert len(datasets.load_from_disk(str(out))) == 20
            run_docfeed("verify", out)
        else:
            with pytest.raises(FileNotFoundError):
                datasets.load_from_disk(str(out))
        # The rerun clears what the killed run left and places the merge.
        run_docfeed("merge", *parts, "-o", out)
        assert not list(tmp_path.glob(f"out-{delay_ms}.partial-*"))
        assert_same_dataset(parts_whole(tmp_path), out)
    print(f"a killed run left a work directory behind: {seen_partial}")


def parts_whole(tmp_path):
    whole = tmp_path / "whole"
    if not whole.exists():
        run_docfeed("pack", SAMPLE_DOCS, "-o", whole, "--threads", "2")
    return whole

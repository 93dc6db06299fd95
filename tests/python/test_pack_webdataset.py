"""`docfeed pack SHARDS -o OUT` of WebDataset tar shards (plain and gzip-compressed).

The reference is `datasets`' own webdataset loader (`load_dataset("webdataset", ...)`), which
groups members by key and gives each extension a column: the packed rows must have the same
keys, the same image bytes, text, class and JSON values, in the same order. The shards are
written with Python's tarfile from the sample documents.
"""
import io
import json
import pathlib
import tarfile

import pytest

from conftest import SAMPLE_DOCS, run_docfeed

datasets = pytest.importorskip("datasets")

JPEGS = ["sroie/000.jpg", "sroie/016.jpg", "sroie/021.jpg", "receipts/demo_kie.jpeg",
         "sroie/027.jpg"]


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def sample(tar, key, image, i):
    add(tar, f"{key}.cls", str(i % 3).encode())
    add(tar, f"{key}.jpg", (SAMPLE_DOCS / image).read_bytes())
    add(tar, f"{key}.json", json.dumps({"gt_parse": {"n": i, "é": "ü"}}).encode())
    add(tar, f"{key}.txt", f"page {i}\n".encode())


@pytest.fixture()
def shards(tmp_path):
    root = tmp_path / "shards"
    root.mkdir()
    with tarfile.open(root / "train-000000.tar", "w") as tar:
        for i, image in enumerate(JPEGS[:3]):
            sample(tar, f"docs/{i:06d}", image, i)
    with tarfile.open(root / "train-000001.tar.gz", "w:gz") as tar:
        for i, image in enumerate(JPEGS[3:], start=3):
            sample(tar, f"docs/{i:06d}", image, i)
    return root


def test_shards_pack_as_datasets_webdataset_loader_reads_them(shards, tmp_path):
    run_docfeed("pack", shards, "-o", tmp_path / "out")
    packed = datasets.load_from_disk(str(tmp_path / "out"))
    packed = packed.cast_column("image", datasets.Image(decode=False))
    files = sorted(str(p) for p in shards.iterdir())
    ref = datasets.load_dataset("webdataset", data_files={"train": files}, split="train",
                                cache_dir=str(tmp_path / "cache"))
    ref = ref.cast_column("jpg", datasets.Image(decode=False))
    assert len(packed) == len(ref) == len(JPEGS)
    for got, want in zip(packed, ref):
        assert got["__key__"] == want["__key__"]
        assert got["__url__"] == pathlib.Path(want["__url__"]).name
        assert got["image"]["bytes"] == want["jpg"]["bytes"]
        assert got["image"]["path"] == want["__key__"] + ".jpg"
        assert got["txt"] == want["txt"] and got["cls"] == want["cls"]
        assert json.loads(got["json"]) == want["json"]
    run_docfeed("verify", tmp_path / "out")


def test_one_shard_and_its_errors(shards, tmp_path):
    shard = shards / "train-000000.tar"
    run_docfeed("pack", shard, "-o", tmp_path / "one")
    assert len(datasets.load_from_disk(str(tmp_path / "one"))) == 3
    # A sample without an image and a class that is not a number: bad samples, named.
    bad = tmp_path / "bad.tar"
    with tarfile.open(bad, "w") as tar:
        sample(tar, "a", JPEGS[0], 0)
        add(tar, "b.txt", b"no image here")
        add(tar, "c.cls", b"seven")
        add(tar, "c.jpg", (SAMPLE_DOCS / JPEGS[1]).read_bytes())
        sample(tar, "d", JPEGS[2], 3)
    proc = run_docfeed("pack", bad, "-o", tmp_path / "x", check=False)
    assert proc.returncode != 0 and "bad.tar: sample b: has no image member" in proc.stderr, \
        proc.stderr
    run_docfeed("pack", bad, "-o", tmp_path / "skipped", "--skip-bad")
    rejects = [json.loads(l) for l in (tmp_path / "skipped" / "rejects.jsonl").read_text()
               .splitlines()]
    assert [r["row"] for r in rejects] == [1, 2]
    assert "c.cls is not a decimal integer" in rejects[1]["error"]
    kept = datasets.load_from_disk(str(tmp_path / "skipped"))
    assert kept["__key__"] == ["a", "d"]


def test_a_truncated_shard_is_an_error_naming_it(shards, tmp_path):
    data = (shards / "train-000000.tar").read_bytes()
    cut = tmp_path / "cut" / "train-000000.tar"
    cut.parent.mkdir()
    cut.write_bytes(data[: len(data) // 2])
    proc = run_docfeed("pack", cut.parent, "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0 and "train-000000.tar" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()

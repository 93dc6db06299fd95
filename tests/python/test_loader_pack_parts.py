"""docfeed.pack(..., part=(I, N)) and docfeed.merge, in process through the binding.

The reference is a single docfeed.pack of the same input, both read back with
datasets.load_from_disk (the real reader): an image folder given by its path, and in-memory
rows of a datasets.Dataset (PackFrom's listing is sliced the same way). Runs in .venv/train and
.venv/hf5 (`make test-python`).
"""
import json
import os
import pathlib

import datasets
import pytest

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"


def rows_of(path):
    ds = datasets.load_from_disk(str(path)).cast_column("image", datasets.Image(decode=False))
    return [ds[i] for i in range(len(ds))]


def in_memory_dataset():
    rows = [json.loads(line) for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()]
    rows = rows[:9]
    ds = datasets.Dataset.from_dict({
        "image": [str(SAMPLE_DOCS / r["file_name"]) for r in rows],
        "ground_truth": [r["ground_truth"] for r in rows],
        "n": list(range(len(rows))),
    })
    return ds.cast_column("image", datasets.Image())


@pytest.mark.parametrize("source", ["path", "rows"])
@pytest.mark.parametrize("n", [2, 3])
def test_parts_merge_to_the_whole_pack(tmp_path, source, n):
    data = SAMPLE_DOCS if source == "path" else in_memory_dataset()
    docfeed.pack(data, tmp_path / "whole", threads=2)
    parts = [tmp_path / "parts" / str(i) for i in range(n)]
    os.makedirs(tmp_path / "parts")
    for i, p in enumerate(parts):
        docfeed.pack(data, p, threads=2, part=(i, n))
    summary = docfeed.merge(reversed(parts), tmp_path / "out")
    assert summary["parts"] == n and summary["copied_files"] == 0
    assert summary["linked_files"] == summary["data_files"]
    assert rows_of(tmp_path / "out") == rows_of(tmp_path / "whole")
    # A rerun keeps the merge.
    assert docfeed.merge(parts, tmp_path / "out")["already_complete"]


def test_bad_parts_raise_naming_the_part(tmp_path):
    for i in range(3):
        docfeed.pack(SAMPLE_DOCS, tmp_path / str(i), threads=2, part=(i, 3))
    with pytest.raises(docfeed.InvalidArgumentError, match="part 1/3 is missing"):
        docfeed.merge([tmp_path / "0", tmp_path / "2"], tmp_path / "out")
    docfeed.pack(SAMPLE_DOCS, tmp_path / "webp", threads=2, codec="webp", part=(1, 3))
    with pytest.raises(docfeed.InvalidArgumentError, match="codec"):
        docfeed.merge([tmp_path / "0", tmp_path / "webp", tmp_path / "2"], tmp_path / "out")
    with pytest.raises(docfeed.InvalidArgumentError, match="part"):
        docfeed.pack(SAMPLE_DOCS, tmp_path / "x", part=(3, 3))
    assert not (tmp_path / "out").exists()


def test_a_part_of_rows_reads_only_its_own_images(tmp_path):
    """docfeed.pack(rows, part=(I, N)) fetches the image bytes of its slice only (the rows before
    it are handed over as placeholders the packer never asks for), and still equals the slice
    of the whole pack."""
    read = []

    class Cell(dict):
        def get(self, key, default=None):
            if key == "bytes":
                read.append(self["n"])
            return super().get(key, default)

    rows = [json.loads(line) for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()]
    cells = [{"image": Cell(bytes=(SAMPLE_DOCS / r["file_name"]).read_bytes(),
                            path=os.path.basename(r["file_name"]), n=k), "k": k}
             for k, r in enumerate(rows[:10])]
    docfeed.pack(cells, tmp_path / "whole", threads=2)
    parts = [tmp_path / str(i) for i in range(3)]
    for i, p in enumerate(parts):
        read.clear()
        docfeed.pack(cells, p, threads=2, part=(i, 3))
        first, end = i * 10 // 3, (i + 1) * 10 // 3
        assert min(read) == first and set(range(first, end)) <= set(read), (i, read)
    docfeed.merge(parts, tmp_path / "out")
    assert rows_of(tmp_path / "out") == rows_of(tmp_path / "whole")

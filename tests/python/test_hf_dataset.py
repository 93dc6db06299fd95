"""docfeed.hf.DocfeedDataset: len() counts the samples from the dataset's manifest and index
(docfeed._docfeed.dataset_info), without starting a loader or its threads.

Runs in .venv/train (`make test-python`).
"""
import os
import pathlib
import subprocess

import pytest

import docfeed
import docfeed.hf
from docfeed import _docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "ds"
    proc = subprocess.run([docfeed.cli_path(), "pack", str(SAMPLE_DOCS), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def threads():
    return len(os.listdir("/proc/self/task"))


def test_len_reads_the_manifest_and_starts_no_loader(packed, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("len() must not start a loader")

    monkeypatch.setattr(docfeed, "Loader", refuse)
    monkeypatch.setattr(docfeed.hf.docfeed, "Loader", refuse)
    monkeypatch.setattr(_docfeed, "Loader", refuse)
    before = threads()
    dataset = docfeed.hf.DocfeedDataset(packed, image_size=(64, 48), label_column="-")
    assert len(dataset) == 20
    assert threads() == before
    expected = sum(1 for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()
                   if line.strip())
    assert len(dataset) == expected


def test_len_of_a_missing_dataset_is_not_found(tmp_path):
    with pytest.raises(docfeed.NotFoundError):
        len(docfeed.hf.DocfeedDataset(tmp_path / "missing", image_size=(64, 48)))

"""docfeed.pack packs in process through the binding (_docfeed.pack_rows -> PackFrom).

The reference is the CLI: the same rows written as an image folder (images/NNNNNNNN.ext +
metadata.jsonl) and packed by `docfeed pack`, then both outputs read back with
datasets.load_from_disk (the real reader) and with docfeed.Loader. Also: no subprocess and no
temporary folder, per-row errors naming the row (and --skip-bad's rejects), typed options and
the deprecated extra_args. Runs in .venv/train (`make test-python`).
"""
import io
import json
import pathlib
import subprocess
import tempfile

import pytest
import torch
from PIL import Image

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (64, 48)
N = 7


def sample_rows():
    rows = [json.loads(line) for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()]
    return rows[:N]


def hf_dataset():
    import datasets

    rows = sample_rows()
    ds = datasets.Dataset.from_dict({
        "image": [str(SAMPLE_DOCS / r["file_name"]) for r in rows],
        "ground_truth": [r["ground_truth"] for r in rows],
        "source": [r["source"] for r in rows],
        "n": list(range(len(rows))),
        "score": [0.5 + i for i in range(len(rows))],
        "flag": [i % 2 == 0 for i in range(len(rows))],
    })
    return ds.cast_column("image", datasets.Image())


def cli_pack(folder, out, *args):
    proc = subprocess.run([docfeed.cli_path(), "pack", str(folder), "-o", str(out),
                           *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def write_folder(root, images, records):
    """The rows as the image folder the CLI packs: images[i] bytes under records[i] names."""
    root.mkdir()
    (root / "images").mkdir()
    with open(root / "metadata.jsonl", "w", encoding="utf-8") as meta:
        for data, record in zip(images, records):
            (root / record["file_name"]).write_bytes(data)
            meta.write(json.dumps(record, ensure_ascii=False) + "\n")
    return root


def reference_folder(tmp_path):
    rows = sample_rows()
    images, records = [], []
    for i, r in enumerate(rows):
        src = SAMPLE_DOCS / r["file_name"]
        images.append(src.read_bytes())
        records.append({"file_name": f"images/{i:08d}{src.suffix.lower()}",
                        "ground_truth": r["ground_truth"], "source": r["source"], "n": i,
                        "score": 0.5 + i, "flag": i % 2 == 0})
    return write_folder(tmp_path / "folder", images, records)


def read_back(path):
    """Every row of a packed dataset as datasets.load_from_disk reads it (images undecoded)."""
    import datasets

    ds = datasets.load_from_disk(str(path))
    features = {k: str(v) for k, v in ds.features.items()}
    ds = ds.cast_column("image", datasets.Image(decode=False))
    return features, [dict(row) for row in ds]


def batches(path, **kw):
    loader = docfeed.Loader(path, batch_size=3, image_size=SIZE, shuffle=False, pad="center",
                            drop_last=False, num_threads=1, **kw)
    out = [(b["pixel_values"].clone(), b.get("labels")) for b in loader]
    loader.close()
    return out


def assert_same_dataset(a, b):
    assert read_back(a) == read_back(b)
    for (pa, la), (pb, lb) in zip(batches(a), batches(b), strict=True):
        assert torch.equal(pa, pb)
        assert (la is None and lb is None) or torch.equal(la, lb)


@pytest.fixture()
def no_subprocess_no_tempdir(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("docfeed.pack must not start a process or make a temporary folder")

    for name in ("run", "Popen", "call", "check_call", "check_output"):
        monkeypatch.setattr(subprocess, name, refuse)
    for name in ("TemporaryDirectory", "mkdtemp"):
        monkeypatch.setattr(tempfile, name, refuse)


def test_pack_starts_no_process_and_makes_no_temporary_folder(tmp_path,
                                                             no_subprocess_no_tempdir):
    out = docfeed.pack(hf_dataset(), tmp_path / "in-process", threads=2)
    assert out == str(tmp_path / "in-process")
    assert docfeed._docfeed.dataset_info(out)["num_samples"] == N
    assert [p.name for p in tmp_path.iterdir()] == ["in-process"]


def test_in_process_equals_cli(tmp_path):
    ds = hf_dataset()
    got = docfeed.pack(ds, tmp_path / "in-process")
    want = cli_pack(reference_folder(tmp_path), tmp_path / "cli")
    features, rows = read_back(got)
    assert len(rows) == N and rows[0]["image"]["path"] == "images/00000000.jpg"
    assert "int64" in features["n"] and "float64" in features["score"]
    assert rows[3]["score"] == 3.5 and rows[2]["flag"] is True
    assert rows[1]["image"]["bytes"] == (SAMPLE_DOCS / sample_rows()[1]["file_name"]).read_bytes()
    assert_same_dataset(got, want)


def test_in_process_preprocessed_equals_cli(tmp_path):
    ds = hf_dataset().select_columns(["image", "ground_truth"])
    got = docfeed.pack(ds, tmp_path / "in-process", preprocess="donut", size=SIZE)
    folder = reference_folder(tmp_path)
    want = cli_pack(folder, tmp_path / "cli", "--preprocess", "donut", "--size",
                    f"{SIZE[0]}x{SIZE[1]}")
    # The reference folder has more columns; compare pixels and the kept column.
    for (pa, _), (pb, _) in zip(batches(got), batches(want), strict=True):
        assert torch.equal(pa, pb)
    info = docfeed._docfeed.dataset_info(got)
    assert info["preprocess"]["height"] == SIZE[0] and info["compression"] == "lz4_frame"
    # The deprecated CLI flags give the same dataset as the typed arguments.
    with pytest.warns(DeprecationWarning):
        old = docfeed.pack(ds, tmp_path / "old", extra_args=["--preprocess", "donut", "--size",
                                                             f"{SIZE[0]}x{SIZE[1]}"])
    assert read_back(old) == read_back(got)


def test_plain_rows_with_pil_images_and_a_tokenizer(tmp_path, no_subprocess_no_tempdir):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    texts = ["hello", "abc", "", "zz z"]
    vocab = {"<pad>": 0, "<unk>": 1}
    for ch in sorted(set("".join(texts))):
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")
    files = [SAMPLE_DOCS / r["file_name"] for r in sample_rows()[:len(texts)]]
    pil = [Image.open(f).convert("RGB") for f in files]
    rows = [{"image": img, "target_sequence": t, "k": i} for i, (img, t) in enumerate(zip(pil,
                                                                                         texts))]
    out = docfeed.pack(rows, tmp_path / "rows", tokenizer=tok, max_length=6)
    features, got = read_back(out)
    for i, row in enumerate(got):
        buffer = io.BytesIO()
        pil[i].save(buffer, format="PNG")
        assert row["image"] == {"bytes": buffer.getvalue(), "path": f"images/{i:08d}.png"}
        ids = tok(texts[i], add_special_tokens=False)["input_ids"]
        assert row["labels"] == ids + [-100] * (6 - len(ids))
        assert row["k"] == i and row["target_sequence"] == texts[i]


def test_a_bad_row_is_named_and_skip_bad_rejects_it(tmp_path):
    good = [(SAMPLE_DOCS / r["file_name"]).read_bytes() for r in sample_rows()[:4]]
    rows = [{"image": {"bytes": b, "path": f"p{i}.jpg"}, "k": i} for i, b in enumerate(good)]
    rows[2] = {"image": {"bytes": b"this is not an image", "path": "broken.jpg"}, "k": 2}
    with pytest.raises(docfeed.DataError) as info:
        docfeed.pack(rows, tmp_path / "out")
    assert "row 2 (images/00000002.jpg)" in str(info.value), str(info.value)
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob("out.partial-*"))  # nothing left behind
    rows[1] = {"image": {"bytes": None, "path": None}, "k": 1}
    docfeed.pack(rows, tmp_path / "out", skip_bad=True)
    assert docfeed._docfeed.dataset_info(str(tmp_path / "out"))["num_samples"] == 2
    rejects = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text()
               .splitlines()]
    # Row 1 has no path, so its stored name has no extension.
    assert [r["file_name"] for r in rejects] == ["images/00000001", "images/00000002.jpg"]
    assert "neither bytes nor path" in rejects[0]["error"] and "row 1" in rejects[0]["error"]
    _, kept = read_back(tmp_path / "out")
    assert [r["k"] for r in kept] == [0, 3]


def test_errors_are_typed(tmp_path):
    rows = [{"image": {"bytes": (SAMPLE_DOCS / sample_rows()[0]["file_name"]).read_bytes(),
                       "path": "a.jpg"}}]
    docfeed.pack(rows, tmp_path / "out")
    with pytest.raises(docfeed.AlreadyExistsError) as info:
        docfeed.pack(rows, tmp_path / "out")
    assert isinstance(info.value, FileExistsError) and "overwrite" in str(info.value)
    docfeed.pack(rows, tmp_path / "out", overwrite=True)
    with pytest.raises(docfeed.InvalidArgumentError, match="jpeg_quality"):
        docfeed.pack(rows, tmp_path / "q", codec="jpeg", jpeg_quality=101)
    with pytest.raises(docfeed.InvalidArgumentError, match="size"):
        docfeed.pack(rows, tmp_path / "p", preprocess="donut")
    with pytest.raises(docfeed.InvalidArgumentError, match="compression"):
        docfeed.pack(rows, tmp_path / "c", compression="gzip")
    with pytest.raises(docfeed.InvalidArgumentError, match="--frobnicate"):
        with pytest.warns(DeprecationWarning):
            docfeed.pack(rows, tmp_path / "x", extra_args=["--frobnicate"])
    bad_column = [{"image": rows[0]["image"], "v": 1}, {"image": rows[0]["image"], "v": "one"}]
    with pytest.raises(docfeed.InvalidArgumentError, match=r"row 1.*\"v\""):
        docfeed.pack(bad_column, tmp_path / "v")


def test_an_image_the_loader_cannot_resize_is_refused_by_docfeed_pack(tmp_path):
    """docfeed.pack refuses a 1x100000 page (the default Donut preset cannot resize it) naming the
    row's file, or rejects it with skip_bad, instead of packing it for the loader to refuse."""
    thin = io.BytesIO()
    Image.new("L", (1, 100000), 255).save(thin, format="PNG")
    page = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 20, 30)).save(page, format="PNG")
    rows = [{"image": {"bytes": page.getvalue(), "path": "page.png"}, "target_sequence": "a"},
            {"image": {"bytes": thin.getvalue(), "path": "thin.png"}, "target_sequence": "b"}]
    with pytest.raises(docfeed.Error) as e:
        docfeed.pack(rows, tmp_path / "out")
    assert "cannot process this 1x100000 image" in str(e.value), e.value
    assert str(e.value).startswith("row 1 ("), e.value  # the row and the name it is stored under
    assert not (tmp_path / "out").exists()
    docfeed.pack(rows, tmp_path / "kept", skip_bad=True)
    loader = docfeed.Loader(tmp_path / "kept", batch_size=1, image_size=(64, 48), drop_last=False)
    assert sum(len(b.sample_ids) for b in loader) == 1
    loader.close()


def test_pack_reports_a_jpeg_with_warnings_and_strict_refuses_it(tmp_path):
    """An image that decodes only with warnings (a bad Huffman code: Pillow decodes it) is packed
    with a docfeed.DecodeWarning naming its row; strict=True makes it a bad row, a reject with
    skip_bad. A CMYK JPEG, a 16-bit gray PNG and an animated GIF pack and load."""
    modes = REPO / "tests" / "data" / "images" / "modes"
    names = ["cmyk_adobe.jpg", "gray16_mixed.png", "anim_trns.gif", "warn_huffman.jpg"]
    rows = [{"image": {"bytes": (modes / n).read_bytes(), "path": n}, "k": i}
            for i, n in enumerate(names)]
    with pytest.warns(docfeed.DecodeWarning, match=r"images/00000003\.jpg: \d+ warning"):
        docfeed.pack(rows, tmp_path / "out")
    loader = docfeed.Loader(tmp_path / "out", batch_size=4, image_size=SIZE, drop_last=False,
                            shuffle=False)
    assert sum(len(b.sample_ids) for b in loader) == 4
    loader.close()
    with pytest.raises(docfeed.DataError, match="refused by strict"):
        docfeed.pack(rows, tmp_path / "strict", strict=True)
    docfeed.pack(rows, tmp_path / "skip", strict=True, skip_bad=True)
    rejects = [json.loads(line) for line in (tmp_path / "skip" / "rejects.jsonl").read_text()
               .splitlines()]
    assert [r["file_name"] for r in rejects] == ["images/00000003.jpg"]
    assert "Corrupt JPEG data" in rejects[0]["error"], rejects[0]


def test_validate_structure_equals_full_and_the_cli(tmp_path):
    """validate="structure" (`docfeed pack --validate structure`) stores what the full check
    stores for good images, refuses a PNG cut before its IEND naming the row, and applies to
    codec="keep" only."""
    ds = hf_dataset()
    full = docfeed.pack(ds, tmp_path / "full")
    structure = docfeed.pack(ds, tmp_path / "structure", validate="structure")
    assert read_back(structure) == read_back(full)
    cli = cli_pack(reference_folder(tmp_path), tmp_path / "cli", "--validate", "structure")
    assert_same_dataset(structure, cli)
    from_path = docfeed.pack(SAMPLE_DOCS, tmp_path / "from-path", validate="structure")
    assert read_back(from_path) == read_back(cli_pack(SAMPLE_DOCS, tmp_path / "cli-path"))

    page = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 20, 30)).save(page, format="PNG")
    cut = page.getvalue()[:-6]  # into the IEND chunk's CRC
    rows = [{"image": {"bytes": page.getvalue(), "path": "good.png"}},
            {"image": {"bytes": cut, "path": "cut.png"}}]
    with pytest.raises(docfeed.DataError) as e:
        docfeed.pack(rows, tmp_path / "cut", validate="structure")
    assert "row 1 (images/00000001.png)" in str(e.value), e.value
    assert "truncated" in str(e.value), e.value
    assert not (tmp_path / "cut").exists()
    with pytest.raises(docfeed.InvalidArgumentError, match="validate"):
        docfeed.pack(rows, tmp_path / "v", validate="quick")
    with pytest.raises(docfeed.InvalidArgumentError, match="codec"):
        docfeed.pack(rows, tmp_path / "w", validate="structure", codec="png")
    with pytest.raises(docfeed.InvalidArgumentError, match="structure"):
        docfeed.pack(rows, tmp_path / "p", validate="structure", preprocess="donut", size=SIZE)


def test_a_dataset_with_only_an_image_column_packs_every_row(tmp_path):
    """`datasets` gives a dataset without columns no rows, so the image column cannot be removed
    to list the other columns' values: every image must still become a sample."""
    ds = hf_dataset().select_columns(["image"])
    got = docfeed.pack(ds, tmp_path / "only-images")
    features, rows = read_back(got)
    assert list(features) == ["image"] and len(rows) == N
    assert [r["image"]["bytes"] for r in rows] == \
        [(SAMPLE_DOCS / r["file_name"]).read_bytes() for r in sample_rows()]

"""`docfeed pack SAVED -o OUT` of Hugging Face datasets whose images are an `Image` column.

The inputs are written by the real `datasets` (`save_to_disk`: a DatasetDict of two splits, one
in two shards, with ClassLabel, nested struct, list-of-list, nullable and timestamp columns), and
the outputs are read back by the real `datasets.load_from_disk` and pyarrow: every row, every
value, every feature and every image byte must equal the source's. This file runs under both
stacks make test creates (.venv/train: datasets 4.8; .venv/hf5: datasets 5.x), and the loader
part reads the packed splits with docfeed.Loader.
"""
import io
import json
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image as PILImage

from conftest import SAMPLE_DOCS, run_docfeed

datasets = pytest.importorskip("datasets")
from datasets import ClassLabel, Dataset, DatasetDict, Features, Image, Value  # noqa: E402

try:  # datasets >= 4: List; 3.x spelled it Sequence
    from datasets import List
except ImportError:  # pragma: no cover - both tested stacks have List
    from datasets import Sequence as List

DOCS = ["sroie/000.jpg", "receipts/cord_receipt_00004.png", "invoices/simple-invoice.png",
        "receipts/demo_kie.jpeg", "sroie/016.jpg", "invoices/invoice_sample.jpg",
        "sroie/021.jpg", "receipts/receipt-sample.jpg", "sroie/027.jpg"]

FEATURES = Features({
    "image": Image(),
    "label": ClassLabel(names=["receipt", "invoice"]),
    "ground_truth": Value("string"),
    "words": List(Value("string")),
    "boxes": List(List(Value("int32"))),
    "meta": {"id": Value("int32"), "score": Value("float32"), "tags": List(Value("string"))},
    "maybe": Value("int64"),
    "labels": List(Value("int64")),
    "when": Value("timestamp[us]"),
    "nothing": Value("null"),
})


def rows(names, start):
    out = []
    for i, name in enumerate(names):
        n = start + i
        out.append({
            "image": str(SAMPLE_DOCS / name),
            "label": int("invoice" in name),
            "ground_truth": json.dumps({"gt_parse": {"n": n, "file": name}}),
            "words": [f"w{n}", "é", ""][: n % 3 + 1],
            "boxes": [[n, n + 1, n + 2, n + 3]] * (n % 2 + 1),
            "meta": {"id": n, "score": n / 4, "tags": ["a"] * (n % 3)},
            "maybe": None if n % 2 else n * 1000,
            # A null item: docfeed's own list<int64> holds none, so the column is kept as Arrow.
            "labels": [n, None, -100] if n == 4 else [n, 7, -100],
            "when": f"2026-01-0{n % 9 + 1}T12:00:00",
            "nothing": None,
        })
    return out


def make_dataset(entries, features=FEATURES):
    columns = {k: [r[k] for r in entries] for k in features}
    import datetime
    if "when" in columns:
        columns["when"] = [datetime.datetime.fromisoformat(v) for v in columns["when"]]
    return Dataset.from_dict(columns, features=features)


@pytest.fixture(scope="module")
def saved_dict(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf") / "src"
    dd = DatasetDict({"train": make_dataset(rows(DOCS[:6], 0)),
                      "test": make_dataset(rows(DOCS[6:], 6))})
    dd.save_to_disk(str(root), num_shards={"train": 2, "test": 1})
    return root


def undecoded(ds):
    return ds.cast_column("image", Image(decode=False))


def arrow_table(split_dir: pathlib.Path) -> pa.Table:
    state = json.loads((split_dir / "state.json").read_text())
    tables = []
    for f in state["_data_files"]:
        with pa.OSFile(str(split_dir / f["filename"])) as source:
            tables.append(pa.ipc.open_stream(source).read_all())
    return pa.concat_tables(tables)


def test_a_dataset_dict_round_trips_through_datasets_and_pyarrow(saved_dict, tmp_path):
    out = tmp_path / "out"
    proc = run_docfeed("pack", saved_dict, "-o", out)
    assert "splits     train, test" in proc.stdout
    source = datasets.load_from_disk(str(saved_dict))
    packed = datasets.load_from_disk(str(out))
    assert isinstance(packed, DatasetDict) and list(packed) == list(source)
    for split in source:
        assert packed[split].features == source[split].features, split
        assert undecoded(packed[split]).to_list() == undecoded(source[split]).to_list(), split
        # pyarrow: the same table, column for column (types, nulls, nested values, bytes).
        a, b = arrow_table(out / split), arrow_table(saved_dict / split)
        assert a.schema.names == b.schema.names
        for name in a.schema.names:
            assert a.column(name).type == b.column(name).type, name
            assert a.column(name).to_pylist() == b.column(name).to_pylist(), name
        run_docfeed("verify", out / split)
    manifest = json.loads((out / "train" / "docfeed.json").read_text())
    kinds = {c["name"]: c["type"] for c in manifest["columns"]}
    # Plain Value/List features are docfeed's own columns; the others are kept as Arrow.
    assert kinds == {"label": "arrow", "ground_truth": "string", "words": "list<string>",
                     "boxes": "arrow", "meta": "arrow", "maybe": "int64", "labels": "arrow",
                     "when": "arrow", "nothing": "arrow"}
    assert manifest["label_column"] == "ground_truth"


def test_one_split(saved_dict, tmp_path):
    out = tmp_path / "out"
    run_docfeed("pack", saved_dict, "-o", out, "--split", "test")
    packed = datasets.load_from_disk(str(out))
    assert list(packed) == ["test"]
    assert json.loads((out / "dataset_dict.json").read_text()) == {"splits": ["test"]}
    bad = run_docfeed("pack", saved_dict, "-o", tmp_path / "none", "--split", "dev", check=False)
    assert bad.returncode != 0 and "no split 'dev'" in bad.stderr and "train, test" in bad.stderr
    assert not (tmp_path / "none").exists()


def test_a_dataset_re_encoded_keeps_pillows_pixels(tmp_path):
    src = tmp_path / "src"
    make_dataset(rows(DOCS[:4], 0)).save_to_disk(str(src))
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out, "--codec", "png")
    packed = undecoded(datasets.load_from_disk(str(out)))
    source = undecoded(datasets.load_from_disk(str(src)))
    assert len(packed) == len(source) == 4
    for a, b in zip(packed, source):
        assert a["image"]["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
        assert a["image"]["path"] == b["image"]["path"]
        want = np.asarray(PILImage.open(io.BytesIO(b["image"]["bytes"])))
        got = np.asarray(PILImage.open(io.BytesIO(a["image"]["bytes"])))
        assert np.array_equal(got, want)
        assert {k: v for k, v in a.items() if k != "image"} == \
            {k: v for k, v in b.items() if k != "image"}


def rewrite_images(split_dir: pathlib.Path, edit):
    """Rewrites the split's data files with edit(list of image dicts) applied (pyarrow)."""
    state = json.loads((split_dir / "state.json").read_text())
    for f in state["_data_files"]:
        path = split_dir / f["filename"]
        with pa.OSFile(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
        images = edit(table.column("image").to_pylist())
        column = pa.array(images, type=table.schema.field("image").type)
        table = table.set_column(table.schema.get_field_index("image"), "image", column)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)


def test_a_bad_image_is_named_by_its_row_and_skip_bad_rejects_it(tmp_path):
    src = tmp_path / "src"
    make_dataset(rows(DOCS[:4], 0)).save_to_disk(str(src))

    def corrupt(images):
        images[2] = {"bytes": images[2]["bytes"][:200], "path": images[2]["path"]}
        return images

    rewrite_images(src, corrupt)
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0
    assert "data-00000-of-00001.arrow row 2" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
    run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    rejects = [json.loads(l) for l in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert [r["row"] for r in rejects] == [2] and "row 2" in rejects[0]["error"]
    packed = undecoded(datasets.load_from_disk(str(tmp_path / "out")))
    source = undecoded(datasets.load_from_disk(str(src)))
    assert packed.to_list() == [r for i, r in enumerate(source.to_list()) if i != 2]


def test_path_only_images_are_read_from_the_image_root_and_nowhere_else(tmp_path):
    src = tmp_path / "src"
    make_dataset(rows(DOCS[:3], 0)).save_to_disk(str(src))
    root = tmp_path / "images"
    root.mkdir()
    for name in DOCS[:2]:
        shutil.copy(SAMPLE_DOCS / name, root / pathlib.Path(name).name)
    (tmp_path / "secret.jpg").write_bytes((SAMPLE_DOCS / DOCS[0]).read_bytes())

    def paths_only(images):  # what the datasets cache holds for local files
        out = [{"bytes": None, "path": im["path"]} for im in images]
        out[1]["path"] = str(root / out[1]["path"])  # absolute, under the root
        out[2]["path"] = "../secret.jpg"  # outside it
        return out

    rewrite_images(src, paths_only)
    refused = run_docfeed("pack", src, "-o", tmp_path / "a", check=False)
    assert refused.returncode != 0 and "--image-root" in refused.stderr and "row 0" in refused.stderr
    outside = run_docfeed("pack", src, "-o", tmp_path / "b", "--image-root", root, check=False)
    assert outside.returncode != 0 and "row 2" in outside.stderr
    assert "inside --image-root" in outside.stderr, outside.stderr
    run_docfeed("pack", src, "-o", tmp_path / "c", "--image-root", root, "--skip-bad")
    packed = undecoded(datasets.load_from_disk(str(tmp_path / "c")))
    assert len(packed) == 2
    for row, name in zip(packed, DOCS[:2]):
        assert row["image"]["bytes"] == (SAMPLE_DOCS / name).read_bytes()


def test_image_columns_other_than_image(tmp_path):
    page = tmp_path / "page"
    Dataset.from_dict({"page": [str(SAMPLE_DOCS / DOCS[0])]},
                      features=Features({"page": Image()})).save_to_disk(str(page))
    proc = run_docfeed("pack", page, "-o", tmp_path / "o1", check=False)
    assert proc.returncode != 0 and 'rename_column("page", "image")' in proc.stderr, proc.stderr
    pages = tmp_path / "pages"
    Dataset.from_dict({"image": [str(SAMPLE_DOCS / DOCS[0])], "more": [[str(SAMPLE_DOCS / DOCS[1])]]},
                      features=Features({"image": Image(), "more": List(Image())})
                      ).save_to_disk(str(pages))
    # Other columns holding images (a document's further pages) are kept byte for byte.
    run_docfeed("pack", pages, "-o", tmp_path / "o2")
    packed = datasets.load_from_disk(str(tmp_path / "o2"))
    source = datasets.load_from_disk(str(pages))
    assert packed.features == source.features
    more = List(Image(decode=False))
    assert packed.cast_column("more", more)[0]["more"] == source.cast_column("more", more)[0]["more"]
    proc = run_docfeed("pack", pages, "-o", tmp_path / "o3", "--preprocess", "donut", "--size",
                       "64x48", "--keep-original", check=False)
    assert proc.returncode == 0, proc.stderr


def test_the_loader_reads_a_packed_split(tmp_path):
    docfeed = pytest.importorskip("docfeed")
    features = Features({"image": Image(), "labels": List(Value("int64")),
                         "label": ClassLabel(names=["receipt", "invoice"])})
    entries = [{"image": str(SAMPLE_DOCS / n), "labels": [i, i + 1, -100],
                "label": int("invoice" in n)} for i, n in enumerate(DOCS[:5])]
    src = tmp_path / "src"
    DatasetDict({"train": make_dataset(entries, features)}).save_to_disk(str(src))
    run_docfeed("pack", src, "-o", tmp_path / "out")
    loader = docfeed.Loader(tmp_path / "out" / "train", batch_size=5, image_size=(64, 48),
                            shuffle=False, drop_last=False)
    batch = next(iter(loader))
    assert batch["pixel_values"].shape[0] == 5
    assert batch["labels"][:, :2].tolist() == [[i, i + 1] for i in range(5)]


def test_the_datasets_cache_of_an_imagefolder(tmp_path):
    """What load_dataset("imagefolder") leaves in its cache: BUILDER-SPLIT.arrow files whose
    image cells hold only the files' absolute paths; packed with --image-root at the folder."""
    folder = tmp_path / "folder"
    for i, name in enumerate(DOCS[:5]):
        split = "train" if i < 3 else "test"
        kind = "invoice" if "invoice" in name else "receipt"
        (folder / split / kind).mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_DOCS / name, folder / split / kind / pathlib.Path(name).name)
    loaded = datasets.load_dataset("imagefolder", data_dir=str(folder),
                                   cache_dir=str(tmp_path / "cache"))
    (info,) = [p for p in (tmp_path / "cache").rglob("dataset_info.json")
               if any(p.parent.glob("*.arrow"))]
    cache = info.parent
    refused = run_docfeed("pack", cache, "-o", tmp_path / "no", check=False)
    assert refused.returncode != 0 and "--image-root" in refused.stderr, refused.stderr
    run_docfeed("pack", cache, "-o", tmp_path / "out", "--image-root", folder)
    packed = datasets.load_from_disk(str(tmp_path / "out"))
    assert sorted(packed) == sorted(loaded)
    for split in loaded:
        assert packed[split].features == loaded[split].features
        got, want = undecoded(packed[split]).to_list(), undecoded(loaded[split]).to_list()
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g["label"] == w["label"]
            assert g["image"]["bytes"] == pathlib.Path(w["image"]["path"]).read_bytes()


def test_docfeed_pack_of_a_path_equals_the_cli(saved_dict, tmp_path):
    docfeed = pytest.importorskip("docfeed")
    run_docfeed("pack", saved_dict, "-o", tmp_path / "cli", "--split", "train")
    docfeed.pack(saved_dict, tmp_path / "py", split="train")
    for name in ("train/docfeed.index", "train/data-00000-of-00001.arrow", "dataset_dict.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    with pytest.raises(docfeed.NotFoundError, match="no split 'dev'"):
        docfeed.pack(saved_dict, tmp_path / "none", split="dev")


def test_a_column_named_original_clashes_only_with_keep_original(tmp_path):
    src = tmp_path / "src"
    Dataset.from_dict({"image": [str(SAMPLE_DOCS / DOCS[0])], "original": ["scan"]},
                      features=Features({"image": Image(), "original": Value("string")})
                      ).save_to_disk(str(src))
    run_docfeed("pack", src, "-o", tmp_path / "plain")
    proc = run_docfeed("pack", src, "-o", tmp_path / "kept", "--preprocess", "donut", "--size",
                       "64x48", "--keep-original", check=False)
    assert proc.returncode != 0 and "column 'original'" in proc.stderr, proc.stderr
    assert not (tmp_path / "kept").exists()

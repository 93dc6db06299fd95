"""`docfeed pack` of Parquet: a Hub-layout folder, the Hub's Parquet export layout and one file.

The inputs are written by the real `datasets` (`Dataset.to_parquet`, which embeds the images and
stores the features, as `push_to_hub` does) with the codecs and page formats the Hub and
pyarrow use; the references are `datasets.load_dataset` on the same folder (which resolves the
splits from the file names) and `Dataset.from_parquet`; the outputs are read back with
`datasets.load_from_disk`: same splits, features, rows, values and image bytes. Runs under both
stacks make test creates (datasets 4.8 and 5.x).
"""
import pathlib

import pyarrow.parquet as pq
import pytest

from conftest import SAMPLE_DOCS, run_docfeed
from test_hf_saved_pack import DOCS, make_dataset, undecoded
from test_hf_saved_pack import rows as path_rows

datasets = pytest.importorskip("datasets")
from datasets import DatasetDict  # noqa: E402


def rows(names, start):
    """The saved-dataset tests' rows with the image bytes embedded, as push_to_hub stores them
    (to_parquet keeps a local file's path without its bytes)."""
    out = path_rows(names, start)
    for row, name in zip(out, names):
        row["image"] = {"bytes": (SAMPLE_DOCS / name).read_bytes(), "path": pathlib.Path(name).name}
    return out


def write(ds, path: pathlib.Path, layout: dict):
    """datasets' own writer by default; pyarrow's, on the dataset's table (its schema carries
    the features), for the other codecs and page formats."""
    if not layout:
        ds.to_parquet(str(path))
    else:
        pq.write_table(ds.flatten_indices().data.table, path, **layout)


def write_hub_layout(root: pathlib.Path, layout: dict = {}) -> pathlib.Path:
    """data/train-0000N-of-00002.parquet and data/test-00000-of-00001.parquet, as push_to_hub."""
    (root / "data").mkdir(parents=True)
    train = make_dataset(rows(DOCS[:6], 0))
    write(train.select(range(4)), root / "data" / "train-00000-of-00002.parquet", layout)
    write(train.select(range(4, 6)), root / "data" / "train-00001-of-00002.parquet", layout)
    write(make_dataset(rows(DOCS[6:], 6)), root / "data" / "test-00000-of-00001.parquet", layout)
    (root / "README.md").write_text("---\nlicense: mit\n---\n# a dataset card\n")
    return root


def assert_same_dict(packed, reference):
    assert isinstance(packed, DatasetDict)
    assert sorted(packed) == sorted(reference)
    for split in reference:
        assert packed[split].features == reference[split].features, split
        assert undecoded(packed[split]).to_list() == undecoded(reference[split]).to_list(), split


LAYOUTS = [
    {},  # datasets' default: SNAPPY, data page v1, dictionary
    {"compression": "zstd", "data_page_version": "2.0"},
    {"compression": "gzip", "use_dictionary": False},
    {"compression": "none", "row_group_size": 1},
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda d: "-".join(map(str, d.values())) or "default")
def test_a_hub_layout_folder_packs_as_load_dataset_reads_it(tmp_path, layout):
    src = write_hub_layout(tmp_path / "src", layout)
    out = tmp_path / "out"
    proc = run_docfeed("pack", src, "-o", out)
    assert "splits     train, test" in proc.stdout, proc.stdout
    reference = datasets.load_dataset(str(src), cache_dir=str(tmp_path / "cache"))
    assert_same_dict(datasets.load_from_disk(str(out)), reference)
    for split in ("train", "test"):
        run_docfeed("verify", out / split)


def test_the_hubs_parquet_export_layout(tmp_path):
    # refs/convert/parquet: CONFIG/SPLIT/NNNN.parquet.
    src = tmp_path / "src"
    for split, names, start in (("train", DOCS[:5], 0), ("validation", DOCS[5:], 5)):
        (src / "default" / split).mkdir(parents=True)
        make_dataset(rows(names, start)).to_parquet(str(src / "default" / split / "0000.parquet"))
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out)
    reference = datasets.load_dataset(str(src), cache_dir=str(tmp_path / "cache"))
    assert list(reference) == ["train", "validation"]
    assert_same_dict(datasets.load_from_disk(str(out)), reference)


def test_one_file_is_a_dataset(tmp_path):
    src = tmp_path / "one.parquet"
    make_dataset(rows(DOCS[:4], 0)).to_parquet(str(src))
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out)
    packed = datasets.load_from_disk(str(out))
    reference = datasets.Dataset.from_parquet(str(src), cache_dir=str(tmp_path / "cache"))
    assert packed.features == reference.features
    assert undecoded(packed).to_list() == undecoded(reference).to_list()
    bad = run_docfeed("pack", src, "-o", tmp_path / "x", "--split", "train", check=False)
    assert bad.returncode != 0 and "one Parquet file" in bad.stderr


def test_one_split_of_a_hub_folder(tmp_path):
    src = write_hub_layout(tmp_path / "src")
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out, "--split", "test")
    assert list(datasets.load_from_disk(str(out))) == ["test"]


def test_broken_parquet_is_named_and_nothing_is_written(tmp_path):
    src = write_hub_layout(tmp_path / "src")
    victim = src / "data" / "train-00001-of-00002.parquet"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2] + data[-8:])  # footer length now points nowhere
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0
    assert "train-00001-of-00002.parquet" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
    (src / "data" / "train-00001-of-00002.parquet").write_bytes(b"not parquet at all")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0 and "not a Parquet file" in proc.stderr, proc.stderr


def test_a_bad_image_is_named_by_file_and_row(tmp_path):
    src = tmp_path / "one.parquet"
    make_dataset(rows(DOCS[:4], 0)).to_parquet(str(src))
    table = pq.read_table(src)
    images = table.column("image").to_pylist()
    images[2] = {"bytes": images[2]["bytes"][:200], "path": images[2]["path"]}
    import pyarrow as pa
    table = table.set_column(table.schema.get_field_index("image"), "image",
                             pa.array(images, type=table.schema.field("image").type))
    pq.write_table(table, src)
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode != 0 and "one.parquet row 2" in proc.stderr, proc.stderr
    run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    packed = undecoded(datasets.load_from_disk(str(tmp_path / "out")))
    assert len(packed) == 3


def test_docfeed_pack_of_a_parquet_folder_equals_the_cli_and_loads(tmp_path):
    docfeed = pytest.importorskip("docfeed")
    src = write_hub_layout(tmp_path / "src")
    run_docfeed("pack", src, "-o", tmp_path / "cli")
    docfeed.pack(src, tmp_path / "py")
    for name in ("train/docfeed.index", "train/data-00000-of-00001.arrow",
                 "test/data-00000-of-00001.arrow", "dataset_dict.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    loader = docfeed.Loader(tmp_path / "py" / "train", batch_size=3, image_size=(64, 48),
                            shuffle=False, drop_last=False)
    batch = next(iter(loader))
    assert tuple(batch["pixel_values"].shape[:1]) == (3,)

"""`docfeed pack --preprocess donut`: what Hugging Face `datasets`, Pillow and pyarrow see.

Each stored page, decoded by `datasets` (Pillow opening the stored PGM/PPM), must equal what the
real transformers DonutImageProcessor gives after its thumbnail step (do_pad, rescale and
normalize off), for every sample document; grayscale pages are stored as L, which Pillow's
convert("RGB") replicates exactly as the processor's own convert does. The reference runs in
.venv/donut-ref through the harness of test_donut_parity.py. Also: pyarrow reads the compressed
(LZ4_FRAME and ZSTD) bodies, and the --keep-original column holds the source files unchanged.
"""
import json

import datasets
import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from conftest import SAMPLE_DOCS, run_docfeed
from test_donut_parity import run_reference, stage_job

# (name, "HxW", align_long_axis, extra pack arguments)
PACKS = [
    ("page", "1553x1200", False, ["--keep-original"]),  # default compression: lz4_frame
    ("aligned", "96x160", True, ["--compression", "zstd"]),  # portrait pages rotate
]


def sample_names():
    rows = [json.loads(line) for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()
            if line.strip()]
    return [r["file_name"] for r in rows]


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("preprocessed")
    names = sample_names()
    out, jobs = {}, []
    for name, hw, align, extra in PACKS:
        ds_dir = tmp / name
        args = ["pack", SAMPLE_DOCS, "-o", ds_dir, "--preprocess", "donut", "--size", hw, *extra]
        run_docfeed(*args, *(["--align-long-axis"] if align else []))
        out[name] = ds_dir
        for i, rel in enumerate(names):
            jobs.append(stage_job(SAMPLE_DOCS / rel, hw, "resized", align,
                                  tmp / f"ref-{name}-{i}.npy"))
    run_reference(jobs, tmp)
    return {"dirs": out, "names": names, "tmp": tmp}


@pytest.mark.parametrize("pack", [p[0] for p in PACKS])
def test_datasets_decodes_the_processor_thumbnail(packed, pack):
    ds = datasets.load_from_disk(str(packed["dirs"][pack]))
    assert len(ds) == len(packed["names"])
    for i, rel in enumerate(packed["names"]):
        row = ds[i]
        img = row["image"]
        assert img.format == "PPM" and img.mode in ("L", "RGB"), (rel, img.format, img.mode)
        got = np.asarray(img.convert("RGB"))
        want = np.load(packed["tmp"] / f"ref-{pack}-{i}.npy")
        assert got.shape == want.shape, (rel, got.shape, want.shape)
        if not np.array_equal(got, want):
            diff = np.argwhere(got != want)
            pytest.fail(f"{rel}: {len(diff)} values differ, first at {diff[0].tolist()}")
        # The Image feature's path is the source file name, as for an unprocessed pack.
        assert ds.with_format("arrow")[i]["image"][0]["path"].as_py() == rel


def test_pyarrow_reads_compressed_bodies_and_keep_original(packed):
    names = packed["names"]
    for pack, codec_name in (("page", "lz4"), ("aligned", "zstd")):
        files = sorted(packed["dirs"][pack].glob("data-*.arrow"))
        table = pa.concat_tables(pa.ipc.open_stream(pa.memory_map(str(f))).read_all()
                                 for f in files)
        assert table.num_rows == len(names)
        meta = json.loads((packed["dirs"][pack] / "docfeed.json").read_text())
        assert meta["compression"].startswith(codec_name)
        assert meta["preprocess"]["preset"] == "donut"
        images = table.column("image").to_pylist()
        for rel, cell in zip(names, images):
            assert cell["path"] == rel
            assert cell["bytes"][:2] in (b"P5", b"P6")
        if pack == "page":
            originals = table.column("original").to_pylist()
            for rel, cell in zip(names, originals):
                assert cell["path"] == rel
                assert cell["bytes"] == (SAMPLE_DOCS / rel).read_bytes(), rel
        else:
            assert "original" not in table.column_names


def test_keep_original_is_an_image_feature(packed):
    ds = datasets.load_from_disk(str(packed["dirs"]["page"]))
    assert isinstance(ds.features["original"], datasets.Image)
    first = packed["names"][0]
    with Image.open(SAMPLE_DOCS / first) as src:
        assert np.array_equal(np.asarray(ds[0]["original"]), np.asarray(src))


def test_inspect_and_verify_show_the_preprocessing(packed):
    out = run_docfeed("inspect", packed["dirs"]["aligned"], "--json").stdout
    info = json.loads(out)
    assert info["preprocess"] == {"preset": "donut", "height": 96, "width": 160,
                                  "align_long_axis": True, "hf_version": 4, "backend": "pil"}
    run_docfeed("verify", packed["dirs"]["page"])


@pytest.mark.parametrize("args, message", [
    (["--size", "10x10"], "need --preprocess"),
    (["--preprocess", "donut"], "needs --size HxW"),
    (["--preprocess", "donut", "--size", "10"], "--size must be HxW"),
    (["--preprocess", "donut", "--size", "0x10"], "--size height"),
    (["--preprocess", "layoutlmv3", "--size", "10x10"], "--preprocess must be donut"),
    (["--preprocess", "pix2struct", "--size", "10x10"], "not pix2struct's"),
    (["--preprocess", "pix2struct", "--backend", "torchvision", "--hf-version", "5"],
     "not offered for pix2struct"),
    (["--preprocess", "donut", "--size", "10x10", "--codec", "png"], "--codec does not apply"),
])
def test_pack_refuses_bad_preprocess_arguments(tmp_path, args, message):
    proc = run_docfeed("pack", SAMPLE_DOCS, "-o", tmp_path / "out", *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def rewrite_manifest(ds_dir, edit):
    """Applies `edit` to docfeed.json and re-seals it as docs/format.md says: XXH3-64 of the text
    with manifest_xxh3 zeroed, written as 16 lowercase hex digits."""
    import xxhash

    manifest = json.loads((ds_dir / "docfeed.json").read_text())
    edit(manifest)
    manifest["manifest_xxh3"] = "0" * 16
    text = json.dumps(manifest, indent=1) + "\n"
    digest = xxhash.xxh3_64_hexdigest(text.encode())
    (ds_dir / "docfeed.json").write_text(text.replace('"0000000000000000"', f'"{digest}"'))


def test_manifest_without_generation_reads_as_transformers_4(packed, tmp_path):
    """Datasets packed before hf_version/backend existed: their pages are 4.x's."""
    import shutil

    ds = tmp_path / "old"
    shutil.copytree(packed["dirs"]["aligned"], ds)

    def drop(manifest):
        del manifest["preprocess"]["hf_version"], manifest["preprocess"]["backend"]

    rewrite_manifest(ds, drop)
    assert "hf_version" not in json.loads((ds / "docfeed.json").read_text())["preprocess"]
    info = json.loads(run_docfeed("inspect", ds, "--json").stdout)
    assert info["preprocess"]["hf_version"] == 4 and info["preprocess"]["backend"] == "pil"
    run_docfeed("verify", ds)

    def bad(manifest):
        manifest["preprocess"]["backend"] = "opencv"

    rewrite_manifest(ds, bad)
    proc = run_docfeed("inspect", ds, "--json", check=False)
    assert proc.returncode != 0 and "preprocess.backend" in proc.stderr, proc.stderr


def test_pack_records_the_processor_generation(tmp_path):
    ds = tmp_path / "v5"
    run_docfeed("pack", SAMPLE_DOCS / "sroie", "-o", ds, "--preprocess", "donut", "--size",
                "96x160", "--hf-version", "5", "--backend", "torchvision")
    meta = json.loads((ds / "docfeed.json").read_text())
    assert meta["preprocess"]["hf_version"] == 5 and meta["preprocess"]["backend"] == "torchvision"
    proc = run_docfeed("pack", SAMPLE_DOCS / "sroie", "-o", tmp_path / "x", "--hf-version", "5",
                       check=False)
    assert proc.returncode == 2 and "need --preprocess" in proc.stderr

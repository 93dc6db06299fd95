"""docfeed's packed output, read by the real Hugging Face `datasets` and `pyarrow` from PyPI.

The reference for pixels is Pillow decoding the source file (with EXIF orientation applied,
as `datasets` does when it decodes an Image feature); the reference for rows is the
sample documents' metadata.jsonl.
"""
import io
import json

import datasets
import numpy as np
import pyarrow as pa
import pytest
from PIL import Image, ImageOps

from conftest import SAMPLE_DOCS, run_docfeed


def metadata_rows():
    with open(SAMPLE_DOCS / "metadata.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def source_pixels(file_name):
    """What `datasets` gives for the source image: Pillow decode + exif_transpose, as RGBA."""
    with Image.open(SAMPLE_DOCS / file_name) as img:
        img.load()
        return np.asarray(ImageOps.exif_transpose(img).convert("RGBA"))


def pack(tmp_path, *options):
    out = tmp_path / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, *options)
    return out


def test_load_from_disk_returns_the_metadata_rows_in_order(packed_keep):
    ds = datasets.load_from_disk(str(packed_keep))
    rows = metadata_rows()
    assert len(ds) == len(rows)
    assert list(ds.features) == ["image", "ground_truth", "source"]
    assert isinstance(ds.features["image"], datasets.Image)
    for i, want in enumerate(rows):
        got = ds[i]
        assert got["ground_truth"] == want["ground_truth"], i
        assert got["source"] == want["source"], i


def test_keep_stores_the_source_bytes_unchanged(packed_keep):
    ds = datasets.load_from_disk(str(packed_keep)).cast_column("image", datasets.Image(decode=False))
    for i, want in enumerate(metadata_rows()):
        got = ds[i]["image"]
        assert got["bytes"] == (SAMPLE_DOCS / want["file_name"]).read_bytes(), want["file_name"]
        assert got["path"] == want["file_name"]


@pytest.mark.parametrize("codec", ["keep", "png", "webp"])
def test_lossless_codecs_decode_to_the_source_pixels(tmp_path, codec):
    out = pack(tmp_path, "--codec", codec)
    ds = datasets.load_from_disk(str(out))
    for i, want in enumerate(metadata_rows()):
        got = np.asarray(ds[i]["image"].convert("RGBA"))
        np.testing.assert_array_equal(got, source_pixels(want["file_name"]), err_msg=want["file_name"])


def test_jpeg_codec_is_close_to_the_source(tmp_path):
    out = pack(tmp_path, "--codec", "jpeg", "--quality", "92")
    ds = datasets.load_from_disk(str(out))
    for i, want in enumerate(metadata_rows()):
        got = np.asarray(ds[i]["image"].convert("RGB"), dtype=np.float64)
        ref = source_pixels(want["file_name"])[..., :3].astype(np.float64)
        assert got.shape == ref.shape
        mse = np.mean((got - ref) ** 2)
        psnr = 10 * np.log10(255.0**2 / max(mse, 1e-12))
        # 4:2:0 chroma subsampling costs sharp coloured text a few dB (FlipkartInvoice: ~29.9).
        assert psnr > 28, (want["file_name"], psnr)


@pytest.mark.parametrize("compression", ["none", "zstd", "lz4_frame"])
def test_pyarrow_reads_every_file(tmp_path, compression):
    out = pack(tmp_path, "--compression", compression)
    files = sorted(out.glob("data-*.arrow"))
    assert files
    rows = []
    for f in files:
        with pa.memory_map(str(f)) as source:
            table = pa.ipc.open_stream(source).read_all()
        assert str(table.schema.field("image").type) == "struct<bytes: binary, path: string>"
        assert b"huggingface" in table.schema.metadata
        rows.extend(table.to_pylist())
    want = metadata_rows()
    assert [r["image"]["path"] for r in rows] == [w["file_name"] for w in want]
    for r, w in zip(rows, want):
        assert r["image"]["bytes"] == (SAMPLE_DOCS / w["file_name"]).read_bytes()
    ds = datasets.load_from_disk(str(out))
    assert ds[3]["ground_truth"] == want[3]["ground_truth"]


def test_small_files_split_into_several_data_files(tmp_path):
    out = pack(tmp_path, "--max-file-mb", "2")
    files = sorted(p.name for p in out.glob("data-*.arrow"))
    assert len(files) > 1
    n = len(files)
    assert files == [f"data-{i:05d}-of-{n:05d}.arrow" for i in range(n)]
    state = json.loads((out / "state.json").read_text())
    assert [f["filename"] for f in state["_data_files"]] == files
    ds = datasets.load_from_disk(str(out))
    assert [ds[i]["image"].size for i in range(len(ds))] == [
        Image.open(SAMPLE_DOCS / w["file_name"]).size for w in metadata_rows()]


def test_jpeg_named_png_is_detected_from_its_bytes(packed_keep):
    stats = json.loads(run_docfeed("inspect", packed_keep, "--json").stdout)
    rows = metadata_rows()
    jpeg_files = sum(1 for r in rows if (SAMPLE_DOCS / r["file_name"]).read_bytes()[:3] == b"\xff\xd8\xff")
    assert stats["stored_codecs"]["jpeg"] == jpeg_files
    assert any(r["file_name"].endswith(".png") and
               (SAMPLE_DOCS / r["file_name"]).read_bytes()[:3] == b"\xff\xd8\xff" for r in rows)

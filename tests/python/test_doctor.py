"""`docfeed doctor` (issue 7): the report on seed-like datasets made with the real libraries.

Runs in both front environments (.venv/train: datasets 4.x, transformers 4.57.6; .venv/hf5:
datasets 5.x, transformers 5.x; torch in both). The inputs are made as the Donut recipe makes
them: the real DonutImageProcessor turns generated documents (small, 64 x 48, so the test is
fast) into pixel_values, centred or with random padding (4.x: random_padding=True; 5.x, whose
call always centres, through the processor's own pad_image(random_padding=True)), and the
real `datasets` stores them with labels and target_sequence via save_to_disk (float32 nested
lists, the recipe's format-less state). Checked:
* the pathologies doctor names: float32 nested lists, frozen padding (centred vs off-centre, as
  the processor was told), no format, and none of them where they do not apply (a numpy format,
  tensors without padding);
* every kind: a Dataset, a DatasetDict (train split), an image folder, docfeed shards;
* the --json keys `make demo` relies on, --report's Markdown and PNG (opened by
  Pillow);
* clear errors naming the path for a directory that is no dataset and a truncated Arrow file;
* the Donut-base FLOP formula against torch's FlopCounterMode on the real transformers model
  (meta tensors, no weights, no compute) at the recipe's 1553 x 1200;
* `docfeed doctor` through the C++ CLI, its error when the Python cannot import docfeed, and
  the fallback measurement in .venv (no torch);
* the typed results: --json is Report.to_json() and reads back (Report.from_json), the model's
  arithmetic on hand-made measurements, and docfeed measured in this process (no `docfeed`
  process but the sample's `pack`; the loader run counts what `docfeed bench` counts).
"""
import dataclasses
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import REPO, SAMPLE_DOCS, docfeed_bin, run_docfeed

datasets = pytest.importorskip("datasets")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from docfeed import doctor  # noqa: E402

SMALL = (64, 48)  # H, W
CONTRACT_KEYS = {"path", "kind", "samples", "bytes_on_disk", "bytes_per_sample", "ram_bytes",
                 "image_size", "pathologies", "disk_read_mb_s", "gpu", "batch_size", "epochs",
                 "assume_samples", "pipelines", "fix"}
PIPELINE_KEYS = {"name", "batch_s", "stages", "gpu_busy", "epoch_s", "job_s"}


def document_like(w, h, seed):
    """Page-like content with no pure-black pixel (as test_migrate.py's generator)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = 200 + (x * 40 // max(w - 1, 1)) - (y * 30 // max(h - 1, 1))
    text = ((x // 3 + y // 4) % 7 == 0) * rng.integers(80, 180, size=(h, w))
    return np.stack([np.clip(base - text + 9 * c, 1, 255) for c in range(3)], -1).astype(np.uint8)


def pages(n):
    """Documents of many aspect ratios (none exactly 64:48, so the processor pads each)."""
    return [Image.fromarray(document_like(30 + 7 * (i % 5), 70 - 5 * (i % 4), i)) for i in range(n)]


def processed(images, random_padding):
    size = {"height": SMALL[0], "width": SMALL[1]}
    np.random.seed(0)  # the processor draws random padding with np.random
    if int(transformers.__version__.split(".")[0]) < 5:
        proc = transformers.DonutImageProcessor(size=size, do_align_long_axis=False)
        return [proc(im, random_padding=random_padding, return_tensors="np")["pixel_values"][0]
                for im in images]

    class Padding(transformers.DonutImageProcessorPil):
        """5.x's call pads centred always; its pad_image still draws random offsets."""

        def pad_image(self, image, size, random_padding=False):
            return super().pad_image(image, size, random_padding=random_padding_wanted)

    random_padding_wanted = random_padding
    proc = Padding(size=size, do_align_long_axis=False)
    return [proc(im, return_tensors="np")["pixel_values"][0] for im in images]


def save(path, tensors, fmt=None):
    """The recipe's columns, saved as dataset.map + save_to_disk leave them."""
    n = len(tensors)
    ds = datasets.Dataset.from_dict({
        "pixel_values": [t.astype(np.float32) for t in tensors],
        "labels": [[0, 5 + i, 2] + [-100] * 29 for i in range(n)],
        "target_sequence": [f"<s><s_total>{i}</s_total></s>" for i in range(n)]})
    if fmt:
        ds.set_format(fmt)
    ds.save_to_disk(str(path))
    return ds


@pytest.fixture(autouse=True)
def cli_under_test(monkeypatch):
    """doctor runs `docfeed pack/bench` through docfeed.cli_path(): the build under test."""
    monkeypatch.setenv("DOCFEED_CLI", str(docfeed_bin()))


@pytest.fixture(scope="module")
def tensors():
    images = pages(16)
    return {"centred": processed(images, False), "random": processed(images, True)}


def run_doctor(path, tmp_path, *extra):
    """doctor in process (torch/datasets imported once); returns the JSON report."""
    out = tmp_path / "doctor.json"
    rc = doctor.main([str(path), "--json", str(out), "--max-seconds", "8", "--workers", "2",
                      "--samples", "16", *map(str, extra)])
    assert rc == 0
    report = json.loads(out.read_text())
    assert CONTRACT_KEYS <= set(report)
    for p in report["pipelines"]:
        assert PIPELINE_KEYS <= set(p), p
        assert p["batch_s"] > 0 and 0 < p["gpu_busy"] <= 1
        assert p["job_s"] == pytest.approx(report["epochs"] * p["epoch_s"])
    return report


def ids(report):
    return {p["id"]: p for p in report["pathologies"]}


def test_recipe_dataset_names_the_pathologies(tensors, tmp_path):
    save(tmp_path / "ds", tensors["centred"])
    r = run_doctor(tmp_path / "ds", tmp_path, "--epochs", "6", "--assume-samples", "16000")
    assert r["kind"] == "save_to_disk" and r["samples"] == 16
    assert r["image_size"] == list(SMALL)
    found = ids(r)
    assert {"float32-nested-lists", "frozen-padding", "no-format"} <= set(found)
    assert found["float32-nested-lists"]["floats_per_sample"] == 3 * SMALL[0] * SMALL[1]
    pad = found["frozen-padding"]
    assert pad["padded"] == pad["sampled"] == 16 and pad["off_centre"] == 0
    assert "huge-rows" not in found  # 37 KB a row
    assert r["bytes_on_disk"] == sum(f.stat().st_size for f in (tmp_path / "ds").glob("*.arrow"))
    names = [p["name"] for p in r["pipelines"]]
    assert any("0 workers" in n for n in names) and any("2 workers" in n for n in names)
    assert any(n.startswith("docfeed.Loader") for n in names)
    assert r["epochs"] == 6 and r["assume_samples"] == 16000
    assert r["gpu"]["source"] == "donut-base-flops" and r["gpu"]["step_s"] > 0
    assert "docfeed pack" in r["fix"]


def test_random_padding_in_a_dataset_dict(tensors, tmp_path):
    save(tmp_path / "train", tensors["random"])
    save(tmp_path / "val", tensors["centred"][:4])
    datasets.DatasetDict({"train": datasets.load_from_disk(str(tmp_path / "train")),
                          "validation": datasets.load_from_disk(str(tmp_path / "val"))}
                         ).save_to_disk(str(tmp_path / "dd"))
    # The processor's own offsets: how many of its random draws were off-centre.
    off = 0
    for t in tensors["random"]:
        mask = (t == -1.0).all(axis=0)
        rows, cols = np.where(~mask.all(axis=1))[0], np.where(~mask.all(axis=0))[0]
        top, bottom = rows[0], SMALL[0] - 1 - rows[-1]
        left, right = cols[0], SMALL[1] - 1 - cols[-1]
        off += not (top == (top + bottom) // 2 and left == (left + right) // 2)
    assert off > 4  # the generator draws different offsets
    r = run_doctor(tmp_path / "dd", tmp_path, "--step-time", "0.25")
    assert r["split"] == "train" and r["samples"] == 16
    pad = ids(r)["frozen-padding"]
    assert pad["off_centre"] == off and "random_padding" in pad["message"]
    assert r["gpu"] == {"step_s": 0.25, "source": "step-time", "device": r["gpu"]["device"]}


def test_no_padding_and_a_format_are_not_flagged(tmp_path):
    rng = np.random.default_rng(0)  # values on the 0.5/0.5 grid, no pixel 0 anywhere
    grid = (np.arange(1, 256, dtype=np.float32) / np.float32(255) - np.float32(0.5)) / 0.5
    tensors = [grid[rng.integers(0, 255, size=(3, *SMALL))] for _ in range(8)]
    save(tmp_path / "ds", tensors, fmt="numpy")
    r = run_doctor(tmp_path / "ds", tmp_path)
    found = ids(r)
    assert "float32-nested-lists" in found
    assert "frozen-padding" not in found and "no-format" not in found


def test_array3d_column(tensors, tmp_path):
    ds = datasets.Dataset.from_dict(
        {"pixel_values": [t.astype(np.float32) for t in tensors["centred"][:8]]},
        features=datasets.Features({"pixel_values": datasets.Array3D((3, *SMALL), "float32")}))
    ds.save_to_disk(str(tmp_path / "ds"))
    r = run_doctor(tmp_path / "ds", tmp_path)
    found = ids(r)
    assert {"float-tensors", "frozen-padding", "no-format"} <= set(found)
    assert "float32-nested-lists" not in found and r["image_size"] == list(SMALL)
    assert "Array3D" in found["float-tensors"]["message"]
    assert any(p["name"].startswith("docfeed.Loader") for p in r["pipelines"])  # migrated


def test_image_folder(tmp_path):
    root = tmp_path / "folder"
    (root / "img").mkdir(parents=True)
    with open(root / "metadata.jsonl", "w") as meta:
        for i, page in enumerate(pages(8)):
            page.save(root / "img" / f"{i}.png")
            meta.write(json.dumps({"file_name": f"img/{i}.png",
                                   "ground_truth": json.dumps({"gt_parse": {"n": i}})}) + "\n")
    r = run_doctor(root, tmp_path, "--size", "64x48", "--batch-size", "4")
    assert r["kind"] == "imagefolder" and r["samples"] == 8 and r["image_size"] == [64, 48]
    names = [p["name"] for p in r["pipelines"]]
    assert any("DonutImageProcessor" in n for n in names), names
    assert any(n.startswith("docfeed.Loader") for n in names), names


def test_save_to_disk_with_an_image_column(tmp_path):
    """The most common form (load_dataset + save_to_disk): measured as the on-the-fly path
    (DonutImageProcessor over load_from_disk's Image column) against docfeed packing it."""
    datasets = pytest.importorskip("datasets")
    files = []
    for i, page in enumerate(pages(8)):
        files.append(str(tmp_path / f"{i}.png"))
        page.save(files[-1])
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=["a", "b"])})
    datasets.Dataset.from_dict({"image": files, "label": [i % 2 for i in range(8)]},
                               features=features).save_to_disk(str(tmp_path / "ds"))
    r = run_doctor(tmp_path / "ds", tmp_path, "--size", "64x48", "--batch-size", "4")
    assert r["kind"] == "save_to_disk" and r["samples"] == 8
    names = [p["name"] for p in r["pipelines"]]
    assert any("DonutImageProcessor" in n for n in names), names
    assert any(n.startswith("docfeed.Loader") for n in names), names
    assert any("Image column 'image'" in n for n in r["notes"]), r["notes"]
    assert "--preprocess donut" in r["fix"], r["fix"]


def _image_rows(tmp_path, n):
    rows = []
    for i, page in enumerate(pages(n)):
        f = tmp_path / f"p{i}.png"
        page.save(f)
        rows.append({"bytes": f.read_bytes(), "path": f.name})
    return rows


def test_an_image_folder_of_pdf_invoices(tmp_path):
    """PDF documents: one sample per page (pdfinfo counts them); the user's path renders each
    page with pdftoppm as pdf2image does, docfeed's packs the sample folder."""
    import shutil

    root = tmp_path / "pdfs"
    root.mkdir()
    for name in ("invoice.pdf", "bleed.pdf"):  # 3 + 2 pages
        shutil.copy(REPO / "tests" / "data" / "pdf" / name, root / name)
    r = run_doctor(root, tmp_path, "--size", "64x48", "--batch-size", "2")
    assert r["kind"] == "imagefolder" and r["samples"] == 5, r
    assert any("2 PDF documents, 5 pages" in n for n in r["notes"]), r["notes"]
    names = [p["name"] for p in r["pipelines"]]
    assert any("DonutImageProcessor" in n for n in names), (names, r["notes"])
    assert any(n.startswith("docfeed.Loader") for n in names), (names, r["notes"])
    assert any("pdftoppm -r 200" in n for n in r["notes"]), r["notes"]


def test_a_hub_parquet_folder(tmp_path):
    """Parquet as the Hub stores it: measured as load_dataset("parquet") + DonutImageProcessor
    against docfeed packing the same rows from the Parquet file."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=["a", "b"])})
    ds = datasets.Dataset.from_dict({"image": _image_rows(tmp_path, 8),
                                     "label": [i % 2 for i in range(8)]}, features=features)
    (tmp_path / "hub" / "data").mkdir(parents=True)
    ds.select(range(6)).to_parquet(str(tmp_path / "hub" / "data" / "train-00000-of-00001.parquet"))
    ds.select(range(6, 8)).to_parquet(str(tmp_path / "hub" / "data" / "test-00000-of-00001.parquet"))
    r = run_doctor(tmp_path / "hub", tmp_path, "--size", "64x48", "--batch-size", "4")
    assert r["kind"] == "parquet" and r["samples"] == 6, r
    assert r["split"] == "train" and r["splits"] == ["train", "test"]
    names = [p["name"] for p in r["pipelines"]]
    assert any("DonutImageProcessor" in n for n in names), names
    assert any(n.startswith("docfeed.Loader") for n in names), (names, r["notes"])
    assert any('load_dataset("parquet")' in n for n in r["notes"]), r["notes"]


def test_webdataset_shards(tmp_path):
    import io
    import tarfile

    shards = tmp_path / "shards"
    shards.mkdir()
    for s in range(2):
        with tarfile.open(shards / f"shard-{s:04d}.tar", "w") as tar:
            for i, page in enumerate(pages(4)):
                for ext, data in (("png", _png_bytes(page)),
                                  ("json", json.dumps({"n": i}).encode())):
                    info = tarfile.TarInfo(f"doc{s}{i:03d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    r = run_doctor(shards, tmp_path, "--size", "64x48", "--batch-size", "4")
    assert r["kind"] == "webdataset" and r["samples"] == 8, r
    names = [p["name"] for p in r["pipelines"]]
    assert any("DonutImageProcessor" in n for n in names), (names, r["notes"])
    assert any(n.startswith("docfeed.Loader") for n in names), (names, r["notes"])


def _png_bytes(page):
    import io

    b = io.BytesIO()
    page.save(b, format="PNG")
    return b.getvalue()


def test_docfeed_shards_and_report(packed_keep, tmp_path):
    r = run_doctor(packed_keep, tmp_path, "--report", tmp_path / "rep", "--gpu", "a100")
    assert r["kind"] == "docfeed"
    assert r["samples"] == datasets.load_from_disk(str(packed_keep)).num_rows
    assert [p["name"].split(",")[0] for p in r["pipelines"]] == ["docfeed.Loader"]
    assert "A100" in r["gpu"]["device"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## What is stored" in md and "doctor.png" in md
    png = tmp_path / "rep" / "doctor.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(png) as im:
        im.load()
        assert im.width > 300 and im.height > 100


def test_errors_name_the_path(tensors, tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    assert doctor.main([str(tmp_path / "notes")]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "notes") in err and "not a dataset" in err
    save(tmp_path / "ds", tensors["centred"][:6])
    data = next((tmp_path / "ds").glob("*.arrow"))
    data.write_bytes(data.read_bytes()[:data.stat().st_size * 2 // 3])
    assert doctor.main([str(tmp_path / "ds")]) == 1
    err = capsys.readouterr().err
    assert str(data) in err and "truncated or corrupt" in err


def test_flop_formula_matches_torch_flop_counter():
    """The formula against torch's FlopCounterMode over the real transformers model built from
    configs with Donut-base's architecture, on meta tensors (shapes only)."""
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import (DonutSwinConfig, MBartConfig, VisionEncoderDecoderConfig,
                              VisionEncoderDecoderModel)

    height, width, length = 1553, 1200, 512
    enc = DonutSwinConfig(image_size=[height, width], patch_size=4, embed_dim=128,
                          depths=[2, 2, 14, 2], num_heads=[4, 8, 16, 32], window_size=10)
    dec = MBartConfig(d_model=1024, decoder_layers=4, decoder_attention_heads=16,
                      decoder_ffn_dim=4096, vocab_size=57580, is_decoder=True,
                      add_cross_attention=True, max_position_embeddings=1536)
    cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    cfg.decoder_start_token_id, cfg.pad_token_id = 0, 1
    with torch.device("meta"):
        model = VisionEncoderDecoderModel(cfg)
        model.decoder.config._attn_implementation = "eager"  # sdpa's mask check reads values
        model.eval()  # no layerdrop draw (a value read)
        pixels = torch.zeros(1, 3, height, width)
        labels = torch.zeros(1, length, dtype=torch.long)
        with FlopCounterMode(display=False) as forward:
            model(pixel_values=pixels, labels=labels)
        with FlopCounterMode(display=False) as train:
            model(pixel_values=pixels, labels=labels).loss.backward()
    ours = doctor.donut_base_train_flops(height, width, length)
    assert ours["forward"] == forward.get_total_flops()
    # Backward skips the input image's gradient: 3 x forward is within 0.1 % of it.
    assert ours["train"] == pytest.approx(train.get_total_flops(), rel=1e-3)
    assert ours["train"] == pytest.approx(3.7e12, rel=0.05)  # docs/context.md section 2


def package_link(tmp_path):
    """A PYTHONPATH entry holding this docfeed package (installed or a development tree)."""
    link = tmp_path / "pkg"
    link.mkdir()
    # doctor is a package of the docfeed package: docfeed/doctor/__init__.py.
    (link / "docfeed").symlink_to(pathlib.Path(doctor.__file__).parents[1])
    return str(link)


def test_cli_dispatch_and_the_fallback_without_torch(tensors, tmp_path):
    """`docfeed doctor` through the C++ CLI, run by the Python DOCFEED_PYTHON names. That is
    .venv's (datasets 5, no torch) when it exists, which also shows the fallback measurement:
    pyarrow's read + to_pylist instead of the DataLoader."""
    save(tmp_path / "ds", tensors["centred"][:8])
    venv = REPO / ".venv" / "bin" / "python"
    no_torch = venv.exists() and subprocess.run([str(venv), "-c", "import torch"],
                                                capture_output=True).returncode != 0
    env = dict(os.environ, DOCFEED_PYTHON=str(venv) if no_torch else sys.executable,
               PYTHONPATH=package_link(tmp_path))
    env.pop("DOCFEED_CLI", None)  # the CLI sets it to itself
    proc = subprocess.run([str(docfeed_bin()), "doctor", str(tmp_path / "ds"), "--json",
                           str(tmp_path / "r.json"), "--max-seconds", "5", "--workers", "1",
                           "--report", str(tmp_path / "rep")],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[float32-nested-lists]" in proc.stdout and "docfeed.Loader" in proc.stdout
    has_mpl = subprocess.run([env["DOCFEED_PYTHON"], "-c", "import matplotlib"],
                             capture_output=True).returncode == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert (tmp_path / "rep" / "doctor.png").exists() == has_mpl
    assert ("chart skipped" in md) != has_mpl
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["kind"] == "save_to_disk" and CONTRACT_KEYS <= set(r)
    names = [p["name"] for p in r["pipelines"]]
    if no_torch:
        assert names[0].startswith("pyarrow read + to_pylist"), names
        assert any("not importable" in n for n in r["notes"])
    # A Python without docfeed: a clear message saying how to run it.
    bare = dict(os.environ, DOCFEED_PYTHON="/usr/bin/python3", PYTHONPATH="")
    proc = subprocess.run([str(docfeed_bin()), "doctor", str(tmp_path / "ds")], env=bare,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot import docfeed" in proc.stderr and "pip install" in proc.stderr
    assert "DOCFEED_PYTHON" in proc.stderr
    # A Python that does not exist.
    proc = subprocess.run([str(docfeed_bin()), "doctor", str(tmp_path / "ds")],
                          env=dict(bare, DOCFEED_PYTHON=str(tmp_path / "no-python")),
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no-python" in proc.stderr


# ------------------------------------------------------------------------------------------------
# Typed results and the in-process docfeed measurement.


def test_json_is_the_report_dataclasses_and_reads_back(tensors, tmp_path):
    save(tmp_path / "ds", tensors["centred"])
    args = doctor.parse_args([str(tmp_path / "ds"), "--max-seconds", "8", "--workers", "2",
                              "--samples", "16", "--epochs", "3"])
    report = doctor.run(args)
    assert isinstance(report, doctor.Report)
    assert all(isinstance(p, doctor.Pathology) for p in report.pathologies)
    assert all(isinstance(p, doctor.Pipeline) for p in report.pipelines)
    assert isinstance(report.gpu, doctor.GpuEstimate) and isinstance(report.disk, doctor.DiskRead)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.samples = 1
    assert args.assume_samples == 0  # run() leaves the arguments alone
    doctor.write_outputs(report, None, str(tmp_path / "r.json"))
    data = json.loads((tmp_path / "r.json").read_text())
    assert data == report.to_json()
    assert doctor.Report.from_json(data).to_json() == data
    assert doctor.Report.from_json(data) == report  # nothing modelled away: the cache holds it
    assert CONTRACT_KEYS <= set(data)
    assert data["disk_read_mb_s"] == report.disk.cold_mb_s == data["disk"]["cold_mb_s"]
    assert data["bytes_per_sample"] == report.bytes_on_disk / 16
    by_kind = {p.kind: p for p in report.pipelines}
    d = by_kind["docfeed"]
    run = d.measured.docfeed.bench
    assert isinstance(run, doctor.LoaderRun) and run.dtype == "uint8" and run.threads == 2
    assert d.batch_s == pytest.approx(8 / run.pages_per_s)
    assert d.measured.docfeed.sample_rows == 16
    assert by_kind["user"].measured.sampling.measured_batch_size == 8
    text = doctor.render_text(doctor.Report.from_json(data))
    assert text == doctor.render_text(report) and "[float32-nested-lists]" in text


def measured(name, batch_s, workers, kind="user", docfeed=None):
    return doctor.Measured(name=name, batch_s=batch_s, stages={"work": batch_s}, workers=workers,
                           kind=kind, docfeed=docfeed,
                           sampling=doctor.Sampling(2, 8) if kind == "user" else None)


def test_the_model_on_hand_made_measurements():
    """Disk and GPU model, checked by hand: 1 MB samples, 8 per batch, a 100 MB/s disk (80 ms a
    batch), a 0.5 s GPU step, 1000 samples x 2 epochs that do not fit in 100 MB of RAM."""
    args = dict(bytes_per_sample=1e6, disk_mb_s=100.0, step_s=0.5, batch_size=8,
                assume_samples=1000, epochs=2, ram_available=100_000_000)
    serial = doctor.model_pipeline(measured("p, 0 workers", 1.0, 0), **args)
    assert serial.batch_s == pytest.approx(1.08) and not serial.page_cache_holds
    assert list(serial.stages) == ["disk read", "work"]
    assert serial.gpu_busy == pytest.approx(0.5 / 1.08)
    assert serial.epoch_s == pytest.approx(125 * 1.08) and serial.job_s == 2 * serial.epoch_s
    overlapped = doctor.model_pipeline(measured("p, 4 workers", 0.05, 4), **args)
    assert overlapped.batch_s == pytest.approx(0.08) and list(overlapped.stages) == ["disk read"]
    assert overlapped.gpu_busy == 1.0 and overlapped.epoch_s == pytest.approx(125 * 0.5)
    run = doctor.LoaderRun(dataset="x", preprocessed=True, threads=4, batch_size=8,
                           preset="donut", height=64, width=48, hf_version=4, backend="pil",
                           preset_options={"height": 64, "width": 48, "align_long_axis": False,
                                           "hf_version": 4, "backend": "pil"},
                           dtype="uint8", pages=80, seconds=0.4, pages_per_s=200.0,
                           first_batch_s=0.1, stored_bytes=1, ms_per_page={"read": 1.0},
                           consumer_wait_s=0.0, buffer_wait_s=0.0, peak_rss_bytes=1,
                           pool_bytes=1, bad_samples=0, rss_after_epoch=(5, 6))
    sample = doctor.DocfeedSample(sample_rows=16, bytes_per_sample=1000.0,
                                  pack_s_per_sample=0.01, bench=run)
    packed = doctor.model_pipeline(measured("docfeed.Loader, 4 threads", 0.04, 4, "docfeed",
                                            sample), **args)
    assert packed.page_cache_holds and packed.batch_s == 0.04  # 1 MB in all: the cache holds it
    j = packed.to_json()
    assert list(j) == ["name", "batch_s", "stages", "workers", "kind", "pack_s_per_sample",
                       "bytes_per_sample", "bench", "sample_rows", "page_cache_holds",
                       "gpu_busy", "epoch_s", "job_s"]
    assert j["bench"]["rss_after_epoch"] == [5, 6] and j["bytes_per_sample"] == 1000.0
    assert list(serial.to_json()) == ["name", "batch_s", "stages", "workers", "measured_batches",
                                      "measured_batch_size", "kind", "page_cache_holds",
                                      "gpu_busy", "epoch_s", "job_s"]
    for p in (serial, overlapped, packed):
        assert doctor.Pipeline.from_json(json.loads(json.dumps(p.to_json()))).to_json() == \
            p.to_json()
    gpu = doctor.estimate_step(8, (1553, 1200), "h100", 0.35)
    assert gpu.step_s == pytest.approx(gpu.flops.train * 8 / (989e12 * 0.35))
    assert doctor.GpuEstimate.from_json(gpu.to_json()) == gpu
    assert doctor.estimate_step(8, (1553, 1200), step_time=0.25).to_json() == {
        "step_s": 0.25, "source": "step-time", "device": "the user's GPU (--step-time)"}


class NoDocfeedProcess:
    """subprocess.Popen that records the docfeed CLI's commands and refuses all but `pack`."""

    def __init__(self, monkeypatch):
        self.commands = []
        real, cli, commands = subprocess.Popen, str(docfeed_bin()), self.commands

        def popen(args, *rest, **kwargs):
            argv = [str(a) for a in (args if isinstance(args, (list, tuple)) else [args])]
            if argv and argv[0] == cli:
                commands.append(argv[1:])
                if argv[1:2] != ["pack"]:
                    raise AssertionError(f"doctor ran the docfeed CLI: {argv}")
            return real(args, *rest, **kwargs)

        monkeypatch.setattr(subprocess, "Popen", popen)


def test_docfeed_is_measured_in_process(packed_keep, tensors, tmp_path, monkeypatch):
    guard = NoDocfeedProcess(monkeypatch)
    r = run_doctor(packed_keep, tmp_path, "--batch-size", "4")
    assert guard.commands == []  # a docfeed dataset: nothing to pack, the loader runs here
    bench = r["pipelines"][0]["bench"]
    assert bench["dataset"] == str(packed_keep) and bench["pages"] > 0
    save(tmp_path / "ds", tensors["centred"][:8])
    r = run_doctor(tmp_path / "ds", tmp_path)
    assert [c[0] for c in guard.commands] == ["pack"]  # the sample's migration only
    assert any(p["name"].startswith("docfeed.Loader") for p in r["pipelines"])
    root = tmp_path / "folder"
    (root / "img").mkdir(parents=True)
    for i, page in enumerate(pages(4)):
        page.save(root / "img" / f"{i}.png")
    r = run_doctor(root, tmp_path, "--size", "64x48", "--batch-size", "2")
    assert any(p["name"].startswith("docfeed.Loader") for p in r["pipelines"])
    from docfeed.doctor.measure_docfeed import in_process_pack

    # An image folder: packed in process where docfeed.pack applies the Donut preset itself.
    assert [c[0] for c in guard.commands] == ["pack"] * (2 if in_process_pack() is None else 1)


def test_loader_run_counts_what_bench_counts(packed_keep, tmp_path):
    """The in-process run against `docfeed bench --json` (the C++ CLI) on the same dataset and
    options: the same keys, pages after the first batch, batch pool and configuration."""
    cli = json.loads(run_docfeed(
        "bench", packed_keep, "--json", "--threads", "2", "--dtype", "uint8", "--batch-size", "4",
        "--size", "64x48", "--epochs", "2", "--max-batches", "3").stdout.strip().splitlines()[-1])
    ours = doctor.run_loader(packed_keep, 4, 2, (64, 48), epochs=2, max_batches=3).to_json()
    assert list(ours) == list(cli)
    assert list(ours["ms_per_page"]) == list(cli["ms_per_page"])
    # Both render every loader statistic through the one C++ writer (LoaderStatsJson).
    assert list(ours["stats"]) == list(cli["stats"])
    assert ours["stats"]["pool_buffers"] == cli["stats"]["pool_buffers"] > 0
    assert ours["stats"]["read"]["count"] > 0 and "nanos" in ours["stats"]["decode_resize"]
    for key in ("dataset", "preprocessed", "threads", "batch_size", "step_ms", "preset", "height",
                "width", "hf_version", "backend", "preset_options", "dtype", "pages",
                "pool_bytes", "bad_samples", "baseline_ms_per_page"):
        assert ours[key] == cli[key], key
    assert ours["pages"] == 4 * 5  # 6 batches of 4 in two epochs, the first not counted
    assert len(ours["rss_after_epoch"]) == 2 and ours["pages_per_s"] > 0
    assert ours["ms_per_page"]["read"] > 0 and ours["first_batch_s"] > 0

"""The docfeed CLI as a user meets it: exit codes, messages that name the bad file, atomic
output, and `verify` naming where a dataset is damaged."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import datasets
import pytest

from conftest import SAMPLE_DOCS, docfeed_bin, run_docfeed


def copy_samples(tmp_path, names):
    """A small image folder with the named sample documents and their metadata rows."""
    src = tmp_path / "src"
    rows = [json.loads(l) for l in open(SAMPLE_DOCS / "metadata.jsonl", encoding="utf-8")]
    rows = [r for r in rows if r["file_name"] in names]
    for r in rows:
        (src / r["file_name"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_DOCS / r["file_name"], src / r["file_name"])
    with open(src / "metadata.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return src


def test_truncated_image_names_file_and_line(tmp_path):
    src = copy_samples(tmp_path, ["sroie/000.jpg", "sroie/030.jpg"])
    data = (src / "sroie/030.jpg").read_bytes()
    (src / "sroie/030.jpg").write_bytes(data[: len(data) // 3])
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1
    assert "sroie/030.jpg" in proc.stderr and "line 2" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_skip_bad_writes_rejects_and_summary(tmp_path):
    src = copy_samples(tmp_path, ["sroie/000.jpg", "sroie/030.jpg"])
    (src / "sroie/000.jpg").write_bytes(b"not an image at all")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    assert "rejected   1 sample" in proc.stdout
    rejects = [json.loads(l) for l in open(tmp_path / "out" / "rejects.jsonl")]
    assert rejects[0]["file_name"] == "sroie/000.jpg" and rejects[0]["metadata_line"] == 1
    assert len(datasets.load_from_disk(str(tmp_path / "out"))) == 1
    run_docfeed("verify", tmp_path / "out")


def test_missing_file_and_bad_json_name_the_line(tmp_path):
    src = copy_samples(tmp_path, ["sroie/000.jpg"])
    with open(src / "metadata.jsonl", "a") as f:
        f.write('{"file_name": "sroie/nope.jpg"}\n')
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "metadata.jsonl:2" in proc.stderr and "nope.jpg" in proc.stderr
    with open(src / "metadata.jsonl", "w") as f:
        f.write('{"file_name": "sroie/000.jpg", "ground_truth": \n')
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "metadata.jsonl:1" in proc.stderr and "malformed JSON" in proc.stderr


def test_refuses_to_overwrite_without_flag(tmp_path):
    src = copy_samples(tmp_path, ["sroie/000.jpg"])
    run_docfeed("pack", src, "-o", tmp_path / "out")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "--overwrite" in proc.stderr
    run_docfeed("pack", src, "-o", tmp_path / "out", "--overwrite")


def test_usage_errors_exit_2(tmp_path):
    assert run_docfeed("pack", check=False).returncode == 2
    assert run_docfeed("pack", SAMPLE_DOCS, "-o", tmp_path / "o", "--codec", "gif", check=False).returncode == 2
    assert run_docfeed("frobnicate", check=False).returncode == 2
    assert run_docfeed("--help").returncode == 0


def test_data_errors_exit_1_naming_the_file_without_usage(tmp_path):
    """A missing or corrupt dataset or input is a data error: the error naming the file, exit 1,
    and no usage text (that is for usage errors, exit 2)."""
    missing = tmp_path / "missing"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "docfeed.json").write_text("{not json")
    (tmp_path / "page.png").write_bytes(b"not a png")
    cases = [
        ("bench", missing), ("bench", broken), ("bench", broken, "--threads", "1"),
        ("inspect", missing), ("inspect", broken), ("verify", missing), ("verify", broken),
        ("pack", missing, "-o", tmp_path / "o1"),
        ("preprocess", tmp_path / "page.png", "--preset", "donut", "-o", tmp_path / "p.npy"),
        ("preprocess", missing, "--preset", "donut", "-o", tmp_path / "p.npy"),
    ]
    for args in cases:
        proc = run_docfeed(*args, check=False)
        named = str(args[1])
        assert proc.returncode == 1, (args, proc.returncode, proc.stderr)
        assert "usage:" not in proc.stderr and "usage:" not in proc.stdout, (args, proc.stderr)
        assert named in proc.stderr or pathlib.Path(named).name in proc.stderr, (args, proc.stderr)


def test_killed_pack_leaves_nothing_that_looks_valid(tmp_path):
    # Enough work that the pack is still running when it is killed.
    src = tmp_path / "src"
    src.mkdir()
    for i in range(60):
        shutil.copy(SAMPLE_DOCS / "sroie/459.jpg", src / f"{i:03d}.jpg")
    out = tmp_path / "out"
    proc = subprocess.Popen([str(docfeed_bin()), "pack", str(src), "-o", str(out), "--threads", "1",
                             "--codec", "png"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    assert proc.poll() is None, "pack finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith("out.partial-")]
    assert leftovers, "expected the killed run's temporary directory"
    for p in leftovers:
        assert not (p / "docfeed.json").exists()
        with pytest.raises(Exception):
            datasets.load_from_disk(str(p))
    # The next pack to the same output cleans up after the dead run.
    small = copy_samples(tmp_path, ["sroie/000.jpg"])
    run_docfeed("pack", small, "-o", out)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("out.partial-")]


def test_verify_names_the_damaged_batch_and_samples(tmp_path):
    src = copy_samples(tmp_path, ["sroie/000.jpg", "sroie/030.jpg", "sroie/076.jpg"])
    out = tmp_path / "out"
    run_docfeed("pack", src, "-o", out)
    run_docfeed("verify", out)
    data = out / "data-00000-of-00001.arrow"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    data.write_bytes(bytes(raw))
    proc = run_docfeed("verify", out, check=False)
    assert proc.returncode == 1
    assert "data-00000-of-00001.arrow" in proc.stderr and "record batch 0" in proc.stderr
    assert "samples 0-2" in proc.stderr, proc.stderr


def test_inspect_json_reports_sizes_and_labels(packed_keep):
    stats = json.loads(run_docfeed("inspect", packed_keep, "--json").stdout)
    assert stats["samples"] == 20
    assert stats["width"]["max"] == 4961 and stats["height"]["max"] == 7016
    assert stats["label_column"] == "ground_truth"
    assert stats["samples_without_label"] == 6
    text = run_docfeed("inspect", packed_keep).stdout
    assert "struct<bytes: binary, path: string>" in text and "longest" in text


def test_bench_takes_the_processor_generation(tmp_path):
    """`docfeed bench --hf-version/--backend` run the loader with that generation's preset on
    original images (generations_bench.py relies on it); bad combinations are usage errors."""
    import json

    src = copy_samples(tmp_path, ["sroie/000.jpg", "invoices/simple-invoice.png"])
    run_docfeed("pack", src, "-o", tmp_path / "ds")
    for extra, want in (([], (4, "pil")), (["--hf-version", "5"], (5, "pil")),
                        (["--hf-version", "5", "--backend", "torchvision"], (5, "torchvision"))):
        proc = run_docfeed("bench", tmp_path / "ds", "--size", "64x48", "--json", "--threads", "1",
                           "--batch-size", "1", *extra)
        out = json.loads(proc.stdout)
        # The first batch is timed apart: 1 of the 2 pages counts for pages/s.
        assert (out["hf_version"], out["backend"]) == want and out["pages"] == 1, (extra, out)
    for extra in (["--backend", "torchvision"], ["--hf-version", "6"], ["--backend", "cv2"]):
        proc = run_docfeed("bench", tmp_path / "ds", *extra, check=False)
        assert proc.returncode == 2 and ("--backend" in proc.stderr or "--hf-version" in
                                         proc.stderr), (extra, proc.stderr)


def test_bench_step_ms_holds_each_batch(tmp_path):
    """`docfeed bench --step-ms N` holds each batch N ms before asking for the next (a training
    step on another device), so the loader's memory and waits are those of a training run."""
    src = copy_samples(tmp_path, ["sroie/000.jpg", "invoices/simple-invoice.png"])
    run_docfeed("pack", src, "-o", tmp_path / "ds")
    proc = run_docfeed("bench", tmp_path / "ds", "--size", "64x48", "--json", "--threads", "1",
                       "--batch-size", "1", "--step-ms", "400")
    out = json.loads(proc.stdout)
    # Timed from the first batch on: its step, the second batch, the second's step.
    assert out["step_ms"] == 400 and out["seconds"] >= 0.8, out
    proc = run_docfeed("bench", tmp_path / "ds", "--step-ms", "-1", check=False)
    assert proc.returncode == 2 and "--step-ms" in proc.stderr, proc.stderr


def test_bench_peak_rss_is_its_own_not_its_launchers(tmp_path):
    """`docfeed bench --json`'s peak_rss_bytes is the bench process's own high-water mark: Linux
    carries getrusage's ru_maxrss over execve from the forking process, so a bench started from
    a harness that had touched 1 GiB reported about 1 GiB."""
    src = copy_samples(tmp_path, ["sroie/000.jpg", "invoices/simple-invoice.png"])
    run_docfeed("pack", src, "-o", tmp_path / "ds")
    touched = bytearray(1 << 30)
    for i in range(0, len(touched), 4096):
        touched[i] = 1
    proc = run_docfeed("bench", tmp_path / "ds", "--size", "64x48", "--json", "--threads", "1",
                       "--batch-size", "1")
    del touched
    peak = json.loads(proc.stdout)["peak_rss_bytes"]
    assert 0 < peak < 512 << 20, peak

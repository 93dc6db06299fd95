"""Issue #14 at pack time, as a user meets it through the CLI: special files are refused without
hanging, nothing is read outside SRC through symlinks unless asked, every skipped entry is
reported, one writer per OUT (OUT.lock), --overwrite replaces only a docfeed dataset, leftovers
of killed runs are cleaned, and --skip-bad rejects every kind of bad row."""
import fcntl
import json
import os
import resource
import shutil
import subprocess

import datasets
import pyarrow.json as paj
import pytest

from conftest import SAMPLE_DOCS, docfeed_bin, run_docfeed

GOOD = "sroie/000.jpg"
OTHER = "sroie/030.jpg"


def limited_run(*args, timeout=60):
    """The CLI under a 2 GiB address-space limit and a timeout: a read of /dev/zero or a FIFO
    that never ends fails the test instead of the machine."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    return subprocess.run([str(docfeed_bin()), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)


def folder(tmp_path, rows, images=(GOOD,)):
    """SRC with copies of `images` and a metadata.jsonl of `rows` (dicts, or raw text lines)."""
    src = tmp_path / "src"
    for name in images:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_DOCS / name, src / name)
    src.mkdir(exist_ok=True)
    with open(src / "metadata.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return src


def siblings(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))


def pack_dataset(tmp_path, name="prev"):
    out = tmp_path / name
    run_docfeed("pack", folder(tmp_path / (name + "-src"), [{"file_name": GOOD}]), "-o", out)
    return out


# --- Special files: regular files only, never a hang ---------------------------------------

def test_fifo_named_by_a_row_is_refused_without_hanging(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD}, {"file_name": "pipe.jpg"}])
    os.mkfifo(src / "pipe.jpg")
    out = tmp_path / "out"
    proc = limited_run("pack", src, "-o", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pipe.jpg" in proc.stderr and "FIFO" in proc.stderr, proc.stderr
    assert siblings(out) == []  # no OUT, no OUT.partial-PID, no lock
    proc = limited_run("pack", src, "-o", out, "--skip-bad")
    assert proc.returncode == 0, proc.stderr
    rejects = [json.loads(l) for l in open(out / "rejects.jsonl")]
    assert [(r["file_name"], r["metadata_line"]) for r in rejects] == [("pipe.jpg", 2)]
    assert "FIFO" in rejects[0]["error"]
    assert len(datasets.load_from_disk(str(out))) == 1


def test_symlink_to_dev_zero_is_refused_before_reading(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD}, {"file_name": "zero.jpg"}])
    os.symlink("/dev/zero", src / "zero.jpg")
    proc = limited_run("pack", src, "-o", tmp_path / "out")
    assert proc.returncode == 1 and "zero.jpg" in proc.stderr, proc.stderr
    assert "outside the source folder" in proc.stderr, proc.stderr
    proc = limited_run("pack", src, "-o", tmp_path / "out", "--follow-symlinks")
    assert proc.returncode == 1 and "character device" in proc.stderr, proc.stderr


def test_preprocess_of_a_device_is_refused(tmp_path):
    proc = limited_run("preprocess", "/dev/zero", "--preset", "donut", "-o", tmp_path / "x.npy")
    assert proc.returncode != 0 and "/dev/zero" in proc.stderr, proc.stderr
    assert "character device" in proc.stderr, proc.stderr


# --- Symlinks: confined to SRC unless --follow-symlinks; every skipped entry reported ------

def test_a_row_cannot_reach_outside_src_through_a_directory_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(SAMPLE_DOCS / OTHER, outside / "secret.jpg")
    src = folder(tmp_path, [{"file_name": GOOD}, {"file_name": "host/secret.jpg"}])
    os.symlink(outside, src / "host")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1, proc.stdout
    assert "metadata.jsonl:2" in proc.stderr and "outside the source folder" in proc.stderr
    assert not (tmp_path / "out").exists()
    run_docfeed("pack", src, "-o", tmp_path / "followed", "--follow-symlinks")
    assert len(datasets.load_from_disk(str(tmp_path / "followed"))) == 2


def test_listing_skips_and_reports_links_and_special_files(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(SAMPLE_DOCS / OTHER, outside / "o.jpg")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SAMPLE_DOCS / GOOD, src / "a.jpg")
    os.symlink("a.jpg", src / "inside.jpg")  # stays in SRC: packed
    os.symlink(outside / "o.jpg", src / "out.jpg")
    os.symlink(outside, src / "dir")
    os.symlink("nowhere.jpg", src / "dangling.jpg")
    os.mkfifo(src / "pipe.jpg")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out")
    assert "packed 2 samples" in proc.stdout, proc.stdout
    skipped = {l.split()[1].rstrip(":"): l for l in proc.stdout.splitlines()
               if l.strip().startswith("skipped")}
    assert set(skipped) == {"out.jpg", "dir", "dangling.jpg", "pipe.jpg"}, proc.stdout
    assert "outside the source folder" in skipped["out.jpg"]
    assert "symlink to a directory" in skipped["dir"]
    assert "dangling symlink" in skipped["dangling.jpg"]
    assert "FIFO" in skipped["pipe.jpg"]
    ds = datasets.load_from_disk(str(tmp_path / "out"))
    names = [r["path"] for r in ds.cast_column("image", datasets.Image(decode=False))["image"]]
    assert names == ["a.jpg", "inside.jpg"]
    proc = run_docfeed("pack", src, "-o", tmp_path / "followed", "--follow-symlinks")
    assert "packed 3 samples" in proc.stdout, proc.stdout


# --- One writer per OUT; placement never removes what the run did not make ----------------

@pytest.mark.parametrize("command", ["pack", "synth"])
def test_a_held_output_lock_stops_a_second_writer(tmp_path, command):
    out = tmp_path / "out"
    with open(str(out) + ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # what a running docfeed holds for the whole run
        if command == "pack":
            proc = run_docfeed("pack", folder(tmp_path, [{"file_name": GOOD}]), "-o", out,
                               check=False)
        else:
            proc = run_docfeed("synth", "-o", out, "--n", "1", check=False)
        assert proc.returncode == 1, proc.stdout
        assert "locked" in proc.stderr and "out.lock" in proc.stderr, proc.stderr
        assert not out.exists()
    run_docfeed("pack", folder(tmp_path, [{"file_name": GOOD}]), "-o", out)
    assert not (tmp_path / "out.lock").exists()  # removed by the run that took it


def test_two_packs_started_together_one_fails_clearly(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD}, {"file_name": OTHER}], images=(GOOD, OTHER))
    out = tmp_path / "out"
    procs = [subprocess.Popen([str(docfeed_bin()), "pack", str(src), "-o", str(out),
                               "--threads", "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, err in results if code == 1)
    assert "locked" in loser or "already exists" in loser or "appeared" in loser, loser
    assert len(datasets.load_from_disk(str(out))) == 2
    assert siblings(out) == ["out"]


def test_overwrite_refuses_what_is_not_a_docfeed_dataset(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD}])
    user = tmp_path / "out"
    user.mkdir()
    (user / "thesis.tex").write_text("mine")
    proc = run_docfeed("pack", src, "-o", user, "--overwrite", check=False)
    assert proc.returncode == 1 and "refusing to replace" in proc.stderr, proc.stderr
    assert "thesis.tex" in proc.stderr
    assert (user / "thesis.tex").read_text() == "mine"
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = run_docfeed("pack", src, "-o", afile, "--overwrite", check=False)
    assert proc.returncode == 1 and "regular file" in proc.stderr, proc.stderr
    # A docfeed dataset and an empty directory are replaced.
    prev = pack_dataset(tmp_path)
    run_docfeed("pack", folder(tmp_path / "two", [{"file_name": GOOD}, {"file_name": OTHER}],
                               images=(GOOD, OTHER)), "-o", prev, "--overwrite")
    assert len(datasets.load_from_disk(str(prev))) == 2
    (tmp_path / "empty").mkdir()
    run_docfeed("pack", src, "-o", tmp_path / "empty", "--overwrite")


def test_leftovers_of_killed_runs_are_cleaned_and_an_orphaned_old_output_restored(tmp_path):
    prev = pack_dataset(tmp_path)
    out = tmp_path / "out"
    # A replacement killed between its two renames: OUT gone, the old dataset at OUT.old-N.
    os.rename(prev, tmp_path / "out.old-999999")
    (tmp_path / "out.partial-999998").mkdir()
    (tmp_path / "out.partial-999998" / "data-00000.arrow.partial").write_bytes(b"half")
    (tmp_path / "out.partial-notapid").mkdir()  # not a name docfeed makes: left alone
    proc = run_docfeed("pack", folder(tmp_path, [{"file_name": GOOD}]), "-o", out, check=False)
    assert proc.returncode == 1 and "already exists" in proc.stderr, proc.stderr
    run_docfeed("verify", out)  # the old dataset is back in place
    assert siblings(out) == ["out", "out.partial-notapid"]


# --- --skip-bad covers every bad row; rows are one per image; metadata edge cases ----------

def test_skip_bad_rejects_missing_files_and_malformed_rows(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD}, {"file_name": "nope.jpg"},
                            '{"file_name": "x.jpg", ', '[1, 2]', {"other": 1}])
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    assert "rejected   4 sample(s)" in proc.stdout, proc.stdout
    rejects = [json.loads(l) for l in open(tmp_path / "out" / "rejects.jsonl")]
    assert [r["metadata_line"] for r in rejects] == [2, 3, 4, 5]
    assert rejects[0]["file_name"] == "nope.jpg" and "no such file" in rejects[0]["error"]
    assert "malformed JSON" in rejects[1]["error"] and "file_name" not in rejects[1]
    assert len(datasets.load_from_disk(str(tmp_path / "out"))) == 1


def test_duplicate_file_name_names_both_rows(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD, "k": 1}, {"file_name": OTHER, "k": 2},
                            {"file_name": "./" + GOOD, "k": 3}], images=(GOOD, OTHER))
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1, proc.stdout
    assert "metadata.jsonl:3" in proc.stderr and "also named by line 1" in proc.stderr
    run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    ds = datasets.load_from_disk(str(tmp_path / "out"))
    assert ds["k"] == [1, 2]


def test_a_file_name_with_a_nul_byte_is_refused(tmp_path):
    src = folder(tmp_path, ['{"file_name": "sroie/000.jpg\\u0000.txt"}'])
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "NUL" in proc.stderr and "metadata.jsonl:1" in proc.stderr


def test_a_byte_order_mark_is_read_as_datasets_imagefolder_reads_it(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD, "ground_truth": "g", "n": 1e23}])
    text = (src / "metadata.jsonl").read_bytes()
    (src / "metadata.jsonl").write_bytes(b"\xef\xbb\xbf" + text)
    run_docfeed("pack", src, "-o", tmp_path / "out")
    ours = datasets.load_from_disk(str(tmp_path / "out"))
    ref = datasets.load_dataset("imagefolder", data_dir=str(src), split="train",
                                cache_dir=str(tmp_path / "cache"))
    assert ours.column_names == ref.column_names
    assert ours[0]["ground_truth"] == ref[0]["ground_truth"] == "g"
    # 1e23 is a JSON number with an exponent: float64, as pyarrow's JSON reader types it.
    table = paj.read_json(src / "metadata.jsonl")
    assert str(table.schema.field("n").type) == "double"
    assert ours.features["n"].dtype == "float64" and ours[0]["n"] == table["n"][0].as_py()


def test_when_every_sample_is_rejected_the_rejects_are_kept_where_the_message_says(tmp_path):
    src = folder(tmp_path, [{"file_name": GOOD}])
    (src / GOOD).write_bytes(b"not an image")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad", check=False)
    assert proc.returncode == 1 and "every sample" in proc.stderr, proc.stderr
    kept = proc.stderr.split("see ")[1].split(" for why")[0]
    rejects = [json.loads(l) for l in open(kept)]
    assert rejects[0]["file_name"] == GOOD
    assert not (tmp_path / "out").exists()


def test_a_large_ground_truth_is_stored_whole(tmp_path):
    # No limit per field (documented in src/pack/README.md): 10 MB of ground truth reads back
    # byte for byte through datasets, as imagefolder would give it.
    truth = json.dumps({"gt_parse": {"text": "x" * (10 << 20)}})
    src = folder(tmp_path, [{"file_name": GOOD, "ground_truth": truth}])
    run_docfeed("pack", src, "-o", tmp_path / "out")
    assert datasets.load_from_disk(str(tmp_path / "out"))[0]["ground_truth"] == truth


def test_an_image_the_loader_cannot_resize_is_refused_at_pack_time(tmp_path):
    """A 1x100000 PNG decodes, but the loader's default Donut preset cannot resize it (the
    thumbnail would be 0 pixels wide): packed without --preprocess it is refused
    at pack time naming the file (before, it packed and the loader raised at iteration)."""
    from PIL import Image
    src = folder(tmp_path, [{"file_name": GOOD}, {"file_name": "thin.png"}])
    Image.new("L", (1, 100000), 255).save(src / "thin.png")
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "thin.png" in proc.stderr and "cannot process this 1x100000 image" in proc.stderr, \
        proc.stderr
    assert not (tmp_path / "out").exists()
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--skip-bad")
    rejects = [json.loads(l) for l in open(tmp_path / "out" / "rejects.jsonl")]
    assert [r["file_name"] for r in rejects] == ["thin.png"], rejects
    assert "1x100000" in rejects[0]["error"], rejects
    assert len(datasets.load_from_disk(str(tmp_path / "out"))) == 1

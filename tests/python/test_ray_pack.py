"""docfeed.ray.pack on a real local Ray (ray.init(num_cpus=2) on 127.0.0.1, started here).

The reference is a single-process `docfeed pack` (CLI) or `docfeed.pack` of the same input, both
read back by pyarrow and datasets.load_from_disk (test_pack_parts.assert_same_dataset): same
sample ids, rows and image bytes. Also: every rejected sample in the report, a rerun keeping the
complete parts, a ray.data.Dataset as input, a worker killed while it writes its part (Ray's
retry gives the same dataset), and the refusals. Runs in .venv/train only (the Makefile's
RAY_TESTS), where requirements-train.txt installs ray[data].
"""
import faulthandler
import json
import os
import shutil
import threading
import time

import pytest

# Ray turns 127.0.0.1 in an address into the host's own IP unless its loopback mode is on (the
# variable's name is historical; ray reads it when imported, and the nodes and workers it
# starts inherit it): everything here stays on 127.0.0.1.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray")

import docfeed  # noqa: E402
import docfeed.ray  # noqa: E402
from conftest import SAMPLE_DOCS, run_docfeed  # noqa: E402
from test_pack_parts import DATA, arrow_rows, assert_same_dataset  # noqa: E402


def workers_import_this_folder():
    """The workers (which inherit the environment) import the test hooks from tests/python."""
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH")) if p)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # A Ray that cannot start or connect retries for minutes: end the run instead of hanging.
    faulthandler.dump_traceback_later(240, exit=True)
    kept = os.environ.get("PYTHONPATH")
    workers_import_this_folder()
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False)
    yield
    ray.shutdown()
    faulthandler.cancel_dump_traceback_later()
    if kept is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = kept


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "sample-docs"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, "--threads", "2")
    return out


def test_parts_on_ray_equal_one_pack_and_a_rerun_keeps_them(tmp_path, whole):
    report = docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=3,
                              parts_dir=tmp_path / "parts")
    assert report.samples == 20 and report.rejects == [] and report.parts_reused == []
    assert [p.samples for p in report.parts] == [6, 7, 7]
    assert_same_dataset(whole, tmp_path / "out")
    assert report.merge["copied_files"] == 0
    stamps = [os.stat(tmp_path / "parts" / str(i) / "docfeed.json").st_mtime_ns for i in range(3)]
    again = docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=3,
                             parts_dir=tmp_path / "parts", progress=False)
    assert again.parts_reused == [0, 1, 2] and again.merge["already_complete"]
    assert stamps == [os.stat(tmp_path / "parts" / str(i) / "docfeed.json").st_mtime_ns
                      for i in range(3)]


def test_rejected_samples_are_reported(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    rows = [json.loads(line) for line in open(SAMPLE_DOCS / "metadata.jsonl", encoding="utf-8")]
    names = []
    for r in rows[:4]:
        shutil.copy(SAMPLE_DOCS / r["file_name"], src / os.path.basename(r["file_name"]))
        names.append(os.path.basename(r["file_name"]))
    shutil.copy(DATA / "pdf" / "invoice.pdf", src / "invoice.pdf")
    (src / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    names[2:2] = ["broken.jpg", "invoice.pdf"]
    with open(src / "metadata.jsonl", "w", encoding="utf-8") as f:
        for k, name in enumerate(names):
            f.write(json.dumps({"file_name": name, "ground_truth": f"doc {k}"}) + "\n")
    flags = {"skip_bad": True, "dpi": 50}
    run_docfeed("pack", src, "-o", tmp_path / "whole", "--threads", "2", "--skip-bad",
                "--dpi", "50")
    report = docfeed.ray.pack(src, tmp_path / "out", num_parts=3, progress=False, **flags)
    assert_same_dataset(tmp_path / "whole", tmp_path / "out")
    assert len(report.rejects) == 1 and "broken.jpg" in json.dumps(report.rejects[0])
    assert sum(p.rejected for p in report.parts) == 1
    assert report.samples == 7  # 4 images and the PDF's 3 pages


def image_rows(count):
    rows = [json.loads(line) for line in open(SAMPLE_DOCS / "metadata.jsonl", encoding="utf-8")]
    return [{"image": {"bytes": (SAMPLE_DOCS / r["file_name"]).read_bytes(),
                       "path": os.path.basename(r["file_name"])},
             "ground_truth": r["ground_truth"], "n": k} for k, r in enumerate(rows[:count])]


def test_ray_dataset_input_equals_docfeed_pack_of_the_same_rows(tmp_path):
    rows = image_rows(11)
    # One block a row, cut across by the parts, and a transform that finishes the later rows
    # first: Ray Data's default (no preserve_order) then often hands them out of order.
    def later_rows_first(r):
        time.sleep(0.02 * (11 - r["n"]))
        return {**r, "n": r["n"] * 10}

    ds = ray.data.from_items(rows, override_num_blocks=11).map(later_rows_first)
    rows = [{**r, "n": r["n"] * 10} for r in rows]
    docfeed.pack(rows, tmp_path / "whole", threads=2)
    report = docfeed.ray.pack(ds, tmp_path / "out", num_parts=3, progress=False)
    assert report.samples == 11
    assert_same_dataset(tmp_path / "whole", tmp_path / "out")
    assert [r["n"] for r in arrow_rows(tmp_path / "out")] == [10 * k for k in range(11)]
    # read_binary_files' `bytes` and `path` columns are taken as the image.
    src = tmp_path / "files"
    src.mkdir()
    files = []
    for k, r in enumerate(rows[:5]):
        files.append(src / f"{k:02d}{os.path.splitext(r['image']['path'])[1]}")
        files[-1].write_bytes(r["image"]["bytes"])
    files.reverse()  # the order given, not the folder's
    ds = ray.data.read_binary_files([str(f) for f in files], include_paths=True)
    ref = [{"image": {"bytes": f.read_bytes(), "path": str(f)}} for f in files]
    docfeed.pack(ref, tmp_path / "whole-files", threads=2)
    docfeed.ray.pack(ds, tmp_path / "out-files", num_parts=2, progress=False)
    assert arrow_rows(tmp_path / "out-files") == arrow_rows(tmp_path / "whole-files")
    # A binary image column (no path: stored as images/NNNNNNNN, as docfeed.pack names it).
    ds = ray.data.from_items([{"image": r["image"]["bytes"], "n": r["n"]} for r in rows[:4]])
    ref = [{"image": {"bytes": r["image"]["bytes"], "path": None}, "n": r["n"]} for r in rows[:4]]
    docfeed.pack(ref, tmp_path / "whole-binary", threads=2)
    docfeed.ray.pack(ds, tmp_path / "out-binary", num_parts=2, progress=False)
    assert arrow_rows(tmp_path / "out-binary") == arrow_rows(tmp_path / "whole-binary")


class KillDuringPart:
    """The part task's test hook: the first attempt of part `victim` is killed (os._exit, as
    the OOM killer or a lost node ends a worker) once its work directory exists, i.e. while the
    packer is writing the part; the marker file records it."""

    def __init__(self, victim, marker):
        self.victim, self.marker = victim, str(marker)

    def __call__(self, index, path):
        if index != self.victim or os.path.exists(self.marker):
            return
        parent, name = os.path.split(path)

        def kill():
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if any(e.startswith(name + ".partial-") for e in os.listdir(parent)):
                    with open(self.marker, "w") as f:
                        f.write(str(os.getpid()))
                    os._exit(1)
                time.sleep(0.0005)

        threading.Thread(target=kill, daemon=True).start()


def test_a_worker_killed_during_a_part_is_retried_to_the_same_dataset(tmp_path, whole):
    marker = tmp_path / "killed"
    report = docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=2, progress=False,
                              parts_dir=tmp_path / "parts", max_retries=2,
                              _before_part=KillDuringPart(1, marker))
    assert marker.exists(), "the part finished before the hook saw its work directory"
    assert report.parts_reused == []
    assert not list((tmp_path / "parts").glob("*.partial-*"))
    assert_same_dataset(whole, tmp_path / "out")


def test_a_part_that_keeps_dying_fails_without_an_output(tmp_path):
    class AlwaysDie:
        def __call__(self, index, path):
            if index == 0:
                os._exit(1)

    with pytest.raises(ray.exceptions.RayError):
        docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=2, progress=False,
                         max_retries=1, _before_part=AlwaysDie())
    assert not (tmp_path / "out").exists()


def test_refusals(tmp_path):
    # Parts on s3:// merge to an s3:// out only; http(s) is read-only; src is a shared path.
    # (Parts and output on S3: test_ray_pack_s3.py.)
    with pytest.raises(docfeed.InvalidArgumentError, match="merge to an s3:// out"):
        docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=2,
                         parts_dir="s3://bucket/parts")
    with pytest.raises(docfeed.InvalidArgumentError, match="s3:// only"):
        docfeed.ray.pack(SAMPLE_DOCS, "http://127.0.0.1:1/out", num_parts=2)
    with pytest.raises(docfeed.InvalidArgumentError, match="src 's3://bucket/src' is a URL"):
        docfeed.ray.pack("s3://bucket/src", tmp_path / "out", num_parts=2)
    with pytest.raises(docfeed.InvalidArgumentError, match="num_parts"):
        docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=0)
    with pytest.raises(docfeed.InvalidArgumentError, match="part="):
        docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=2, part=(0, 2))
    # A part's own error comes back as its docfeed error class: more parts than samples, and
    # a bad image without skip_bad (naming the file); neither is retried.
    with pytest.raises(docfeed.InvalidArgumentError, match="part"):
        docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=21, progress=False)
    src = tmp_path / "bad"
    shutil.copytree(SAMPLE_DOCS, src)
    (src / "sroie" / "016.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(docfeed.DataError, match="016.jpg"):
        docfeed.ray.pack(src, tmp_path / "out", num_parts=2, progress=False)
    with pytest.raises(docfeed.InvalidArgumentError, match="no image column"):
        docfeed.ray.pack(ray.data.from_items([{"x": 1}]), tmp_path / "out", num_parts=1)
    assert not (tmp_path / "out").exists()

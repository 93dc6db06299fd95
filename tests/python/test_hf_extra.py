"""`pip install ".[hf]"` changes nothing in an environment that already has a supported stack.

Run in both front venvs (`make test-python`): .venv/train (transformers 4.57.6, hub 0.36.2,
datasets 4.8.5) and .venv/hf5 (transformers 5.23.0, hub 2.4.0, datasets 5.2.0). pip resolves the
extra offline (`--no-index`: only what is installed can satisfy it, so a range that excludes an
installed version fails instead of planning a download) in dry-run mode, and its JSON report must
plan to install docfeed alone. With the old `transformers>=4.40,<5` this fails in .venv/hf5 (and
with the index, pip plans transformers 4.57.6 + huggingface-hub 0.36.2 over 5.x, which breaks
`import datasets` 5.x). About 4 s (pip reads pyproject.toml's metadata; nothing is built).
"""
import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_hf_extra_keeps_the_installed_stack(tmp_path):
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation",
         "--quiet", "--report", str(report), f"{REPO}[hf]"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    planned = [(i["metadata"]["name"], i["metadata"]["version"])
               for i in json.loads(report.read_text())["install"]]
    assert planned == [("docfeed", "0.1.0")], planned

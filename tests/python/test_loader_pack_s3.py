"""`docfeed pack SRC -o s3://...` and `docfeed merge PARTS -o s3://...` against SeaweedFS, read
back by docfeed.Loader: the objects are the local pack's files byte for byte (boto3, the
independent client), `verify` and `inspect` pass, and the Loader gives the local pack's batches
for the same seed. Runs in the front venvs (.venv/train, .venv/hf5); the servers come from the
`remote_servers` fixture (conftest.py). The failure cases (CLI only) are test_pack_s3_cli.py."""
import json

import numpy as np

import docfeed
from conftest import assert_same_batches
from s3_pack_helpers import (SRC, fresh_url, local_pack, local_state, run, s3,  # noqa: F401
                             s3_state)

OPTIONS = dict(batch_size=4, image_size=(96, 64), shuffle=True, seed=7, dtype="uint8",
               num_threads=2, drop_last=False)


def epoch(path):
    loader = docfeed.Loader(path, **OPTIONS)
    try:
        return [{k: np.asarray(v).copy() for k, v in b.items()} for b in loader]
    finally:
        loader.close()


def test_pack_to_s3_is_the_local_pack(s3, local_pack, tmp_path):
    prefix, url = fresh_url(s3, "pack")
    proc = run("pack", str(SRC), "-o", url)
    assert proc.returncode == 0, proc.stderr
    assert "uploaded   5 object(s)" in proc.stdout, proc.stdout
    state = s3_state(s3, prefix)
    assert state["objects"] == local_state(local_pack)  # every file, byte for byte
    assert state["uploads"] == []
    assert list(tmp_path.iterdir()) == []  # the staging directory is gone
    verified = run("verify", url)
    assert verified.returncode == 0 and verified.stdout.startswith(f"{url}: OK (20 samples"), \
        verified.stdout + verified.stderr
    remote = run("inspect", url, "--json")
    assert remote.returncode == 0, remote.stderr
    local = json.loads(run("inspect", str(local_pack), "--json").stdout)
    assert json.loads(remote.stdout.replace(url, str(local_pack))) == local
    assert_same_batches(epoch(url), epoch(str(local_pack)))


def test_merge_to_s3_is_the_local_merge(s3, tmp_path):
    parts = tmp_path / "parts"
    for i in range(2):
        proc = run("pack", str(SRC), "--part", f"{i}/2", "-o", str(parts / str(i)))
        assert proc.returncode == 0, proc.stderr
    local = tmp_path / "merged"
    assert run("merge", str(parts / "0"), str(parts / "1"), "-o", str(local)).returncode == 0
    prefix, url = fresh_url(s3, "merge")
    proc = run("merge", str(parts / "0"), str(parts / "1"), "-o", url)
    assert proc.returncode == 0, proc.stderr
    assert "uploaded" in proc.stdout, proc.stdout
    assert s3_state(s3, prefix)["objects"] == local_state(local)
    assert run("verify", url).returncode == 0
    assert_same_batches(epoch(url), epoch(str(local)))
    # Refused, not half-done: the prefix now holds a dataset.
    again = run("merge", str(parts / "0"), str(parts / "1"), "-o", url)
    assert again.returncode != 0 and f"{url} already holds" in again.stderr, again.stderr


def test_docfeed_pack_to_s3_from_python(s3, local_pack):
    """docfeed.pack(PATH, "s3://...") goes through the same upload and returns the URL."""
    prefix, url = fresh_url(s3, "python")
    assert docfeed.pack(str(SRC), url) == url
    assert s3_state(s3, prefix)["objects"] == local_state(local_pack)
    assert_same_batches(epoch(url), epoch(str(local_pack)))

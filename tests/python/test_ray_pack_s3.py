"""docfeed.ray.pack with its parts and output on S3 (SeaweedFS, the `remote_servers` fixture) on a
real local Ray (ray.init(num_cpus=2) on 127.0.0.1, started here once the AWS variables are set,
so that its workers inherit them): each task uploads its part, the driver merges inside the store
(CopyObject). The reference is the CLI: the output's objects (read back by boto3) are a local
`docfeed merge` of local `--part` packs, byte for byte, and that merge and the downloaded output
have the rows, ids and image bytes of a single-process `docfeed pack` (pyarrow, datasets:
test_pack_parts.assert_same_dataset). A rerun keeps the parts and the merge; local parts merge
to an s3:// out by upload; the rejects of parts on S3 reach the report and the output. .venv/train only (the Makefile's RAY_TESTS)."""
import faulthandler
import hashlib
import json
import os

import pytest

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # everything on 127.0.0.1 (test_ray_pack)
ray = pytest.importorskip("ray")

import docfeed  # noqa: E402
import docfeed.ray  # noqa: E402
from docfeed import _docfeed  # noqa: E402
from conftest import SAMPLE_DOCS, run_docfeed  # noqa: E402
from s3_pack_helpers import fresh_url, local_state, s3_state  # noqa: E402
from test_pack_parts import assert_same_dataset, documents  # noqa: E402,F401 (a fixture)


@pytest.fixture(scope="module")
def s3_ray(remote_servers, tmp_path_factory):
    settings = dict(AWS_ACCESS_KEY_ID=remote_servers["DOCFEED_TEST_S3_ACCESS_KEY"],
                    AWS_SECRET_ACCESS_KEY=remote_servers["DOCFEED_TEST_S3_SECRET_KEY"],
                    AWS_ENDPOINT_URL=remote_servers["DOCFEED_TEST_S3_ENDPOINT"],
                    AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent",
                    DOCFEED_REMOTE_BASE_DELAY_MS="5",
                    DOCFEED_STAGING_DIR=str(tmp_path_factory.mktemp("staging")))
    names = set(settings) | {k for k in os.environ if k.startswith("AWS_")}
    kept = {k: os.environ.get(k) for k in names}
    for k in names:
        os.environ.pop(k, None)
    os.environ.update(settings)
    faulthandler.dump_traceback_later(240, exit=True)  # a Ray that cannot start: end, not hang
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False)
    try:
        yield remote_servers
    finally:
        ray.shutdown()
        faulthandler.cancel_dump_traceback_later()
        for k, v in kept.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A single-process pack, and a local merge of local parts (each checked against it)."""
    root = tmp_path_factory.mktemp("reference")
    run_docfeed("pack", SAMPLE_DOCS, "-o", root / "whole")
    for i in range(2):
        run_docfeed("pack", SAMPLE_DOCS, "--part", f"{i}/2", "-o", root / "parts" / str(i))
    run_docfeed("merge", root / "parts" / "0", root / "parts" / "1", "-o", root / "merged")
    assert_same_dataset(root / "whole", root / "merged")
    return root


def download(url, objects, to):
    """The objects (relative keys) through docfeed's reader, each checked against boto3's
    SHA-256 of it."""
    for key, sha in objects.items():
        body = _docfeed.read_file(f"{url}/{key}")
        assert hashlib.sha256(body).hexdigest() == sha, key
        (to / key).parent.mkdir(parents=True, exist_ok=True)
        (to / key).write_bytes(body)
    return to


def test_parts_and_output_on_s3(s3_ray, reference, tmp_path):
    prefix, url = fresh_url(s3_ray, "ray")
    report = docfeed.ray.pack(str(SAMPLE_DOCS), f"{url}/ds", num_parts=2,
                              parts_dir=f"{url}/parts", progress=False)
    assert report.samples == 20 and report.parts_reused == [] and report.rejects == []
    assert report.merge["server_copied_files"] == 2 and report.merge["copied_files"] == 0
    for i in range(2):
        assert s3_state(s3_ray, f"{prefix}/parts/{i}") == {
            "objects": local_state(reference / "parts" / str(i)), "uploads": []}
    merged = s3_state(s3_ray, f"{prefix}/ds")
    assert merged == {"objects": local_state(reference / "merged"), "uploads": []}
    assert_same_dataset(reference / "whole",
                        download(f"{url}/ds", merged["objects"], tmp_path / "downloaded"))
    # The rerun keeps every part and the merge.
    again = docfeed.ray.pack(str(SAMPLE_DOCS), f"{url}/ds", num_parts=2,
                             parts_dir=f"{url}/parts", progress=False)
    assert again.parts_reused == [0, 1] and again.merge["already_complete"]
    assert s3_state(s3_ray, f"{prefix}/ds") == merged


def test_local_parts_and_an_s3_output(s3_ray, reference, tmp_path):
    prefix, url = fresh_url(s3_ray, "ray-local-parts")
    report = docfeed.ray.pack(str(SAMPLE_DOCS), url, num_parts=2, parts_dir=tmp_path / "parts",
                              progress=False)
    assert report.samples == 20 and report.merge["server_copied_files"] == 0
    assert s3_state(s3_ray, prefix) == {"objects": local_state(reference / "merged"),
                                        "uploads": []}


def test_rejects_of_parts_on_s3_are_reported(s3_ray, documents, tmp_path):
    """Documents' pages and a broken image (test_pack_parts.documents) packed as 3 parts on S3:
    the report names the rejected file, read back from the merged output's rejects.jsonl."""
    flags = ("--pages", "all", "--dpi", "50", "--skip-bad")
    run_docfeed("pack", documents, "-o", tmp_path / "whole", "--threads", "2", *flags)
    prefix, url = fresh_url(s3_ray, "ray-rejects")
    report = docfeed.ray.pack(str(documents), f"{url}/ds", num_parts=3, parts_dir=f"{url}/parts",
                              progress=False, pages="all", dpi=50, skip_bad=True)
    assert report.samples == 9  # 3 images, the PDF's 3 pages and the TIFF's 3
    assert sum(p.rejected for p in report.parts) == 1
    assert len(report.rejects) == 1 and "broken.jpg" in json.dumps(report.rejects[0])
    merged = s3_state(s3_ray, f"{prefix}/ds")
    assert "rejects.jsonl" in merged["objects"] and merged["uploads"] == []
    out = download(f"{url}/ds", merged["objects"], tmp_path / "downloaded")
    assert_same_dataset(tmp_path / "whole", out)  # rejects.jsonl included, byte for byte
    assert [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()] == \
        report.rejects

"""Parts of a split pack on S3 (SeaweedFS, started by the `remote_servers` fixture), CLI only (the
project's .venv, which has boto3): `docfeed pack SRC --part I/N -o s3://...` uploads the part
that a local `--part I/N` writes, byte for byte (boto3 reads it back); a rerun keeps a part that
is complete and verifies at the URL and refuses one that is another part or damaged, naming the
URL; what an interrupted upload left (objects without a manifest) is packed again."""
import boto3
import pytest

from s3_pack_helpers import SRC, fresh_url, local_state, run, s3, s3_state  # noqa: F401


@pytest.fixture(scope="module")
def local_parts(tmp_path_factory):
    """SRC packed locally in two parts: the reference of the uploaded ones."""
    root = tmp_path_factory.mktemp("local-parts")
    for i in range(2):
        proc = run("pack", str(SRC), "--part", f"{i}/2", "-o", str(root / str(i)))
        assert proc.returncode == 0, proc.stderr
    return root


def client(servers):
    return boto3.client("s3", endpoint_url=servers["DOCFEED_TEST_S3_ENDPOINT"],
                        aws_access_key_id=servers["DOCFEED_TEST_S3_ACCESS_KEY"],
                        aws_secret_access_key=servers["DOCFEED_TEST_S3_SECRET_KEY"],
                        region_name="us-east-1")


def upload_parts(servers, tag):
    prefix, url = fresh_url(servers, tag)
    for i in range(2):
        proc = run("pack", str(SRC), "--part", f"{i}/2", "-o", f"{url}/{i}")
        assert proc.returncode == 0, proc.stderr
        assert "uploaded" in proc.stdout, proc.stdout
    return prefix, url


def test_parts_to_s3_are_the_local_parts(s3, local_parts):
    prefix, url = upload_parts(s3, "parts")
    for i in range(2):
        state = s3_state(s3, f"{prefix}/{i}")
        assert state == {"objects": local_state(local_parts / str(i)), "uploads": []}
        verified = run("verify", f"{url}/{i}")
        assert verified.returncode == 0, verified.stdout + verified.stderr
    # A rerun keeps the complete, verified part: nothing packed or uploaded.
    again = run("pack", str(SRC), "--part", "0/2", "-o", f"{url}/0")
    assert again.returncode == 0, again.stderr
    assert f"{url}/0 already holds part 0/2" in again.stdout, again.stdout
    assert "uploaded" not in again.stdout
    assert s3_state(s3, f"{prefix}/0")["objects"] == local_state(local_parts / "0")
    # Another part at the URL: refused, naming it and what differs.
    other = run("pack", str(SRC), "--part", "1/2", "-o", f"{url}/0")
    assert other.returncode != 0, other.stdout
    assert f"{url}/0 already exists and holds another part" in other.stderr, other.stderr
    assert "--overwrite" in other.stderr
    other = run("pack", str(SRC), "--part", "0/3", "-o", f"{url}/0")
    assert other.returncode != 0 and "count (2 vs 3)" in other.stderr, other.stderr


def test_a_damaged_part_on_s3_is_refused_and_replaced_with_overwrite(s3, local_parts):
    prefix, url = upload_parts(s3, "damaged")
    bucket = s3["DOCFEED_TEST_S3_BUCKET"]
    key = f"{prefix}/1/data-00000-of-00001.arrow"
    body = bytearray(client(s3).get_object(Bucket=bucket, Key=key)["Body"].read())
    body[len(body) // 2] ^= 0xFF
    client(s3).put_object(Bucket=bucket, Key=key, Body=bytes(body))
    again = run("pack", str(SRC), "--part", "1/2", "-o", f"{url}/1")
    assert again.returncode != 0, again.stdout
    assert f"{url}/1 holds part 1/2 but fails verification" in again.stderr, again.stderr
    assert "--overwrite" in again.stderr
    replaced = run("pack", str(SRC), "--part", "1/2", "-o", f"{url}/1", "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert s3_state(s3, f"{prefix}/1")["objects"] == local_state(local_parts / "1")


def test_an_interrupted_part_upload_is_packed_again(s3, local_parts):
    """A part whose manifest never arrived (the upload was cut before it): no part is there, so
    the rerun packs it again and replaces the leftovers."""
    prefix, url = upload_parts(s3, "interrupted")
    client(s3).delete_object(Bucket=s3["DOCFEED_TEST_S3_BUCKET"], Key=f"{prefix}/0/docfeed.json")
    assert run("verify", f"{url}/0").returncode != 0
    again = run("pack", str(SRC), "--part", "0/2", "-o", f"{url}/0")
    assert again.returncode == 0, again.stderr
    assert "uploaded" in again.stdout and "already holds" not in again.stdout, again.stdout
    assert s3_state(s3, f"{prefix}/0") == {"objects": local_state(local_parts / "0"),
                                           "uploads": []}

"""`docfeed verify`, `docfeed inspect` and `docfeed bench --cache-dir` on a dataset in S3 (SeaweedFS, uploaded with boto3) and
over HTTP (nginx), with the S3 settings a user has: the AWS variables, or a profile of ~/.aws
chosen by AWS_PROFILE. Errors name the URL: a wrong secret is access denied, a missing dataset
is not found. The servers come from the `remote_servers` fixture (conftest.py)."""
import json
import os
import subprocess

import pytest

from conftest import docfeed_bin


def run(env, *args):
    return subprocess.run([str(docfeed_bin()), *args], capture_output=True, text=True, env=env,
                          timeout=300)


def clean_env(tmp_path):
    """The process environment without AWS settings, HOME an empty temporary directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(tmp_path)
    env["DOCFEED_REMOTE_BASE_DELAY_MS"] = "10"
    return env


@pytest.fixture
def s3_env(remote_servers, tmp_path):
    env = clean_env(tmp_path)
    env.update(AWS_ACCESS_KEY_ID=remote_servers["DOCFEED_TEST_S3_ACCESS_KEY"],
               AWS_SECRET_ACCESS_KEY=remote_servers["DOCFEED_TEST_S3_SECRET_KEY"],
               AWS_ENDPOINT_URL=remote_servers["DOCFEED_TEST_S3_ENDPOINT"])
    return env


def s3_url(servers):
    return f"s3://{servers['DOCFEED_TEST_S3_BUCKET']}/ds"


def test_verify_and_inspect_over_s3(remote_servers, s3_env):
    url = s3_url(remote_servers)
    proc = run(s3_env, "verify", url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{url}: OK (")
    local = json.loads(run(s3_env, "inspect", remote_servers["DOCFEED_TEST_DATASET"],
                           "--json").stdout)
    remote = run(s3_env, "inspect", url, "--json")
    assert remote.returncode == 0, remote.stderr
    local_path = remote_servers["DOCFEED_TEST_DATASET"]
    assert json.loads(remote.stdout.replace(json.dumps(url)[1:-1], local_path)) == local


def test_bench_with_a_cache_dir_reads_the_second_run_from_disk(remote_servers, s3_env, tmp_path):
    url = s3_url(remote_servers)
    cache = tmp_path / "cache"
    args = ("bench", url, "--batch-size", "4", "--size", "64x48", "--threads", "2", "--json",
            "--cache-dir", str(cache))
    runs = []
    for _ in range(2):
        proc = run(s3_env, *args)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1])["stats"]["remote"])
    assert runs[0]["cached"] and runs[0]["cache_stored_bytes"] > 0, runs[0]
    assert runs[1]["cache_fetched_bytes"] == 0 and runs[1]["cache_hit_bytes"] > 0, runs[1]
    assert runs[1]["cache_reads"] > 0, runs[1]  # left to the workers, not fetched ahead
    proc = run(s3_env, *args, "--cache-limit-mb", "lots")
    assert proc.returncode == 2 and "--cache-limit-mb" in proc.stderr, proc.stderr


def test_verify_and_inspect_over_http(remote_servers, tmp_path):
    url = remote_servers["DOCFEED_TEST_HTTP_URL"] + "/ds"
    env = clean_env(tmp_path)
    proc = run(env, "verify", url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{url}: OK (")
    text = run(env, "inspect", url)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{url}: docfeed dataset")


def test_wrong_secret_is_access_denied_naming_the_url(remote_servers, s3_env):
    s3_env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    url = s3_url(remote_servers)
    for command in ("verify", "inspect"):
        proc = run(s3_env, command, url)
        assert proc.returncode == 1
        assert f"{url}/docfeed.json" in proc.stderr, proc.stderr
        assert "access denied" in proc.stderr and "SignatureDoesNotMatch" in proc.stderr, \
            proc.stderr


def test_missing_dataset_is_not_found_naming_the_url(remote_servers, s3_env):
    url = f"s3://{remote_servers['DOCFEED_TEST_S3_BUCKET']}/no-such-dataset"
    proc = run(s3_env, "inspect", url)
    assert proc.returncode == 1
    assert "NotFound" in proc.stderr or "not found" in proc.stderr.lower(), proc.stderr
    assert url in proc.stderr, proc.stderr
    web = remote_servers["DOCFEED_TEST_HTTP_URL"] + "/no-such-dataset"
    proc = run(s3_env, "verify", web)
    assert proc.returncode == 1
    assert f"Not found: {web} is not a directory" in proc.stderr, proc.stderr
    proc = run(s3_env, "inspect", web)
    assert proc.returncode == 1
    assert f"Not found: {web} is not a docfeed dataset" in proc.stderr, proc.stderr


def write_aws_files(home, servers):
    aws = home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        "[default]\naws_access_key_id = nobody\naws_secret_access_key = wrong\n\n"
        f"[docfeed]\naws_access_key_id = {servers['DOCFEED_TEST_S3_ACCESS_KEY']}\n"
        f"aws_secret_access_key = {servers['DOCFEED_TEST_S3_SECRET_KEY']}\n")
    (aws / "config").write_text(
        f"[default]\nregion = us-east-1\nendpoint_url = {servers['DOCFEED_TEST_S3_ENDPOINT']}\n\n"
        f"[profile docfeed]\nregion = us-east-1\n"
        f"endpoint_url = {servers['DOCFEED_TEST_S3_ENDPOINT']}\n")


def test_aws_profile_selects_credentials_from_home(remote_servers, tmp_path):
    env = clean_env(tmp_path)
    write_aws_files(tmp_path, remote_servers)
    url = s3_url(remote_servers)
    default = run(env, "verify", url)  # [default] holds a wrong key
    assert default.returncode == 1
    assert "access denied" in default.stderr and "[default]" in default.stderr, default.stderr
    env["AWS_PROFILE"] = "docfeed"
    chosen = run(env, "verify", url)
    assert chosen.returncode == 0, chosen.stderr
    env["AWS_PROFILE"] = "absent"
    absent = run(env, "verify", url)
    assert absent.returncode == 1
    assert '"absent"' in absent.stderr, absent.stderr


def test_boto3_reads_what_docfeed_reads(remote_servers):
    """The reference client sees the same objects as the local dataset (the fixture's upload is
    what the other tests read)."""
    import pathlib

    import boto3  # in .venv (python/requirements-dev.txt), where this file runs
    client = boto3.client("s3", endpoint_url=remote_servers["DOCFEED_TEST_S3_ENDPOINT"],
                          aws_access_key_id=remote_servers["DOCFEED_TEST_S3_ACCESS_KEY"],
                          aws_secret_access_key=remote_servers["DOCFEED_TEST_S3_SECRET_KEY"],
                          region_name="us-east-1")
    local = pathlib.Path(remote_servers["DOCFEED_TEST_DATASET"])
    listed = client.list_objects_v2(Bucket=remote_servers["DOCFEED_TEST_S3_BUCKET"], Prefix="ds/")
    keys = sorted(o["Key"][3:] for o in listed["Contents"])
    assert keys == sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())

"""S3 credentials from a role: a profile with `role_arn` and `source_profile` in ~/.aws/config,
as the AWS CLI reads it. docfeed calls STS AssumeRole (SeaweedFS's, on its S3 port) with the
source profile's keys and signs every request with the role's temporary credentials
(test_loader_remote.py loads batches that way too). The source
identity may read nothing itself (tests/remote/servers.py), so a dataset that opens was read with
the role's credentials. A role the server refuses, a loop of roles and the settings docfeed does
not read are errors naming the profile; `pack -o s3://` uploads with the role's credentials. The servers come from the `remote_servers` fixture
(conftest.py)."""
import os
import shutil
import subprocess

import pytest

from conftest import SAMPLE_DOCS, docfeed_bin


def run(env, *args):
    return subprocess.run([str(docfeed_bin()), *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture
def role_env(remote_servers, tmp_path):
    """No AWS variables but the endpoint; ~/.aws with a source profile and role profiles."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), DOCFEED_REMOTE_BASE_DELAY_MS="10",
               AWS_ENDPOINT_URL=remote_servers["DOCFEED_TEST_S3_ENDPOINT"])
    aws = tmp_path / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        "[source]\n"
        f"aws_access_key_id = {remote_servers['DOCFEED_TEST_S3_ROLE_SOURCE_KEY']}\n"
        f"aws_secret_access_key = {remote_servers['DOCFEED_TEST_S3_ROLE_SOURCE_SECRET']}\n")
    role = remote_servers["DOCFEED_TEST_S3_ROLE_ARN"]
    (aws / "config").write_text(
        "[profile source]\nregion = us-east-1\n"
        f"[profile reader]\nrole_arn = {role}\nsource_profile = source\n"
        "role_session_name = docfeed-test\nduration_seconds = 3600\n"
        # Refused by the server: no such role.
        f"[profile unknown]\nrole_arn = {role.rsplit('/', 1)[0]}/NoSuchRole\n"
        "source_profile = source\n"
        "[profile loop-a]\nrole_arn = " + role + "\nsource_profile = loop-b\n"
        "[profile loop-b]\nrole_arn = " + role + "\nsource_profile = loop-a\n"
        f"[profile mfa]\nrole_arn = {role}\nsource_profile = source\n"
        "mfa_serial = arn:aws:iam::000000000000:mfa/someone\n"
        f"[profile metadata]\nrole_arn = {role}\ncredential_source = Ec2InstanceMetadata\n")
    return env


def url(servers):
    return f"s3://{servers['DOCFEED_TEST_S3_BUCKET']}/ds"


def test_a_role_profile_reads_the_dataset(remote_servers, role_env):
    ds = url(remote_servers)
    # The source identity alone may not read the bucket: what follows needs the role.
    alone = run(dict(role_env, AWS_PROFILE="source"), "verify", ds)
    assert alone.returncode != 0 and "access denied" in alone.stderr.lower(), alone.stderr
    proc = run(dict(role_env, AWS_PROFILE="reader"), "verify", ds)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{ds}: OK (")


def test_a_role_profile_packs_to_s3(remote_servers, role_env, tmp_path):
    """`pack -o s3://` uploads with the role's credentials too (the source identity may write
    nothing)."""
    src = tmp_path / "pages"
    src.mkdir()
    for name in ("sroie/000.jpg", "invoices/simple-invoice.png"):
        shutil.copy(SAMPLE_DOCS / name, src)
    out = f"s3://{remote_servers['DOCFEED_TEST_S3_BUCKET']}/role-packed"
    env = dict(role_env, AWS_PROFILE="reader")
    proc = run(env, "pack", str(src), "-o", out)
    assert proc.returncode == 0, proc.stderr
    proc = run(env, "verify", out)
    assert proc.returncode == 0 and "OK (2 samples" in proc.stdout, proc.stdout + proc.stderr


def test_role_errors_name_the_profile(remote_servers, role_env, tmp_path):
    ds = url(remote_servers)
    config = str(tmp_path / ".aws" / "config")
    cases = {
        "unknown": ("[profile unknown] role_arn", "NoSuchRole", "AccessDenied"),
        "loop-a": ("[profile loop-", "loop of roles"),
        "mfa": ("[profile mfa] sets mfa_serial",),
        "metadata": ("[profile metadata] sets credential_source = Ec2InstanceMetadata",),
    }
    for profile, wanted in cases.items():
        proc = run(dict(role_env, AWS_PROFILE=profile), "verify", ds)
        assert proc.returncode != 0, (profile, proc.stdout)
        assert config in proc.stderr and ds in proc.stderr, (profile, proc.stderr)
        for text in wanted:
            assert text in proc.stderr, (profile, text, proc.stderr)

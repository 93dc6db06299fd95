// src/remote without a server: URLs, the AWS settings from variables and temporary files, the
// S3 XML documents, backoff, and what RemoteEnv refuses before sending anything.
#include "docfeed/remote.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <map>

#include "base/file.h"
#include "remote/assume_role.h"
#include "remote/credential_process.h"
#include "remote/remote_env.h"
#include "remote/retry.h"
#include "remote/s3_config.h"
#include "remote/s3_upload.h"
#include "remote/s3_xml.h"
#include "remote/url.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

TEST(RemoteUrlTest, ParsesS3AndHttp) {
  Result<RemoteUrl> s3 = ParseRemoteUrl("s3://my-bucket/ds/train/docfeed.json");
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_EQ(s3->scheme, RemoteUrl::Scheme::kS3);
  EXPECT_EQ(s3->authority, "my-bucket");
  EXPECT_EQ(s3->path, "ds/train/docfeed.json");
  Result<RemoteUrl> bucket = ParseRemoteUrl("S3://my-bucket");
  ASSERT_TRUE(bucket.ok());
  EXPECT_EQ(bucket->path, "");
  Result<RemoteUrl> web = ParseRemoteUrl("https://example.com:8443/a/b?x=1");
  ASSERT_TRUE(web.ok());
  EXPECT_EQ(web->scheme, RemoteUrl::Scheme::kHttps);
  EXPECT_EQ(web->authority, "example.com:8443");
  EXPECT_EQ(web->path, "/a/b?x=1");
  EXPECT_EQ(ParseRemoteUrl("http://host")->path, "/");
}

TEST(RemoteUrlTest, RefusesWhatS3OrHttpWouldNot) {
  for (const char* bad : {"s3://", "s3://ab/k", "s3://Upper/k", "s3://-bucket/k", "http:///x",
                          "ftp://host/x", "/local/path"}) {
    Result<RemoteUrl> r = ParseRemoteUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().ToString();
  }
}

TEST(RemoteUrlTest, RemotePathsAndTheEnvForThem) {
  EXPECT_TRUE(IsRemotePath("s3://b/k"));
  EXPECT_TRUE(IsRemotePath("HTTPS://h/x"));
  EXPECT_FALSE(IsRemotePath("data/s3://x"));
  EXPECT_FALSE(IsRemotePath("/tmp/ds"));
  EXPECT_EQ(EnvForPath("/tmp/ds"), Env::Default());
  EXPECT_EQ(EnvForPath("relative/ds"), Env::Default());
  EXPECT_EQ(EnvForPath("s3://bucket/ds"), RemoteEnv::Default());
  EXPECT_EQ(EnvForPath("http://127.0.0.1:1/ds"), RemoteEnv::Default());
}

TEST(RemoteUrlTest, JoinPathAndBaseNameWorkOnUrls) {
  EXPECT_EQ(JoinPath("s3://b/ds", "docfeed.json"), "s3://b/ds/docfeed.json");
  EXPECT_EQ(JoinPath("s3://b/ds/", "docfeed.json"), "s3://b/ds/docfeed.json");
  EXPECT_EQ(JoinPath("s3://bucket", "x"), "s3://bucket/x");
  EXPECT_EQ(JoinPath("http://h:8080/ds", "a.arrow"), "http://h:8080/ds/a.arrow");
  EXPECT_EQ(BaseName("s3://b/ds/docfeed.json"), "docfeed.json");
  EXPECT_EQ(ParentPath("s3://b/ds/docfeed.json"), "s3://b/ds");
}

TEST(RemoteUrlTest, UriEncodeKeepsUnreservedOnly) {
  EXPECT_EQ(UriEncode("a b/c~d_e.f-g", true), "a%20b/c~d_e.f-g");
  EXPECT_EQ(UriEncode("a/b+c=", false), "a%2Fb%2Bc%3D");
}

// An EnvLookup over a map, for settings without touching the process environment.
EnvLookup Vars(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

class S3ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(CreateDirectory(home_.Join(".aws")).ok()); }
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteTextFile(home_.Join(".aws/" + name), text).ok());
  }
  Result<S3Config> Resolve(std::map<std::string, std::string> vars) {
    vars.emplace("HOME", home_.path());
    return ResolveS3Config(Vars(std::move(vars)));
  }
  testing::TempDir home_;
};

TEST_F(S3ConfigTest, NothingConfiguredIsUnsignedAwsInUsEast1) {
  Result<S3Config> c = Resolve({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->has_credentials());
  EXPECT_EQ(c->profile, "default");
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->endpoint_url, "");
  EXPECT_FALSE(c->path_style);
}

TEST_F(S3ConfigTest, DefaultProfileFromBothFiles) {
  Write("credentials",
        "# comment\n[default]\naws_access_key_id = AKID\naws_secret_access_key = "
        "SECRET\n\n[other]\naws_access_key_id=O\naws_secret_access_key=OS\n");
  Write("config", "[default]\nregion = eu-west-3\n; comment\n[profile other]\nregion=ap-south-1\n");
  Result<S3Config> c = Resolve({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key, "SECRET");
  EXPECT_EQ(c->region, "eu-west-3");
  EXPECT_NE(c->credentials_source.find("credentials [default]"), std::string::npos);
}

TEST_F(S3ConfigTest, AwsProfileSelectsTheProfile) {
  Write("credentials",
        "[default]\naws_access_key_id=D\naws_secret_access_key=DS\n"
        "[dev]\naws_access_key_id=DEV\naws_secret_access_key=DEVS\n"
        "aws_session_token=TOKEN\n");
  Write("config",
        "[profile dev]\nregion = eu-central-1\nendpoint_url = http://127.0.0.1:9000/\n"
        "s3 =\n  addressing_style = path\n");
  Result<S3Config> c = Resolve({{"AWS_PROFILE", "dev"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->profile, "dev");
  EXPECT_EQ(c->access_key_id, "DEV");
  EXPECT_EQ(c->session_token, "TOKEN");
  EXPECT_EQ(c->region, "eu-central-1");
  EXPECT_EQ(c->endpoint_url, "http://127.0.0.1:9000");
  EXPECT_TRUE(c->path_style);
}

TEST_F(S3ConfigTest, CaBundleFromTheVariableOrTheProfile) {
  Write("config", "[default]\nca_bundle = /etc/corp/ca.pem\n[profile p]\nregion = r\n");
  Result<S3Config> c = Resolve({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_bundle, "/etc/corp/ca.pem");
  c = Resolve({{"AWS_CA_BUNDLE", "/tmp/other.pem"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_bundle, "/tmp/other.pem");
  c = Resolve({{"AWS_PROFILE", "p"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_bundle, "");
}

TEST_F(S3ConfigTest, CredentialsInTheConfigFileCount) {
  Write("config", "[profile cfg]\naws_access_key_id=C\naws_secret_access_key=CS\n");
  Result<S3Config> c = Resolve({{"AWS_PROFILE", "cfg"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "C");
  EXPECT_NE(c->credentials_source.find("[profile cfg]"), std::string::npos);
}

TEST_F(S3ConfigTest, EnvironmentOverridesFiles) {
  Write("credentials", "[default]\naws_access_key_id=F\naws_secret_access_key=FS\n");
  Write("config", "[default]\nregion=eu-west-1\nendpoint_url=http://file:1\n");
  Result<S3Config> c = Resolve({{"AWS_ACCESS_KEY_ID", "E"},
                                {"AWS_SECRET_ACCESS_KEY", "ES"},
                                {"AWS_SESSION_TOKEN", "ET"},
                                {"AWS_DEFAULT_REGION", "us-west-1"},
                                {"AWS_ENDPOINT_URL", "http://env:2"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "E");
  EXPECT_EQ(c->session_token, "ET");
  EXPECT_EQ(c->region, "us-west-1");
  EXPECT_EQ(c->endpoint_url, "http://env:2");
  EXPECT_EQ(c->credentials_source, "the environment (AWS_ACCESS_KEY_ID)");
}

TEST_F(S3ConfigTest, PrecedenceAmongVariables) {
  Result<S3Config> c = Resolve({{"AWS_REGION", "r1"},
                                {"AWS_DEFAULT_REGION", "r2"},
                                {"AWS_ENDPOINT_URL", "http://general:1"},
                                {"AWS_ENDPOINT_URL_S3", "https://s3only:2"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->region, "r1");
  EXPECT_EQ(c->endpoint_url, "https://s3only:2");
}

TEST_F(S3ConfigTest, FilesNamedByVariables) {
  testing::TempDir elsewhere;
  ASSERT_TRUE(
      WriteTextFile(elsewhere.Join("creds"), "[p]\naws_access_key_id=X\naws_secret_access_key=XS\n")
          .ok());
  ASSERT_TRUE(WriteTextFile(elsewhere.Join("conf"), "[profile p]\nregion=sa-east-1\n").ok());
  Result<S3Config> c = Resolve({{"AWS_PROFILE", "p"},
                                {"AWS_SHARED_CREDENTIALS_FILE", elsewhere.Join("creds")},
                                {"AWS_CONFIG_FILE", elsewhere.Join("conf")}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "X");
  EXPECT_EQ(c->region, "sa-east-1");
}

TEST_F(S3ConfigTest, ErrorsNameTheFileOrVariable) {
  Result<S3Config> missing = Resolve({{"AWS_PROFILE", "nope"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("\"nope\""), std::string::npos);
  Write("credentials", "[default]\naws_access_key_id=ONLY\n");
  Result<S3Config> half = Resolve({});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find(".aws/credentials [default]"), std::string::npos)
      << half.status().ToString();
  Write("credentials", "[default]\nthis line is not a setting\n");
  Result<S3Config> bad = Resolve({});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("credentials:2"), std::string::npos)
      << bad.status().ToString();
  Result<S3Config> endpoint = Resolve(
      {{"AWS_ENDPOINT_URL", "127.0.0.1:9000"}, {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"}});
  ASSERT_FALSE(endpoint.ok());
  EXPECT_NE(endpoint.status().message().find("AWS_ENDPOINT_URL"), std::string::npos);
}

TEST(S3XmlTest, ErrorDocumentAndPlainBodies) {
  EXPECT_EQ(ErrorSummary("<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key "
                         "&quot;a&amp;b&quot; does not exist</Message></Error>"),
            "NoSuchKey: The key \"a&b\" does not exist");
  EXPECT_EQ(ErrorSummary("<html>\r\nnot found</html>"), "<html>  not found</html>");
  EXPECT_EQ(ErrorSummary(""), "");
}

TEST(S3XmlTest, ListObjectsV2Page) {
  const std::string xml =
      "<ListBucketResult><Name>b</Name><Prefix>ds/</Prefix><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>tok&amp;1</NextContinuationToken>"
      "<Contents><Key>ds/a&#x20;b.arrow</Key><Size>12</Size></Contents>"
      "<Contents><Key>ds/docfeed.json</Key><Size>3</Size></Contents>"
      "<CommonPrefixes><Prefix>ds/sub/</Prefix></CommonPrefixes></ListBucketResult>";
  Result<S3ListPage> page = ParseListObjectsV2(xml, "s3://b/ds");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].first, "ds/a b.arrow");
  EXPECT_EQ(page->objects[0].second, 12u);
  EXPECT_EQ(page->common_prefixes, std::vector<std::string>{"ds/sub/"});
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "tok&1");
  Result<S3ListPage> bad =
      ParseListObjectsV2("<Contents><Key>k</Key><Size>x</Size></Contents>", "s3://b/ds");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s3://b/ds"), std::string::npos);
}

TEST(RetryTest, FullJitterWithinTheCap) {
  RetryPolicy p;
  p.base_delay_ms = 100;
  p.max_delay_ms = 1000;
  EXPECT_EQ(BackoffDelayMs(p, 0, 0), 0);
  EXPECT_EQ(BackoffDelayMs(p, 0, 100), 100);
  EXPECT_EQ(BackoffDelayMs(p, 0, 101), 0);
  EXPECT_EQ(BackoffDelayMs(p, 2, 400), 400);  // cap 400 at the third retry
  EXPECT_LE(BackoffDelayMs(p, 30, ~uint64_t{0}), 1000);
  for (uint64_t r = 0; r < 5000; r += 7) EXPECT_LE(BackoffDelayMs(p, 1, r), 200);
  EXPECT_TRUE(IsRetryableHttpStatus(503));
  EXPECT_TRUE(IsRetryableHttpStatus(500));
  EXPECT_TRUE(IsRetryableHttpStatus(429));
  EXPECT_FALSE(IsRetryableHttpStatus(404));
  EXPECT_FALSE(IsRetryableHttpStatus(403));
}

TEST(RemoteEnvTest, WritesAreRefusedNamingTheUrl) {
  RemoteEnv env;
  const std::string url = "s3://bucket/ds/x";
  Result<std::unique_ptr<WritableFile>> w = env.NewWritableFile(url);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(w.status().message().find(url), std::string::npos);
  for (const Status& s : {env.Rename(url, url + "2"), env.CreateDirectory(url), env.RemoveFile(url),
                          env.RemoveAll(url), env.LockFile(url).status()}) {
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
    EXPECT_NE(s.message().find(url), std::string::npos) << s.ToString();
  }
}

// Which certificate authorities a URL's requests trust: AWS_CA_BUNDLE (or the profile's
// ca_bundle) for s3://, else CURL_CA_BUNDLE, then SSL_CERT_FILE, else the system's (empty).
TEST(RemoteEnvTest, CaFileOfEachScheme) {
  testing::TempDir home;
  auto resolve = [&](std::map<std::string, std::string> vars, const std::string& url) {
    vars.emplace("HOME", home.path());
    RemoteEnvOptions o;
    o.lookup = Vars(std::move(vars));
    RemoteEnv env(o);
    Result<RemoteTarget> t = env.Resolve(url);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? t->ca_file : std::string("?");
  };
  EXPECT_EQ(resolve({}, "https://h/ds"), "");
  EXPECT_EQ(resolve({}, "s3://bucket/ds"), "");
  EXPECT_EQ(resolve({{"SSL_CERT_FILE", "/s.pem"}}, "https://h/ds"), "/s.pem");
  EXPECT_EQ(resolve({{"SSL_CERT_FILE", "/s.pem"}, {"CURL_CA_BUNDLE", "/c.pem"}}, "https://h/ds"),
            "/c.pem");
  EXPECT_EQ(resolve({{"AWS_CA_BUNDLE", "/a.pem"}}, "https://h/ds"), "");
  EXPECT_EQ(resolve({{"AWS_CA_BUNDLE", "/a.pem"}, {"CURL_CA_BUNDLE", "/c.pem"}}, "s3://bucket/ds"),
            "/a.pem");
  EXPECT_EQ(resolve({{"CURL_CA_BUNDLE", "/c.pem"}}, "s3://bucket/ds"), "/c.pem");
}

TEST(RemoteEnvTest, HttpCannotBeListed) {
  RemoteEnv env;
  Result<std::vector<std::string>> names = env.ListDirectory("http://127.0.0.1:1/ds");
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(names.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(names.status().message().find("http://127.0.0.1:1/ds"), std::string::npos);
}

TEST(RemoteEnvTest, UnreachableServerIsAnErrorNamingTheUrlAfterRetries) {
  RemoteEnvOptions o;
  o.http.retry.max_attempts = 3;
  o.http.retry.base_delay_ms = 1;
  RemoteEnv env(o);
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  Result<std::vector<uint8_t>> r = env.ReadFile("http://127.0.0.1:1/ds/docfeed.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_NE(r.status().message().find("http://127.0.0.1:1/ds/docfeed.json"), std::string::npos);
  EXPECT_NE(r.status().message().find("3 attempt(s)"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(env.stats().retries, 2u);
  EXPECT_EQ(env.stats().errors, 1u);
}

// credential_process (credential_process.h): where it stands among the other sources, how its
// command line is split, what it must print, and how RemoteEnv runs it and refreshes it. The
// commands are small shell scripts written by the tests.
TEST_F(S3ConfigTest, CredentialProcessComesAfterTheCredentialsFileAndBeforeConfigKeys) {
  Write("config",
        "[profile p]\ncredential_process = /bin/helper --profile p\naws_access_key_id = C\n"
        "aws_secret_access_key = CS\n");
  Result<S3Config> c = Resolve({{"AWS_PROFILE", "p"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->credential_process, "/bin/helper --profile p");
  EXPECT_TRUE(c->access_key_id.empty());
  EXPECT_TRUE(c->has_credentials());
  EXPECT_NE(c->credentials_source.find("[profile p] credential_process"), std::string::npos)
      << c->credentials_source;
  Write("credentials", "[p]\naws_access_key_id = F\naws_secret_access_key = FS\n");
  c = Resolve({{"AWS_PROFILE", "p"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "F");
  EXPECT_EQ(c->credential_process, "");
  c = Resolve({{"AWS_PROFILE", "p"}, {"AWS_ACCESS_KEY_ID", "E"}, {"AWS_SECRET_ACCESS_KEY", "ES"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "E");
  EXPECT_EQ(c->credential_process, "");
}

TEST_F(S3ConfigTest, RoleProfilesResolveTheirSourceAndTheStsEndpoint) {
  Write("credentials", "[base]\naws_access_key_id = B\naws_secret_access_key = BS\n");
  Write("config",
        "[profile base]\nregion = eu-west-1\n"
        "[profile r1]\nrole_arn = arn:aws:iam::1:role/One\nsource_profile = base\n"
        "role_session_name = s1\nexternal_id = x y\nduration_seconds = 900\nregion = eu-west-3\n"
        "[profile r2]\nrole_arn = arn:aws:iam::1:role/Two\nsource_profile = r1\n"
        "[profile self]\nrole_arn = arn:aws:iam::1:role/Self\nsource_profile = self\n"
        "aws_access_key_id = S\naws_secret_access_key = SS\n"
        "[profile proc]\nrole_arn = arn:aws:iam::1:role/P\nsource_profile = withproc\n"
        "[profile withproc]\ncredential_process = /bin/helper\n");
  Result<S3Config> c = Resolve({{"AWS_PROFILE", "r1"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "B");  // the source's keys sign the AssumeRole call
  ASSERT_EQ(c->roles.size(), 1u);
  EXPECT_EQ(c->roles[0].role_arn, "arn:aws:iam::1:role/One");
  EXPECT_EQ(c->roles[0].session_name, "s1");
  EXPECT_EQ(c->roles[0].external_id, "x y");
  EXPECT_EQ(c->roles[0].duration_seconds, 900);
  EXPECT_EQ(c->region, "eu-west-3");
  EXPECT_EQ(c->sts_endpoint_url, "https://sts.eu-west-3.amazonaws.com");
  EXPECT_EQ(AssumeRoleBody(c->roles[0]),
            "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2FOne"
            "&RoleSessionName=s1&DurationSeconds=900&ExternalId=x%20y");
  // A chain: the source's keys assume One, One's credentials assume Two.
  c = Resolve({{"AWS_PROFILE", "r2"}, {"AWS_ENDPOINT_URL", "http://127.0.0.1:9/"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->roles.size(), 2u);
  EXPECT_EQ(c->roles[0].role_arn, "arn:aws:iam::1:role/One");
  EXPECT_EQ(c->roles[1].role_arn, "arn:aws:iam::1:role/Two");
  EXPECT_EQ(c->roles[1].duration_seconds, 3600);
  EXPECT_EQ(c->sts_endpoint_url, "http://127.0.0.1:9");
  c = Resolve({{"AWS_PROFILE", "r2"},
               {"AWS_ENDPOINT_URL", "http://127.0.0.1:9"},
               {"AWS_ENDPOINT_URL_STS", "http://127.0.0.1:10"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->sts_endpoint_url, "http://127.0.0.1:10");
  c = Resolve({{"AWS_PROFILE", "self"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "S");
  ASSERT_EQ(c->roles.size(), 1u);
  c = Resolve({{"AWS_PROFILE", "proc"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->credential_process, "/bin/helper");
  ASSERT_EQ(c->roles.size(), 1u);
  // The environment's keys come before any profile, a role's included (botocore's order).
  c = Resolve({{"AWS_PROFILE", "r1"}, {"AWS_ACCESS_KEY_ID", "E"}, {"AWS_SECRET_ACCESS_KEY", "ES"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->roles.empty());
  EXPECT_EQ(c->sts_endpoint_url, "");
}

TEST_F(S3ConfigTest, RoleProfileErrorsNameTheProfile) {
  Write("credentials", "[base]\naws_access_key_id = B\naws_secret_access_key = BS\n");
  Write("config",
        "[profile none]\nrole_arn = arn:r\n"
        "[profile both]\nrole_arn = arn:r\nsource_profile = base\ncredential_source = Environment\n"
        "[profile env]\nrole_arn = arn:r\ncredential_source = Environment\n"
        "[profile imds]\nrole_arn = arn:r\ncredential_source = Ec2InstanceMetadata\n"
        "[profile mfa]\nrole_arn = arn:r\nsource_profile = base\nmfa_serial = arn:m\n"
        "[profile web]\nrole_arn = arn:r\nweb_identity_token_file = /t\n"
        "[profile gone]\nrole_arn = arn:r\nsource_profile = nowhere\n"
        "[profile a]\nrole_arn = arn:r\nsource_profile = b\n"
        "[profile b]\nrole_arn = arn:r\nsource_profile = a\n"
        "[profile empty]\nregion = us-east-2\n"
        "[profile keyless]\nrole_arn = arn:r\nsource_profile = empty\n"
        "[profile short]\nrole_arn = arn:r\nsource_profile = base\nduration_seconds = 60\n"
        "[profile sts]\nrole_arn = arn:r\nsource_profile = base\n"
        "[profile sso]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = R\n"
        "[profile oldsso]\nsso_start_url = https://x.awsapps.com/start\nsso_region = us-east-1\n"
        "[profile fromsso]\nrole_arn = arn:r\nsource_profile = sso\n");
  const std::map<std::string, std::string> want = {
      {"none", "neither source_profile nor credential_source"},
      {"both", "both source_profile and credential_source"},
      {"env", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"},
      {"imds", "credential_source = Ec2InstanceMetadata"},
      {"mfa", "mfa_serial"},
      {"web", "web_identity_token_file"},
      {"gone", "source_profile nowhere is in neither"},
      {"a", "loop of roles"},
      {"keyless", "has no credentials to assume role arn:r"},
      {"short", "duration_seconds = 60"},
      {"sso", "is an IAM Identity Center (SSO) profile"},
      {"oldsso", "export-credentials --profile oldsso --format process"},
      {"fromsso", "[profile sso] is an IAM Identity Center (SSO) profile"},
  };
  for (const auto& [profile, text] : want) {
    Result<S3Config> c = Resolve({{"AWS_PROFILE", profile}});
    ASSERT_FALSE(c.ok()) << profile;
    const std::string message(c.status().message());
    // The profile at fault: the loop is found at b, the SSO source of fromsso is sso.
    const std::string at = profile == "a" ? "b" : profile == "fromsso" ? "sso" : profile;
    EXPECT_NE(message.find("[profile " + at + "]"), std::string::npos) << message;
    EXPECT_NE(message.find(text), std::string::npos) << message;
  }
  Result<S3Config> c = Resolve({{"AWS_PROFILE", "sts"}, {"AWS_ENDPOINT_URL_STS", "ftp://x"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("AWS_ENDPOINT_URL_STS"), std::string::npos);
}

TEST(AssumeRoleTest, ReadsTheTemporaryCredentials) {
  const std::string ok =
      "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult>"
      "<Credentials><AccessKeyId>ASIAX</AccessKeyId><SecretAccessKey>s&amp;k</SecretAccessKey>"
      "<SessionToken>tok</SessionToken><Expiration>2026-12-05T03:12:07Z</Expiration>"
      "</Credentials></AssumeRoleResult></AssumeRoleResponse>";
  Result<ProcessCredentials> c = ParseAssumeRoleResponse(ok, "W");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAX");
  EXPECT_EQ(c->secret_access_key, "s&k");
  EXPECT_EQ(c->session_token, "tok");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*c->expiration), 1796440327);
  // Refused as Corruption with `text` in the message.
  auto refused = [](const std::string& xml, const std::string& text) {
    Result<ProcessCredentials> bad = ParseAssumeRoleResponse(xml, "W");
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
    EXPECT_NE(bad.status().message().find(text), std::string::npos) << bad.status().message();
  };
  for (const char* tag : {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}) {
    std::string cut = ok;
    const size_t at = cut.find(std::string("<") + tag + ">");
    cut.replace(at, cut.find(std::string("</") + tag + ">") - at, "");
    refused(cut, std::string("W: the AssumeRole answer has no <") + tag);
  }
  std::string late = ok;
  late.replace(late.find("2026-12-05T03:12:07Z"), 20, "tomorrow");
  refused(late, "<Expiration> tomorrow is not a time");
  // Credentials outside the result do not count, nor do two results.
  refused(
      "<AssumeRoleResponse><AssumedRoleUser><AccessKeyId>NOT</AccessKeyId></AssumedRoleUser>"
      "<AssumeRoleResult><Credentials><SecretAccessKey>s</SecretAccessKey><SessionToken>t"
      "</SessionToken><Expiration>2026-12-05T03:12:07Z</Expiration></Credentials>"
      "</AssumeRoleResult></AssumeRoleResponse>",
      "has no <AccessKeyId>");
  const size_t result_at = ok.find("<AssumeRoleResult>");
  const size_t result_end = ok.find("</AssumeRoleResponse>");
  std::string twice = ok;
  twice.insert(result_end, ok.substr(result_at, result_end - result_at));
  refused(twice, "has 2 <AssumeRoleResult>");
}

TEST(CredentialProcessTest, SplitsTheCommandLineAsAShellWould) {
  using Words = std::vector<std::string>;
  EXPECT_EQ(*SplitCommandLine("/opt/bin/creds --username helen"),
            (Words{"/opt/bin/creds", "--username", "helen"}));
  EXPECT_EQ(*SplitCommandLine("  \"/opt/my tools/creds\"  'a b'  c\\ d \"x\\\"y\" e''f "),
            (Words{"/opt/my tools/creds", "a b", "c d", "x\"y", "ef"}));
  EXPECT_EQ(*SplitCommandLine("'$HOME' \"\\n\""), (Words{"$HOME", "\\n"}));
  for (const char* bad : {"", "   ", "creds 'open", "creds \"open"}) {
    Result<std::vector<std::string>> r = SplitCommandLine(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(CredentialProcessTest, ParsesIso8601Times) {
  const SystemTime noon = std::chrono::system_clock::from_time_t(1796385600);  // 2026-12-04 12:00Z
  EXPECT_EQ(*ParseIso8601("2026-12-04T12:00:00Z"), noon);
  EXPECT_EQ(*ParseIso8601("2026-12-04T12:00:00.250Z"), noon);
  EXPECT_EQ(*ParseIso8601("2026-12-04T14:00:00+02:00"), noon);
  EXPECT_EQ(*ParseIso8601("2026-12-04T07:00:00-0500"), noon);
  for (const char* bad : {"2026-12-04", "2026-12-04T12:00:00", "2026-13-04T12:00:00Z",
                          "2026-12-04 12:00:00Z", "2026-12-04T12:00:00Zjunk", "tomorrow"}) {
    EXPECT_FALSE(ParseIso8601(bad).ok()) << bad;
  }
}

TEST(CredentialProcessTest, OutputMustBeVersionOneWithBothKeys) {
  Result<ProcessCredentials> c = ParseCredentialProcessOutput(
      R"({"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "S", "SessionToken": "T",
          "Expiration": "2026-12-04T12:00:00Z"})",
      "w");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "A");
  EXPECT_EQ(c->secret_access_key, "S");
  EXPECT_EQ(c->session_token, "T");
  ASSERT_TRUE(c->expiration.has_value());
  c = ParseCredentialProcessOutput(R"({"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "S"})",
                                   "w");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->expiration.has_value());
  EXPECT_EQ(c->session_token, "");
  struct Bad {
    const char* json;
    const char* names;
  };
  for (const Bad& bad :
       {Bad{"not json", "no JSON"}, Bad{"[1]", "not an object"},
        Bad{R"({"AccessKeyId": "A", "SecretAccessKey": "S"})", "Version"},
        Bad{R"({"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "S"})", "version 1"},
        Bad{R"({"Version": 1, "SecretAccessKey": "S"})", "AccessKeyId"},
        Bad{R"({"Version": 1, "AccessKeyId": "A", "SecretAccessKey": 7})", "SecretAccessKey"},
        Bad{R"({"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "S",
                                 "Expiration": "soon"})",
            "Expiration"}}) {
    Result<ProcessCredentials> r = ParseCredentialProcessOutput(bad.json, "PROFILE-X");
    ASSERT_FALSE(r.ok()) << bad.json;
    EXPECT_NE(r.status().message().find("PROFILE-X"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(bad.names), std::string::npos) << r.status().ToString();
  }
}

// An executable shell script in `dir`; returns its path.
std::string Script(const testing::TempDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.Join(name);
  EXPECT_TRUE(WriteTextFile(path, "#!/bin/sh\n" + body).ok());
  EXPECT_EQ(chmod(path.c_str(), 0755), 0);
  return path;
}

TEST(CredentialProcessTest, RunsTheCommandAndNamesWhatWentWrong) {
  testing::TempDir dir;
  const auto timeout = std::chrono::milliseconds(5000);
  const std::string ok = Script(dir, "ok.sh",
                                "echo noise >&2\n"
                                "printf '{\"Version\": 1, \"AccessKeyId\": \"%s\", "
                                "\"SecretAccessKey\": \"S\"}' \"$1\"\n");
  Result<ProcessCredentials> c = RunCredentialProcess(ok + " 'the key'", "W", timeout);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "the key");

  struct Case {
    std::string command;
    std::chrono::milliseconds timeout;
    std::vector<std::string> names;
  };
  const std::string fails =
      Script(dir, "fails.sh", "echo 'token expired, run sso login' >&2\nexit 3\n");
  const std::string hangs = Script(dir, "hangs.sh", "exec sleep 30\n");
  const std::string garbage = Script(dir, "garbage.sh", "echo hello\n");
  // Prints its credentials, closes its output and stays: killed at the deadline all the same.
  const std::string lingers =
      Script(dir, "lingers.sh",
             "printf '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\"}'\n"
             "exec >&- 2>&-\nexec sleep 30\n");
  for (const Case& bad :
       {Case{fails, timeout, {"exited with status 3", "token expired, run sso login"}},
        Case{hangs, std::chrono::milliseconds(300), {"still running after 300 ms", "killed"}},
        Case{garbage, timeout, {"no JSON"}},
        Case{lingers, std::chrono::milliseconds(300), {"still running after 300 ms"}},
        Case{dir.Join("missing.sh"), timeout, {"cannot run", "missing.sh"}},
        Case{"'unterminated", timeout, {"unterminated"}}}) {
    const auto start = std::chrono::steady_clock::now();
    Result<ProcessCredentials> r = RunCredentialProcess(bad.command, "THE-SETTING", bad.timeout);
    ASSERT_FALSE(r.ok()) << bad.command;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << bad.command;
    EXPECT_NE(r.status().message().find("THE-SETTING"), std::string::npos) << r.status().ToString();
    for (const std::string& name : bad.names) {
      EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().ToString();
    }
  }
}

// RemoteEnv runs a profile's credential_process once, shares what it printed between opens, and
// runs it again when the credentials near their Expiration.
TEST(CredentialProcessTest, RemoteEnvRunsItOnceAndAgainBeforeExpiry) {
  testing::TempDir home;
  ASSERT_TRUE(CreateDirectory(home.Join(".aws")).ok());
  // Each run appends to a count file and prints a key numbered by the run; the expiry comes
  // from the file `expires` (an ISO time, or empty for none).
  const std::string count = home.Join("runs");
  const std::string expires = home.Join("expires");
  ASSERT_TRUE(WriteTextFile(expires, "").ok());
  const std::string helper =
      Script(home, "helper.sh",
             "echo run >> '" + count +
                 "'\n"
                 "n=$(wc -l < '" +
                 count +
                 "')\n"
                 "e=$(cat '" +
                 expires +
                 "')\n"
                 "if [ -n \"$e\" ]; then exp=\", \\\"Expiration\\\": \\\"$e\\\"\"; else exp=; fi\n"
                 "printf '{\"Version\": 1, \"AccessKeyId\": \"K%s\", \"SecretAccessKey\": \"S\", "
                 "\"SessionToken\": \"T\"%s}' \"$n\" \"$exp\"\n");
  ASSERT_TRUE(
      WriteTextFile(home.Join(".aws/config"),
                    "[profile proc]\nregion = eu-west-1\ncredential_process = " + helper + "\n")
          .ok());
  RemoteEnvOptions o;
  o.lookup = Vars(
      {{"HOME", home.path()}, {"AWS_PROFILE", "proc"}, {"AWS_ENDPOINT_URL", "http://127.0.0.1:1"}});
  RemoteEnv env(o);
  Result<RemoteTarget> a = env.Resolve("s3://bucket/ds/a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_NE(a->signing, nullptr);
  EXPECT_EQ(a->signing->access_key_id, "K1");
  EXPECT_EQ(a->signing->session_token, "T");
  EXPECT_EQ(a->signing->region, "eu-west-1");
  EXPECT_NE(a->credentials_source.find("credential_process"), std::string::npos);
  Result<RemoteTarget> b = env.Resolve("s3://bucket/ds/b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->signing->access_key_id, "K1");  // not run again: no Expiration
  EXPECT_EQ(RequestFor(*b, "u", "n").signing->access_key_id, "K1");
  ASSERT_NE(a->refreshed_signing, nullptr);
  EXPECT_EQ(a->refreshed_signing->runs(), 1);

  // Credentials an hour from expiring are used as they are; five minutes from it, they are not
  // accepted at all; twelve minutes from it, they are refreshed (at most once a minute).
  auto iso = [](std::chrono::minutes from_now) {
    const time_t t =
        std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + from_now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(text);
  };
  ASSERT_TRUE(WriteTextFile(expires, iso(std::chrono::minutes(60))).ok());
  RemoteEnvOptions o2 = o;
  o2.lookup = Vars({{"HOME", home.path()},
                    {"AWS_PROFILE", "proc"},
                    {"AWS_REGION", "r2"},
                    {"AWS_ENDPOINT_URL", "http://127.0.0.1:1"}});
  RemoteEnv env2(o2);
  Result<RemoteTarget> c = env2.Resolve("s3://bucket/ds/c");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->signing->access_key_id, "K2");
  EXPECT_EQ(RequestFor(*c, "u", "n").signing->access_key_id, "K2");
  EXPECT_EQ(c->refreshed_signing->runs(), 1);

  ASSERT_TRUE(WriteTextFile(expires, iso(std::chrono::minutes(5))).ok());
  RemoteEnv env3(o2);
  Result<RemoteTarget> d = env3.Resolve("s3://bucket/ds/d");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("expire within 10 minutes"), std::string::npos)
      << d.status().ToString();
  EXPECT_NE(d.status().message().find("s3://bucket/ds/d"), std::string::npos);

  ASSERT_TRUE(WriteTextFile(expires, iso(std::chrono::minutes(12))).ok());
  RemoteEnv env4(o2);
  Result<RemoteTarget> e = env4.Resolve("s3://bucket/ds/e");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const std::string first = e->signing->access_key_id;
  // Within the advisory window but within a minute of the last run: the same credentials.
  EXPECT_EQ(RequestFor(*e, "u", "n").signing->access_key_id, first);
  EXPECT_EQ(e->refreshed_signing->runs(), 1);

  // A command that fails when nothing usable is left: the request carries its error and
  // Perform returns it without sending anything.
  ASSERT_TRUE(WriteTextFile(home.Join(".aws/config"),
                            "[profile proc]\ncredential_process = " +
                                Script(home, "broken.sh", "echo denied >&2\nexit 1\n") + "\n")
                  .ok());
  RemoteEnv env5(o2);
  Result<RemoteTarget> f = env5.Resolve("s3://bucket/ds/f");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("denied"), std::string::npos) << f.status().ToString();
  EXPECT_NE(f.status().message().find("[profile proc] credential_process"), std::string::npos)
      << f.status().ToString();
}

// The refresh windows on a clock the test moves: the command prints credentials that expire an
// hour after the test's "now" (from the file `expires`), or fails while `fail` exists.
TEST(CredentialProcessTest, RefreshesBeforeExpiryAndKeepsValidOnesWhenARunFails) {
  testing::TempDir dir;
  const std::string count = dir.Join("runs");
  const std::string expires = dir.Join("expires");
  const std::string fail = dir.Join("fail");
  const std::string helper =
      Script(dir, "helper.sh",
             "if [ -e '" + fail +
                 "' ]; then echo 'sso session expired' >&2; exit 1; fi\n"
                 "echo run >> '" +
                 count +
                 "'\n"
                 "n=$(wc -l < '" +
                 count +
                 "')\n"
                 "printf '{\"Version\": 1, \"AccessKeyId\": \"K%s\", \"SecretAccessKey\": "
                 "\"S\", \"Expiration\": \"%s\"}' \"$n\" \"$(cat '" +
                 expires + "')\"\n");
  SystemTime now = std::chrono::system_clock::from_time_t(1796385600);  // 2026-12-04 12:00Z
  auto expire_in = [&](std::chrono::minutes m) {
    const time_t t = std::chrono::system_clock::to_time_t(now + m);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
    ASSERT_TRUE(WriteTextFile(expires, text).ok());
  };
  CredentialProcessSource source(helper, "SETTING", "r", std::chrono::milliseconds(5000),
                                 [&] { return now; });
  auto key = [&]() -> std::string {
    Result<std::shared_ptr<const HttpSigning>> s = source.Current();
    return s.ok() ? (*s)->access_key_id : "error: " + std::string(s.status().message());
  };
  expire_in(std::chrono::minutes(60));
  EXPECT_EQ(key(), "K1");
  now += std::chrono::minutes(44);  // 16 minutes left: kept
  EXPECT_EQ(key(), "K1");
  EXPECT_EQ(source.runs(), 1);
  now += std::chrono::minutes(2);  // 14 left: the advisory window, run again
  expire_in(std::chrono::minutes(60));
  EXPECT_EQ(key(), "K2");
  EXPECT_EQ(source.runs(), 2);
  // K2 expires at now + 60. A failing command in the advisory window keeps K2 ...
  ASSERT_TRUE(WriteTextFile(fail, "").ok());
  now += std::chrono::minutes(47);  // 13 left
  EXPECT_EQ(key(), "K2");
  EXPECT_EQ(source.runs(), 3);
  now += std::chrono::seconds(30);  // ... tried again at most once a minute ...
  EXPECT_EQ(key(), "K2");
  EXPECT_EQ(source.runs(), 3);
  now += std::chrono::minutes(4);  // ... and in the mandatory window (8.5 left) fails.
  const std::string failed = key();
  EXPECT_NE(failed.find("sso session expired"), std::string::npos) << failed;
  EXPECT_NE(failed.find("SETTING"), std::string::npos) << failed;
  // Once the command works again, so do the requests.
  ASSERT_TRUE(Env::Default()->RemoveFile(fail).ok());
  expire_in(std::chrono::minutes(60));
  EXPECT_EQ(key(), "K3");
}

// ListMultipartUploads pages: the uploads in progress, the markers of a truncated page.
TEST(S3Upload, ParsesListMultipartUploads) {
  Result<S3UploadsPage> page = ParseListMultipartUploads(
      "<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>true</IsTruncated>"
      "<NextKeyMarker>ds/b</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>"
      "<Upload><Key>ds/a&amp;x</Key><UploadId>u1</UploadId></Upload>"
      "<Upload><Key>ds/b</Key><UploadId>u2</UploadId></Upload></ListMultipartUploadsResult>",
      "s3://b/ds");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->uploads.size(), 2u);
  EXPECT_EQ(page->uploads[0].first, "ds/a&x");
  EXPECT_EQ(page->uploads[1].second, "u2");
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_key_marker, "ds/b");
  Result<S3UploadsPage> bad =
      ParseListMultipartUploads("<Upload><Key>ds/a</Key></Upload>", "s3://b/ds");
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("s3://b/ds"), std::string::npos);
  EXPECT_EQ(ParseListMultipartUploads("<IsTruncated>true</IsTruncated>", "u").status().code(),
            StatusCode::kCorruption);
}

// What --overwrite of an s3:// output may remove: a dataset's (or DatasetDict's) objects only.
TEST(S3Upload, DatasetObjectKeys) {
  for (const char* key :
       {"docfeed.json", "docfeed.index", "data-00000-of-00002.arrow", "state.json",
        "dataset_info.json", "rejects.jsonl", "dataset_dict.json", "tokenizer/tokenizer.json",
        "train/docfeed.json", "train/data-00001-of-00002.arrow", "train/tokenizer/x.model"}) {
    EXPECT_TRUE(IsDatasetObjectKey(key)) << key;
  }
  for (const char* key : {"notes.txt", "data.arrow", "train/notes.txt", "a/b/docfeed.json",
                          "train/sub/data-00000-of-00001.arrow"}) {
    EXPECT_FALSE(IsDatasetObjectKey(key)) << key;
  }
}

}  // namespace
}  // namespace docfeed::internal

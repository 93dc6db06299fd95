// src/remote without a server: URLs, the AWS settings from variables and temporary files, the
// S3 XML documents, backoff, and what RemoteEnv refuses before sending anything.
#include "docfeed/remote.h"

#include <gtest/gtest.h>

#include <map>

#include "base/file.h"
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

// RemoteEnv against real servers that tests/remote/servers.py starts on 127.0.0.1 (SeaweedFS
// for S3 with SigV4 checked, nginx for HTTP, a flaky server for retries) with a packed dataset
// uploaded by boto3; their addresses come in DOCFEED_TEST_* variables. Run through ctest
// (Remote.AgainstServers); without the variables every test fails saying how to run it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <random>

#include "base/file.h"
#include "docfeed/dataset.h"
#include "docfeed/loader.h"
#include "docfeed/remote.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "remote/remote_env.h"
#include "remote/s3_upload.h"

namespace docfeed::internal {
namespace {

std::string Var(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

class RemoteServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Var("DOCFEED_TEST_S3_ENDPOINT").empty())
        << "run through `ctest -R Remote` (tests/remote/servers.py starts the servers)";
    local_ = Var("DOCFEED_TEST_DATASET");
    s3_ = "s3://" + Var("DOCFEED_TEST_S3_BUCKET") + "/ds";
    http_ = Var("DOCFEED_TEST_HTTP_URL") + "/ds";
  }
  // A RemoteEnv configured like a user would be, with `secret` as the secret key.
  std::unique_ptr<RemoteEnv> Env(const std::string& secret) {
    RemoteEnvOptions o;
    auto vars = std::make_shared<std::map<std::string, std::string>>(
        std::map<std::string, std::string>{{"AWS_ACCESS_KEY_ID", Var("DOCFEED_TEST_S3_ACCESS_KEY")},
                                           {"AWS_SECRET_ACCESS_KEY", secret},
                                           {"AWS_ENDPOINT_URL", Var("DOCFEED_TEST_S3_ENDPOINT")},
                                           {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                           {"AWS_CONFIG_FILE", "/nonexistent"}});
    o.lookup = [vars](const char* name) -> const char* {
      auto it = vars->find(name);
      return it == vars->end() ? nullptr : it->second.c_str();
    };
    o.http.retry.base_delay_ms = 5;
    return std::make_unique<RemoteEnv>(std::move(o));
  }
  std::unique_ptr<RemoteEnv> Env() { return Env(Var("DOCFEED_TEST_S3_SECRET_KEY")); }
  // The process-wide Env (EnvForPath) reads the process environment.
  void ExportS3Settings() {
    setenv("AWS_ACCESS_KEY_ID", Var("DOCFEED_TEST_S3_ACCESS_KEY").c_str(), 1);
    setenv("AWS_SECRET_ACCESS_KEY", Var("DOCFEED_TEST_S3_SECRET_KEY").c_str(), 1);
    setenv("AWS_ENDPOINT_URL", Var("DOCFEED_TEST_S3_ENDPOINT").c_str(), 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
  }

  std::string local_, s3_, http_;
};

TEST_F(RemoteServerTest, WholeFilesAndRangesEqualTheLocalBytes) {
  auto env = Env();
  for (const std::string& base : {s3_, http_}) {
    for (const char* name : {"docfeed.json", "docfeed.index", "data-00000-of-00001.arrow"}) {
      Result<std::vector<uint8_t>> want = ReadFile(JoinPath(local_, name));
      ASSERT_TRUE(want.ok());
      Result<std::vector<uint8_t>> got = env->ReadFile(JoinPath(base, name));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, *want) << base << " " << name;
      Result<std::unique_ptr<RandomAccessFile>> file =
          env->NewRandomAccessFile(JoinPath(base, name));
      ASSERT_TRUE(file.ok()) << file.status().ToString();
      ASSERT_EQ((*file)->size_bytes(), want->size());
      const uint64_t offset = want->size() / 3, length = want->size() / 4 + 1;
      std::vector<uint8_t> part(length);
      ASSERT_TRUE((*file)->ReadAt(offset, part).ok());
      EXPECT_TRUE(std::equal(part.begin(), part.end(), want->begin() + offset));
      // Past the end: the Env's short read, naming the URL.
      std::vector<uint8_t> past(16);
      Status s = (*file)->ReadAt(want->size() - 8, past);
      EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
      EXPECT_NE(s.message().find("short read of " + JoinPath(base, name)), std::string::npos)
          << s.ToString();
    }
  }
  EXPECT_GT(env->stats().requests, 0u);
  EXPECT_GT(env->stats().bytes, 0u);
  // One thread, two servers: kept-alive connections serve every request after the first few.
  EXPECT_LE(env->stats().connections, 4u) << env->stats().requests << " requests";
}

TEST_F(RemoteServerTest, TypesAndListingOfS3Prefixes) {
  auto env = Env();
  EXPECT_EQ(env->GetFileType(JoinPath(s3_, "docfeed.json")), FileType::kRegular);
  EXPECT_EQ(env->GetFileType(s3_), FileType::kDirectory);
  EXPECT_EQ(env->GetFileType(JoinPath(s3_, "nothing-here")), FileType::kMissing);
  EXPECT_TRUE(env->IsDirectory(s3_));
  EXPECT_FALSE(env->IsDirectory(JoinPath(s3_, "nothing-here")));
  Result<std::vector<std::string>> want = ListFilesRecursive(local_);
  ASSERT_TRUE(want.ok());
  Result<std::vector<std::string>> got = env->ListFilesRecursive(s3_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, *want);
  Result<std::vector<std::string>> names = env->ListDirectory(s3_ + "/");
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(names->size(), want->size());
}

TEST_F(RemoteServerTest, TypesOverHttp) {
  auto env = Env();
  EXPECT_EQ(env->GetFileType(JoinPath(http_, "docfeed.json")), FileType::kRegular);
  EXPECT_EQ(env->GetFileType(http_), FileType::kDirectory);  // nginx: 301 to ds/, then 403
  EXPECT_EQ(env->GetFileType(JoinPath(http_, "nothing-here")), FileType::kMissing);
  EXPECT_TRUE(env->IsDirectory(http_));
}

TEST_F(RemoteServerTest, MissingObjectIsNotFoundNamingTheUrl) {
  auto env = Env();
  for (const std::string& base : {s3_, http_}) {
    const std::string url = JoinPath(base, "missing.arrow");
    Result<std::vector<uint8_t>> r = env->ReadFile(url);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
    EXPECT_NE(r.status().message().find(url), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("HTTP 404"), std::string::npos) << r.status().ToString();
    Result<std::unique_ptr<RandomAccessFile>> f = env->NewRandomAccessFile(url);
    EXPECT_EQ(f.status().code(), StatusCode::kNotFound) << f.status().ToString();
  }
}

TEST_F(RemoteServerTest, WrongSecretIsAccessDeniedNamingUrlAndCredentials) {
  auto env = Env("not-the-secret");
  const std::string url = JoinPath(s3_, "docfeed.json");
  Result<std::vector<uint8_t>> r = env->ReadFile(url);
  ASSERT_FALSE(r.ok());
  const std::string m(r.status().message());
  EXPECT_NE(m.find(url), std::string::npos) << m;
  EXPECT_NE(m.find("access denied"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 403 SignatureDoesNotMatch"), std::string::npos) << m;
  EXPECT_NE(m.find("AWS_ACCESS_KEY_ID"), std::string::npos) << m;
  // Opening and verifying meet the same error, not "missing" or "not a directory".
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(s3_, env.get());
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("SignatureDoesNotMatch"), std::string::npos)
      << ds.status().ToString();
  Result<VerifyReport> report = internal::VerifyDatasetReport(s3_, 20, env.get());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("SignatureDoesNotMatch"), std::string::npos)
      << report.status().ToString();
}

TEST_F(RemoteServerTest, VerifyAndLoaderOverS3AndHttpMatchLocal) {
  ExportS3Settings();
  for (const std::string& url : {s3_, http_}) {
    Result<VerifyReport> report = VerifyDatasetReport(url);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->ok()) << url << ": "
                              << (report->problems.empty() ? "" : report->problems[0]);
    Result<DatasetStats> stats = InspectDataset(url);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  }
  auto epoch = [](const std::string& path) -> Result<std::vector<std::vector<uint8_t>>> {
    LoaderOptions o;
    o.path = path;
    o.preset.donut.height = 96;
    o.preset.donut.width = 64;
    o.batch_size = 4;
    o.seed = 7;
    o.num_threads = 2;
    o.dtype = DType::kUint8;
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Create(o));
    std::vector<std::vector<uint8_t>> out;
    while (true) {
      DOCFEED_ASSIGN_OR_RETURN(Batch b, loader->Next());
      if (!b.valid()) return out;
      const auto* px = static_cast<const uint8_t*>(b.pixels());
      out.emplace_back(px, px + b.pixel_bytes());
    }
  };
  auto want = epoch(local_);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_FALSE(want->empty());
  for (const std::string& url : {s3_, http_}) {
    auto got = epoch(url);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, *want) << url;
  }
  EXPECT_GT(GetRemoteStats().requests, 0u);
}

// A profile whose credentials come from a credential_process (the test's keys, printed by a
// script): SeaweedFS checks the signatures, so a wrong secret from the command is refused and
// the error says where the credentials came from.
TEST_F(RemoteServerTest, CredentialProcessSignsRequests) {
  const std::string dir = Var("TMPDIR").empty() ? "/tmp" : Var("TMPDIR");
  const std::string home = dir + "/docfeed-cp-" + std::to_string(getpid());
  ASSERT_TRUE(CreateDirectory(home).ok());
  ASSERT_TRUE(CreateDirectory(home + "/.aws").ok());
  auto env_for = [&](const std::string& secret) {
    const std::string script = home + "/creds-" + secret + ".sh";
    EXPECT_TRUE(WriteTextFile(script, "#!/bin/sh\nprintf '{\"Version\": 1, \"AccessKeyId\": "
                                      "\"%s\", \"SecretAccessKey\": \"%s\"}' \"$1\" \"$2\"\n")
                    .ok());
    EXPECT_EQ(chmod(script.c_str(), 0755), 0);
    EXPECT_TRUE(WriteTextFile(home + "/.aws/config",
                              "[profile ci]\ncredential_process = " + script + " " +
                                  Var("DOCFEED_TEST_S3_ACCESS_KEY") + " " + secret + "\n")
                    .ok());
    RemoteEnvOptions o;
    auto vars = std::make_shared<std::map<std::string, std::string>>(
        std::map<std::string, std::string>{{"HOME", home},
                                           {"AWS_PROFILE", "ci"},
                                           {"AWS_ENDPOINT_URL", Var("DOCFEED_TEST_S3_ENDPOINT")}});
    o.lookup = [vars](const char* name) -> const char* {
      auto it = vars->find(name);
      return it == vars->end() ? nullptr : it->second.c_str();
    };
    o.http.retry.base_delay_ms = 5;
    return std::make_unique<RemoteEnv>(std::move(o));
  };
  const std::string url = JoinPath(s3_, "docfeed.json");
  Result<std::vector<uint8_t>> want = ReadFile(JoinPath(local_, "docfeed.json"));
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto good = env_for(Var("DOCFEED_TEST_S3_SECRET_KEY"));
  Result<std::vector<uint8_t>> got = good->ReadFile(url);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, *want);
  Result<VerifyReport> report = internal::VerifyDatasetReport(s3_, 20, good.get());
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  auto bad = env_for("wrong-secret");
  Result<std::vector<uint8_t>> denied = bad->ReadFile(url);
  ASSERT_FALSE(denied.ok());
  const std::string m(denied.status().message());
  EXPECT_NE(m.find("access denied"), std::string::npos) << m;
  EXPECT_NE(m.find("[profile ci] credential_process"), std::string::npos) << m;
  ASSERT_TRUE(RemoveAll(home).ok());
}

TEST_F(RemoteServerTest, TransientFailuresAreRetried) {
  auto env = Env();
  const std::string flaky = Var("DOCFEED_TEST_FLAKY_URL");
  Result<std::vector<uint8_t>> want = ReadFile(JoinPath(local_, "docfeed.index"));
  ASSERT_TRUE(want.ok());
  Result<std::vector<uint8_t>> slow = env->ReadFile(flaky + "/503x-2/docfeed.index");
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(*slow, *want);
  EXPECT_EQ(env->stats().retries, 2u);
  std::vector<uint8_t> part(want->size() - 10);
  ASSERT_TRUE(env->ReadAt(flaky + "/trunc-1/docfeed.index", 10, part).ok());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), want->begin() + 10));
  EXPECT_EQ(env->stats().retries, 3u);
}

TEST_F(RemoteServerTest, RetryBudgetEndsInAnErrorNamingTheUrl) {
  auto env = Env();
  const std::string url = Var("DOCFEED_TEST_FLAKY_URL") + "/always503/docfeed.index";
  Result<std::vector<uint8_t>> r = env->ReadFile(url);
  ASSERT_FALSE(r.ok());
  const std::string m(r.status().message());
  EXPECT_NE(m.find("GET " + url), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 503 SlowDown"), std::string::npos) << m;
  EXPECT_NE(m.find("after 5 attempt(s)"), std::string::npos) << m;
  EXPECT_EQ(env->stats().errors, 1u);
}

// The write side (s3_upload.h): a file above the part size goes up in parts, in parallel, and
// reads back byte for byte; a small one is one PUT; DELETE removes them.
TEST_F(RemoteServerTest, UploadFileInPartsAndWholeReadsBackTheSameBytes) {
  auto env = Env();
  const std::string dir = ::testing::TempDir();
  std::vector<uint8_t> big((uint64_t{11} << 20) + 12345), small(1000);
  std::mt19937_64 random(17);
  for (uint8_t& b : big) b = static_cast<uint8_t>(random());
  for (uint8_t& b : small) b = static_cast<uint8_t>(random());
  ASSERT_TRUE(WriteFile(JoinPath(dir, "big.bin"), big).ok());
  ASSERT_TRUE(WriteFile(JoinPath(dir, "small.bin"), small).ok());
  const std::string base =
      "s3://" + Var("DOCFEED_TEST_S3_BUCKET") + "/cc-upload-" + std::to_string(getpid());
  S3UploadOptions o;
  o.part_bytes = uint64_t{5} << 20;
  o.threads = 3;
  S3UploadSummary summary;
  Status up = UploadFile(env.get(), docfeed::Env::Default(), JoinPath(dir, "big.bin"),
                         base + "/big.bin", o, &summary);
  ASSERT_TRUE(up.ok()) << up.ToString();
  EXPECT_EQ(summary.multipart_uploads, 1u);
  EXPECT_EQ(summary.parts, 3u);  // 5 + 5 + 1.01 MiB
  up = UploadFile(env.get(), docfeed::Env::Default(), JoinPath(dir, "small.bin"),
                  base + "/small.bin", o, &summary);
  ASSERT_TRUE(up.ok()) << up.ToString();
  EXPECT_EQ(summary.multipart_uploads, 1u);
  EXPECT_EQ(summary.objects, 2u);
  EXPECT_EQ(summary.dataset_bytes, big.size() + small.size());
  Result<std::vector<uint8_t>> got = env->ReadFile(base + "/big.bin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == big);
  got = env->ReadFile(base + "/small.bin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == small);
  // Not a dataset's object: --overwrite refuses the prefix, naming it.
  Status check = CheckS3Output(env.get(), base, /*overwrite=*/true);
  EXPECT_EQ(check.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(check.message().find(base + "/big.bin"), std::string::npos) << check.ToString();
  for (const char* name : {"big.bin", "small.bin"}) {
    ASSERT_TRUE(DeleteObject(env.get(), base + "/" + name).ok());
    EXPECT_EQ(env->FileSize(base + "/" + name).status().code(), StatusCode::kNotFound);
  }
  EXPECT_TRUE(CheckS3Output(env.get(), base, /*overwrite=*/false).ok());
}

// A dataset directory uploaded reads back as the local one (verify), refuses a second upload
// without overwrite, and is replaced (old objects removed first) with it.
TEST_F(RemoteServerTest, UploadDatasetVerifiesAndReplacesOnlyWithOverwrite) {
  auto env = Env();
  const std::string url =
      "s3://" + Var("DOCFEED_TEST_S3_BUCKET") + "/cc-dataset-" + std::to_string(getpid());
  S3UploadOptions o;
  Result<S3UploadSummary> s = UploadDataset(env.get(), docfeed::Env::Default(), local_, url, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->objects, 5u);
  EXPECT_GE(s->sent_bytes, s->dataset_bytes);
  Result<VerifyReport> report = VerifyDatasetReport(url, 20, env.get());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok());
  Result<S3UploadSummary> again = UploadDataset(env.get(), docfeed::Env::Default(), local_, url, o);
  ASSERT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find(url), std::string::npos);
  o.overwrite = true;
  again = UploadDataset(env.get(), docfeed::Env::Default(), local_, url, o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->replaced_objects, 5u);
  EXPECT_TRUE(VerifyDatasetReport(url, 20, env.get())->ok());
  // A wrong secret: access denied naming the URL, before anything is written.
  Status denied = CheckS3Output(Env("wrong").get(), url + "-2", false);
  EXPECT_NE(denied.message().find("access denied"), std::string::npos) << denied.ToString();
  EXPECT_NE(denied.message().find(url + "-2"), std::string::npos) << denied.ToString();
}

}  // namespace
}  // namespace docfeed::internal

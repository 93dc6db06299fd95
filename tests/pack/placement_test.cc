// Issue #14, items 6 to 8 at pack time: the output is placed without removing anything the run
// did not create (what appears at OUT during the run is kept), --overwrite replaces only a
// docfeed dataset or an empty directory, one writer holds OUT.lock, and the two-rename
// replacement (file systems without an exchange) keeps the old output when its second rename
// fails. The folder is read through a source whose first image read runs a hook: "during the
// run", deterministically.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>

#include "base/fault_env.h"
#include "base/file.h"
#include "base/mem_env.h"
#include "base/output_dir.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

// The image folder at `root`, running `hook` once, before the first image is read.
class HookedSource final : public SampleSource {
 public:
  HookedSource(std::unique_ptr<SampleSource> base, std::function<void()> hook)
      : base_(std::move(base)), hook_(std::move(hook)) {}
  const ImageFolder& listing() const override { return base_->listing(); }
  Result<std::vector<uint8_t>> ReadImage(size_t i) override {
    std::call_once(once_, hook_);
    return base_->ReadImage(i);
  }
  std::string Where(size_t i) const override { return base_->Where(i); }
  std::string Name() const override { return base_->Name(); }

 private:
  std::unique_ptr<SampleSource> base_;
  std::function<void()> hook_;
  std::once_flag once_;
};

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::MakeSmallFolder(src_); }

  Result<PackSummary> PackWith(bool overwrite, std::function<void()> hook) {
    PackOptions o;
    o.output = out_;
    o.overwrite = overwrite;
    o.threads = 1;
    Result<std::unique_ptr<SampleSource>> base = OpenImageFolderSource(src_);
    if (!base.ok()) return base.status();
    HookedSource source(std::move(base).value(), std::move(hook));
    return PackFrom(source, o);
  }

  void MakeUserDirectory() {
    ASSERT_TRUE(CreateDirectory(out_).ok());
    ASSERT_TRUE(WriteTextFile(JoinPath(out_, "thesis.tex"), "mine").ok());
  }

  // Nothing but OUT (when `out_exists`) is left next to it: no partial, old or lock.
  void ExpectNoLeftovers(bool out_exists) {
    std::vector<std::string> names = ListDirectory(dir_.path()).value();
    std::erase(names, "src");
    EXPECT_EQ(names, out_exists ? std::vector<std::string>{"out"} : std::vector<std::string>{});
  }

  TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string out_ = dir_.Join("out");
};

TEST_F(PlacementTest, ADirectoryMadeAtOutDuringThePackIsKept) {
  Result<PackSummary> s = PackWith(false, [&] { MakeUserDirectory(); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kAlreadyExists) << s.status().ToString();
  EXPECT_NE(s.status().message().find(out_), std::string_view::npos);
  EXPECT_EQ(ReadTextFile(JoinPath(out_, "thesis.tex")).value(), "mine");
  ExpectNoLeftovers(true);
}

TEST_F(PlacementTest, AnotherPacksOutputMadeDuringThePackIsKept) {
  std::string other;
  Result<PackSummary> s = PackWith(false, [&] {
    PackOptions o;  // a pack that ignored the lock (an older docfeed) finishes first
    o.source = src_;
    o.output = dir_.Join("other");
    ASSERT_TRUE(Pack(o).ok());
    ASSERT_TRUE(Rename(o.output, out_).ok());
    other = ReadTextFile(JoinPath(out_, "docfeed.json")).value();
  });
  EXPECT_EQ(s.status().code(), StatusCode::kAlreadyExists) << s.status().ToString();
  EXPECT_EQ(ReadTextFile(JoinPath(out_, "docfeed.json")).value(), other);
}

TEST_F(PlacementTest, OverwriteRefusesADirectoryThatIsNotADatasetEvenIfItAppearsLate) {
  Result<PackSummary> s = PackWith(true, [&] { MakeUserDirectory(); });
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
  EXPECT_NE(s.status().message().find("thesis.tex"), std::string_view::npos);
  EXPECT_EQ(ReadTextFile(JoinPath(out_, "thesis.tex")).value(), "mine");
  ExpectNoLeftovers(true);
  // Refused up front too, before anything is written.
  s = PackWith(true, [] {});
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
  EXPECT_EQ(ReadTextFile(JoinPath(out_, "thesis.tex")).value(), "mine");
}

TEST_F(PlacementTest, OverwriteReplacesADatasetAndAnEmptyDirectory) {
  ASSERT_TRUE(PackWith(false, [] {}).ok());
  ASSERT_TRUE(PackWith(true, [] {}).ok());
  EXPECT_TRUE(VerifyDataset(out_).ok());
  ASSERT_TRUE(RemoveAll(out_).ok());
  ASSERT_TRUE(CreateDirectory(out_).ok());
  ASSERT_TRUE(PackWith(true, [] {}).ok());
  EXPECT_TRUE(VerifyDataset(out_).ok());
  ExpectNoLeftovers(true);
}

TEST_F(PlacementTest, MissingDirectoriesAboveOutAreMade) {
  out_ = dir_.Join("runs/2026/out");  // neither runs/ nor runs/2026 exists
  ASSERT_TRUE(PackWith(false, [] {}).ok());
  EXPECT_TRUE(VerifyDataset(out_).ok());
  EXPECT_EQ(ListDirectory(dir_.Join("runs/2026")).value(), std::vector<std::string>{"out"});
}

TEST_F(PlacementTest, AHeldLockStopsThePackBeforeItWrites) {
  Result<std::unique_ptr<FileLock>> held = Env::Default()->LockFile(OutputLockPath(out_));
  ASSERT_TRUE(held.ok());
  bool read = false;
  Result<PackSummary> s = PackWith(false, [&] { read = true; });
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
  EXPECT_FALSE(read);
  EXPECT_FALSE(PathExists(out_));
  ASSERT_TRUE(Env::Default()->UnlockFile(std::move(held).value()).ok());
  ASSERT_TRUE(PackWith(false, [] {}).ok());
}

// --- PlaceOutput's two-rename replacement, driven through a MemEnv without an exchange ------

// A file system without RENAME_EXCHANGE.
class NoExchangeEnv : public MemEnv {
 public:
  Status ExchangePaths(const std::string& a, const std::string& b) override {
    return UnsupportedError("cannot exchange " + a + " and " + b + ": not here");
  }
};

void MakeDataset(Env* env, const std::string& dir, const std::string& tag) {
  ASSERT_TRUE(env->CreateDirectory(dir).ok());
  ASSERT_TRUE(env->WriteTextFile(JoinPath(dir, "tag"), tag).ok());
}

TEST(PlaceOutputTest, WithoutExchangeAFailedSecondRenamePutsTheOldOutputBack) {
  NoExchangeEnv mem;
  FaultInjectionEnv env(&mem);
  MakeDataset(&mem, "/out", "old");  // made past the fault Env: its write count starts below
  MakeDataset(&mem, "/staged", "new");
  auto accept = [](const std::string&) { return Status::Ok(); };
  // Writes: 0 the exchange (refused), 1 OUT -> OUT.old-PID, 2 staged -> OUT (fails), 3 put back.
  env.FailWrite(2, FaultInjectionEnv::WriteFault::kIOError);
  Status s = PlaceOutput(&env, "/staged", "/out", true, accept);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(mem.ReadTextFile("/out/tag").value(), "old");
  EXPECT_EQ(mem.ReadTextFile("/staged/tag").value(), "new");
  env.Reset();
  ASSERT_TRUE(PlaceOutput(&env, "/staged", "/out", true, accept).ok());
  EXPECT_EQ(*mem.ReadTextFile("/out/tag"), "new");
  EXPECT_EQ(*mem.ListDirectory("/"), std::vector<std::string>{"out"});
}

TEST(PlaceOutputTest, AnOldOutputOrphanedBetweenTheRenamesIsRestoredByTheNextRun) {
  MemEnv env;
  MakeDataset(&env, "/out.old-999999", "old");
  MakeDataset(&env, "/out.partial-999998", "half");
  CleanLeftovers(&env, "/out");
  EXPECT_EQ(*env.ReadTextFile("/out/tag"), "old");
  EXPECT_FALSE(env.PathExists("/out.partial-999998"));
  EXPECT_FALSE(env.PathExists("/out.old-999999"));
}

}  // namespace
}  // namespace docfeed::internal

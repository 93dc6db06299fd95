// Fault injection through the Env seam for `pack`: an I/O error or ENOSPC at every write, an I/O
// error or short read at every read, and a crash at every write of a small pack. Real files in
// a temporary directory, through FaultInjectionEnv over the POSIX env.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "testing/fault_sweep.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Entries;
using testing::HasManifest;
using testing::Mentions;
using RF = FaultInjectionEnv::ReadFault;
using WF = FaultInjectionEnv::WriteFault;

// A few small images from tests/data (PNG, JPEG, WebP) with a metadata.jsonl.
void MakeFolder(const std::string& root, int images) {
  const std::string gen = std::string(DOCFEED_TEST_DATA_DIR) + "/images/gen/";
  const std::vector<std::string> names = {"gray4.png", "subsampling444.jpg", "palette4.png",
                                          "orientation8.webp"};
  ASSERT_TRUE(CreateDirectory(root).ok());
  std::string meta;
  for (int i = 0; i < images; ++i) {
    const std::string& name = names[static_cast<size_t>(i)];
    ASSERT_TRUE(WriteFile(JoinPath(root, name), ReadFile(gen + name).value()).ok());
    meta +=
        R"({"file_name": ")" + name + R"(", "ground_truth": "page )" + std::to_string(i) + "\"}\n";
  }
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "metadata.jsonl"), meta).ok());
}

// What is packed: the image folder, or a Hugging Face dataset on disk made from it (a
// save_to_disk Dataset: docfeed's own output is one; a DatasetDict of it), or the same images in
// a Hub-layout Parquet folder (tests/data/parquet/images.parquet, written by datasets: two row
// groups), which packs as a DatasetDict of one split.
enum class SourceKind { kFolder, kSavedDataset, kSavedDict, kParquet };

class PackFaultTest : public ::testing::Test {
 protected:
  void SetUp() override { MakeSource(SourceKind::kFolder); }

  void MakeSource(SourceKind kind) {
    kind_ = kind;
    if (kind == SourceKind::kFolder) {
      MakeFolder(dir_.Join("src"), 4);
    } else if (kind == SourceKind::kParquet) {
      ASSERT_TRUE(CreateDirectory(dir_.Join("src")).ok());
      ASSERT_TRUE(CreateDirectory(dir_.Join("src/data")).ok());
      ASSERT_TRUE(
          WriteFile(
              dir_.Join("src/data/train-00000-of-00001.parquet"),
              ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/parquet/images.parquet").value())
              .ok());
    } else {
      MakeFolder(dir_.Join("images"), 4);
      PackOptions folder;
      folder.source = dir_.Join("images");
      folder.output = kind == SourceKind::kSavedDict ? dir_.Join("src/train") : dir_.Join("src");
      if (kind == SourceKind::kSavedDict) {
        ASSERT_TRUE(CreateDirectory(dir_.Join("src")).ok());
      }
      ASSERT_TRUE(Pack(folder).ok());
      if (kind == SourceKind::kSavedDict) {
        ASSERT_TRUE(
            WriteTextFile(dir_.Join("src/dataset_dict.json"), R"({"splits": ["train"]})").ok());
      }
    }
    options_.source = dir_.Join("src");
    options_.output = dir_.Join("out");
    options_.threads = 1;  // a fixed I/O order, so indices mean the same operation every run
    options_.env = &env_;
  }

  Status Run(const PackOptions& o) { return Pack(o).status(); }

  // Only the source (and `also`) may be left in the temporary directory.
  void ExpectNoLeftovers(const std::string& where, std::vector<std::string> also = {}) {
    also.push_back("src");
    if (kind_ == SourceKind::kSavedDataset || kind_ == SourceKind::kSavedDict) {
      also.push_back("images");
    }
    std::sort(also.begin(), also.end());
    EXPECT_EQ(Entries(dir_.path()), also) << where;
  }

  // The verified output: OUT itself, or each split of a DatasetDict.
  Status VerifyOutput() const {
    if (kind_ != SourceKind::kSavedDict && kind_ != SourceKind::kParquet) {
      return VerifyDataset(options_.output);
    }
    if (!PathExists(JoinPath(options_.output, "dataset_dict.json"))) {
      return CorruptionError("no dataset_dict.json");
    }
    return VerifyDataset(JoinPath(options_.output, "train"));
  }

  testing::TempDir dir_;
  FaultInjectionEnv env_{Env::Default()};
  PackOptions options_;
  SourceKind kind_ = SourceKind::kFolder;
};

// The sweeps, for every kind of source.
class PackFaultSweep : public PackFaultTest, public ::testing::WithParamInterface<SourceKind> {
 protected:
  void SetUp() override { MakeSource(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Sources, PackFaultSweep,
                         ::testing::Values(SourceKind::kFolder, SourceKind::kSavedDataset,
                                           SourceKind::kSavedDict, SourceKind::kParquet));

TEST_P(PackFaultSweep, EveryWriteErrorFailsCleanlyAndLeavesNoOutput) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_GT(io.writes, 10u);
  ASSERT_TRUE(RemoveAll(options_.output).ok());
  testing::SweepWriteFaults(env_, io.writes, [&](WF fault, uint64_t i, const std::string& where) {
    Status s = Run(options_);
    ASSERT_FALSE(s.ok()) << where;
    EXPECT_EQ(s.code(), testing::WriteFaultCode(fault)) << where << ": " << s.ToString();
    EXPECT_TRUE(Mentions(s, "injected at write " + std::to_string(i))) << s.ToString();
    EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path()))) << where << ": " << s.ToString();
    EXPECT_FALSE(PathExists(options_.output)) << where;
    ExpectNoLeftovers(where);
  });
}

TEST_P(PackFaultSweep, EveryReadErrorOrShortReadFailsClearlyOrStillVerifies) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_GT(io.reads, 5u);
  ASSERT_TRUE(RemoveAll(options_.output).ok());
  testing::SweepReadFaults(env_, io.reads, [&](RF fault, uint64_t, const std::string& where) {
    Status s = Run(options_);
    if (s.ok()) {
      // A read the pack can do without (the listing for stale temporaries): the output must
      // be complete.
      EXPECT_TRUE(VerifyOutput().ok()) << where;
      ASSERT_TRUE(RemoveAll(options_.output).ok());
      return;
    }
    EXPECT_FALSE(s.message().empty()) << where;
    if (fault == RF::kIOError) {
      EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path()))) << where << ": " << s.ToString();
    }
    EXPECT_FALSE(PathExists(options_.output)) << where << ": " << s.ToString();
    ExpectNoLeftovers(where);
  });
}

TEST_P(PackFaultSweep, ACrashAtEveryWriteLeavesNothingOrTheCompleteDatasetAndTheNextRunWorks) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_TRUE(RemoveAll(options_.output).ok());
  for (uint64_t i = 0; i < io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    env_.Reset();
    env_.CrashAfterWrites(i);
    Status s = Run(options_);
    ASSERT_FALSE(s.ok()) << where;
    EXPECT_TRUE(Mentions(s, "simulated crash")) << where << ": " << s.ToString();
    // At the crash: OUT is absent, or it is the complete new dataset.
    if (PathExists(options_.output)) {
      Status v = VerifyOutput();
      EXPECT_TRUE(v.ok()) << where << ": " << v.ToString();
    }
    // A leftover work directory is never one datasets.load_from_disk opens: state.json, which
    // it needs, is written after the manifest (issue #14).
    const std::vector<std::string> names = ListDirectory(dir_.path()).value();
    for (const std::string& name : names) {
      const std::string left = dir_.Join(name);
      if (name.find(".partial-") != std::string::npos && !HasManifest(left)) {
        EXPECT_FALSE(PathExists(JoinPath(left, "state.json"))) << where << ": " << name;
      }
    }
    // The restarted run (same process id, so it reuses and clears the crashed run's
    // OUT.partial-PID) succeeds and leaves exactly a verified dataset.
    env_.Reset();
    PackOptions again = options_;
    again.overwrite = true;
    Status rerun = Run(again);
    ASSERT_TRUE(rerun.ok()) << where << ": " << rerun.ToString();
    EXPECT_TRUE(VerifyOutput().ok()) << where;
    ExpectNoLeftovers(where, {"out"});
    ASSERT_TRUE(RemoveAll(options_.output).ok());
  }
}

TEST_F(PackFaultTest, ACrashWhileOverwritingLeavesTheOldOrTheNewDataset) {
  // The old dataset: two images. The new one: four.
  PackOptions old_options = options_;
  old_options.env = nullptr;
  old_options.source = dir_.Join("old_src");
  MakeFolder(old_options.source, 2);
  ASSERT_TRUE(Run(old_options).ok());
  PackOptions o = options_;
  o.overwrite = true;
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(o); });
  for (uint64_t i = 0; i < io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    ASSERT_TRUE(RemoveAll(o.output).ok());
    ASSERT_TRUE(Run(old_options).ok());
    env_.Reset();
    env_.CrashAfterWrites(i);
    // Fails, or (a crash while deleting the replaced dataset, which is best effort) succeeds.
    const bool ok = Run(o).ok();
    ASSERT_TRUE(HasManifest(o.output)) << where << ": OUT is neither the old nor the new dataset";
    ASSERT_TRUE(VerifyDataset(o.output).ok()) << where;
    const uint64_t samples = Dataset::Open(o.output).value()->size();
    if (ok) {
      EXPECT_EQ(samples, 4u) << where;
    } else {
      EXPECT_TRUE(samples == 2 || samples == 4) << where << ": " << samples << " samples";
    }
  }
}

}  // namespace
}  // namespace docfeed::internal

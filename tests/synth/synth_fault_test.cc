// Fault injection through the Env seam for `docfeed synth`: an I/O error or ENOSPC at every write
// index fails with an error naming the file and leaves no output; a crash at every write index
// leaves OUT absent or complete (and the next run works); a crash while overwriting leaves the
// old output or the new one, never a mix or nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "synth/synth.h"
#include "testing/fault_sweep.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Mentions;
using WF = FaultInjectionEnv::WriteFault;

class SynthFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.output = out_;
    options_.count = 3;
    options_.seed = 5;
    options_.dpi = kMinDpi;  // small pages: the sweep renders a few dozen runs
    options_.threads = 1;
    options_.env = &env_;
  }

  Status Run(const SynthOptions& o) { return Synthesize(o).status(); }

  // The image files of a complete output of `count` documents, with its metadata.jsonl.
  void ExpectComplete(const std::string& where, uint64_t count) {
    Result<std::vector<std::string>> files = ListFilesRecursive(out_);
    ASSERT_TRUE(files.ok()) << where;
    EXPECT_EQ(files->size(), count + 1) << where;
    Result<std::string> metadata = ReadTextFile(JoinPath(out_, "metadata.jsonl"));
    ASSERT_TRUE(metadata.ok()) << where;
    uint64_t lines = 0;
    for (char c : *metadata) lines += c == '\n';
    EXPECT_EQ(lines, count) << where;
  }

  // Only `out` (when expected) is left next to it: no OUT.partial-PID, no OUT.old-PID.
  void ExpectNoLeftovers(const std::string& where, const std::vector<std::string>& expected) {
    EXPECT_EQ(testing::Entries(dir_.path()), expected) << where;
  }

  testing::TempDir dir_;
  std::string out_ = dir_.Join("out");
  FaultInjectionEnv env_{Env::Default()};
  SynthOptions options_;
};

TEST_F(SynthFaultTest, EveryWriteErrorFailsNamingTheFileAndLeavesNoOutput) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_GT(io.writes, 4u);  // 3 images, metadata.jsonl, the renames
  ASSERT_TRUE(RemoveAll(out_).ok());
  testing::SweepWriteFaults(env_, io.writes, [&](WF fault, uint64_t, const std::string& where) {
    Status s = Run(options_);
    ASSERT_FALSE(s.ok()) << where;
    EXPECT_EQ(s.code(), testing::WriteFaultCode(fault)) << where << ": " << s.ToString();
    EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path())))
        << where << " of " << env_.fault_path() << ": " << s.ToString();
    EXPECT_FALSE(PathExists(out_)) << where;
    ExpectNoLeftovers(where, {});
  });
}

TEST_F(SynthFaultTest, ACrashAtEveryWriteLeavesNothingOrTheCompleteOutputAndTheNextRunWorks) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_TRUE(RemoveAll(out_).ok());
  for (uint64_t i = 0; i < io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    env_.Reset();
    env_.CrashAfterWrites(i);
    Status s = Run(options_);
    ASSERT_FALSE(s.ok()) << where;
    EXPECT_TRUE(Mentions(s, "simulated crash")) << where << ": " << s.ToString();
    if (PathExists(out_)) ExpectComplete(where, options_.count);
    // The restarted run (same process id: it clears the crashed run's OUT.partial-PID).
    env_.Reset();
    SynthOptions again = options_;
    again.overwrite = true;
    Status rerun = Run(again);
    ASSERT_TRUE(rerun.ok()) << where << ": " << rerun.ToString();
    ExpectComplete(where, options_.count);
    ExpectNoLeftovers(where, {"out"});
    ASSERT_TRUE(RemoveAll(out_).ok());
  }
}

TEST_F(SynthFaultTest, ACrashWhileOverwritingLeavesTheOldOrTheNewOutput) {
  SynthOptions old_options = options_;
  old_options.count = 2;
  old_options.env = nullptr;
  SynthOptions o = options_;
  o.overwrite = true;
  ASSERT_TRUE(Run(old_options).ok());
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(o); });
  for (uint64_t i = 0; i < io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i) + " while overwriting";
    ASSERT_TRUE(RemoveAll(out_).ok());
    ASSERT_TRUE(Run(old_options).ok());
    env_.Reset();
    env_.CrashAfterWrites(i);
    const bool ok = Run(o).ok();
    Result<std::vector<std::string>> files = ListFilesRecursive(out_);
    ASSERT_TRUE(files.ok()) << where << ": OUT is gone";
    if (ok) {
      ExpectComplete(where, 3);
    } else {
      // 2 images + metadata (old) or 3 + metadata (new); never a mix, which ExpectComplete
      // checks through the metadata's line count.
      ASSERT_TRUE(files->size() == 3 || files->size() == 4) << where << ": " << files->size();
      ExpectComplete(where, files->size() - 1);
    }
  }
}

}  // namespace
}  // namespace docfeed::internal
